"""Regions: a model as a graph of executable regions (docs/regions.md).

contract.py   the `kind: regions` Pydantic models
plan.py       resolution against the model, the artifact inventory and the kernel contracts
gate.py       the F1 gate: what the reference interpreter refuses before any node runs
interpreter.py  the F1 reference interpreter (numpy, the kernel contracts' oracles)
weights.py    the labelled dequantization of an admitted artifact (a precision profile)
"""

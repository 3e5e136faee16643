"""Numpy reference implementations: the definitions native kernels are checked against.

Each oracle is written from the format's or the operator's own definition, in plain numpy, and
imports nothing but numpy and the standard library: never charter's native code, never the
upstream library it may be compared with (gguf, transformers). That independence is what makes an
agreement between an oracle and an implementation evidence (docs/provenance.md). Every oracle
checks its inputs (dtype, shape, domain bounds) and raises ValueError with the rule broken.
"""

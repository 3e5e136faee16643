"""Target: Python admission checkers (generated/python/<id>.py)."""

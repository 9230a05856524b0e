"""GPU operands: one ComponentResource each, on the shared base in `base.py`, created in the order
declared in `stages.py`."""

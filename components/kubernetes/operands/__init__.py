"""GPU operands: one module and one ComponentResource each, on the shared machinery of `spec.py` (what
an operand is), `version_table.py`, `manifests.py` and `component.py`, created in the order of the
operand registry (gpu_platform/catalog/operands.yaml) that `stages.py` resolves."""

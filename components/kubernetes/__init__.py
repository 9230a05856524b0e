"""Kubernetes layer: the namespace and shared objects, then the operands in the declared order."""

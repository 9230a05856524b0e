"""Mutation testing: `make mutation` runs mutmut (settings in setup.cfg) and `python -m tools.mutation.report`
turns its results into docs/mutation.md."""

"""Plain data and contracts shared by the program, the policy pack and the offline preview. Nothing
here creates a resource, and nothing here imports `components`.

- `config`: the stack file's model, one module per section.
- `catalog`: upstream's and AWS's facts (the version matrix, operands, calendars, limits).
- `privileges`: the privilege ledger and what it reads.
- `interface`: what the program and the policy pack share (labels, taints, type tokens, readers).

The policy pack imports `catalog`, `privileges` and `interface`, never `config`.
"""

"""Plain data and contracts shared by the program, the policy pack and the offline preview.

Nothing here creates a resource: the config model (`config`), the version matrix (`matrix`), the
taint and label contract (`contract`), and version arithmetic (`versions`). Policies import from
here and never from `components`.
"""

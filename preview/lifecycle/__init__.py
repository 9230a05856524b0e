"""A model of a GPU node's life, run on what a stack renders: the DaemonSets' gates, waits and
pre-stop hooks read from the recording, the rest (what each check needs, who writes and deletes each
marker, what the MIG manager and the kubelet do) from `rules.yaml`. Scenarios (`scenarios.py`) drive
one node of each pool through boot, reboot, full GPUs, rolls and changes, and report every pod that
can wait forever."""

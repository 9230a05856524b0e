"""How long `pulumi up` waits for an operand's DaemonSet, sized to the nodes it can cover.

Since pulumi-kubernetes 4.12, `pulumi up` waits until a DaemonSet's pods are updated and ready on
every node it selects, 10 minutes by default, and fails the update when that passes. Creation starts
every node's pod at once, so the default covers it; an update replaces one node's pod at a time
(`maxUnavailable: 1`, operands/base.py), and each step pays a pod start: an image pull of up to a
few GB on a GPU node, the wait for the previous stage's marker, the readiness probe. So the wait
grows with the nodes: a 20-node pool needs about an hour where the default gives ten minutes.
"""

from __future__ import annotations

# Pulumi's own default, kept as the floor: creation on any number of nodes runs in parallel.
BASE_MINUTES = 10
# One node's step of a rolling update: terminate, pull, wait for the marker, become ready. An
# estimate from the image sizes (the validator and the DCGM exporter are the largest, about 1-2 GB
# compressed) and the probes' delays (the exporter's first check at 45 s); generous on purpose: a
# timeout only stops Pulumi waiting, never the rollout, but a short one fails a healthy update.
PER_NODE_MINUTES = 3


def timeout(nodes: int) -> str:
    """The create and update wait for a DaemonSet that may run on up to `nodes` nodes."""
    return f"{BASE_MINUTES + PER_NODE_MINUTES * max(nodes, 0)}m"

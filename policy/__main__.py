"""Entry point of `pulumi preview --policy-pack policy`: builds the PolicyPack (this starts the
analyzer's gRPC server and blocks, so nothing else may import this file)."""

import sys
from pathlib import Path

# The pack reads the version matrix and the label contract from the project (gpu_platform/), one
# level up, so the rules and the program can never disagree.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policy.pack import POLICIES  # noqa: E402

PolicyPack(
    name="gpu-platform",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=POLICIES,
)

"""Entry point of `pulumi preview --policy-pack policy`: builds the PolicyPack (this starts the
analyzer's gRPC server and blocks, so nothing else may import this file; the offline preview runs
it with the server's start intercepted, preview/offline/analyze.py)."""

import sys
from pathlib import Path

# The pack reads the version matrix and the label contract from the project (gpu_platform/), one
# level up, so the rules and the program can never disagree.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack

from policy import pack

PolicyPack(name=pack.NAME, enforcement_level=pack.ENFORCEMENT_LEVEL, policies=pack.POLICIES)

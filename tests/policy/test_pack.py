"""The pack's load path: `policy/__main__.py` builds the PolicyPack from POLICIES with nothing but
its own requirements, and every policy reads only pulumi_policy, yaml, the standard library and the
plain data of gpu_platform."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from pulumi_policy import EnforcementLevel

from policy.pack import POLICIES
from tests.conftest import ROOT

POLICY_DIR = ROOT / "policy"
ALLOWED_PROJECT = {"gpu_platform.matrix", "gpu_platform.contract", "gpu_platform.versions", "gpu_platform"}
ALLOWED_THIRD_PARTY = {"pulumi_policy", "yaml"}
# What gpu_platform's plain-data modules may import in turn (they are part of the pack's closure).
CLOSURE = ("matrix.py", "contract.py", "versions.py")

# Runs __main__.py from outside the repository with PolicyPack replaced by a recorder: the real one
# starts the analyzer's gRPC server and blocks.
LOADER = """
import json, runpy, sys
import pulumi_policy

seen = {}
class Recorder:
    def __init__(self, name, policies, enforcement_level=None, initial_config=None, **kwargs):
        seen.update(name=name, policies=[p.name for p in policies], level=enforcement_level.value)
pulumi_policy.PolicyPack = Recorder
runpy.run_path(sys.argv[1], run_name="__main__")
root = sys.argv[2]
seen["project_modules"] = sorted(
    name for name, m in sys.modules.items()
    if (getattr(m, "__file__", None) or "").startswith(root)
    and not (getattr(m, "__file__", None) or "").startswith((sys.prefix, sys.base_prefix))
)
print(json.dumps(seen))
"""


def test_main_builds_the_pack_from_every_policy(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", LOADER, str(POLICY_DIR / "__main__.py"), str(ROOT) + "/"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["name"] == "gpu-platform" and seen["level"] == "mandatory"
    assert seen["policies"] == [p.name for p in POLICIES]
    outside = [m for m in seen["project_modules"] if not (m == "policy" or m.startswith("policy.") or m in ALLOWED_PROJECT)]
    assert outside == []


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names if node.module == "gpu_platform"}
    return found


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    if top == "policy" or module in ALLOWED_PROJECT or top in ALLOWED_THIRD_PARTY:
        return True
    if top == "gpu_platform":
        return False
    return top in sys.stdlib_module_names or top == "__future__"


def test_policy_modules_import_only_pulumi_policy_yaml_stdlib_and_plain_data():
    files = sorted(POLICY_DIR.glob("*.py")) + [ROOT / "gpu_platform" / name for name in CLOSURE]
    bad = {f.name: sorted(m for m in _imports(f) if not _allowed(m)) for f in files}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_packs_requirements_cover_its_imports():
    names = {line.split("==")[0].lower() for line in (POLICY_DIR / "requirements.txt").read_text().splitlines() if "==" in line}
    assert {"pulumi-policy", "pyyaml"} <= names


def test_policy_names_are_unique_and_levels_are_the_issues():
    levels = {p.name: p.enforcement_level for p in POLICIES}
    assert len(levels) == len(POLICIES)
    advisory = {n for n, lvl in levels.items() if lvl == EnforcementLevel.ADVISORY}
    assert advisory == {"driver-version-tested-by-release", "driver-serves-cuda-toolkit", "cluster-endpoint-private"}
    assert all(lvl in (EnforcementLevel.ADVISORY, EnforcementLevel.MANDATORY) for lvl in levels.values())

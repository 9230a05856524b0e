"""The pack as the CLI loads it: `python -m pulumi.policy <engine> policy` serves exactly the
policies listed here, with these levels and kinds; the offline preview's in-process pack is the same
pack; and every policy reads only pulumi_policy, yaml, the standard library and gpu_platform's data."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

from pulumi.runtime.proto import analyzer_pb2

from policy import pack
from preview.offline import analyze
from tests.conftest import ROOT

POLICY_DIR = ROOT / "policy"
# The pack's boundary, stated once: policy/ may import these packages of gpu_platform (and the
# package itself), never gpu_platform.config or components; what they import in turn is held to it too.
PACK_PACKAGES = ("catalog", "privileges", "interface")
ALLOWED_THIRD_PARTY = {"pulumi_policy", "yaml"}
# Every module of those packages is part of the pack's closure.
CLOSURE = sorted(path for package in PACK_PACKAGES for path in (ROOT / "gpu_platform" / package).rglob("*.py"))


KINDS = {"resource": analyzer_pb2.POLICY_TYPE_RESOURCE, "stack": analyzer_pb2.POLICY_TYPE_STACK}
LEVELS = {"mandatory": analyzer_pb2.MANDATORY, "advisory": analyzer_pb2.ADVISORY}
# Each policy module's test module lists what it serves (SERVES). The pack serves them module by
# module in policy/pack.py's order, resource policies first, then stack policies.
THEMES = [module.__name__.removeprefix("policy.") for module in pack.MODULES]


def _expected() -> list[tuple[str, int, int]]:
    rows = [row for theme in THEMES for row in importlib.import_module(f"tests.policy.test_{theme}").SERVES]
    ordered = [row for row in rows if row[1] == "resource"] + [row for row in rows if row[1] == "stack"]
    return [(name, KINDS[kind], LEVELS[level]) for name, kind, level in ordered]


EXPECTED = _expected()


def test_every_policy_module_is_in_the_pack_and_its_test_module_says_what_it_serves():
    declaring = sorted(
        f.stem for f in POLICY_DIR.glob("*.py") if re.search(r"^@(resource|stack)_policy\(", f.read_text(), re.M)
    )
    assert sorted(THEMES) == declaring
    assert len(EXPECTED) == len({name for name, _, _ in EXPECTED})  # no policy listed twice


def _served(pack) -> list[tuple[str, int, int]]:
    info = analyze.info(pack)
    assert info.name == "gpu-platform"
    return [(p.name, p.policy_type, p.enforcementLevel) for p in info.policies]


def test_the_pack_started_as_the_cli_starts_it_serves_exactly_the_listed_policies(real_pack):
    assert _served(real_pack) == EXPECTED


def test_the_offline_preview_serves_the_same_pack():
    assert _served(analyze.in_process()) == EXPECTED


def test_a_pack_that_fails_to_load_is_an_internal_error_naming_the_cause(tmp_path):
    broken = tmp_path / "policy"
    broken.mkdir()
    (broken / "__main__.py").write_text("import no_such_module_anywhere\n")
    try:
        analyze.PackProcess(pack_dir=broken)
    except analyze.PackError as exc:
        assert "did not start" in str(exc) and "no_such_module_anywhere" in str(exc)
    else:
        raise AssertionError("a broken pack started")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} | {
                f"{node.module}.{a.name}" for a in node.names if node.module.startswith("gpu_platform")
            }
    return found


# `make mutation` runs this suite on copies of the sources into which mutmut writes this import.
MUTATION_TRAMPOLINE = "mutmut.mutation.trampoline"


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    if module == MUTATION_TRAMPOLINE and ROOT.name == "mutants":
        return True
    if top == "policy" or module == "gpu_platform" or top in ALLOWED_THIRD_PARTY:
        return True
    if module.split(".")[:2] in (["gpu_platform", package] for package in PACK_PACKAGES):
        return True
    if top == "gpu_platform":
        return False
    return top in sys.stdlib_module_names or top == "__future__"


def test_policy_modules_import_only_pulumi_policy_yaml_stdlib_and_plain_data():
    files = sorted(POLICY_DIR.glob("*.py")) + CLOSURE
    bad = {f.name: sorted(m for m in _imports(f) if not _allowed(m)) for f in files}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_packs_requirements_cover_its_imports():
    names = {
        line.split("==")[0].lower()
        for line in (POLICY_DIR / "requirements.txt").read_text().splitlines()
        if "==" in line
    }
    assert {"pulumi-policy", "pyyaml"} <= names


def test_no_policy_tests_for_dict_or_list():
    # The analyzer's proxies are Mappings and Sequences: `isinstance(x, dict)` is false for every value
    # the CLI passes (pulumi_policy/proxy.py). Policies read through gpu_platform/interface/props.py instead.
    found = []
    readers = [ROOT / "gpu_platform" / "interface" / name for name in ("props.py", "workloads.py")]
    for path in sorted(POLICY_DIR.glob("*.py")) + readers:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance" and len(node.args) == 2:
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                if any(getattr(k, "id", "") in ("dict", "list", "tuple") for k in kinds):
                    found.append(f"{path.name}:{node.lineno}")
    assert found == []


def _field(model, segment: str):
    """The pydantic field `segment` names in `model` (by its stack-file spelling), or None."""
    return next((f for name, f in model.model_fields.items() if (f.alias or name) == segment), None)


def _model_of(annotation):
    """The config model a field holds, through Optional and tuple[...]; None for a plain value."""
    import typing

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_of, typing.get_args(annotation)) if m is not None), None)


def _resolves(key: str) -> bool:
    from gpu_platform.config import StackConfig

    top, *rest = key.replace("[]", "").split(".")
    field = _field(StackConfig, top)
    for segment in rest:
        model = _model_of(field.annotation) if field else None
        field = _field(model, segment) if model else None
    return field is not None


def test_every_policy_says_what_to_change_and_the_keys_it_names_exist(real_pack):
    # The offline preview prints a policy's remediation steps under its violation (Pulumi Cloud shows
    # them for a published pack; the CLI sends them in pkg/backend/httpstate/client/client.go); ours name the stack keys that
    # fix it (each one a key the config model reads), or, where no stack key can, the program's file.
    import re

    fixes = {p.name: p.remediation_steps for p in analyze.info(real_pack).policies}
    assert set(fixes) == {name for name, _, _ in EXPECTED}
    problems = []
    for name, fix in fixes.items():
        keys = re.findall(r"gpu-platform:[A-Za-z.\[\]]+[A-Za-z\]]", fix)
        files = re.findall(r"\((components/[\w/.]+)\)", fix)
        if fix.startswith("no stack key:"):
            if not files or not all((ROOT / f).exists() for f in files):
                problems.append(f"{name}: names no file of the program that exists: {fix!r}")
        elif not keys or not all(_resolves(k) for k in keys):
            problems.append(f"{name}: names a key the config does not read: {fix!r}")
    assert problems == []


def test_the_key_check_knows_a_wrong_key():
    assert _resolves("gpu-platform:nodePools[].mig.config") and _resolves("gpu-platform:cluster.kubernetesVersion")
    assert not _resolves("gpu-platform:nodePools[].migConfig") and not _resolves("gpu-platform:operator.version")

"""Every operand of every release meets its upstream contract (components/kubernetes/operands/<module>/contract.yaml).

The stack rendered per release is the prod stack (a MIG pool, the baked toolkit) and its twin with the
toolkit DaemonSet and a time-sliced pool, run through the real program offline (tests/release_stacks.py);
each clause whose `applies` range holds for the image tag the release renders, and whose `when` holds
for the stack, is checked against the recorded manifests. A failure names the clause, the release, what is wrong and
where upstream says so.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
import yaml

from components.kubernetes import operands as operand_folders
from gpu_platform.catalog import matrix, operands, versions
from tests.gpu_platform import contract_checks as checks
from tests.release_stacks import each, group, rendered

MATRIX = matrix.load()
RELEASES = sorted(MATRIX.releases, key=lambda r: checks.version_key(r))


@functools.cache
def contracts() -> dict[str, dict]:
    found = {}
    for name in operands.names():
        data = yaml.safe_load(operand_folders.contract_file(name).read_text())
        found[data["operand"]] = data
    return found


# From nvidia-container-toolkit 1.18.0 `auto` resolves to jit-cdi, which injects no MIG capability device
# for NVIDIA_MIG_MONITOR_DEVICES (internal/info/auto.go:89 at v1.18.0..v1.20.0; toolkit issue #1740).
JIT_CDI_SINCE = "1.18.0"


def facts(release: str, baked: bool) -> checks.Facts:
    # Both variants run the release's own toolkit, baked or as the DaemonSet.
    legacy = not versions.at_least(MATRIX.releases[release].toolkit_version, JIT_CDI_SINCE)
    return checks.Facts(
        cdi=MATRIX.releases[release].cdi,
        toolkit_baked=baked,
        mig=True,
        time_slicing=not baked,
        toolkit_mig_by_env=legacy,
    )


def tag(image: str) -> str:
    return image.rsplit(":", 1)[1]


def test_every_tag_a_release_renders_was_read_at_its_source():
    # Per release that carries the operand, the tag of the image it runs (its own, or the one it borrows).
    unread = []
    for operand, data in contracts().items():
        versions = {str(k): v for k, v in data["versions"].items()}
        for release in MATRIX.releases.values():
            if operand in release.carried_operands:
                image = release.images[operands.image_key(operand)]
                row = versions.get(tag(image))
                if not row or not row.get("read"):
                    unread.append(f"{operand} {tag(image)} (release {release.name})")
    assert not unread, "rendered but never read at the tag: " + "; ".join(sorted(set(unread)))


def test_every_operand_the_matrix_renders_has_a_contract():
    rendered_operands = {op for r in MATRIX.releases.values() for op in r.carried_operands}
    assert rendered_operands <= set(contracts()), rendered_operands - set(contracts())


def test_every_clause_says_what_it_asks_of_the_manifests_or_why_nothing():
    wrong = []
    for operand, data in contracts().items():
        for clause in data["clauses"]:
            expect, none = clause.get("expect"), clause.get("no_manifest_effect")
            if bool(expect) == bool(none):
                wrong.append(f"{operand}:{clause['id']}: give exactly one of expect or no_manifest_effect")
                continue
            for item in expect or []:
                if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in checks.CHECKS:
                    wrong.append(f"{operand}:{clause['id']}: {item!r} is not one of the checks {sorted(checks.CHECKS)}")
            if set(clause.get("when") or {}) - set(checks.Facts.__dataclass_fields__):
                wrong.append(f"{operand}:{clause['id']}: when {clause['when']} names an unknown fact")
            checks.applies(clause["applies"], "1.0.0")  # a malformed range raises here
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("baked", [True, False], ids=["toolkit-baked", "toolkit-daemonset"])
@pytest.mark.parametrize("release", each(RELEASES))
def test_every_operand_meets_its_contract(release, baked):
    rec = rendered(release, baked)
    images = MATRIX.releases[release].images
    stack = facts(release, baked)
    failures = []
    for operand, data in contracts().items():
        # Not deployed in this stack: none (the toolkit DaemonSet under a baked toolkit).
        for op in checks.Operand(rec, operand).each():
            image = images[operands.image_key(operand)]
            here = dataclasses.replace(stack, mig=stack.mig and op.on_mig_pools)
            for clause in data["clauses"]:
                if (
                    not clause.get("expect")
                    or not here.match(clause.get("when"))
                    or not checks.applies(clause["applies"], tag(image))
                ):
                    continue
                for expectation in clause["expect"]:
                    for problem in checks.check(op, image, expectation):
                        failures.append(
                            f"{op.name} {tag(image)} [{clause['id']}] {problem}\n    upstream: {clause['source'][0]}"
                        )
    assert not failures, f"release {release}:\n" + "\n".join(failures)


@group(RELEASES[-1])
def test_the_toolkit_daemonset_stack_renders_the_toolkit_and_the_baked_one_does_not():
    # The two variants exist to cover both: a contract test that never saw the toolkit would pass on anything.
    latest = RELEASES[-1]
    assert checks.Operand(rendered(latest, False), "container-toolkit").daemonset is not None
    assert checks.Operand(rendered(latest, True), "container-toolkit").daemonset is None
    assert checks.Operand(rendered(latest, True), "mig-manager").daemonset is not None


@pytest.mark.parametrize("operand", ["dra-driver", "dra-validator"])
def test_the_dra_operands_meet_their_contracts_in_the_dra_stack(dra, operand):
    # The prod variants above never render the DRA-only operands (allocation mode device-plugin): their
    # clauses are checked against the one shipped stack in mode dra.
    image = MATRIX.releases["v26.7.0"].images[operands.image_key(operand)]
    op = checks.Operand(dra, operand)
    assert op.daemonset is not None
    failures = [
        f"[{clause['id']}] {problem}"
        for clause in contracts()[operand]["clauses"]
        if clause.get("expect") and checks.applies(clause["applies"], tag(image))
        for expectation in clause["expect"]
        for problem in checks.check(op, image, expectation)
    ]
    assert not failures, "\n".join(failures)

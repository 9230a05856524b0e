"""The tests mirror the source tree: the test module of `preview/offline/analyze.py` is
`tests/preview/offline/test_analyze.py`. A second test module of the same source module sits next to
it with a suffix (`test_image_component_test_phase.py`); a test of a behaviour across many modules
(a rollout, a whole command line run, the contracts of every operand) lives in the directory of the
layer it exercises, or in `tests/` itself.

A source module without a test module of its own is listed in EXEMPT with the reason, which names
where it is tested instead or why it needs no test module."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT

TESTS = ROOT / "tests"
OPERANDS = ROOT / "components" / "kubernetes" / "operands"
# The source packages: every top-level directory that is a Python package, the tests excepted.
PACKAGES = sorted(d.name for d in ROOT.iterdir() if (d / "__init__.py").is_file() and d != TESTS)

EXEMPT = {
    "components/aws/gpu_cluster.py": "the EKS builder of the modules next to it: tests/components/test_platform.py "
    "checks its boundary and the URNs it registers, tests/components/aws/ what it registers",
    "components/aws/image_build_role.py": "the build role's policy, asserted on the recorded role and policy by "
    "tests/components/aws/test_node_image.py and judged by tests/policy/test_iam.py",
    "components/aws/launch_settings.py": "the launch templates' hardening, asserted by tests/components/aws/test_node_pool.py "
    "(GPU nodes) and tests/test_graph.py (system nodes)",
    "components/aws/managed_role.py": "its roles are tested in tests/components/aws/test_cluster.py (exclusive policy "
    "attachments) and tests/components/aws/test_partition.py (ARNs of the partition)",
    "components/aws/node_role.py": "tested in tests/components/aws/test_cluster.py (the node role's policies)",
    "components/aws/tags.py": "the tags it builds are asserted on the resources by tests/components/aws/test_node_image.py "
    "and tests/components/aws/test_node_pool.py",
    "components/cluster_handle.py": "only declares the handle (data); tests/components/test_platform.py checks the "
    "Kubernetes half reads the cloud half through it",
    "components/kubernetes/operands/component.py": "registers what an operand's spec declares; tested on the recorded "
    "objects by tests/components/kubernetes/operands/test_stages.py and test_manifests.py",
    "components/kubernetes/operands/context.py": "only declares data (MigPool, OperandContext) that the operand tests build",
    "components/kubernetes/operands/spec.py": "declares an operand as data; its wait containers are tested by "
    "tests/components/kubernetes/operands/test_stages.py and test_versions_plugin_gfd_dcgm_mig.py",
    "components/kubernetes/operands/version_table.py": "each operand's table is tested at every release by "
    "tests/components/kubernetes/operands/test_versions_*.py",
    "components/kubernetes/readiness_gate.py": "tested with the blue-green rollout it gates, in tests/components/aws/test_rollout.py",
    "gpu_platform/catalog/addon_privileges.py": "plain data (the add-on's DaemonSets at its pinned version); its rows in the ledger "
    "are tested by tests/components/aws/test_node_health.py and tests/gpu_platform/privileges/test_ledger.py",
    # The rows of tests/fixtures/bad_stacks.yaml, each refused through parse(), are run by
    # tests/gpu_platform/config/test_reading.py.
    "gpu_platform/config/allocation.py": "the DRA rules: the allocation-* and dra-* rows of the bad stacks "
    "(tests/gpu_platform/config/test_reading.py)",
    "gpu_platform/config/operator.py": "the release and its overrides: the unknown-release and override-* rows of "
    "the bad stacks (tests/gpu_platform/config/test_reading.py)",
    "gpu_platform/config/aws_provider.py": "how aws:* settings reach the ledger, tested by tests/gpu_platform/privileges/test_ledger.py",
    "gpu_platform/catalog/aws_limits.py": "reads aws_limits.yaml; its limits are tested as the config errors they raise "
    "(the bad stacks of tests/gpu_platform/config/test_reading.py, "
    "tests/gpu_platform/config/test_cluster.py)",
    "tools/bench/run.py": "a benchmark (make bench), run by hand on a quiet machine; docs/benchmarks.md keeps its figures",
    "tools/bench/suite.py": "a benchmark (make bench-suite), run by hand on a quiet machine; docs/benchmarks.md keeps its figures",
    "policy/__main__.py": "builds the pack and serves it (it blocks): started as the CLI starts it by the real_pack "
    "fixture, tested in tests/policy/test_pack.py",
    "policy/declare.py": "the declarations the pack serves and docs/policy-pack.md lists: tests/policy/test_pack.py, tests/preview/test_docs.py",
    "policy/facts.py": "the readers every policy uses, tested through each policy's tests in tests/policy/",
    "policy/workloads.py": "re-exports gpu_platform/interface/workloads.py and declares what a workload policy targets",
    "preview/__main__.py": "the command line, tested by tests/preview/test_cli.py",
    "preview/offline/aws_answers.py": "the offline answers to AWS invokes, tested where the program reads them: "
    "tests/components/aws/test_base_image.py, test_cluster_access.py, test_partition.py",
    "preview/offline/engine.py": "the recording engine every test records through (tests/conftest.py); its two views "
    "are compared in tests/preview/offline/test_analyze.py",
    "preview/reports/privileges.py": "the workloads section of the audit report: tests/preview/reports/test_audit.py",
    "preview/reports/report.py": "the summary and the JSON report, tested by tests/preview/test_cli.py",
}


def source_modules() -> set[str]:
    """Every module of the source packages, as a path from the repository root: each `.py` but
    `__init__.py`, and each operand folder's `__init__.py`, which is the operand's module."""
    return {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if (path.name != "__init__.py" or path.parent.parent == OPERANDS) and "__pycache__" not in path.parts
    }


def mirrored(module: str) -> Path:
    path = Path(module)
    if path.name == "__init__.py":  # an operand folder's module: its tests sit beside the other operands'
        return TESTS / path.parent.parent / f"test_{path.parent.name}.py"
    return TESTS / path.parent / f"test_{path.stem}.py"


def test_the_source_packages_are_found():
    assert {"components", "gpu_platform", "policy", "preview", "tools"} <= set(PACKAGES)
    assert "preview/offline/analyze.py" in source_modules()
    assert mirrored("preview/offline/analyze.py") == TESTS / "preview" / "offline" / "test_analyze.py"
    plugin = "components/kubernetes/operands/device_plugin/__init__.py"
    assert plugin in source_modules() and "components/kubernetes/operands/__init__.py" not in source_modules()
    assert mirrored(plugin) == TESTS / "components" / "kubernetes" / "operands" / "test_device_plugin.py"


def test_every_test_module_lives_in_tests_or_in_a_directory_that_mirrors_a_source_directory():
    misplaced, not_packages = [], []
    for test in sorted(TESTS.rglob("test_*.py")):
        folder = test.parent.relative_to(TESTS)
        if folder != Path(".") and not (folder.parts[0] in PACKAGES and (ROOT / folder).is_dir()):
            misplaced.append(test.relative_to(ROOT).as_posix())
        # Packages all the way up: test modules of the same name in two directories stay apart.
        not_packages += [
            d.relative_to(ROOT).as_posix()
            for d in (test.parent, *test.parent.parents)
            if d.is_relative_to(TESTS) and not (d / "__init__.py").is_file()
        ]
    assert misplaced == [], "no source directory of that name; move them to tests/<source dir>/"
    assert sorted(set(not_packages)) == []


def test_every_source_module_has_its_test_module_or_an_exemption():
    missing = sorted(m for m in source_modules() if not mirrored(m).is_file() and m not in EXEMPT)
    assert missing == [], (
        "write tests/<dir>/test_<module>.py, or exempt the module in tests/test_layout.py with the reason"
    )


def test_every_exemption_is_still_needed():
    modules = source_modules()
    gone = sorted(m for m in EXEMPT if m not in modules)
    tested = sorted(m for m in EXEMPT if mirrored(m).is_file())
    assert (gone, tested) == ([], []), "drop these exemptions: the module is gone, or has its test module now"
    assert all(reason.strip() for reason in EXEMPT.values())

"""The supply chain, as files: every Python package installed from a lock that pins it with hashes
(`pip install --require-hashes`), each lock covering its requirement file, the shared packages at
one version; and CODEOWNERS covering every path the PR gate trusts. No network: the install from
the locks on a fresh machine is `make venv` itself (CI runs it on a clean clone)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

# lock -> the requirement files it is compiled from (Makefile, `make lock`)
LOCKS = {
    "requirements-dev.lock.txt": ("requirements-dev.txt",),
    "requirements-mutation.lock.txt": ("requirements-dev.txt", "requirements-mutation.txt"),
    "policy/requirements.lock.txt": ("policy/requirements.txt",),
    "tools/security/requirements-checkov.lock.txt": ("tools/security/requirements-checkov.txt",),
    "requirements-lock.lock.txt": ("requirements-lock.txt",),
}
# The virtualenvs that live together in .venv (the program, the pack, the checks, mutmut) and the
# gate's pack venv, built from the pack's lock: one version of each package across them.
SHARED = ("requirements-dev.lock.txt", "requirements-mutation.lock.txt", "policy/requirements.lock.txt")
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def _name(text: str) -> str:
    """A distribution's name as pip compares them (PEP 503: case and -_. runs are one)."""
    return re.sub(r"[-_.]+", "-", text).lower()


def read_lock(text: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of a pip-compile lock; raises on any line that is no hashed exact pin."""
    found: dict[str, tuple[str, list[str]]] = {}
    logical = re.sub(r"\\\n", " ", text)
    for line in logical.splitlines():
        line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        pin = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)((?:\s+--hash=\S+)+)", line)
        if not pin:
            raise ValueError(f"not an exact pin with hashes: {line!r}")
        hashes = pin.group(3).split()
        bad = [h for h in hashes if not _HASH.fullmatch(h)]
        if bad:
            raise ValueError(f"{pin.group(1)}: not a sha256 hash: {bad}")
        found[_name(pin.group(1))] = (pin.group(2), hashes)
    return found


def requirements(path: Path) -> dict[str, str]:
    """name -> pinned version of a requirement file, following its `-r` includes."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found.update(requirements(path.parent / line[3:].strip()))
        elif line:
            name, _, version = line.partition("==")
            found[_name(re.sub(r"\[.*\]", "", name))] = version
    return found


@pytest.mark.parametrize("lock", LOCKS)
def test_every_package_of_a_lock_is_an_exact_pin_with_hashes(lock):
    pins = read_lock((ROOT / lock).read_text())
    assert pins and all(hashes for _, hashes in pins.values())


@pytest.mark.parametrize("lock, sources", LOCKS.items())
def test_a_lock_holds_every_requirement_at_its_pinned_version(lock, sources):
    pins = {name: version for name, (version, _) in read_lock((ROOT / lock).read_text()).items()}
    for source in sources:
        wanted = requirements(ROOT / source)
        assert {n: v for n, v in wanted.items() if pins.get(n) != v} == {}, f"{lock} is stale for {source}: make lock"


@pytest.mark.parametrize("lock", LOCKS)
def test_a_lock_says_how_it_is_regenerated(lock):
    assert "make lock" in (ROOT / lock).read_text().split("\n\n", 1)[0]


def test_packages_shared_by_the_locks_of_one_virtualenv_have_one_version():
    versions: dict[str, dict[str, str]] = {}
    for lock in SHARED:
        for name, (version, _) in read_lock((ROOT / lock).read_text()).items():
            versions.setdefault(name, {})[lock] = version
    assert {n: v for n, v in versions.items() if len(set(v.values())) > 1} == {}


@pytest.mark.parametrize(
    "text",
    [
        "pulumi==3.272.0\n",  # no hash
        "pulumi>=3.272.0 --hash=sha256:" + "a" * 64 + "\n",  # not exact
        "pulumi==3.272.0 --hash=md5:" + "a" * 32 + "\n",
        "-r requirements.txt\n",
    ],
)
def test_the_lock_reader_refuses_what_require_hashes_would_refuse(text):
    with pytest.raises(ValueError):
        read_lock(text)


def _install_lines(text: str) -> list[str]:
    return [line for line in text.replace("\\\n", " ").splitlines() if re.search(r"\bpip install\b", line)]


def test_every_install_in_the_makefile_and_the_workflow_requires_hashes_from_a_lock():
    lines = _install_lines((ROOT / "Makefile").read_text()) + _install_lines(
        (ROOT / ".github/workflows/pr.yml").read_text()
    )
    assert len(lines) >= 5  # .venv, mutmut, checkov, pip-tools, the gate's pack
    for line in lines:
        assert "--require-hashes" in line, line
        assert re.search(r"-r \S+\.lock\.txt\b", line), line
        assert " -c " not in line, line


def test_make_venv_installs_the_dev_lock():
    recipe = (ROOT / "Makefile").read_text().split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert recipe.splitlines()[0].split() == ["requirements-dev.lock.txt"]
    assert "--require-hashes -r requirements-dev.lock.txt" in recipe


# -- CODEOWNERS ---------------------------------------------------------------------------------------

CODEOWNERS = ROOT / ".github" / "CODEOWNERS"
# What the gate trusts, written out: each must exist and have an owner.
PROTECTED = (
    ".github/CODEOWNERS",
    ".github/workflows/pr.yml",
    "policy/pack.py",
    "policy/images.py",
    "policy/PulumiPolicy.yaml",
    "policy/requirements.txt",
    "policy/requirements.lock.txt",
    "gpu_platform/catalog/matrix.yaml",
    "gpu_platform/catalog/matrix.py",
    "gpu_platform/catalog/image_refs.py",
    "components/aws/scripts/install-nvidia-driver.sh",
    "components/aws/scripts/nvswitch-fabric.sh",
    "components/aws/image_component.py",
    "components/aws/node_image.py",
    "components/aws/image_build_role.py",  # the build instance's IAM rights
    "components/aws/user_data.py",  # what GPU nodes run as root at boot, not in the ledger
    "components/platform.py",  # the node image and cluster the namespace declares to the ledger
    "components/aws/node_pool.py",  # the AMI a launch template boots (an output, not in the ledger)
    "__main__.py",
    "tests/golden/audit/prod.md",
    "tests/golden/audit/dev.md",
    "tests/golden.py",
    "tests/test_golden.py",
    "stacks/Pulumi.prod.yaml",  # the approval record: gpu-platform:audit.approvedLedger
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-dev.lock.txt",
    "requirements-mutation.lock.txt",
    "requirements-lock.lock.txt",
    "tools/security/requirements-checkov.lock.txt",
    "Makefile",
    ".ci/run",
)
# Whole directories the gate trusts: every file in them is covered, including one added tomorrow.
PROTECTED_DIRS = (
    "policy",
    "gpu_platform/catalog",
    "gpu_platform/privileges",
    "gpu_platform/interface",
    "components/aws/scripts",
    "tests/golden/audit",
    ".github/workflows",
    "stacks",
)


def rules(text: str) -> list[tuple[re.Pattern, list[str]]]:
    """CODEOWNERS lines as (path regex, owners), in file order (the last match wins). Only the forms
    this file uses: anchored paths (`/x`), directories (`/x/`), `*` within one path segment."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pattern, *owners = line.split()
        if not pattern.startswith("/") or "!" in pattern or "[" in pattern or "**" in pattern:
            raise ValueError(f"CODEOWNERS pattern outside the forms this test reads: {pattern!r}")
        body = re.escape(pattern[1:].rstrip("/")).replace(r"\*", "[^/]*")
        found.append((re.compile(body + ("/.*" if pattern.endswith("/") else "(/.*)?")), owners))
    return found


def owners(path: str, table: list[tuple[re.Pattern, list[str]]]) -> list[str]:
    matched = [who for pattern, who in table if pattern.fullmatch(path)]
    return matched[-1] if matched else []


@pytest.fixture(scope="module")
def table():
    return rules(CODEOWNERS.read_text())


@pytest.mark.parametrize("path", PROTECTED)
def test_every_protected_path_exists_and_has_an_owner(path, table):
    assert (ROOT / path).is_file(), path
    found = owners(path, table)
    assert found and all(re.fullmatch(r"@[\w-]+(/[\w-]+)?", o) for o in found), (path, found)


@pytest.mark.parametrize("directory", PROTECTED_DIRS)
def test_every_file_of_a_protected_directory_has_an_owner(directory, table):
    files = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / directory).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    assert files
    assert [f for f in files if not owners(f, table)] == []


def test_every_codeowners_line_names_something_that_exists(table):
    # A line left behind by a rename protects nothing, silently.
    for pattern, _ in table:
        regex = pattern.pattern
        assert any(
            pattern.fullmatch(p.relative_to(ROOT).as_posix())
            for p in ROOT.rglob("*")
            if p.is_file() and ".venv" not in p.parts[len(ROOT.parts) :][:1] and ".git" not in p.parts
        ), regex


def test_paths_outside_the_gate_need_no_security_review(table):
    # The table is not a catch-all: a change to the README, a test fixture or the offline preview's
    # reports is the team's own; the program (components/) is not: what it deploys needs review.
    assert owners("README.md", table) == [] and owners("tests/fixtures/passing/eks-nvidia.yaml", table) == []
    assert owners("preview/reports/plan.py", table) == []
    assert owners("components/aws/cluster.py", table) == ["@gpu-platform/security"]
    # The config model's wording and reading are the team's own too: what it makes the program grant
    # reaches the ledger through components/.
    assert (
        owners("gpu_platform/config/messages.py", table) == []
        and owners("gpu_platform/config/node_pool.py", table) == []
    )

"""Runs the node image's shell scripts as a node would, on a scratch root with the system's commands
replaced by stubs that log their arguments and print what the real tools print. What the scripts
write lands under the scratch root (their ROOT variable).

What the stubs print, and where that comes from:
- `dnf versionlock add SPEC...` stores, and `dnf versionlock list` prints, one line per lock as
  NAME-EPOCH:VERSION-RELEASE.* (dnf-plugins-core plugins/versionlock.py at tag 4.3.0: pkgtup2spec
  lines 317-319, `list` lines 195-197, comment lines skipped 226-238), after dnf's own
  "Last metadata expiration check" line. NVIDIA's driver packages carry epoch 3
  (kmod-nvidia-open-dkms-3:580.105.08-1.amzn2023), Amazon Linux's epoch 0, written as 0.
- `rpm -q --qf '%{VERSION}' NAME` prints the version alone, no epoch, no release, no newline.
- `nvidia-smi --query-gpu=driver_version --format=csv,noheader` prints one line per GPU.
- `curl` answers IMDSv2: a token for PUT /latest/api/token, then the instance type.
- `nvidia-ctk config --in-place --set KEY=VALUE` writes `KEY = VALUE` into the toolkit's config.toml.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

# The key fingerprint NVIDIA publishes for its CUDA RPM repositories (github.com/NVIDIA/cuda-repo-management
# SIGNATURES.md, "RPM repo"), typed here from that page, not taken from the script.
NVIDIA_KEY_FINGERPRINT = "610C7B14E068A878070DA4E99CD0A493D42D0685"
KERNEL_6_12 = "6.12.94-123.180.amzn2023.x86_64"  # amazon-eks-ami CHANGELOG v20260714, kernel6.12 row
TOOLKIT_CONFIG = "etc/nvidia-container-runtime/config.toml"

_STUB = """#!/usr/bin/env bash
printf '%s' "$(basename "$0")" >>"$STUB_LOG"
printf ' %q' "$@" >>"$STUB_LOG"
printf '\\n' >>"$STUB_LOG"
"""

_DNF = r"""
locks="$STUB_STATE/versionlock.list"
epoch() { case "$1" in kmod-nvidia*|nvidia-driver*|nvidia-persistenced|nvidia-fabric*) echo 3 ;; *) echo 0 ;; esac; }
case "$1 $2" in
  "versionlock add")
    shift 2
    echo "# Added lock on $(date)" >>"$locks"
    for spec in "$@"; do
      IFS=- read -ra parts <<<"$spec"
      name="" version="" release=""
      for part in "${parts[@]}"; do
        if [[ -z "$version" && "$part" =~ ^[0-9] ]]; then version="$part"
        elif [[ -n "$version" ]]; then release="${release:+$release-}$part"
        else name="${name:+$name-}$part"; fi
      done
      [[ -n "$STUB_UNLOCKABLE" && " $STUB_UNLOCKABLE " == *" $name "* ]] && { echo "Package not found: $spec"; continue; }
      echo "$name-$(epoch "$name"):${version:-3.1.1}-${release:-1.amzn2023}.*" >>"$locks"
    done
    exit 0 ;;
  "versionlock list")
    echo "Last metadata expiration check: 0:00:42 ago on Tue 14 Jul 2026 10:00:00 AM UTC."
    [[ -f "$locks" ]] && grep -v '^#' "$locks"
    exit 0 ;;
esac
case "$*" in
  *makecache*) [[ -z "$STUB_FAIL_MAKECACHE" ]] || exit 1 ;;
  *"module enable"*) [[ -z "$STUB_FAIL_MODULE" ]] || { echo "Error: Problems in request: missing groups or modules: ${*: -1}" >&2; exit 1; } ;;
  *install*)
    for spec in "$@"; do
      [[ -n "$STUB_MISSING" && "$spec" == "$STUB_MISSING" ]] && { echo "Error: Unable to find a match: $spec" >&2; exit 1; }
    done
    # The toolkit package puts the runtime binary where nodeadm looks for it.
    case "$*" in *nvidia-container-toolkit-[0-9]*)
      mkdir -p "$ROOT/usr/bin"; : >"$ROOT/usr/bin/nvidia-container-runtime"; chmod +x "$ROOT/usr/bin/nvidia-container-runtime" ;;
    esac ;;
esac
"""

_NVIDIA_CTK = r"""
file="$ROOT/etc/nvidia-container-runtime/config.toml"
sets=()
while [[ $# -gt 0 ]]; do
  case "$1" in --set) sets+=("$2"); shift ;; --config-file|--config|-c) file="$2"; shift ;; esac
  shift
done
[[ -n "$STUB_FAIL_CTK" ]] && exit 1
mkdir -p "$(dirname "$file")"; touch "$file"
for pair in "${sets[@]}"; do
  key="${pair%%=*}"; value="${pair#*=}"
  grep -v "^$key = " "$file" >"$file.new" || true; mv "$file.new" "$file"
  echo "$key = $value" >>"$file"
done
"""

# What some stubs answer, beyond logging.
_ANSWERS = {
    "uname": 'echo "$STUB_KERNEL"',
    "curl": r"""case "$*" in
  *api/token*) echo "AQAEAFakeImdsToken==" ;;
  *meta-data/instance-type*) [[ -n "$STUB_INSTANCE_TYPE" ]] || exit 7; printf '%s' "$STUB_INSTANCE_TYPE" ;;
  *) while [[ $# -gt 0 ]]; do if [[ "$1" == "-o" ]]; then echo "public key" >"$2"; fi; shift; done ;;
esac""",
    "gpg": 'echo "pub:-:4096:1:9CD0A493D42D0685:1650000000:::-:::scSC::::::23::0:"; echo "fpr:::::::::${STUB_FINGERPRINT}:"',
    # The module is the last argument; one the kernel lacks is kmod's error and exit 1 (STUB_MODULES:
    # the modules present, default nvidia and efa, which the EKS AL2023 base images carry).
    "modinfo": """mod="${@: -1}"; [[ " ${STUB_MODULES-nvidia efa} " == *" $mod "* ]] || { echo "modinfo: ERROR: Module $mod not found." >&2; exit 1; }
case "$*" in *version*) echo "$STUB_MODULE_VERSION" ;; *license*) echo "$STUB_MODULE_LICENSE" ;; esac""",
    "rpm": """case "$*" in *--qf*) printf '%s' "${STUB_RPM_VERSION:-$STUB_MODULE_VERSION}" ;; esac""",
    "nvidia-smi": """case "$*" in *driver_version*) echo "$STUB_MODULE_VERSION"; echo "$STUB_MODULE_VERSION" ;; *) echo "NVIDIA-SMI $STUB_MODULE_VERSION" ;; esac""",
    "systemctl": """case "$1" in is-active) [[ " $STUB_ACTIVE " == *" ${*: -1} "* ]] ;; esac""",
    "sleep": """n=$(( $(cat "$STUB_STATE/sleeps" 2>/dev/null || echo 0) + 1 )); echo "$n" >"$STUB_STATE/sleeps"
[[ -n "$STUB_ON_SLEEP" && "$n" -ge "${STUB_SLEEP_AT:-1}" ]] && eval "$STUB_ON_SLEEP"; exit 0""",
    "dnf": _DNF,
    "nvidia-ctk": _NVIDIA_CTK,
}
COMMANDS = (
    "dnf",
    "rpm",
    "gpg",
    "curl",
    "systemctl",
    "modprobe",
    "modinfo",
    "uname",
    "nvidia-ctk",
    "nvidia-smi",
    "sleep",
)


@dataclass
class Run:
    returncode: int
    calls: list[list[str]]  # every stubbed command with its arguments, in order
    root: Path
    output: str

    def of(self, command: str) -> list[list[str]]:
        return [c[1:] for c in self.calls if c[0] == command]

    def dnf_installed(self) -> list[str]:
        """Every package spec passed to `dnf install`."""
        return [
            a for args in self.of("dnf") if "install" in args for a in args if not a.startswith("-") and a != "install"
        ]

    def locked(self) -> list[str]:
        return [a for args in self.of("dnf") if args[:2] == ["versionlock", "add"] for a in args[2:]]

    def systemctl(self, verb: str) -> list[str]:
        return [args[1] for args in self.of("systemctl") if args and args[0] == verb]

    def toolkit_config(self) -> dict[str, str]:
        """The toolkit's config.toml as `nvidia-ctk config --set` left it: top-level key = value."""
        path = self.root / TOOLKIT_CONFIG
        lines = path.read_text().splitlines() if path.exists() else []
        return dict(line.split(" = ", 1) for line in lines if " = " in line)


def run_bash(script: str, tmp: Path, env: dict[str, str] | None = None) -> Run:
    bin_dir, root, log, state = tmp / "bin", tmp / "root", tmp / "calls.log", tmp / "state"
    for folder in (bin_dir, root, state):
        folder.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    for name in COMMANDS:
        stub = bin_dir / name
        stub.write_text(_STUB + _ANSWERS.get(name, "") + "\n")
        stub.chmod(0o755)
    full_env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp),
        "ROOT": str(root),
        "STUB_LOG": str(log),
        "STUB_STATE": str(state),
        "STUB_KERNEL": KERNEL_6_12,
        "STUB_FINGERPRINT": NVIDIA_KEY_FINGERPRINT,
        "STUB_ACTIVE": "nvidia-persistenced.service",
        **dict.fromkeys(
            (
                "STUB_FAIL_MAKECACHE",
                "STUB_FAIL_MODULE",
                "STUB_MISSING",
                "STUB_UNLOCKABLE",
                "STUB_INSTANCE_TYPE",
                "STUB_ON_SLEEP",
                "STUB_FAIL_CTK",
            ),
            "",
        ),
        **(env or {}),
    }
    done = subprocess.run(["bash", "-c", script], env=full_env, capture_output=True, text=True, timeout=60)
    calls = [shlex.split(line) for line in log.read_text().splitlines() if line]
    return Run(done.returncode, calls, root, done.stdout + done.stderr)


def phase_commands(document: str, phase: str) -> str:
    """A phase's bash commands of an Image Builder component document, as one script (Image Builder's
    ExecuteBash runs a step's commands in one bash session)."""
    (found,) = [p for p in yaml.safe_load(document)["phases"] if p["name"] == phase]
    (step,) = found["steps"]
    assert step["action"] == "ExecuteBash"
    return "\n".join(step["inputs"]["commands"])


def build_step(document: str) -> str:
    return phase_commands(document, "build")


def exported(commands: str) -> dict[str, str]:
    """The `export NAME=value` lines at the top of the build step (quotes removed)."""
    found = {}
    for line in commands.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export ") :].partition("=")
            found[name] = value.strip("'")
    return found


def module_answers(driver: str, license_: str) -> dict[str, str]:
    return {"STUB_MODULE_VERSION": driver, "STUB_MODULE_LICENSE": license_}

"""The DRA driver's table (`dra.yaml`) read into typed rows: per driver version, what it needs of the
cluster and nodes and its feature gates. Read by the config model and by the policy pack alike, so
both judge a stack by the same facts; plus the one spelling of the gate string the kubelet plugin
reads (env FEATURE_GATES, flag --feature-gates)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import yaml

from gpu_platform import image_refs, versions

DRA_FILE = Path(__file__).with_name("dra.yaml")
OPERAND = "dra-driver"  # its key in gpu_platform/operands.yaml and a release's images
FEATURE_GATES_ENV = "FEATURE_GATES"
FEATURE_GATES_FLAG = "--feature-gates"
MATURITIES = ("alpha", "beta", "ga")


@dataclass(frozen=True)
class Gate:
    name: str
    maturity: str
    default: bool


@dataclass(frozen=True)
class Driver:
    version: str
    kubernetes: str  # the oldest Kubernetes minor
    driver_branch: int  # the oldest NVIDIA driver branch
    cdi_kubelet: str  # the oldest kubelet whose nodeadm-written containerd config has CDI on
    gates: Mapping[str, Gate]
    source: str

    def alpha(self) -> list[str]:
        return [n for n, g in self.gates.items() if g.maturity == "alpha"]


def _driver(version: str, row: dict) -> Driver:
    gates = {}
    for name, gate in row["gates"].items():
        if gate["maturity"] not in MATURITIES or not isinstance(gate["default"], bool):
            raise ValueError(f"{DRA_FILE.name}: drivers.{version}.gates.{name}: maturity one of {', '.join(MATURITIES)}, default a boolean")
        gates[name] = Gate(name, gate["maturity"], gate["default"])
    needs = row["requires"]
    return Driver(version, str(needs["kubernetes"]), int(needs["driverBranch"]), str(needs["cdiKubelet"]),
                  dict(sorted(gates.items())), row["source"])


@functools.lru_cache(maxsize=None)
def load(path: Path = DRA_FILE) -> dict[str, Driver]:
    document = yaml.safe_load(path.read_text())
    drivers = {version: _driver(version, row) for version, row in document["drivers"].items()}
    # The kubelet plugin's ResourceSlice admission policy refuses every write whose token names no
    # node: a driver row that allowed a Kubernetes where the node may be missing would deploy a plugin
    # that can publish nothing.
    locked = str(document["tokenNodeName"]["lockedOn"])
    for driver in drivers.values():
        if not versions.at_least(driver.kubernetes, locked):
            raise ValueError(f"{path.name}: drivers.{driver.version}.requires.kubernetes: {driver.kubernetes!r} is below "
                             f"{locked}, where {document['tokenNodeName']['feature']} (the token's node, which the "
                             f"kubelet plugin's ResourceSlice admission policy reads) is locked on; use {locked} or later")
    return drivers


def driver_of_image(image: str) -> Optional[Driver]:
    """The row of the driver an image reference runs (by its tag), None for a version the table lacks."""
    return load().get(image_refs.tag_of(image))


def format_gates(gates: Mapping[str, bool]) -> str:
    """{Name: bool} as the driver reads it: `A=true,B=false`, sorted by name (as the GPU Operator
    renders it, internal/render/render.go:158-172 at v26.7.0)."""
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in sorted(gates.items()))


def parse_gates(text: str) -> dict[str, bool]:
    """The inverse, tolerant as the component-base parser is of spaces and case of the value; an
    entry that is not `Name=bool` is kept as not on (the driver would refuse to start anyway)."""
    found = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name.strip():
            found[name.strip()] = value.strip().lower() == "true"
    return found

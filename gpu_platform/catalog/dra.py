"""The DRA driver's table (`dra.yaml`) read into typed rows: per driver version, what it needs of the
cluster and nodes and its feature gates. Read by the config model and by the policy pack alike, so
both judge a stack by the same facts; plus the one spelling of the gate string the kubelet plugin
reads (env FEATURE_GATES, flag --feature-gates)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpu_platform.catalog import image_refs, versions, yaml_files

DRA_FILE = Path(__file__).with_name("dra.yaml")
OPERAND = "dra-driver"  # its key in gpu_platform/catalog/operands.yaml and a release's images
FEATURE_GATES_ENV = "FEATURE_GATES"
FEATURE_GATES_FLAG = "--feature-gates"
MATURITIES = ("alpha", "beta", "ga")


@dataclass(frozen=True)
class Gate:
    name: str
    maturity: str
    default: bool


@dataclass(frozen=True)
class Rule:
    """One of the kubelet plugin's start-up checks between gates: `gate` on needs `other` on
    (`needs`), or `other` off (`excludes`)."""

    gate: str
    kind: str  # needs | excludes
    other: str
    source: str

    def broken(self, on: Mapping[str, bool]) -> bool:
        return on[self.gate] and on[self.other] == (self.kind == "excludes")


@dataclass(frozen=True)
class Driver:
    version: str
    kubernetes: str  # the oldest Kubernetes minor
    driver_branch: int  # the oldest NVIDIA driver branch
    cdi_kubelet: str  # the oldest kubelet whose nodeadm-written containerd config has CDI on
    gates: Mapping[str, Gate]
    source: str
    rules: tuple[Rule, ...] = ()
    unsupported: Mapping[str, str] = field(default_factory=dict)  # gate -> why this stack cannot run it

    def alpha(self) -> list[str]:
        return [n for n, g in self.gates.items() if g.maturity == "alpha"]

    def in_effect(self, given: Mapping[str, bool]) -> dict[str, bool]:
        """Every gate as the plugin sees it: the driver's defaults, then the stack's settings."""
        return {name: given.get(name, gate.default) for name, gate in self.gates.items()}

    def problems(self, given: Mapping[str, bool]) -> list[tuple[str, str, str]]:
        """(the gate to name, what is wrong, what would be valid) for each gate setting this driver
        cannot run with: a gate this stack does not support turned on, or a pair the kubelet plugin
        refuses at start. The gate named is one the stack set (`given`), so that the key in an error is
        one the user wrote."""
        on = self.in_effect(given)
        found = [
            (name, f"turns on {name}, which this stack does not support: {why}", f"{name}: false, or leave it out")
            for name, why in self.unsupported.items()
            if given.get(name)
        ]
        for rule in self.rules:
            if not rule.broken(on):
                continue
            state = {
                n: ("on" if on[n] else "off") + ("" if n in given else " by default") for n in (rule.gate, rule.other)
            }
            name = next(n for n in (rule.gate, rule.other) if n in given)
            relation = "needs" if rule.kind == "needs" else "excludes"
            fixes = [f"{rule.gate}: false"]
            if rule.other not in self.unsupported:
                fixes.append(f"{rule.other}: {'true' if rule.kind == 'needs' else 'false'}")
            found.append(
                (
                    name,
                    (
                        f"leaves {rule.gate} {state[rule.gate]} and {rule.other} {state[rule.other]}, but {rule.gate} "
                        f"{relation} {rule.other}: the DRA driver {self.version}'s kubelet plugin checks that first and "
                        f"exits on every node (kubernetes-sigs/dra-driver-nvidia-gpu {rule.source})"
                    ),
                    " or ".join(fixes),
                )
            )
        return found


def _driver(version: str, row: dict) -> Driver:
    gates = {}
    for name, gate in row["gates"].items():
        if gate["maturity"] not in MATURITIES or not isinstance(gate["default"], bool):
            raise ValueError(
                f"{DRA_FILE.name}: drivers.{version}.gates.{name}: maturity one of {', '.join(MATURITIES)}, default a boolean"
            )
        gates[name] = Gate(name, gate["maturity"], gate["default"])
    rules = []
    for i, rule in enumerate(row.get("rules", [])):
        kinds = [k for k in ("needs", "excludes") if k in rule]
        kind = kinds[0] if len(kinds) == 1 else None
        if kind is None or {rule["gate"], rule[kind]} - set(gates):
            raise ValueError(
                f"{DRA_FILE.name}: drivers.{version}.rules[{i}]: a gate and one of needs/excludes, both gates of the driver"
            )
        rules.append(Rule(rule["gate"], kind, rule[kind], rule["source"]))
    unsupported = row.get("unsupported", {})
    if set(unsupported) - set(gates):
        raise ValueError(
            f"{DRA_FILE.name}: drivers.{version}.unsupported: {sorted(set(unsupported) - set(gates))} are not gates of the driver"
        )
    needs = row["requires"]
    return Driver(
        version,
        str(needs["kubernetes"]),
        int(needs["driverBranch"]),
        str(needs["cdiKubelet"]),
        dict(sorted(gates.items())),
        row["source"],
        tuple(rules),
        dict(sorted(unsupported.items())),
    )


@functools.cache
def load(path: Path = DRA_FILE) -> dict[str, Driver]:
    document = yaml_files.load(path.read_text())
    drivers = {version: _driver(version, row) for version, row in document["drivers"].items()}
    # The kubelet plugin's ResourceSlice admission policy refuses every write whose token names no
    # node: a driver row that allowed a Kubernetes where the node may be missing would deploy a plugin
    # that can publish nothing.
    locked = str(document["tokenNodeName"]["lockedOn"])
    for driver in drivers.values():
        if not versions.at_least(driver.kubernetes, locked):
            raise ValueError(
                f"{path.name}: drivers.{driver.version}.requires.kubernetes: {driver.kubernetes!r} is below "
                f"{locked}, where {document['tokenNodeName']['feature']} (the token's node, which the "
                f"kubelet plugin's ResourceSlice admission policy reads) is locked on; use {locked} or later"
            )
    return drivers


def driver_of_image(image: str) -> Driver | None:
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

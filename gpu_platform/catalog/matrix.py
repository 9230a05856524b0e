"""The version matrix: `matrix.yaml` read into typed, immutable rows.

The YAML file is the single source of truth (each row keeps its source); this module only gives it
types and the few lookups every reader needs. The config model uses it for names (an unknown release
or MIG configuration), the policies for compatibility, the components for image references.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpu_platform.catalog import image_refs, operands, versions, yaml_files

MATRIX_FILE = Path(__file__).with_name("matrix.yaml")

# The images a release may pin, in the keys `matrix.yaml` (and operator.overrides) use: the operand
# registry's image keys (an operand that borrows another's image, the DRA validator, adds none).
OPERAND_IMAGES = operands.image_keys()


@dataclass(frozen=True)
class Release:
    name: str
    date: str
    kubernetes_min: str
    kubernetes_max: str
    driver_default: str
    driver_branches: tuple[int, ...]
    driver_versions: tuple[str, ...]
    cdi: bool
    images: Mapping[str, str]
    source: str

    def supports_kubernetes(self, minor: str) -> bool:
        return versions.at_least(minor, self.kubernetes_min) and versions.at_least(self.kubernetes_max, minor)

    @property
    def kubernetes_range(self) -> str:
        return f"{self.kubernetes_min}-{self.kubernetes_max}"

    def image(self, operand: str) -> str:
        return self.images[operand]

    @property
    def carried_operands(self) -> tuple[str, ...]:
        """The registry's operands this release carries (its `since` or later), whatever image they run."""
        return tuple(r.operand for r in operands.rows() if versions.at_least(self.name, r.since))

    def images_with(self, overrides: Mapping[str, str]) -> dict[str, str]:
        """The release's images with `operator.overrides` swapped in: same repository, the override's
        `tag[@sha256:...]` in place of the release's tag and digest."""
        return {
            op: str(image_refs.parse(ref).with_version(overrides[op])) if op in overrides else ref
            for op, ref in self.images.items()
        }

    @property
    def toolkit_version(self) -> str:
        return versions.image_tag_version(image_refs.tag_of(self.images["container-toolkit"]))


@dataclass(frozen=True)
class Mig:
    profiles: Mapping[str, int]
    balanced: Mapping[str, int]
    source: str

    def configs(self) -> dict[str, dict[str, int]]:
        """The named configurations of NVIDIA's default mig-parted config for this GPU: each
        `all-<profile>` fills the GPU with its maximum count of one profile (`+me` is spelled `.me`
        in the name), `all-balanced` mixes, `all-disabled` and `all-enabled` carve nothing."""
        named: dict[str, dict[str, int]] = {"all-disabled": {}, "all-enabled": {}}
        for profile, count in self.profiles.items():
            named["all-" + profile.replace("+", ".")] = {profile: count}
        named["all-balanced"] = dict(self.balanced)
        return named

    def serving_configs(self) -> dict[str, dict[str, int]]:
        """The configurations under which a node offers GPUs: all but all-enabled, which turns MIG on
        and carves nothing, so the device plugin has no whole GPU (a MIG-enabled GPU is none) and no
        instance to offer (k8s-device-plugin v0.18.1 internal/rm/device_map.go:120, :171 only warns)."""
        return {name: layout for name, layout in self.configs().items() if name != "all-enabled"}


@dataclass(frozen=True)
class Gpu:
    key: str
    aws_name: str
    aws_memory_mib: int | None
    families: tuple[str, ...]
    architecture: str
    compute_capability: str
    product: str
    min_driver: str
    min_driver_basis: str
    nvswitch: bool
    mig: Mig | None
    source: str
    # The kernel module flavours (open, proprietary) an image may load on it, the preferred first.
    kernel_modules: tuple[str, ...] = ("open",)
    # Fourth-generation NVSwitch: the NVLink subnet manager and ib_umad run beside the fabric manager.
    nvlink_subnet_manager: bool = False
    # AWS turns the GSP firmware off on this GPU (proprietary modules only): matrix.yaml gspFirmwareOff.
    gsp_firmware_off: bool = False

    def nvswitch_in(self, gpu_count: int) -> bool:
        """Whether an instance with `gpu_count` of these GPUs has NVSwitch: a switch joins GPUs, so one
        GPU of an NVSwitch model (p5.4xlarge) has none (matrix.yaml, the note on nvswitch)."""
        return self.nvswitch and gpu_count > 1


@dataclass(frozen=True)
class Cuda:
    toolkits: Mapping[str, str]
    major_minimum: Mapping[int, str]
    source: str

    def minimum_driver(self, cuda: str) -> str:
        return self.toolkits[cuda]

    def major_floor(self, cuda: str) -> str:
        """The lowest driver that runs any toolkit of this CUDA major (minor-version compatibility)."""
        return self.major_minimum[versions.major(cuda)]


@dataclass(frozen=True)
class EksNvidiaAmi:
    """AWS's accelerated AL2023 x86_64 AMI of one amazon-eks-ami release for one Kubernetes minor, and
    what it carries (its release's CHANGELOG entry)."""

    release: str  # v20260714
    kubernetes: str  # 1.33
    ami_name: str  # amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260714
    release_version: str  # 1.33.13-20260714
    driver: str
    toolkit: str
    kernel: str  # the kernel package, e.g. kernel6.12-6.12.94-123.180.amzn2023
    source: str


@dataclass(frozen=True)
class Matrix:
    releases: Mapping[str, Release]
    cuda: Cuda
    gpus: Mapping[str, Gpu]
    mig_config_names: frozenset[str] = field(default_factory=frozenset)
    # amazon-eks-ami release -> Kubernetes minor -> its nvidia AMI
    eks_nvidia_amis: Mapping[str, Mapping[str, EksNvidiaAmi]] = field(default_factory=dict)
    # The instance families EC2 sells Capacity Blocks for (matrix.yaml capacityBlocks).
    capacity_block_families: tuple[str, ...] = ()

    def release(self, name: str) -> Release:
        return self.releases[name]

    def gpu_for_instance_type(self, instance_type: str) -> Gpu | None:
        """The matrix row for an EC2 instance type by its family (`p5.48xlarge` -> p5 -> H100-80GB):
        each GPU's families are its own (tests check them against AWS's catalogue)."""
        family = instance_type.split(".", 1)[0]
        return next((gpu for gpu in self.gpus.values() if family in gpu.families), None)

    def gpu_for_aws(self, name: str, memory_mib: int) -> Gpu | None:
        """The matrix row for a GPU as AWS's instance catalogue names it; memory tells apart models
        AWS names alike (A100 with 40 or 80 GB)."""
        for gpu in self.gpus.values():
            if gpu.aws_name == name and gpu.aws_memory_mib in (None, memory_mib):
                return gpu
        return None


def _gpu(key: str, row: dict) -> Gpu:
    mig = row.get("mig")
    return Gpu(
        key=key,
        aws_name=row["aws"]["name"],
        aws_memory_mib=row["aws"].get("memoryMiB"),
        families=tuple(row.get("families", ())),
        architecture=row["architecture"],
        compute_capability=str(row["computeCapability"]),
        product=row["product"],
        min_driver=str(row["minDriver"]),
        min_driver_basis=row.get("minDriverBasis", ""),
        nvswitch=bool(row.get("nvswitch", False)),
        mig=Mig(dict(mig["profiles"]), dict(mig["balanced"]), mig.get("source", "")) if mig else None,
        source=row.get("source", ""),
        kernel_modules=tuple(row["kernelModules"]),
        nvlink_subnet_manager=bool(row.get("nvlinkSubnetManager", False)),
        gsp_firmware_off=bool(row.get("gspFirmwareOff", False)),
    )


def _check_images(name: str, row: dict, path: Path) -> None:
    """A release pins an image for exactly the operands the registry says it carries: those whose
    first release (`since`) is this one or older, and no key the registry does not know; each image is
    `repository:tag`, with `@sha256:<64 hex>` after the tag when it is pinned by digest."""
    for operand, ref in row["images"].items():
        problem = image_refs.problem(str(ref))
        if problem:
            raise ValueError(
                f"{path.name}: releases.{name}.images.{operand}: {problem} "
                f"(e.g. nvcr.io/nvidia/k8s-device-plugin:v0.18.1@{image_refs.DIGEST_EXAMPLE})"
            )
    have = set(row["images"])
    unknown = have - set(OPERAND_IMAGES)
    if unknown:
        raise ValueError(
            f"{MATRIX_FILE.name}: releases.{name}.images: {', '.join(sorted(unknown))} not in the operand "
            f"registry ({operands.REGISTRY_FILE.name})"
        )
    for key in OPERAND_IMAGES:
        # An image is carried from the first release of any operand that runs it (the validator's from
        # the validator's, not from the DRA validator's later one).
        since = min((r.since for r in operands.rows() if r.image == key), key=versions.parse)
        carried = versions.at_least(name, since)
        if carried != (key in have):
            raise ValueError(
                f"{MATRIX_FILE.name}: releases.{name}.images: {key} "
                f"{'missing' if carried else 'given'}, but the registry says it ships from {since}"
            )


def _release(name: str, row: dict, path: Path) -> Release:
    _check_images(name, row, path)
    drivers = row["drivers"]
    return Release(
        name=name,
        date=str(row["date"]),
        kubernetes_min=str(row["kubernetes"]["min"]),
        kubernetes_max=str(row["kubernetes"]["max"]),
        driver_default=str(drivers["default"]),
        driver_branches=tuple(int(b) for b in drivers["branches"]),
        driver_versions=tuple(str(v) for v in drivers["versions"]),
        cdi=bool(row.get("cdi", False)),
        images={op: row["images"][op] for op in OPERAND_IMAGES if op in row["images"]},
        source=row["source"],
    )


@functools.cache
def load(path: Path = MATRIX_FILE) -> Matrix:
    # libyaml's loader: the matrix is the largest file the program reads (10x faster than pure Python).
    raw = yaml_files.load(path.read_text())
    cuda = raw["cuda"]
    compat = cuda["minor_version_compatibility"]
    gpus = {key: _gpu(key, row) for key, row in raw["gpus"].items()}
    mig_names = frozenset(name for gpu in gpus.values() if gpu.mig for name in gpu.mig.configs())
    return Matrix(
        releases={name: _release(name, row, path) for name, row in raw["releases"].items()},
        cuda=Cuda(
            toolkits={str(k): str(v) for k, v in cuda["toolkits"].items()},
            major_minimum={int(k): str(v) for k, v in compat.items() if k != "source"},
            source=cuda["source"],
        ),
        gpus=gpus,
        mig_config_names=mig_names,
        eks_nvidia_amis=_eks_nvidia_amis(raw.get("eksNvidiaAmis") or {}),
        capacity_block_families=tuple((raw.get("capacityBlocks") or {}).get("families", ())),
    )


def _eks_nvidia_amis(raw: dict) -> dict[str, dict[str, EksNvidiaAmi]]:
    return {
        release: {
            minor: EksNvidiaAmi(
                release=release,
                kubernetes=str(minor),
                ami_name=row["ami"],
                release_version=str(row["releaseVersion"]),
                driver=str(row["driver"]),
                toolkit=str(row["toolkit"]),
                kernel=str(row["kernel"]),
                source=f"{raw['source']} lines {row['lines']}",
            )
            for minor, row in entry["kubernetes"].items()
        }
        for release, entry in raw.get("releases", {}).items()
    }

"""gpu-platform:nodeImage: the image GPU nodes boot, which carries the NVIDIA driver (and, baked,
the container toolkit)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, StrictBool, field_validator, model_validator

from gpu_platform.catalog import matrix
from gpu_platform.config.errors import ConfigProblem, listed, shown
from gpu_platform.config.quoted_version import quoted_version
from gpu_platform.config.section import Section, pattern


class NodeImage(Section):
    source: Literal["bake", "ami", "eks-nvidia"] = Field(
        description="Where the image comes from. bake: built in the stack by EC2 Image Builder. ami: a pinned AMI, "
        "already baked. eks-nvidia: AWS's accelerated AL2023 AMI of one amazon-eks-ami release, its "
        "driver AWS's."
    )
    driver_version: str | None = Field(
        default=None,
        alias="driverVersion",
        description='The NVIDIA driver version, quoted (e.g. "580.105.08"). Required with bake and ami; '
        "with eks-nvidia, the release's driver (matrix.yaml eksNvidiaAmis).",
    )
    release: str | None = Field(
        default=None,
        description="With eks-nvidia (and only then): the amazon-eks-ami release whose nvidia AMI the nodes boot "
        "(e.g. v20260714).",
    )
    ami_id: str | None = Field(
        default=None,
        alias="amiId",
        pattern=pattern(
            r"^ami-[0-9a-f]{8,17}$", "not an AMI id (ami- and 8 to 17 lowercase hex digits, e.g. ami-0123456789abcdef0)"
        ),
        description="With ami (and only then): the id of the baked AMI.",
    )
    toolkit_baked: StrictBool | None = Field(
        default=None,
        alias="toolkitBaked",
        description="Whether the image registers the NVIDIA container runtime itself, so no toolkit DaemonSet runs. "
        "Unset: true with bake and eks-nvidia, false with ami.",
    )
    # Pinned, so that AWS publishing a newer base image rebuilds nothing.
    base_image_release: str | None = Field(
        default=None,
        alias="baseImageRelease",
        description="With bake: the EKS AMI release the bake starts from (e.g. v20260714). Unset: the Kubernetes "
        "minor's row of gpu_platform/catalog/eks_ami_releases.yaml.",
    )

    @field_validator("release", mode="before")
    @classmethod
    def _eks_release(cls, value: Any) -> Any:
        # Before the type check: `release: 20260714` is a number in YAML, and its message must still
        # list the releases (written with the v, as the tags are).
        known = matrix.load().eks_nvidia_amis
        if value is not None and value not in known:
            raise ConfigProblem(
                f"{shown(value)} is not an amazon-eks-ami release the matrix records the nvidia AMI of "
                f"(valid: {listed(known)}; a newer one is added to gpu_platform/catalog/matrix.yaml eksNvidiaAmis from its "
                "CHANGELOG entry)"
            )
        return value

    @field_validator("base_image_release", mode="before")
    @classmethod
    def _release(cls, value: Any) -> Any:
        # Release tags of awslabs/amazon-eks-ami are "v" and the build date (v20260714).
        if value is not None and (not isinstance(value, str) or not re.fullmatch(r"v20\d{6}", value)):
            raise ConfigProblem(
                f"{shown(value)} is not an EKS AMI release (a release tag of github.com/awslabs/amazon-eks-ami, "
                "v and the release date, e.g. v20260714)"
            )
        return value

    @field_validator("driver_version", mode="before")
    @classmethod
    def _driver(cls, value: Any) -> Any:
        return quoted_version(value, r"\d{3}\.\d{1,3}(\.\d{1,3})?", "an NVIDIA driver version", "580.105.08")

    @model_validator(mode="after")
    def _toolkit_default(self) -> NodeImage:
        if self.toolkit_baked is None:
            object.__setattr__(self, "toolkit_baked", self.source in ("bake", "eks-nvidia"))
        return self

    @model_validator(mode="after")
    def _eks_nvidia(self) -> NodeImage:
        if self.source != "eks-nvidia":
            if self.release:
                raise ConfigProblem(f"release is only for source: eks-nvidia (this image is source: {self.source})")
            if self.driver_version is None:
                raise ConfigProblem(f'driverVersion is required with source: {self.source} (e.g. "580.105.08")')
            return self
        if not self.release:
            raise ConfigProblem(
                "required with source: eks-nvidia (an amazon-eks-ami release, e.g. v20260714; "
                f"valid: {listed(matrix.load().eks_nvidia_amis)})",
                path=("release",),
            )
        for key, value in (("amiId", self.ami_id), ("baseImageRelease", self.base_image_release)):
            if value:
                raise ConfigProblem(
                    f"not for source: eks-nvidia (AWS's AMI of release {self.release} is the image); remove it",
                    path=(key,),
                )
        drivers = {ami.driver for ami in matrix.load().eks_nvidia_amis[self.release].values()}
        if self.driver_version is None and len(drivers) == 1:
            object.__setattr__(self, "driver_version", drivers.pop())
        elif self.driver_version not in drivers:
            raise ConfigProblem(
                f"{shown(self.driver_version)} is not the driver of the {self.release} nvidia AMI "
                f"(valid: {listed(drivers)}, or leave it out); with source: eks-nvidia the driver is "
                "AWS's",
                path=("driverVersion",),
            )
        if not self.toolkit_baked:
            raise ConfigProblem(
                "false does not fit source: eks-nvidia: AWS's AMI carries the container toolkit and "
                "nodeadm makes nvidia containerd's default runtime, so a toolkit DaemonSet would be a "
                "second "
                "owner (valid: true, or leave it out)",
                path=("toolkitBaked",),
            )
        return self

    @model_validator(mode="after")
    def _ami_with_source(self) -> NodeImage:
        if self.source == "ami" and not self.ami_id:
            raise ConfigProblem("amiId is required with source: ami (a pinned, already baked AMI)")
        if self.source == "bake" and self.ami_id:
            raise ConfigProblem("amiId is only for source: ami; source: bake builds the AMI in the stack")
        if self.source == "ami" and self.base_image_release:
            raise ConfigProblem(
                "baseImageRelease is only for source: bake; a pinned AMI (source: ami) is already built"
            )
        return self

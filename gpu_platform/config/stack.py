"""The whole stack configuration: its sections, and the rules across them (quotas over all pools, an
override that no operand of this stack would apply)."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import Field, field_validator, model_validator

from gpu_platform.catalog import aws_limits, matrix, operands
from gpu_platform.config.allocation import Allocation, check_dra_feature_gates, check_dra_renderable
from gpu_platform.config.audit import Audit
from gpu_platform.config.cluster import Cluster
from gpu_platform.config.errors import ConfigProblem, shown
from gpu_platform.config.monitoring import Monitoring
from gpu_platform.config.node_image import NodeImage
from gpu_platform.config.node_pool import NodePool
from gpu_platform.config.operator import Operator
from gpu_platform.config.section import Section
from gpu_platform.config.workloads import Workloads
from gpu_platform.interface import admission

PROJECT = "gpu-platform"


class StackConfig(Section):
    region: str = Field(
        alias="aws:region",
        description="The AWS region the stack deploys to (e.g. us-west-2), in the aws, aws-cn or aws-us-gov partition.",
    )
    # Where the program's AWS calls go and as whom, which the privilege ledger binds
    # (contract.AWS_PROVIDER_KEY). Set by parse() from the raw config; "aws:*" is never a key of its own.
    aws_provider: tuple[str, ...] = Field(
        default=(),
        alias="aws:*",
        description="Any other setting of the AWS provider (aws:profile, aws:endpoints, aws:assumeRoles, ...), "
        "recorded in the privilege ledger (a credential only as `(set)`).",
    )
    cluster: Cluster = Field(alias="gpu-platform:cluster", description="The EKS cluster, created or adopted.")
    operator: Operator = Field(alias="gpu-platform:operator", description="The GPU Operator release and its overrides.")
    node_image: NodeImage = Field(
        alias="gpu-platform:nodeImage", description="The image the GPU nodes boot, with the NVIDIA driver."
    )
    workloads: Workloads = Field(
        alias="gpu-platform:workloads",
        description="What the GPU workloads need, and who may run privileged on GPU nodes.",
    )
    node_pools: tuple[NodePool, ...] = Field(
        alias="gpu-platform:nodePools", min_length=1, description="The GPU node pools: one EKS managed node group each."
    )
    audit: Audit = Field(
        alias="gpu-platform:audit", description="Who owns the privileged software, and the approval that covers it."
    )
    monitoring: Monitoring = Field(
        default_factory=Monitoring,
        alias="gpu-platform:monitoring",
        description="Prometheus scraping of the DCGM exporter, and a Grafana dashboard.",
    )
    allocation: Allocation = Field(
        default_factory=Allocation,
        alias="gpu-platform:allocation",
        description="How pods get GPUs: the device plugin or DRA.",
    )

    @field_validator("region", mode="before")
    @classmethod
    def _known_region(cls, value: Any) -> Any:
        if not isinstance(value, str) or aws_limits.partition_of(value) is None:
            near = difflib.get_close_matches(str(value), list(aws_limits.regions()), n=3)
            hint = (
                f"did you mean {', '.join(near[:-1]) + ' or ' + near[-1] if len(near) > 1 else near[0]}?"
                if near
                else "e.g. us-west-2, eu-central-1, cn-north-1, us-gov-west-1"
            )
            raise ConfigProblem(
                f"{shown(value)} is not a region of the aws, aws-cn or aws-us-gov partition ({hint}); "
                "a "
                f"region AWS opened after gpu_platform/catalog/aws_limits.yaml was written is added there"
            )
        return value

    @property
    def privilege_actions(self) -> tuple[str, ...]:
        """The GPU-privilege policy's validationActions (gpu-platform:workloads.privilegeAdmission)."""
        chosen = self.workloads.privilege_admission or ("deny" if self.cluster.create else "warn")
        return admission.DENY_ACTIONS if chosen == "deny" else admission.WARN_ACTIONS

    @property
    def dra(self) -> bool:
        return self.allocation.mode == "dra"

    @property
    def release(self) -> matrix.Release:
        return matrix.load().release(self.operator.release)

    @field_validator("node_pools")
    @classmethod
    def _unique_pools(cls, pools: tuple[NodePool, ...]) -> tuple[NodePool, ...]:
        seen: set[str] = set()
        for i, pool in enumerate(pools):
            if pool.name in seen:
                raise ConfigProblem(f"pool name {pool.name!r} is used twice; names must be unique", path=(i, "name"))
            seen.add(pool.name)
        return pools

    @model_validator(mode="after")
    def _node_group_quota(self) -> StackConfig:
        # Each pool is a managed node group, a created cluster adds its system group, and a blue-green
        # pool has two while it is replaced (components/aws/node_pool.py).
        needed = (
            len(self.node_pools)
            + (1 if self.cluster.create else 0)
            + sum(1 for pool in self.node_pools if pool.rollout == "blue-green")
        )
        quota, code = aws_limits.node_groups_per_cluster()
        if needed > quota:
            raise ConfigProblem(
                f"{len(self.node_pools)} pools need {needed} managed node groups at once (one each"
                f"{', the system group' if self.cluster.create else ''}"
                f"{', a second per blue-green pool while it is replaced' if needed > len(self.node_pools) + self.cluster.create else ''}); "
                f"a cluster may have {quota} by default (EKS quota {code}): raise it in Service Quotas first, or use "
                "fewer pools",
                path=("gpu-platform:nodePools",),
            )
        return self

    @model_validator(mode="after")
    def _toolkit_override_applies(self) -> StackConfig:
        # A baked toolkit is the release's version, installed by the bake (or AWS's, in its AMI): no
        # toolkit DaemonSet runs for the override to change, and a patch the user believes applied
        # (a CVE fix) would not be on any node.
        if "container-toolkit" in self.operator.overrides and self.node_image.toolkit_baked:
            raise ConfigProblem(
                f"{self.operator.overrides['container-toolkit']!r}: the node image bakes the container toolkit "
                f"(gpu-platform:nodeImage.toolkitBaked is true, source {self.node_image.source!r}), at the version of "
                f"release {self.operator.release} ({self.release.toolkit_version}); no toolkit DaemonSet runs for the "
                "override to change (valid: remove the override and move to a release or node image with the toolkit "
                "you need, or set nodeImage.toolkitBaked: false to run the toolkit as a DaemonSet)",
                path=("gpu-platform:operator", "overrides", "container-toolkit"),
            )
        return self

    @model_validator(mode="after")
    def _overrides_apply(self) -> StackConfig:
        # Any other override of an image no operand of this stack runs (the MIG manager without a MIG
        # pool, the device plugin in mode dra, the DRA driver outside it): applied nowhere, it would
        # read as a fix that is not on any node. Where each runs: gpu_platform/catalog/operands.yaml `on`.
        any_mig = any(pool.mig for pool in self.node_pools)
        dra_mode = self.allocation.mode == "dra"
        for key in sorted(self.operator.overrides):
            users = [row for row in operands.rows() if row.image == key]
            if not users:
                continue  # an unknown key is refused elsewhere (the toolkit's case said above, in its own words)
            if not any(row.deployed(bool(self.node_image.toolkit_baked), any_mig, dra_mode) for row in users):
                where = sorted({row.on for row in users})
                raise ConfigProblem(
                    f"{self.operator.overrides[key]!r}: no {key} runs in this stack (it runs on {', '.join(where)}: "
                    f"gpu_platform/catalog/operands.yaml; this stack has {'a' if any_mig else 'no'} MIG pool, allocation mode "
                    f"{self.allocation.mode}), so the override would apply to no node (valid: remove it)",
                    path=("gpu-platform:operator", "overrides", key),
                )
        return self

    @model_validator(mode="after")
    def _dra_renderable(self) -> StackConfig:
        check_dra_renderable(self)
        return self

    @model_validator(mode="after")
    def _dra_feature_gates(self) -> StackConfig:
        check_dra_feature_gates(self)
        return self

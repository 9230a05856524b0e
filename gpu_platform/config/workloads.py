"""gpu-platform:workloads: what the cluster's GPU workloads need (CUDA versions), and which of their
namespaces may run privileged on GPU nodes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from gpu_platform.catalog import matrix, versions
from gpu_platform.config.errors import ConfigProblem, shown
from gpu_platform.config.kubernetes_names import NAMESPACE, NAMESPACE_FORM
from gpu_platform.config.quoted_version import version_problem
from gpu_platform.config.section import Section
from gpu_platform.interface import admission, contract


class Workloads(Section):
    cuda_versions: tuple[str, ...] = Field(
        alias="cudaVersions",
        min_length=1,
        description='The CUDA toolkit versions the workloads are built with, quoted (e.g. ["12.8"]): versions the '
        "matrix knows. The policy pack checks that the driver runs each.",
    )
    # Written into the GPU-access admission policy, whose spec the privilege ledger hashes.
    privileged_namespaces: tuple[str, ...] = Field(
        default=(),
        alias="privilegedNamespaces",
        description="Namespaces of your own trusted with GPU nodes (e.g. a GPU monitoring agent's): both GPU admission "
        "policies leave their pods alone (privileged or SYS_ADMIN containers, device variables, CDI "
        "annotations, device mounts). Not default or the operator's. Listing one needs a new approval.",
    )
    # warn lets an adopted cluster's own privileged agents (a CNI, a security agent) keep running while
    # you list their namespaces (StackConfig.privilege_actions).
    privilege_admission: Literal["deny", "warn"] | None = Field(
        default=None,
        alias="privilegeAdmission",
        description="What the GPU-privilege admission policy does with a privileged pod on a GPU node outside the "
        "exempt namespaces. "
        "deny: refuses it. warn: admits it with a warning and an audit-log entry. "
        "Unset: deny on a cluster the stack creates, warn on an adopted one.",
    )

    @field_validator("privileged_namespaces", mode="before")
    @classmethod
    def _namespaces(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        for i, name in enumerate(value):
            if not isinstance(name, str) or not NAMESPACE.fullmatch(name):
                raise ConfigProblem(f"{shown(name)} is not a Kubernetes namespace name ({NAMESPACE_FORM})", path=(i,))
            if name in (*admission.PRIVILEGED_NAMESPACES, contract.OPERATOR_NAMESPACE):
                raise ConfigProblem(
                    f"{shown(name)} is exempt already (the operator namespace, or "
                    "gpu_platform/interface/admission.py PRIVILEGED_NAMESPACES); list only your own namespaces",
                    path=(i,),
                )
            if name == "default":
                raise ConfigProblem(
                    "'default' is where pods without a namespace land: trusting it would let any pod "
                    "take every GPU of a node; run your agent in a namespace of its own and list that",
                    path=(i,),
                )
            if name in value[:i]:
                raise ConfigProblem(f"{shown(name)} is listed twice", path=(i,))
        return tuple(value)

    @field_validator("cuda_versions", mode="before")
    @classmethod
    def _known_cuda(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        known = matrix.load().cuda.toolkits
        valid = ", ".join(sorted(known, key=versions.parse))
        for i, cuda in enumerate(value):
            problem = version_problem(cuda, r"\d+\.\d+(\.\d+)?", "a CUDA toolkit version", "12.8", valid, path=(i,))
            if problem is None and cuda not in known:
                problem = ConfigProblem(
                    f"{shown(cuda)} is not a CUDA toolkit version the matrix knows (valid: {valid})", path=(i,)
                )
            if problem:
                raise problem
            if cuda in value[:i]:
                raise ConfigProblem(f"{shown(cuda)} is listed twice", path=(i,))
        return tuple(value)

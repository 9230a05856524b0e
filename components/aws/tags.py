"""Tags every AWS resource of the stack carries, and the audit tags of those that run the
privileged GPU software (node images, launch templates, node groups)."""

from __future__ import annotations

from gpu_platform.config.audit import Audit
from gpu_platform.interface import contract


def stack_tags(stack: str, audit: Audit) -> dict[str, str]:
    return {"gpu-platform.io/stack": stack, "gpu-platform.io/owner": audit.owner}


def audit_tags(audit: Audit, software: list[str]) -> dict[str, str]:
    """The privileged software these machines run, who owns it and the record that approved it."""
    return {
        contract.AUDIT_TAG_SOFTWARE: " + ".join(software),
        contract.AUDIT_TAG_OWNER: audit.owner,
        contract.AUDIT_TAG_APPROVAL: audit.approval,
    }


def declared_facts(release: str, cuda_versions, image_source: str) -> dict[str, str]:
    """Stack facts the policy pack checks on the node image, launch templates and node groups
    before they are created (policy/compatibility.py). Resource tags only: never on an AMI or an
    instance, so changing the release or the CUDA versions replaces no node and rebuilds no image."""
    return {
        contract.OPERATOR_RELEASE_KEY: release,
        contract.CUDA_VERSIONS_KEY: contract.join_values(cuda_versions),
        contract.IMAGE_SOURCE_TAG: image_source,
    }


def node_software(
    driver_version: str,
    toolkit_baked: bool,
    fabric_manager: bool,
    kernel_module: str | None = None,
    nvlink_subnet_manager: bool = False,
) -> list[str]:
    """The kernel module flavour is named when the stack bakes the image (and so knows it)."""
    software = [f"nvidia-driver {driver_version} ({kernel_module + ' ' if kernel_module else ''}kernel modules)"]
    if toolkit_baked:
        software.append("nvidia-container-toolkit (containerd runtime nvidia)")
    if fabric_manager:
        software.append(f"nvidia-fabricmanager {driver_version}")
    if nvlink_subnet_manager:
        software.append("nvlsm (NVLink subnet manager)")
    return software

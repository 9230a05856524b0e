"""`python -m preview verify-ami`: the pre-flight check of a pinned node image (`nodeImage.source: ami`).

    python -m preview verify-ami [--stack NAME | --config FILE] [--debug]

First checks the stack as the preview checks it (the program run offline), then asks EC2 (boto3, the
stack's `aws:region`, the caller's credentials) whether the AMI exists and whether its tags declare
what the stack expects: the driver version, the Kubernetes version, the architecture, whether the
toolkit is baked (and which, when it is), the kernel module flavour every pool's GPU loads, and, when
a pool has EFA, a base release whose image carries the EFA kernel driver. The
keys are the ones a baked image carries (`components.aws.node_image.image_tags`, and the flavour in
its privileged-software audit tag, `node_image.kernel_module_declared`), so a pinned AMI is held to
the same record.

Exit 0: the AMI matches; 1: missing or a tag mismatch (each named with both values); 2: a
configuration error, or `source: bake` or `eks-nvidia` (nothing pinned, nothing to verify); 3: AWS
could not be asked (no credentials, no network, access denied, a setting boto3 refuses): no verdict
either way, or a bug (one line; the traceback with --debug); 130: interrupted. The flags, the checks
of the stack and the exit codes other than 1 are the preview's own (`preview/__main__.py`).
"""

from __future__ import annotations

import sys
from typing import Any

from components.aws.node_image import (
    ARCHITECTURE_TAG,
    BASE_RELEASE_TAG,
    TOOLKIT_VERSION_TAG,
    image_tags,
    kernel_module_declared,
)
from gpu_platform.catalog import aws_limits, matrix
from gpu_platform.interface import contract
from gpu_platform.interface.resource_types import EKS_NODE_GROUP as _NODE_GROUP

EXIT_OK, EXIT_MISMATCH, EXIT_CONFIG, EXIT_UNASKED = 0, 1, 2, 3

# Which stack key each declared tag comes from, so a mismatch says what to change on either side.
_SOURCE_KEYS = {
    contract.DRIVER_VERSION_TAG: "gpu-platform:nodeImage.driverVersion",
    contract.KUBERNETES_VERSION_TAG: "gpu-platform:cluster.kubernetesVersion",
    contract.TOOLKIT_BAKED_TAG: "gpu-platform:nodeImage.toolkitBaked",
    TOOLKIT_VERSION_TAG: "the container toolkit of gpu-platform:operator.release",
    ARCHITECTURE_TAG: "the node image architecture (x86_64 only)",
}


def expected_tags(config: Any) -> dict[str, str]:
    """The tags a node image for this stack declares (the same function the bake tags with)."""
    return image_tags(config.node_image, config.cluster.kubernetes_version, config.release.toolkit_version)


# One pool as the AMI must serve it: its index in nodePools, instance type and GPU model (the matrix's).
PoolGpu = tuple[int, str, str]


def pool_gpus(config: Any, recording: Any) -> list[PoolGpu]:
    """Each pool's GPU model, as the program found it (the node groups' gpu-model tag)."""
    models = {}
    for r in recording.of_type(_NODE_GROUP):
        tags = r.inputs.get("tags") or {}
        models[tags.get(contract.POOL_LABEL)] = tags.get(contract.GPU_MODEL_TAG)
    return [(i, p.instance_type, models[p.name]) for i, p in enumerate(config.node_pools) if models.get(p.name)]


def efa_pools(config: Any, recording: Any) -> list[int]:
    """The indexes of the pools whose node groups have EFA interfaces (the efa-interfaces tag)."""
    with_efa = {
        (r.inputs.get("tags") or {}).get(contract.POOL_LABEL)
        for r in recording.of_type(_NODE_GROUP)
        if (r.inputs.get("tags") or {}).get(contract.EFA_INTERFACES_TAG, "0") != "0"
    }
    return [i for i, p in enumerate(config.node_pools) if p.name in with_efa]


def _efa_problems(tags: dict[str, str], ami_id: str, efa: list[int]) -> list[str]:
    """An EFA pool needs the EFA kernel driver in the image: a base release from the first one whose
    standard AL2023 image carries it (gpu_platform/catalog/aws_limits.yaml efa.standard_ami_from_release),
    declared as the bake declares its base (tag BASE_RELEASE_TAG). Without it NCCL falls back to TCP
    between the nodes, and nothing fails."""
    if not efa:
        return []
    key, need = "gpu-platform:nodeImage.amiId", aws_limits.efa_in_standard_ami_from()
    pools = ", ".join(f"gpu-platform:nodePools[{i}]" for i in efa)
    base = tags.get(BASE_RELEASE_TAG)
    if base is None:
        return [
            (
                f"{key}: {ami_id} declares no base image release (tag {BASE_RELEASE_TAG}, as the bake writes it), so "
                f"nothing shows it has the EFA kernel driver {pools} needs (EKS AL2023 images carry it from {need}); "
                f"tag the AMI with the release it was built from, or set efa: false on the pool"
            )
        ]
    if base < need:  # releases are vYYYYMMDD: text order is date order
        return [
            (
                f"{key}: {ami_id} was built from EKS AMI release {base} (tag {BASE_RELEASE_TAG}), before {need}, the "
                f"first whose AL2023 image carries the EFA kernel driver {pools} needs; rebuild it from {need} or "
                f"later, or set efa: false on the pool"
            )
        ]
    return []


def _flavour_problems(tags: dict[str, str], ami_id: str, pools: list[PoolGpu]) -> list[str]:
    """The kernel module flavour the AMI declares (its privileged-software tag, as the bake writes it)
    against the flavours the pools' GPUs accept (gpu_platform/catalog/matrix.yaml kernelModules): a baked
    image carries one flavour, and a GPU that cannot load it has no driver on that node."""
    key = "gpu-platform:nodeImage.amiId"
    gpus = matrix.load().gpus
    accepted = [(i, instance_type, gpus[model]) for i, instance_type, model in pools if model in gpus]
    if not accepted:
        return []
    common = [f for f in ("open", "proprietary") if all(f in gpu.kernel_modules for _, _, gpu in accepted)]
    flavour = kernel_module_declared(tags.get(contract.AUDIT_TAG_SOFTWARE))
    if flavour is None:
        return [
            (
                f"{key}: {ami_id} declares no kernel module flavour (tag {contract.AUDIT_TAG_SOFTWARE}, as the bake writes "
                f"it: 'nvidia-driver <version> (<flavour> kernel modules)'); the stack's pools need "
                f"{' or '.join(common) or 'one flavour per pool'}"
            )
        ]
    return [
        f"{key}: {ami_id} carries the {flavour} NVIDIA kernel modules (tag {contract.AUDIT_TAG_SOFTWARE}); "
        f"gpu-platform:nodePools[{i}].instanceType {instance_type!r} ({gpu.key}) loads only the "
        f"{' or '.join(gpu.kernel_modules)} ones"
        for i, instance_type, gpu in accepted
        if flavour not in gpu.kernel_modules
    ]


def problems(
    image: dict[str, Any] | None,
    ami_id: str,
    expected: dict[str, str],
    pools: list[PoolGpu] | None = None,
    efa: list[int] | None = None,
) -> list[str]:
    """Every way the AMI (as DescribeImages returns it, or None) falls short of the stack."""
    key = "gpu-platform:nodeImage.amiId"
    if image is None:
        return [f"{key}: {ami_id} does not exist in this region or is not visible to this account"]
    found: list[str] = []
    if image.get("Architecture") and image["Architecture"] != expected.get(ARCHITECTURE_TAG):
        found.append(
            f"{key}: {ami_id} is an {image['Architecture']} image; the stack expects {expected.get(ARCHITECTURE_TAG)!r}"
        )
    tags = {t["Key"]: t["Value"] for t in image.get("Tags") or []}
    for tag, want in expected.items():
        source = _SOURCE_KEYS.get(tag, tag)
        if tag not in tags:
            found.append(f"{key}: {ami_id} has no tag {tag}; the stack expects {want!r} ({source})")
        elif tags[tag] != want:
            found.append(f"{key}: {ami_id} tag {tag} is {tags[tag]!r}; the stack expects {want!r} ({source})")
    return found + _flavour_problems(tags, ami_id, pools or []) + _efa_problems(tags, ami_id, efa or [])


def describe(ec2: Any, ami_id: str) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    try:
        images = ec2.describe_images(ImageIds=[ami_id])["Images"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "").startswith("InvalidAMIID"):
            return None
        raise
    return images[0] if images else None


# Why a stack whose node image is not pinned has nothing to verify, by nodeImage.source.
_NOTHING_PINNED = {
    "bake": "the stack bakes its own image (EC2 Image Builder), there is no pinned AMI",
    "eks-nvidia": "the nodes boot AWS's own AMI, which pulumi up looks up by the SSM parameter of release {release}",
}


def verify(config: Any, shown: str, pools: list[PoolGpu] | None = None, efa: list[int] | None = None) -> int:
    """Ask EC2 about the stack's pinned AMI (the stack already checked as the preview checks it);
    `pools`: each pool's GPU (pool_gpus), for the kernel module flavour; `efa`: the pools with EFA
    (efa_pools), for the EFA kernel driver."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    image = config.node_image
    if image.source != "ami":
        why = _NOTHING_PINNED[image.source].format(release=image.release)
        print(
            f"error: {shown}: gpu-platform:nodeImage.source is {image.source!r}: nothing to verify: {why} "
            "(verify-ami is for source: ami)",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    expected = expected_tags(config)
    try:
        found = describe(boto3.client("ec2", region_name=config.region), image.ami_id)
    except (BotoCoreError, ClientError, ValueError, OSError) as exc:
        # ValueError: boto3 refusing its own settings (AWS_ENDPOINT_URL=not-a-url, AWS_MAX_ATTEMPTS=abc).
        reason = " ".join(str(exc).split())
        print(
            f"error: {shown}: could not ask AWS: {reason}; nothing is verified ({image.ami_id} in {config.region})",
            file=sys.stderr,
        )
        return EXIT_UNASKED
    wrong = problems(found, image.ami_id, expected, pools, efa)
    if wrong:
        print(f"{shown}: {image.ami_id} in {config.region} does not match the stack:", file=sys.stderr)
        for line in wrong:
            print(f"  {line}", file=sys.stderr)
        return EXIT_MISMATCH
    declared = ", ".join(f"{k}={v}" for k, v in sorted(expected.items()))
    flavour = kernel_module_declared(
        {t["Key"]: t["Value"] for t in found.get("Tags") or []}.get(contract.AUDIT_TAG_SOFTWARE)
    )
    modules = f", and the {flavour} kernel modules every pool's GPU loads" if flavour and pools else ""
    base = {t["Key"]: t["Value"] for t in found.get("Tags") or []}.get(BASE_RELEASE_TAG)
    fabric = f", and base release {base}, whose image has the EFA kernel driver the EFA pools need" if efa else ""
    print(f"{shown}: {image.ami_id} in {config.region} exists and declares {declared}{modules}{fabric}")
    return EXIT_OK

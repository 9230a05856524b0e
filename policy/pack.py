"""Every policy of the pack, in the order reports list them. Enforcement levels are each policy's
default; `--policy-pack-config` (and the offline preview's `--policy-config`) changes them per policy."""

from policy.audit import privileged_software_tagged, privileged_workloads_audited
from policy.compatibility import (
    driver_branch_supported_by_release,
    driver_serves_cuda_major,
    driver_serves_cuda_toolkit,
    driver_version_tested_by_release,
    release_supports_kubernetes,
)
from policy.gpu import driver_supports_gpu, mig_config_fits_gpu
from policy.images import operand_images_match_release
from policy.node_security import cluster_endpoint_private, gpu_launch_templates_hardened
from policy.runtime import one_runtime_owner
from policy.scheduling import operand_gates_set_by_pools, operands_tolerate_gpu_taints

POLICIES = [
    release_supports_kubernetes,
    driver_branch_supported_by_release,
    driver_version_tested_by_release,
    driver_serves_cuda_major,
    driver_serves_cuda_toolkit,
    driver_supports_gpu,
    operand_images_match_release,
    mig_config_fits_gpu,
    privileged_workloads_audited,
    privileged_software_tagged,
    operands_tolerate_gpu_taints,
    operand_gates_set_by_pools,
    one_runtime_owner,
    gpu_launch_templates_hardened,
    cluster_endpoint_private,
]

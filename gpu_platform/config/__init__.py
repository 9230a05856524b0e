"""The stack configuration model: the one place that reads raw config. One module per section of
the stack file (cluster, operator, node_image, workloads, node_pool, allocation, audit, monitoring),
the whole stack and its cross-section rules (stack), and the reading of raw config (reading).

Shape errors and unknown names (a release, a CUDA version, a MIG configuration that exists for no
GPU) are config errors, raised before anything is registered. Combinations of known things that do
not work together (release and Kubernetes, driver and CUDA, MIG profile and GPU) are left to the
policy pack, which sees the whole stack; except what allocation mode dra cannot render at all (a
release without the DRA driver, a Kubernetes without resource.k8s.io/v1, a pool setting only the
device plugin reads): the program would otherwise deploy a cluster whose GPUs nothing allocates; and
a DCGM exporter too old to name the pods of DRA-allocated GPUs, whose metrics would silently lose them.
"""

from gpu_platform.config.errors import ConfigError, ConfigProblem
from gpu_platform.config.reading import from_pulumi, parse
from gpu_platform.config.stack import PROJECT, StackConfig

__all__ = ["PROJECT", "ConfigError", "ConfigProblem", "StackConfig", "from_pulumi", "parse"]

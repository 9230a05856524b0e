"""Small PolicyResource builders with the inputs the program records (engine-side names)."""

from __future__ import annotations

from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions

from gpu_platform import contract


def resource(type_: str, name: str, props: dict) -> PolicyResource:
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    urn = f"urn:pulumi:test::gpu-platform::{type_}::{name}"
    return PolicyResource(type_, props, urn, name, options, None, None, [], {})


def cluster(minor: str) -> PolicyResource:
    return resource("aws:eks/cluster:Cluster", "gpu-cluster", {"name": "gpu-test", "version": minor})


def namespace(release: str, cuda: str = "12.8") -> PolicyResource:
    return resource(
        "kubernetes:core/v1:Namespace",
        "gpu-namespace",
        {"metadata": {"name": "gpu-operator", "annotations": {contract.OPERATOR_RELEASE_KEY: release, contract.CUDA_VERSIONS_KEY: cuda}}},
    )


def launch_template(kubernetes: str = "1.33", driver: str = "580.105.08", **extra) -> PolicyResource:
    tags = {contract.KUBERNETES_VERSION_TAG: kubernetes, contract.DRIVER_VERSION_TAG: driver}
    return resource("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt", {"tags": tags, **extra})

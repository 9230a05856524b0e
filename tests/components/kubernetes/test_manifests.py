"""Every rendered Kubernetes object of both stacks is strictly valid for the stack's Kubernetes
version, and the prod stack's manifests are pinned by golden files (`make golden` refreshes them)."""

from __future__ import annotations

import os

import kubernetes_validate
import pytest
import yaml

from preview import manifests
from tests.golden import GOLDEN, assert_golden

# Objects of custom resource kinds have no schema kubernetes-validate knows; only these are skipped.
CUSTOM_KINDS = {"ServiceMonitor"}


def test_every_manifest_is_strictly_valid(stack):
    version = stack.config["gpu-platform:cluster"]["kubernetesVersion"] + ".0"
    for filename, text in manifests.files(stack).items():
        doc = yaml.safe_load(text)
        if doc["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{filename}: {error.message}")


def test_all_seven_operands_reach_the_prod_manifests_in_order(prod):
    daemonsets = [yaml.safe_load(t)["metadata"]["name"] for f, t in manifests.files(prod).items() if "-daemonset-" in f]
    assert daemonsets == [
        "nvidia-node-feature-discovery", "nvidia-container-toolkit", "nvidia-validator", "nvidia-device-plugin",
        "nvidia-gpu-feature-discovery", "nvidia-dcgm-exporter", "nvidia-mig-manager",
    ]


def test_the_service_monitor_follows_the_monitoring_option(dev, prod):
    kinds = lambda rec: [yaml.safe_load(t)["kind"] for t in manifests.files(rec).values()]  # noqa: E731
    assert prod.config["gpu-platform:monitoring"]["serviceMonitor"] is True
    assert "ServiceMonitor" in kinds(prod)
    assert "ServiceMonitor" not in kinds(dev)
    assert "Service" in kinds(dev)


def test_prod_manifests_match_their_golden_files(prod):
    files = manifests.files(prod)
    for filename, text in files.items():
        assert_golden(f"manifests/prod/{filename}", text)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        for stale in (GOLDEN / "manifests" / "prod").glob("*.yaml"):
            if stale.name not in files:
                stale.unlink()
    assert sorted(p.name for p in (GOLDEN / "manifests" / "prod").glob("*.yaml")) == sorted(files)

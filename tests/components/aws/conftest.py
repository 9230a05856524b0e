"""Recordings the AWS tests share: one pool of every GPU family in AWS's catalogue, on the dev stack.

Each family's instance type is a real one from the catalogue (moto's copy answers offline), and each
is recorded once per session as a one-pool variant of dev, so a family's image is built for it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from preview.offline import engine
from tests import recordings
from tests.conftest import stack_config

# family -> one real instance type of it (the smallest that exists)
FAMILIES = {
    "g5": "g5.xlarge",
    "g6": "g6.xlarge",
    "g6e": "g6e.xlarge",
    "p4d": "p4d.24xlarge",
    "p4de": "p4de.24xlarge",
    "p5": "p5.48xlarge",
    "p5e": "p5e.48xlarge",
    "p6-b200": "p6-b200.48xlarge",
}
# The families whose instance type above has NVSwitch and needs the fabric manager: eight GPUs on an HGX
# baseboard (NVIDIA Fabric Manager User Guide; AWS enables the fabric manager on its accelerated AMI for
# them): p4d/p4de (A100), p5 (H100), p5e (H200), p6-b200 (B200). Typed here, never read from matrix.yaml.
NVSWITCH_FAMILIES = {"p4d", "p4de", "p5", "p5e", "p6-b200"}


def one_pool(family: str, instance_type: str) -> dict[str, Any]:
    return {"name": family, "instanceType": instance_type, "minSize": 0, "desiredSize": 1, "maxSize": 2}


@pytest.fixture(scope="session")
def record_variant() -> Callable[..., engine.Recording]:
    """Like the shared `variant`, under a key the caller names: the first change given for a key is
    the one recorded (read-only, shared, tests/recordings.py)."""
    changes: dict[str, Callable[[dict[str, Any]], Any]] = {}

    def make(key: str, change: Callable[[dict[str, Any]], Any], stack: str = "dev") -> engine.Recording:
        config = stack_config(stack)
        changes.setdefault(key, change)(config)
        return recordings.of_config(config, stack)

    return make


def _family_change(family: str) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        config["gpu-platform:nodePools"] = [one_pool(family, FAMILIES[family])]

    return change


_CHANGES = {family: _family_change(family) for family in FAMILIES}


def record_family(record_variant: Callable[..., engine.Recording], name: str) -> engine.Recording:
    return record_variant(f"family-{name}", _CHANGES[name])


@pytest.fixture(params=sorted(FAMILIES))
def family(request, record_variant) -> tuple[str, engine.Recording]:
    """(family, the dev stack with one pool of that family)."""
    return request.param, record_family(record_variant, request.param)


LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
IMAGE = "aws:imagebuilder/image:Image"


def pool_names(rec: engine.Recording) -> list[str]:
    return [p["name"] for p in rec.config["gpu-platform:nodePools"]]


def launch_template(rec: engine.Recording, pool: str) -> engine.Registration:
    return rec.one(LAUNCH_TEMPLATE, f"gpu-pool-{pool}-lt")


def node_group(rec: engine.Recording, pool: str) -> engine.Registration:
    return rec.one(NODE_GROUP, f"gpu-pool-{pool}-ng")


def user_data(rec: engine.Recording, pool: str) -> str:
    import base64

    return base64.b64decode(launch_template(rec, pool).inputs["userData"]).decode()


def node_config(rec: engine.Recording, pool: str) -> dict[str, Any]:
    """The nodeadm NodeConfig part of a pool's user data."""
    import yaml

    text = user_data(rec, pool)
    part = text.split("Content-Type: application/node.eks.aws\n\n", 1)[1].rsplit("--==", 1)[0]
    return yaml.safe_load(part)


@pytest.fixture(params=["dev", "prod"])
def shipped(request, dev, prod) -> engine.Recording:
    return {"dev": dev, "prod": prod}[request.param]


# The node image's Image Builder component (type, name): its document holds the bake's build step.
COMPONENT_DOC = ("aws:imagebuilder/component:Component", "gpu-node-image-driver")

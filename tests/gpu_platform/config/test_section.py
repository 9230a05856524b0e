"""What every section shares: a key given nothing (null or empty) is refused as a required key is,
with what to give, and never read as the key left out."""

from __future__ import annotations

import pytest

from tests.gpu_platform.config import message_for


# Each key, and the whole answer when it is required (what to give, nothing after it); a key with a
# default (None here) may also be removed, and its answer says so. A section's keys end in ", ...":
# the first few of them.
@pytest.mark.parametrize(
    "key, place, required_answer",
    [
        ("aws:region", lambda raw, v: raw.update({"aws:region": v}), "a region (e.g. us-west-2)"),
        (
            "gpu-platform:cluster",
            lambda raw, v: raw.update({"gpu-platform:cluster": v}),
            "a mapping with keys name, kubernetesVersion, create, ...",
        ),
        (
            "gpu-platform:nodePools",
            lambda raw, v: raw.update({"gpu-platform:nodePools": v}),
            "a list of pools (mappings with name, instanceType, minSize, desiredSize, maxSize)",
        ),
        ("gpu-platform:cluster.name", lambda raw, v: raw["gpu-platform:cluster"].update(name=v), "a name"),
        (
            "gpu-platform:nodePools[0].instanceType",
            lambda raw, v: raw["gpu-platform:nodePools"][0].update(instanceType=v),
            "an EC2 instance type (e.g. g6.2xlarge)",
        ),
        (
            "gpu-platform:nodePools[0].timeSlicing",
            lambda raw, v: raw["gpu-platform:nodePools"][0].update(timeSlicing=v),
            None,
        ),
        ("gpu-platform:nodePools[0].rollout", lambda raw, v: raw["gpu-platform:nodePools"][0].update(rollout=v), None),
        (
            "gpu-platform:nodeImage.toolkitBaked",
            lambda raw, v: raw["gpu-platform:nodeImage"].update(toolkitBaked=v),
            None,
        ),
        (
            "gpu-platform:audit.owner",
            lambda raw, v: raw["gpu-platform:audit"].update(owner=v),
            "a team that owns the privileged software",
        ),
    ],
)
@pytest.mark.parametrize("nothing", [None, ""], ids=["null", "empty"])
def test_every_key_given_nothing_gets_the_same_answer(key, place, required_answer, nothing):
    message = message_for(lambda raw: place(raw, nothing))
    line = next(line for line in message.splitlines() if line.startswith(f"  {key}: "))
    assert line.startswith(f"  {key}: has no value (null or empty): give ")
    assert "(got" not in message and "is not a region" not in message
    if required_answer is None:
        assert ", or remove the key for the default" in line
    elif required_answer.endswith(", ..."):  # a section's keys, by the first few (a new key leaves this alone)
        assert line.startswith(f"  {key}: has no value (null or empty): give {required_answer[:-3]}")
        assert "remove the key" not in line  # a required section
    else:
        assert line == f"  {key}: has no value (null or empty): give {required_answer}"

"""A config problem carries its key path as data: parse() reports where a validator's problem is
without reading it back out of the message."""

from __future__ import annotations

import pytest

from gpu_platform.config import ConfigError, parse
from gpu_platform.config.errors import key_path
from preview.offline import engine


def _problems(change, stack="dev") -> tuple:
    raw = engine.read_stack_file(engine.stack_file(stack))
    change(raw)
    with pytest.raises(ConfigError) as error:
        parse(raw)
    return error.value.problems


def test_a_key_path_spells_indices_and_keys_as_the_stack_file_does():
    assert key_path(("gpu-platform:nodePools", 1, "mig", "config")) == "gpu-platform:nodePools[1].mig.config"


def test_an_items_problem_carries_the_items_index_and_a_message_without_the_path():
    problems = _problems(
        lambda raw: raw["gpu-platform:cluster"].update(admins=["arn:aws:sts::123456789012:assumed-role/Admin/alice"])
    )
    assert [p.path for p in problems] == [("gpu-platform:cluster", "admins", 0)]
    assert problems[0].message.startswith(
        "'arn:aws:sts::123456789012:assumed-role/Admin/alice' is an assumed-role session"
    )


def test_a_cross_section_rule_names_the_other_sections_key():
    # Mode dra needs Kubernetes 1.34 (resource.k8s.io/v1 GA: KEP-4381): the rule sits on the whole
    # stack, and names the cluster's key.
    problems = _problems(lambda raw: raw["gpu-platform:cluster"].update(kubernetesVersion="1.33"), stack="dra")
    assert [p.path for p in problems] == [("gpu-platform:cluster", "kubernetesVersion")]


def test_a_key_holding_a_colon_and_space_stays_one_key_of_the_path():
    problems = _problems(lambda raw: raw["gpu-platform:operator"].update(overrides={"a: b": "v1.0.0"}))
    assert [p.path for p in problems] == [("gpu-platform:operator", "overrides", "a: b")]
    assert problems[0].message.startswith("not an operand (valid: ")


def test_every_line_of_the_message_is_a_problems_path_and_message():
    problems = _problems(lambda raw: raw["gpu-platform:nodePools"][0].update(minSize=-1, rootVolumeGiB=99))
    assert [p.line() for p in problems] == [
        "gpu-platform:nodePools[0].minSize: must be at least 0 (got -1)",
        "gpu-platform:nodePools[0].rootVolumeGiB: must be at least 100 (got 99)",
    ]

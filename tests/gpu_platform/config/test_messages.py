"""pydantic's errors as the stack file's problems: a value of the wrong kind is named as given, with
what the key takes."""

from __future__ import annotations

import pytest

from tests.gpu_platform.config import message_for


@pytest.mark.parametrize("given, shown", [(2.5, "2.5"), (2.0, "2.0"), ("3", "'3'"), (True, "true")])
def test_a_count_given_anything_but_a_whole_number_is_refused_naming_what_was_given(given, shown):
    message = message_for(lambda raw: raw["gpu-platform:nodePools"][0].update(maxSize=given))
    assert f"\n  gpu-platform:nodePools[0].maxSize: expected a whole number (got {shown})" in message


@pytest.mark.parametrize("given, shown", [(5, "5"), ("prod", "'prod'"), ([1], "[1]")])
def test_a_section_given_a_value_that_is_not_a_mapping_is_refused_naming_it(given, shown):
    message = message_for(lambda raw: raw.update({"gpu-platform:cluster": given}))
    # The keys it takes, in the model's order (the first few: a new key leaves this test alone).
    line = next(line for line in message.splitlines() if line.startswith("  gpu-platform:cluster: "))
    assert line.startswith("  gpu-platform:cluster: expected a mapping with keys name, kubernetesVersion, create, ")
    assert line.endswith(f" (got {shown})")


@pytest.mark.parametrize("given, hint", [("true", True), ("Off", True), ("maybe", False), (1, False)])
def test_a_switch_given_text_that_looks_like_one_says_to_write_it_unquoted(given, hint):
    message = message_for(lambda raw: raw["gpu-platform:cluster"].update(deletionProtection=given))
    line = next(line for line in message.splitlines() if "cluster.deletionProtection" in line)
    assert line.startswith("  gpu-platform:cluster.deletionProtection: expected true or false (got ")
    assert line.endswith(": it reads as text; write true or false, unquoted") is hint

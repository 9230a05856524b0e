"""The harness of the fixture tables (tests/fixture_stacks.py): a row's key paths replace, append and
delete what its table says in the stack it starts from, and a path through a key that stack does not
have is refused (a misspelt section would otherwise be added, and the row test something else)."""

from __future__ import annotations

import pytest

from tests import fixture_stacks
from tests.fixture_stacks import Row


def _config(**changes) -> dict:
    return fixture_stacks.config(Row("bad_stacks", "test", "a test row", "dev", **changes))


def test_a_key_path_replaces_one_value_and_leaves_the_rest_of_the_stack():
    pool = _config(set={"gpu-platform:nodePools[0].maxSize": 9})["gpu-platform:nodePools"][0]
    # stacks/Pulumi.dev.yaml: one pool, l4, on g6.2xlarge with maxSize 4.
    assert (pool["name"], pool["instanceType"], pool["maxSize"]) == ("l4", "g6.2xlarge", 9)


def test_a_path_naming_a_section_replaces_the_whole_section():
    assert _config(set={"gpu-platform:nodeImage": {"source": "ami"}})["gpu-platform:nodeImage"] == {"source": "ami"}


def test_the_index_after_the_last_item_appends_one():
    pools = _config(set={"gpu-platform:nodePools[1]": {"name": "second"}})["gpu-platform:nodePools"]
    assert [p["name"] for p in pools] == ["l4", "second"]


def test_delete_leaves_the_key_out_and_null_is_a_value():
    config = _config(set={"gpu-platform:nodePools[0].timeSlicing": None}, delete=("aws:region",))
    assert "aws:region" not in config
    assert (
        "timeSlicing" in config["gpu-platform:nodePools"][0]
        and config["gpu-platform:nodePools"][0]["timeSlicing"] is None
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"set": {"gpu-platform:nodeImages.source": "ami"}},  # a section dev does not have
        {"set": {"gpu-platform:nodePools[2]": {"name": "third"}}},  # past the end of a one-pool list
        {"delete": ("gpu-platform:monitoring",)},  # dev has no monitoring section to delete
        {"set": {"gpu-platform:nodePools.0.maxSize": 9}},  # not spelled as the errors spell a path
    ],
)
def test_a_path_the_stack_does_not_have_is_refused(changes):
    with pytest.raises(AssertionError):
        _config(**changes)

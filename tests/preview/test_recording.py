"""The recording: the walk from a resource up to the component that owns it."""

from __future__ import annotations

from preview.recording import Recording, Registration


def _r(urn: str, parent: str = "") -> Registration:
    return Registration(
        urn=urn, type="t", name=urn, parent=parent, custom=True, dependencies=(), provider="", inputs={}
    )


RECORDING = Recording(
    stack="s",
    config={},
    resources=[
        _r("platform"),
        _r("operand", "platform"),
        _r("ds", "operand"),
        _r("sa", "operand"),
        _r("other", "platform"),
    ],
)


def test_a_resource_belongs_to_its_nearest_wanted_ancestor():
    assert RECORDING.owner("ds", ["operand"]).urn == "operand"
    assert RECORDING.owner("ds", ["operand", "platform"]).urn == "operand"
    assert RECORDING.owner("operand", ["operand"]).urn == "operand"  # itself


def test_a_resource_outside_every_wanted_one_has_no_owner():
    assert RECORDING.owner("other", ["operand"]) is None
    assert RECORDING.owner("not-recorded", ["operand"]) is None

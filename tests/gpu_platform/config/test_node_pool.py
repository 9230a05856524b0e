"""gpu-platform:nodePools: the bounds of a pool's numbers, and its sizes' order."""

from __future__ import annotations

import pytest

from gpu_platform import config as config_model
from preview.offline import engine
from tests.gpu_platform.config import message_for


@pytest.mark.parametrize(
    "pool_key, given, says",
    [
        ("rootVolumeGiB", 99, "must be at least 100 (got 99)"),
        ("rootVolumeGiB", 16385, "must be at most 16384 (got 16385)"),
        ("maxSize", 0, "must be at least 1 (got 0)"),
    ],
)
def test_a_number_outside_its_bounds_is_refused_naming_the_bound(pool_key, given, says):
    message = message_for(lambda raw: raw["gpu-platform:nodePools"][0].update({pool_key: given}))
    assert f"\n  gpu-platform:nodePools[0].{pool_key}: {says}" in message


@pytest.mark.parametrize(
    "sizes, valid", [((0, 4, 4), True), ((4, 4, 4), True), ((0, 5, 4), False), ((2, 1, 4), False), ((0, 0, 1), True)]
)
def test_a_pools_sizes_hold_min_le_desired_le_max_at_the_boundaries(sizes, valid):
    lo, desired, hi = sizes
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:nodePools"][0].update(minSize=lo, desiredSize=desired, maxSize=hi)
    if valid:
        assert config_model.parse(raw).node_pools[0].desired_size == desired
    else:
        with pytest.raises(
            config_model.ConfigError, match=rf"minSize <= desiredSize <= maxSize \(got {lo}, {desired}, {hi}\)"
        ):
            config_model.parse(raw)

"""Version arithmetic: numeric, part by part, never string order."""

import pytest

from gpu_platform.catalog import versions


@pytest.mark.parametrize(
    "version, minimum, expected",
    [
        ("570.133.20", "570.26", True),  # string order would say False
        ("570.26", "570.133.20", False),
        ("580.105.08", "580.105.08", True),
        ("580", "580.0.0", True),
        ("1.33", "1.9", True),
        ("535.309.01", "550.54.14", False),
    ],
)
def test_at_least_compares_numerically(version, minimum, expected):
    assert versions.at_least(version, minimum) is expected


@pytest.mark.parametrize(
    "tag, version",
    [
        ("v1.18.1-ubuntu20.04", "1.18.1"),
        ("v0.14.2-ubi8", "0.14.2"),
        ("4.4.2-4.7.0-distroless", "4.4.2-4.7.0"),
        ("v25.10.1", "25.10.1"),
    ],
)
def test_image_tag_version_strips_v_and_os_suffix(tag, version):
    assert versions.image_tag_version(tag) == version


def test_anything_but_dotted_numbers_is_rejected():
    with pytest.raises(ValueError):
        versions.parse("latest")
    assert not versions.is_version("1.33-eks")

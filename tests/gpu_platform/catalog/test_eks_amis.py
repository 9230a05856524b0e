"""gpu_platform/catalog/eks_amis.py: what AWS published, read from amazon-eks-ami's CHANGELOG, and the data
file the offline answers and the release defaults are checked against."""

from __future__ import annotations

import pytest
import yaml

from components.aws import base_image
from gpu_platform.catalog import eks_amis, matrix

CHANGELOG = """# Changelog

# AMI Release v20260714
## What's Changed
<td>amazon-eks-node-al2023-x86_64-standard-1.36-v20260714</td>
<td>amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260714</td>
<td>amazon-eks-node-al2023-x86_64-standard-1.35-v20260714</td>
<td>amazon-eks-node-al2023-arm64-standard-1.35-v20260714</td>
<td>amazon-eks-node-1.29-v20260714</td>

# [ABANDONED] AMI Release v20260625
<td>amazon-eks-node-al2023-x86_64-standard-1.35-v20260625</td>

# AMI Release v20260618
<td>amazon-eks-node-al2023-x86_64-standard-1.35-v20260618</td>
<td>amazon-eks-node-al2023-x86_64-standard-1.9-v20260618</td>
"""


def test_a_changelog_is_read_per_minor_and_flavour_newest_first_without_abandoned_releases():
    published, abandoned = eks_amis.parse_changelog(CHANGELOG)
    assert published == {
        "1.9": {"standard": ["v20260618"]},
        "1.35": {"standard": ["v20260714", "v20260618"]},
        "1.36": {"standard": ["v20260714"], "nvidia": ["v20260714"]},
    }
    assert abandoned == ["v20260625"]


def test_an_entry_listing_another_releases_ami_is_refused():
    with pytest.raises(
        ValueError, match="the entry of v20260714 lists amazon-eks-node-al2023-x86_64-standard-1.35-v20260618"
    ):
        eks_amis.parse_changelog("# AMI Release v20260714\namazon-eks-node-al2023-x86_64-standard-1.35-v20260618\n")


def test_a_file_without_release_entries_is_refused():
    with pytest.raises(ValueError, match="is this amazon-eks-ami's CHANGELOG.md"):
        eks_amis.parse_changelog("# README\n")


def test_the_command_writes_the_data_file_and_refuses_bad_input(tmp_path, capsys):
    changelog, out = tmp_path / "CHANGELOG.md", tmp_path / "eks_amis.yaml"
    changelog.write_text(CHANGELOG)
    assert eks_amis.main([str(changelog), "--commit", "81fec2e8", "--out", str(out)]) == 0
    written = yaml.safe_load(out.read_text())
    assert written["source"] == {
        "repository": "github.com/awslabs/amazon-eks-ami",
        "file": "CHANGELOG.md",
        "commit": "81fec2e8",
        "newest": "v20260714",
    }
    assert written["published"]["1.35"]["standard"] == ["v20260714", "v20260618"]
    # The abandoned release is written down under its key (the data file's readers and its header say `abandoned`).
    assert written["abandoned"] == ["v20260625"]
    assert eks_amis.main([str(tmp_path / "missing.md"), "--commit", "81fec2e8", "--out", str(out)]) == 2
    assert "missing.md" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        eks_amis.main([str(changelog), "--commit", "main", "--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--commit 'main' is not a git commit id" in err
    assert err.startswith("usage: python -m gpu_platform.catalog.eks_amis ")  # the command to run again, as documented


def test_the_data_file_lists_minors_in_version_order_and_flavours_as_the_changelog_names_them(tmp_path):
    # A reader diffing two generations of the file sees 1.9 before 1.35 (not "1.35" < "1.9" as text),
    # the standard AMI before the nvidia one, and `source` first: the file is kept in that order.
    changelog, out = tmp_path / "CHANGELOG.md", tmp_path / "eks_amis.yaml"
    changelog.write_text(CHANGELOG)
    assert eks_amis.main([str(changelog), "--commit", "81fec2e8", "--out", str(out)]) == 0
    lines = [line for line in out.read_text().splitlines() if not line.startswith("#")]
    top = [line.split(":")[0] for line in lines if line and not line.startswith(" ")]
    assert top == ["source", "abandoned", "published"]
    minors = [
        line.strip().rstrip(":").strip("'\"")
        for line in lines
        if line.startswith("  ")
        and not line.startswith("   ")
        and line.strip().rstrip(":").strip("'\"").startswith("1.")
    ]
    assert minors == ["1.9", "1.35", "1.36"]
    assert out.read_text().index("standard: [v20260714]") < out.read_text().index("nvidia: [v20260714]")


def test_the_data_file_has_what_the_changelog_at_its_commit_lists():
    # Read by hand from CHANGELOG.md at 81fec2e8: 1.28's last AL2023 AMIs are in v20251112, 1.29's in
    # v20260318; v20260714 lists 1.30-1.36; v20260311 and v20260128 are marked [ABANDONED].
    assert eks_amis.source()["commit"].startswith("81fec2e8")
    assert eks_amis.newest("1.28", "standard") == "v20251112"
    assert eks_amis.newest("1.29", "standard") == "v20260318"
    assert [m for m in eks_amis.published() if "v20260714" in eks_amis.releases(m, "standard")] == [
        "1.30",
        "1.31",
        "1.32",
        "1.33",
        "1.34",
        "1.35",
        "1.36",
    ]
    for minor in eks_amis.published():
        for flavour in eks_amis.FLAVOURS:
            assert not {"v20260311", "v20260128"} & set(eks_amis.releases(minor, flavour)), minor


def test_every_accelerated_ami_the_matrix_records_was_published():
    for release, amis in matrix.load().eks_nvidia_amis.items():
        for minor, ami in amis.items():
            assert release in eks_amis.releases(minor, "nvidia"), (release, minor)
            assert ami.ami_name == eks_amis.ami_name("nvidia", minor, release)


def test_every_default_base_release_was_published_for_its_minor():
    for minor, release in base_image.default_releases().items():
        assert release in eks_amis.releases(minor, "standard"), minor

"""tools/vendor/nfd_crds.py: recording an NFD release's CRDs into a copy of third_party/node-feature-discovery."""

from __future__ import annotations

import hashlib
import io
import shutil

import pytest
import yaml

from tests.conftest import ROOT
from tools.vendor import nfd_crds

VENDORED = ROOT / "third_party" / "node-feature-discovery"
V0182 = VENDORED / "v0.18.2" / "nfd-api-crds.yaml"
COMMIT = "1" * 40


@pytest.fixture
def copy(tmp_path):
    target = tmp_path / "node-feature-discovery"
    shutil.copytree(VENDORED, target)
    return target


def _rows(copy) -> dict:
    return yaml.safe_load((copy / "SOURCES.yaml").read_text())["releases"]


def test_recording_a_tag_already_recorded_leaves_sources_as_they_are(copy):
    before = (copy / "SOURCES.yaml").read_text()
    row = _rows(copy)["v0.18.2"]
    assert nfd_crds.main(["v0.18.2", "--from", str(V0182), "--commit", row["commit"]], copy) == 0
    assert (copy / "SOURCES.yaml").read_text() == before


def test_a_new_tag_with_new_content_gets_its_own_file_and_row_in_version_order(copy, tmp_path):
    new = tmp_path / "new.yaml"
    new.write_text(V0182.read_text().replace("v0.16.3", "v0.17.0"))
    assert nfd_crds.main(["v0.20.0", "--from", str(new), "--commit", COMMIT], copy) == 0
    assert (copy / "v0.20.0" / "nfd-api-crds.yaml").read_bytes() == new.read_bytes()
    assert _rows(copy)["v0.20.0"] == {
        "commit": COMMIT,
        "file": "v0.20.0/nfd-api-crds.yaml",
        "sha256": hashlib.sha256(new.read_bytes()).hexdigest(),
    }
    assert list(_rows(copy))[-2:] == ["v0.19.0", "v0.20.0"]


def test_a_new_tag_with_known_content_shares_the_file(copy):
    assert nfd_crds.main(["v0.19.1", "--from", str(V0182), "--commit", COMMIT], copy) == 0
    assert _rows(copy)["v0.19.1"]["file"] == "v0.18.2/nfd-api-crds.yaml"
    assert not (copy / "v0.19.1").exists()


def test_a_patch_ten_sorts_after_patch_nine(copy):
    for tag in ("v0.19.10", "v0.19.9"):
        assert nfd_crds.main([tag, "--from", str(V0182), "--commit", COMMIT], copy) == 0
    assert list(_rows(copy))[-3:] == ["v0.19.0", "v0.19.9", "v0.19.10"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["0.20.0", "--from", str(V0182), "--commit", COMMIT], "expected a release tag vMAJOR.MINOR.PATCH"),
        (["v0.20.0", "--from", str(V0182)], "--from needs the 40-hex commit v0.20.0 names"),
        (["v0.20.0", "--from", str(V0182), "--commit", "abc"], "--from needs the 40-hex commit"),
        (["v0.20.0", "--from", "/nonexistent.yaml", "--commit", COMMIT], "no such file"),
    ],
)
def test_invalid_arguments_exit_2_and_write_nothing(copy, capsys, argv, said):
    before = sorted(p.name for p in copy.rglob("*")), (copy / "SOURCES.yaml").read_text()
    assert nfd_crds.main(argv, copy) == 2
    assert said in capsys.readouterr().err
    assert (sorted(p.name for p in copy.rglob("*")), (copy / "SOURCES.yaml").read_text()) == before


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("kind: ConfigMap\nmetadata: {name: x}\n", "found ['x']"),
        (
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\nspec: {group: b}\n",
            "found ['a.b']",
        ),
        ("", "found none"),
        ("a: [\n", "not YAML"),
    ],
)
def test_a_file_that_is_not_nfds_crds_is_refused(copy, tmp_path, capsys, text, said):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert nfd_crds.main(["v0.20.0", "--from", str(bad), "--commit", COMMIT], copy) == 2
    assert said in capsys.readouterr().err
    assert "v0.20.0" not in _rows(copy)


def test_without_from_it_downloads_the_file_and_the_commit_at_the_tag(copy, monkeypatch):
    asked = []

    def urlopen(request, timeout):
        url = getattr(request, "full_url", request)
        asked.append(url)
        return io.BytesIO(V0182.read_bytes() if url.startswith("https://raw.") else COMMIT.encode() + b"\n")

    monkeypatch.setattr(nfd_crds.urllib.request, "urlopen", urlopen)
    assert nfd_crds.main(["v0.19.1"], copy) == 0
    raw = "https://raw.githubusercontent.com/kubernetes-sigs/node-feature-discovery/v0.19.1/"
    assert asked == [
        raw + "deployment/base/nfd-crds/nfd-api-crds.yaml",
        "https://api.github.com/repos/kubernetes-sigs/node-feature-discovery/commits/v0.19.1",
    ]
    assert _rows(copy)["v0.19.1"]["commit"] == COMMIT


def test_a_failed_download_exits_3_and_writes_nothing(copy, monkeypatch, capsys):
    def urlopen(request, timeout):
        raise OSError("network is unreachable")

    monkeypatch.setattr(nfd_crds.urllib.request, "urlopen", urlopen)
    assert nfd_crds.main(["v0.19.1"], copy) == 3
    assert "network is unreachable" in capsys.readouterr().err
    assert "v0.19.1" not in _rows(copy)

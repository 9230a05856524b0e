"""Vendor the CRDs an NFD release publishes into third_party/node-feature-discovery/ (README there).

    python -m tools.vendor.nfd_crds v0.20.0                             # downloads from the tag
    python -m tools.vendor.nfd_crds v0.20.0 --from FILE --commit SHA    # a file you obtained

Records the tag's commit and the file's sha256 in SOURCES.yaml and keeps one copy per distinct
content. Exit codes: 0 recorded, 2 invalid input (nothing written), 3 the download failed."""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import urllib.request
from pathlib import Path

import yaml

from components.kubernetes.operands.node_feature_discovery import GROUP, VENDORED
from gpu_platform.catalog import versions

REPO = "kubernetes-sigs/node-feature-discovery"
PATH = "deployment/base/nfd-crds/nfd-api-crds.yaml"
FILE = "nfd-api-crds.yaml"
_TAG = re.compile(r"v\d+\.\d+\.\d+")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class Invalid(Exception):
    """Input this command refuses, with what would be valid."""


def _download(tag: str) -> tuple[bytes, str]:
    """The file at the tag and the commit the tag names (GitHub's raw files and commits API)."""
    with urllib.request.urlopen(f"https://raw.githubusercontent.com/{REPO}/{tag}/{PATH}", timeout=60) as r:
        data = r.read()
    request = urllib.request.Request(
        f"https://api.github.com/repos/{REPO}/commits/{tag}", headers={"Accept": "application/vnd.github.sha"}
    )
    with urllib.request.urlopen(request, timeout=60) as r:
        return data, r.read().decode().strip()


def _check(data: bytes, source: str) -> None:
    try:
        docs = [d for d in yaml.safe_load_all(data) if d]
    except yaml.YAMLError as e:
        raise Invalid(f"{source}: not YAML ({e})") from e
    wrong = [
        (d.get("metadata") or {}).get("name", "?") if isinstance(d, dict) else repr(d)
        for d in docs
        if not isinstance(d, dict)
        or d.get("kind") != "CustomResourceDefinition"
        or (d.get("spec") or {}).get("group") != GROUP
    ]
    if not docs or wrong:
        raise Invalid(f"{source}: expected NFD's CustomResourceDefinitions (group {GROUP}); found {wrong or 'none'}")


def record(tag: str, data: bytes, commit: str, vendored: Path = VENDORED) -> str:
    """Write the file (unless a recorded tag has the same content) and the tag's row; the file used."""
    sources = vendored / "SOURCES.yaml"
    text = sources.read_text()
    rows = yaml.safe_load(text)["releases"]
    digest = hashlib.sha256(data).hexdigest()
    file = next((r["file"] for r in rows.values() if r["sha256"] == digest), f"{tag}/{FILE}")
    if not (vendored / file).exists():
        (vendored / file).parent.mkdir(parents=True, exist_ok=True)
        (vendored / file).write_bytes(data)
    rows[tag] = {"commit": commit, "file": file, "sha256": digest}
    head = text[: text.index("\nreleases:") + len("\nreleases:\n")]
    ordered = sorted(rows, key=lambda t: versions.parse(t.lstrip("v")))
    lines = [
        # Quoted: a hex string of digits (and an `e`) would read back as a number.
        f'  {t}: {{commit: "{rows[t]["commit"]}", file: {rows[t]["file"]}, sha256: "{rows[t]["sha256"]}"}}\n'
        for t in ordered
    ]
    sources.write_text(head + "".join(lines))
    return file


def main(argv: list[str] | None = None, vendored: Path = VENDORED) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.vendor.nfd_crds", description=__doc__.split("\n")[0])
    parser.add_argument("tag", help="the NFD release tag, e.g. v0.20.0")
    parser.add_argument("--from", dest="source", type=Path, help="a copy of the tag's file, instead of downloading")
    parser.add_argument("--commit", help="the 40-hex commit the tag names (with --from)")
    args = parser.parse_args(argv)
    try:
        if not _TAG.fullmatch(args.tag):
            raise Invalid(f"tag {args.tag!r}: expected a release tag vMAJOR.MINOR.PATCH, e.g. v0.20.0")
        if args.source is not None:
            if not (args.commit and _COMMIT.fullmatch(args.commit)):
                raise Invalid(f"--commit {args.commit!r}: --from needs the 40-hex commit {args.tag} names")
            if not args.source.is_file():
                raise Invalid(f"--from {args.source}: no such file")
            data, commit, where = args.source.read_bytes(), args.commit, str(args.source)
        else:
            try:
                data, commit = _download(args.tag)
            except OSError as e:
                print(f"error: downloading {REPO} {args.tag}:{PATH}: {e}", file=sys.stderr)
                return 3
            where = f"{REPO} {args.tag}:{PATH}"
        _check(data, where)
    except Invalid as e:
        print(f"error: {e}; nothing written", file=sys.stderr)
        return 2
    file = record(args.tag, data, commit, vendored)
    print(f"{args.tag}: {file} (commit {commit}); review the diff of {vendored.name}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())

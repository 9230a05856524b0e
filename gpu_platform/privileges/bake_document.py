"""What the node image bake runs as root and downloads, read from the Image Builder component's
document (the `data` property of `aws:imagebuilder/component:Component`, written by
components/aws/image_component.py), for the privilege ledger (gpu_platform/privileges/ledger.py). Read from the
document, not from the program, so the policy pack, which sees only resource properties, finds the
same rows as the audit report.

The build phase's commands are one bash step: `export NAME=value` lines (the install script's
inputs), scripts carried as gzip in base64 here-documents (`<<'MARKER'` ... `MARKER`), and
`bash "${work}/SCRIPT"` for the one it runs. In each script it runs, a download is a `curl` line's
quoted http(s) URL, a package repository a `baseurl=` line, and a pin a `readonly NAME="value"` whose
NAME ends in FINGERPRINT, SHA256 or CHECKSUM (what checks a download); `${NAME}` and
`${NAME:-default}` are expanded from the exports and the script's own upper-case assignments, and
nothing else is (an unexpanded reference stays as written, so the row still says what it is).

The ledger's rows do not interpret the scripts beyond that: each script's SHA-256 is a row, so any
change to what runs as root (a URL, a pin, a package version) changes the ledger even where the rows
above do not name it. The digest of the whole document (its test phase runs as root too) is a row.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
import zlib
from collections.abc import Mapping
from typing import Any

import yaml

from gpu_platform.catalog import yaml_files
from gpu_platform.interface.props import mapping, sequence, text
from gpu_platform.privileges.canonical_form import sha256

BUILD = "(build step)"

_EXPORT = re.compile(r"^export ([A-Z_][A-Z0-9_]*)=(.*)$")
_HEREDOC = re.compile(r"<<'([A-Z_][A-Z0-9_]*)'")
_RUN = re.compile(r'^bash "\$\{work\}/([^"]+)"$')
_ASSIGN = re.compile(r'^(?:readonly )?([A-Z_][A-Z0-9_]*)="([^"]*)"$')
_PIN = re.compile(r"(FINGERPRINT|SHA256|CHECKSUM)$")
_REFERENCE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::-([^}]*))?\}")
_QUOTED = re.compile(r'"([^"]*)"')


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else value


def _expand(value: str, names: Mapping[str, str]) -> str:
    return _REFERENCE.sub(lambda m: names.get(m.group(1), m.group(2) if m.group(2) is not None else m.group(0)), value)


def build_commands(document: str) -> str:
    """The build phase's ExecuteBash commands, joined; "" when the document has none (or is not YAML)."""
    try:
        doc = yaml_files.load(document)
    except yaml.YAMLError:
        return ""
    return "\n".join(
        text(command)
        for phase in map(mapping, sequence(mapping(doc).get("phases")))
        if phase.get("name") == "build"
        for step in map(mapping, sequence(phase.get("steps")))
        if step.get("action") == "ExecuteBash"
        for command in sequence(mapping(step.get("inputs")).get("commands"))
    )


def _scripts(lines: list[str]) -> dict[str, bytes | str]:
    """Target -> the script's bytes, or the reason it could not be unpacked."""
    found: dict[str, bytes | str] = {}
    i = 0
    while i < len(lines):
        opened = _HEREDOC.search(lines[i])
        if not opened:
            i += 1
            continue
        marker, head = opened.group(1), lines[i]
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == marker), len(lines))
        targets = _QUOTED.findall(head)
        target = (targets[-1] if targets else marker).replace("${ROOT:-}", "").replace("${work}/", "")
        try:
            found[target] = gzip.decompress(base64.b64decode("".join(lines[i + 1 : end]), validate=True))
        except (binascii.Error, OSError, EOFError, zlib.error) as exc:
            found[target] = f"cannot be unpacked ({type(exc).__name__})"
        i = end + 1
    return found


def _script_rows(subject: str, name: str, script: str, exports: Mapping[str, str]) -> list[tuple[str, str, str]]:
    names = dict(exports)
    found = []
    for raw in script.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        assigned = _ASSIGN.match(line)
        if assigned:
            names[assigned.group(1)] = _expand(assigned.group(2), names)
            if _PIN.search(assigned.group(1)):
                found.append((subject, name, f"pin {assigned.group(1)} {names[assigned.group(1)]}"))
        elif line.startswith("baseurl="):
            found.append((subject, name, f"package repository {_expand(line[len('baseurl=') :], names)}"))
        elif re.search(r"\bcurl\b", line):
            urls = [u for u in (_expand(q, names) for q in _QUOTED.findall(line)) if re.match(r"https?://", u)]
            found += [(subject, name, f"download {url}") for url in urls]
    return found


def rows(resource_name: str, props: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The ledger rows of one Image Builder component (subject `node image bake <Pulumi name>`)."""
    document = text(props.get("data"))
    subject = f"node image bake {resource_name}"
    found = [(subject, BUILD, f"component document {sha256(document.encode())}")]
    lines = build_commands(document).splitlines()
    exports = {m.group(1): _unquoted(m.group(2)) for m in map(_EXPORT.match, lines) if m}
    found += [(subject, BUILD, f"input {name}={value}") for name, value in exports.items()]
    run = {m.group(1) for m in map(_RUN.match, lines) if m}
    for target, script in _scripts(lines).items():
        if isinstance(script, str):
            found.append((subject, target, f"script {script}"))
            continue
        how = "runs as root on the build instance" if target in run else "installed into the image"
        found.append((subject, target, f"{how}, {sha256(script)}"))
        if target in run:
            found += _script_rows(subject, target, script.decode("utf-8", "replace"), exports)
    return found

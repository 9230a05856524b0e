"""All-or-nothing output for the preview's reports: every report is rendered first, then written to
a temporary file beside its target, and only when all were written are they moved into place. A
failure (a full disk, a read-only or pseudo file system) removes the temporary files and names the
flag: no run leaves half a set of reports, or an old report beside a new one."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

MANIFEST_GLOB = "[0-9][0-9]-*.yaml"


class OutputError(ValueError):
    """An output that cannot be written: invalid invocation (exit 2)."""


@dataclass(frozen=True)
class Output:
    flag: str
    path: Path
    render: Callable[[], str | dict[str, str]]  # one file's text, or a directory's files by name

    @property
    def is_directory(self) -> bool:
        return self.flag == "--manifests"


def _existing_ancestor(path: Path) -> Path:
    for parent in (path, *path.parents):
        if parent.exists():
            return parent
    return Path("/")


def check(flag: str, path: Path, directory: bool = False, inputs: Sequence[tuple[str, Optional[Path]]] = ()) -> None:
    """Refuse, before anything runs, an output that cannot be one: a directory for a file (or a file
    for a directory), a device or other special file, a path under a file, a place this user cannot
    write, a path that is also one of the run's inputs."""
    for other_flag, other in inputs:
        if other is not None and other.resolve() == path.resolve():
            raise OutputError(f"{flag} {path}: is also the input of {other_flag}; write the report elsewhere")
    if directory:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{flag} {path}: is a file; give a directory")
    elif path.is_dir():
        raise OutputError(f"{flag} {path}: is a directory; give a file name")
    elif path.exists() and not path.is_file():
        raise OutputError(f"{flag} {path}: is not a regular file (a device, a pipe or a socket); give a file name")
    # What must be a writable directory: the output's own for --manifests, else the one it goes in
    # (an existing report is replaced, so the file itself may exist).
    ancestor = _existing_ancestor(path if directory else path.parent)
    if not ancestor.is_dir():
        raise OutputError(f"{flag} {path}: {ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: {ancestor} is not writable")


def _temporary(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=directory, prefix=".preview-", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    return Path(name)


def write_all(outputs: Sequence[Output]) -> None:
    """Render every output, write each to a temporary file beside its target, then move them all
    into place (a directory's old numbered manifests go only then). Raises OutputError naming the
    flag; nothing of this run stays behind."""
    rendered = [(o, o.render()) for o in outputs]
    staged: list[tuple[Path, Path]] = []  # (temporary, target)
    stale: list[Path] = []
    try:
        for output, content in rendered:
            try:
                if output.is_directory:
                    stale += sorted(output.path.glob(MANIFEST_GLOB)) if output.path.is_dir() else []
                    staged += [(_temporary(output.path, text), output.path / name) for name, text in content.items()]
                else:
                    staged.append((_temporary(output.path.parent, content), output.path))
            except OSError as exc:
                raise OutputError(f"{output.flag} {output.path}: cannot be written ({exc.strerror or exc})") from None
    except OutputError:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    targets = {target for _, target in staged}
    for old in stale:
        if old not in targets:
            old.unlink(missing_ok=True)
    for temporary, target in staged:
        os.replace(temporary, target)

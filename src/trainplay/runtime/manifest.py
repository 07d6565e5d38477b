"""A checkpoint's manifest: the size and SHA-256 of every file in its folder, written last.

A checkpoint is complete only when its manifest says so: :func:`seal` writes ``manifest.json``
after every other file of the folder is written and flushed (DCP's shards, its ``.metadata``,
``trainplay.json``), and :func:`verify` re-reads each file against it before the checkpoint is
trusted. It catches what a rename cannot: a shard cut short by a full disk or a copy, bytes
changed in place, a file missing or added, a folder copied without its manifest.

The leader of a save seals the folder (it sees every rank's files: the checkpoint directory is
one file system for all ranks), and one rank verifies before a restore; SHA-256 reads at the
disk's speed on any machine with SHA extensions, so it costs about what the restore's own read
does.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

__all__ = ["MANIFEST_FILE", "seal", "verify"]

MANIFEST_FILE = "manifest.json"
FORMAT = 1
_CHUNK_BYTES = 1 << 20


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name != MANIFEST_FILE)


def seal(folder: Path) -> None:
    """Write ``folder``'s manifest, durably; every other file must be complete already."""
    entries = {}
    for path in _files(folder):
        if not path.is_file():
            raise ValueError(f"{path} is not a file; a checkpoint folder holds files only")
        entries[path.name] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
    tmp = folder / (MANIFEST_FILE + ".tmp")
    with tmp.open("w") as file:
        json.dump({"format": FORMAT, "files": entries}, file, indent=1)
        file.flush()
        os.fsync(file.fileno())
    os.rename(tmp, folder / MANIFEST_FILE)


def verify(folder: Path) -> str | None:
    """Why ``folder`` is not the checkpoint its manifest describes (a few words), or ``None``."""
    try:
        data = json.loads((folder / MANIFEST_FILE).read_text())
        entries = data["files"]
        if data.get("format") != FORMAT or not isinstance(entries, dict):
            raise ValueError
        expected = {
            name: (int(entry["bytes"]), str(entry["sha256"])) for name, entry in entries.items()
        }
    except FileNotFoundError:
        return f"it has no {MANIFEST_FILE} (its save never finished)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"its {MANIFEST_FILE} is damaged"
    present = {p.name: p for p in _files(folder)}
    for name in sorted(set(expected) - set(present)):
        return f"{name} is missing"
    for name in sorted(set(present) - set(expected)):
        return f"{name} is not in its {MANIFEST_FILE}"
    for name, (size, checksum) in sorted(expected.items()):
        path = present[name]
        try:
            actual = path.stat().st_size
            if actual != size:
                return f"{name} is {actual} bytes, its {MANIFEST_FILE} says {size}"
            if _sha256(path) != checksum:
                return f"{name} differs from its checksum in {MANIFEST_FILE}"
        except OSError as exc:
            return f"{name} cannot be read ({exc.strerror or exc})"
    return None

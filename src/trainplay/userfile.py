"""Files a user names on the command line: read as text, or checked for writing before any work.

Every failure is a :class:`~trainplay.errors.UsageError` whose one line names the file and what to
do about it: a directory, a device or pipe, a file too large or not UTF-8 text, a folder that
cannot be written (``/proc``, a read-only mount). Writable is tested by creating a file, not
with ``os.access``, which says yes to root everywhere.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from trainplay.errors import UsageError

__all__ = ["MAX_TEXT_BYTES", "check_writable", "read_text"]

MAX_TEXT_BYTES = 16 * 2**20
"""Larger than any cluster or plan file; stops ``/dev/zero`` or a data file given by mistake."""


def read_text(
    path: str | Path,
    what: str,
    *,
    hint: str = "",
    max_bytes: int = MAX_TEXT_BYTES,
    error: type[UsageError] = UsageError,
) -> str:
    """The UTF-8 text of ``path``; ``what`` names the file in errors ("cluster file"), ``hint``
    ends them ("give a cluster YAML file")."""
    path = Path(path)
    tail = f"; {hint}" if hint else ""
    if path.is_dir():
        raise error(f"{what} {str(path)!r} is a directory{tail or '; give a file'}")
    if path.exists() and not path.is_file():
        raise error(f"{what} {str(path)!r} is not a regular file (a device or a pipe){tail}")
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}{tail}") from None
    if len(data) > max_bytes:
        raise error(f"{what} {str(path)!r} is larger than {max_bytes // 2**20} MiB{tail}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} {str(path)!r} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}){tail}"
        ) from None


def check_writable(path: str | Path, flag: str, *, folder: bool = False) -> None:
    """Fail now, before minutes of work, if ``path`` (the value of ``flag``) cannot be written:
    a file, or with ``folder`` a folder to write files in. Creates nothing that was not there
    (the folders a later write would create are only tested)."""
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is a file, not a folder: give a folder name")
    if not folder and path.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is a directory: give a file name")
    if not folder and path.exists():
        try:
            with path.open("a"):
                pass
        except OSError as exc:
            raise UsageError(f"cannot write {flag} {str(path)!r}: {exc.strerror or exc}") from None
        return
    place = path if folder else path.parent
    while not place.exists():
        place = place.parent
    if not place.is_dir():
        raise UsageError(f"cannot write {flag} {str(path)!r}: {str(place)!r} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=place):
            pass
    except OSError as exc:
        raise UsageError(
            f"cannot write {flag} {str(path)!r}: no file can be created in {str(place)!r} "
            f"({exc.strerror or exc}); choose another place"
        ) from None

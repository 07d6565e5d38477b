"""Named clusters: ``--cluster lab`` or ``--cluster 8xA100-80GB`` instead of a file's path.

A preset is a cluster YAML file shipped in ``trainplay/hardware/examples/``, ``NAME.yaml``, whose
first comment line says what it is (the next ones where its layout comes from; the devices' and
links' numbers are the catalog's). ``trainplay hw list`` lists them; ``trainplay hw show NAME
--format yaml`` prints one to start a file of your own from.

What ``--cluster`` names is found in one place, :func:`cluster_path`: an existing file wins (a
file ``lab`` in the current folder is read, not the preset); then a preset's name, case ignored,
or an alias (``DGX-1``); anything else is an error with close matches. ``local`` (this machine,
measured) is resolved before, by :func:`trainplay.hardware.local.resolve_cluster`.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from trainplay.errors import UsageError

__all__ = ["ALIASES", "PRESET_DIR", "cluster_path", "describe", "preset_names"]

PRESET_DIR = Path(__file__).with_name("examples")

ALIASES = {"DGX-1": "8xV100-16GB", "DGX-H100": "8xH100-SXM"}
"""Other names of presets, as vendors sell them."""


def preset_names() -> tuple[str, ...]:
    """The presets, mixed labs first, then single nodes by name."""
    names = [p.stem for p in PRESET_DIR.glob("*.yaml")]
    return tuple(sorted(names, key=lambda n: (not n.startswith("lab"), n.lower())))


def describe(name: str) -> str:
    """The first comment line of the preset's file."""
    for line in (PRESET_DIR / f"{name}.yaml").read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def _preset(name: str) -> str | None:
    folded = {n.lower(): n for n in (*preset_names(), *ALIASES)}
    found = folded.get(name.lower())
    return ALIASES.get(found, found) if found else None


def cluster_path(spec: str) -> Path:
    """The file ``--cluster spec`` means: ``spec`` itself if it exists or looks like a path
    (then reading it says what is wrong), else the preset of that name."""
    if not spec.strip():
        raise UsageError(
            "--cluster is empty: give a cluster YAML file, a preset such as lab "
            "(`trainplay hw list`), or local"
        )
    path, preset = Path(spec), _preset(spec)
    if path.is_file() or (path.exists() and preset is None):
        return path
    if preset is not None:
        return PRESET_DIR / f"{preset}.yaml"
    if "/" in spec or path.suffix.lower() in (".yaml", ".yml", ".json"):
        by_stem = _preset(path.stem)
        hint = f"; did you mean the preset {by_stem}?" if by_stem else ""
        raise UsageError(f"cluster file {spec!r} does not exist{hint}")
    close = difflib.get_close_matches(spec, [*preset_names(), *ALIASES, "local"], n=4, cutoff=0.5)
    hint = f"close matches: {', '.join(close)}; " if close else ""
    raise UsageError(
        f"unknown cluster {spec!r}: no such file, and no preset of that name ({hint}"
        "presets: `trainplay hw list`; this machine: local)"
    )

"""How much of the CPU validation's change the hot-cache knee made, and how much re-measuring did.

On 2026-12-01 the CPU profile's hot-cache footprint (``PerfProfile.cache_bytes``) changed from the
footprint at which streaming reaches memory speed to the one at which it leaves cache speed
(``hardware/measure/coldcache.py``), and both local layouts were measured again with it. This
script takes every data-parallel case of the committed ``validate_cpu_<set>.json`` results (their
measured step times as they are) and predicts each again on the cached profiles of today, once as
they are and once with ``cache_bytes`` set back to what the profiles before the change held
(one process: 128 MiB; two processes: 32 and 64 MiB). No training runs: predictions only, so it
takes seconds. Pipeline cases are left out (their prediction is the planner's, made inside
``validate_cpu.py``).

``python benchmarks/cache_knee_whatif.py`` writes ``benchmarks/results/cache_knee_whatif.md`` and
``.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.validate_cpu import RESULTS, _profile  # noqa: E402

from trainplay.hardware.local import local_cluster  # noqa: E402
from trainplay.hardware.spec import ClusterSpec  # noqa: E402
from trainplay.roofline.analysis import analyze  # noqa: E402
from trainplay.roofline.layout import Parallel  # noqa: E402

MIB = 2**20
BEFORE_MIB = {1: (128,), 2: (32, 64)}
"""``cache_bytes`` of the cached profiles before the change, per process count (per worker)."""


def with_cache_bytes(cluster: ClusterSpec, mibs: tuple[int, ...]) -> ClusterSpec:
    """``cluster`` with its measured workers' ``cache_bytes`` set to ``mibs`` (one per worker)."""
    nodes = []
    for node in cluster.nodes:
        devices = []
        for device in node.devices:
            measured = tuple(
                dataclasses.replace(
                    p, profile=dataclasses.replace(p.profile, cache_bytes=mibs[i % len(mibs)] * MIB)
                )
                for i, p in enumerate(device.measured)
            )
            devices.append(dataclasses.replace(device, measured=measured))
        nodes.append(dataclasses.replace(node, devices=tuple(devices)))
    return dataclasses.replace(cluster, nodes=tuple(nodes))


def _mape(errors: list[float]) -> float:
    return 100 * statistics.fmean(abs(e) for e in errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="development,held_out,held_out_2")
    args = parser.parse_args()
    summary = []
    for name in args.sets.split(","):
        rows = json.loads((RESULTS / f"validate_cpu_{name}.json").read_text())
        now, before = [], []
        for r in (r for r in rows if r["layout"] == "dp"):
            model, _, seq = r["model"].partition("@")
            prof = _profile(model, r["batch"], int(seq) if seq else None)
            cluster = local_cluster(r["procs"], measure_if_missing=False)
            old = with_cache_bytes(cluster, BEFORE_MIB[r["procs"]])
            predicted = analyze(prof, old, Parallel(dp=r["procs"])).iteration.predicted_s
            now.append(r["error"])
            before.append((predicted - r["measured_s"]) / r["measured_s"])
        summary.append(
            {
                "set": name,
                "cases": len(now),
                "mape_now": _mape(now),
                "mape_knee_before": _mape(before),
            }
        )
    lines = [
        "# The hot-cache knee's share of the CPU validation's change",
        "",
        "Command: `python benchmarks/cache_knee_whatif.py`. The data-parallel cases of each "
        "committed `validate_cpu_<set>.json`, their measured times as committed, predicted on "
        "today's cached profiles as they are and with `cache_bytes` set back to the values "
        "before the change (1 process: 128 MiB, 2 processes: 32 and 64 MiB).",
        "",
        "| set | data-parallel cases | MAPE, profiles as measured "
        "| MAPE, same profiles, knee as before |",
        "|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s['set']} | {s['cases']} | {s['mape_now']:.1f}% | {s['mape_knee_before']:.1f}% |"
        )
    (RESULTS / "cache_knee_whatif.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "cache_knee_whatif.json").write_text(json.dumps(summary, indent=2) + "\n")
    print("\n".join(lines[6:]))


if __name__ == "__main__":
    main()

"""A measured ``validate_cpu`` set priced again, without measuring anything: each case's
prediction with its profile as measured (drift factors 1) beside the prediction at the drift
factors the run recorded for it (which reproduces the run's own prediction where the code and
profiles are unchanged).

``python benchmarks/validate_cpu_reprice.py --set held-out-6`` (``--tag T`` for a run tagged so):
reads ``benchmarks/results/validate_cpu_<set>[_T].json`` and this machine's cached profiles,
writes ``benchmarks/results/validate_cpu_<set>[_T]_repriced.{md,json}``. The profiles must be the
ones the run used (``measured_at`` is printed). A one-process case is priced with the profile of
the placement its run was priced in (:func:`_placement`), not of the placement the CPUs are in
while this runs (until 2026-12-07 it took the latter).

``--without PART`` prices the set as the cost model did before PART existed, on the same
profiles, to tell what each part changed: ``planes`` reads every surface by inverse-distance
weighting (:mod:`trainplay.hardware.interpolate`); ``depthwise-classes`` prices every grouped
convolution on one surface of all their sweep points, as before they were classed by kernel and
stride; ``wide-points`` drops the sweep's points where many samples meet a wide weight on one-
and two-position maps (``sweeps.WIDE_MAPS``, added 2026-12-04) from every dense convolution
surface; ``narrow-norms`` prices a batch norm over maps of 2 to 7 positions (class ``norm_narrow``,
added 2026-12-04) on the ``norm`` curves, as a profile without the class does; ``narrow-1x1``
prices a 1x1 convolution on few samples and maps of 2 to 11 positions (class ``conv_1x1_narrow``,
added 2026-12-04) on ``conv_1x1_few``'s surfaces by FLOP per byte, with the class's sweep points
put back among them as a sweep before the class would have had them; ``transcendental`` prices
SiLU, sigmoid, tanh and the other exponential elementwise operators (``opclass.TRANSCENDENTAL``,
their own curves added 2026-12-04 23:00) on the elementwise class's curve, as before; ``warm``
prices a small matrix product or dense convolution whose weights stay cached at its hot-cache
rate, as before its warm curve (added 2026-12-05 01:32, d9d0316); ``squeezes`` drops the sweep's
1x1 convolutions with few channels or on a 1x1 map (``sweeps.SQUEEZES``, added 2026-12-07,
bde1e6c) from the ``conv_1x1`` and ``conv_1x1_few`` surfaces; ``short-points`` drops a short
sequence's products and attention (``sweeps.NARROW_GEMMS`` and ``SHORT_ATTENTIONS``, added
2026-12-07, d2560f7) from the ``gemm`` and ``attention`` surfaces. Written as
``..._repriced_without_<PART>.{md,json}``. (``turns``, tried 2026-12-06 in 45c7268 and reverted,
priced two pipeline stages on one CPU busy throughout beside the model that ran a stage at its
alone rate while the other waited: ``validate_cpu_held_out_28_repriced_without_turns.md``; the
cost model prices them busy throughout again.)

``--label L`` writes ``..._repriced_<L>...`` instead, for a set priced again on other profiles
than a file already committed was (``pooled``: the profiles pooled over moments,
:mod:`trainplay.hardware.moments`).

``--with PART`` prices the set with a change that was tried and not kept: ``depthwise-cold``
prices every grouped and depthwise convolution at its class's cold-cache curve whatever its size
(the cost model takes the hot one for a call that fits in half the cache). Tried 2026-12-04
19:34 (6be7285): it brought held-out-16, priced again on its own profiles, from 11.8% to 8.7%
(held-out-15, its one-process cases on the profile measured after it, from 12.5% to 9.4%), and
the blind held-out-17 from 14.5% to 16.5% (grouped convolutions of RegNet-X inside training
steps ran at about half their cold time); reverted. Written as
``..._repriced_with_<PART>.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import validate_cpu as run  # noqa: E402

from trainplay.hardware import drift  # noqa: E402
from trainplay.hardware.local import (  # noqa: E402
    DRIFT_ENV,
    cached_placements,
    load_cached,
    local_cluster,
)
from trainplay.hardware.placement import MIXED  # noqa: E402
from trainplay.roofline.analysis import analyze  # noqa: E402
from trainplay.roofline.layout import Parallel  # noqa: E402

ONE = {"compute": 1.0, "memory": 1.0}
WITHOUT = (
    "planes",
    "depthwise-classes",
    "wide-points",
    "narrow-norms",
    "narrow-1x1",
    "transcendental",
    "warm",
    "squeezes",
    "short-points",
)
WITH = ("depthwise-cold",)


def _with(part: str) -> None:
    """This process prices with ``part``, a change tried and not kept (the module docstring)."""
    from trainplay.hardware.profile import PerfProfile
    from trainplay.workload.opclass import DEPTHWISE_CLASSES

    assert part == "depthwise-cold"
    curve = PerfProfile.curve

    def priced(self, cls, phase, op=None, nbytes=None, stale=False):
        if cls in DEPTHWISE_CLASSES:
            nbytes = None  # the class's cold-cache curve, whatever the call's size
        return curve(self, cls, phase, op, nbytes, stale)

    PerfProfile.curve = priced  # type: ignore[method-assign]


def _without(part: str) -> None:
    """This process prices as the cost model did before ``part`` (the module docstring)."""
    from dataclasses import replace

    from trainplay.hardware.profile import PerfProfile, Surface
    from trainplay.workload.opclass import DEPTHWISE_CLASSES

    if part == "planes":
        Surface._planar = lambda self: False  # type: ignore[method-assign]
        return
    if part in ("wide-points", "squeezes", "short-points"):
        from trainplay.hardware.measure import sweeps

        phases = ("fwd", "bwd")
        if part == "short-points":
            points = [sweeps._gemm(*g, phase) for g in sweeps.NARROW_GEMMS for phase in phases]
            points += [sweeps._gemm(*g, "bwd", weight_grad=True) for g in sweeps.NARROW_GEMMS]
            points += [sweeps._attention(*a, p) for a in sweeps.SHORT_ATTENTIONS for p in phases]
            _without_points(points, ("gemm.", "attention."))
        elif part == "squeezes":
            convs = [(n, c, h, co, 1, 1) for n, c, h, co in sweeps.SQUEEZES]
            points = [sweeps._conv(*conv, 1, phase) for conv in convs for phase in phases]
            _without_points(points, ("conv_1x1.", "conv_1x1_few."))
        else:
            points = [sweeps._conv(*conv, 1, ph) for conv in sweeps.WIDE_MAPS for ph in phases]
            _without_points(points, ("conv.", "conv_point."))
        return
    if part == "narrow-1x1":
        _without_narrow_1x1()
        return
    if part == "transcendental":
        _without_transcendental()
        return
    curve, merged = PerfProfile.curve, {}
    if part == "warm":

        def without_warm(self, *args, **kwargs):
            """Priced on ``self`` without its warm curves, as a profile measured before them."""
            if id(self) not in merged:
                kept = {k: c for k, c in self.classes.items() if not k.endswith("@warm")}
                merged[id(self)] = replace(self, classes=kept)
            return curve(merged[id(self)], *args, **kwargs)

        PerfProfile.curve = without_warm  # type: ignore[method-assign]
        return
    if part == "narrow-norms":

        def as_norm(self, cls, *args, **kwargs):
            return curve(self, "norm" if cls == "norm_narrow" else cls, *args, **kwargs)

        PerfProfile.curve = as_norm  # type: ignore[method-assign]
        return

    def one_surface(profile: PerfProfile) -> PerfProfile:
        """``profile`` with each depthwise class's points in ``conv_dw``'s surfaces."""
        if id(profile) not in merged:
            points: dict[str, list[tuple[float, float, float]]] = {}
            for key, c in profile.classes.items():
                cls, _, rest = key.partition(".")
                if cls in DEPTHWISE_CLASSES and isinstance(c, Surface):
                    into = points.setdefault(f"conv_dw.{rest}", [])
                    into += zip(c.sizes, c.intensities, c.rates, strict=True)
            classes = {
                k: c for k, c in profile.classes.items() if k.split(".")[0] not in DEPTHWISE_CLASSES
            }
            for key, found in points.items():
                classes[key] = _surface_of(found)
            merged[id(profile)] = (profile, replace(profile, classes=classes))
        return merged[id(profile)][1]

    def priced(self, cls, phase, op=None, nbytes=None, stale=False):
        if cls in DEPTHWISE_CLASSES:
            return curve(one_surface(self), "conv_dw", phase, op, nbytes, stale)
        return curve(self, cls, phase, op, nbytes, stale)

    PerfProfile.curve = priced  # type: ignore[method-assign]


def _without_transcendental() -> None:
    """Every exponential elementwise operator on its class's curve, as before the sweep timed
    them: their own curves dropped (the class curves never held their points) and no stand-in."""
    from trainplay.hardware.profile import PerfProfile
    from trainplay.workload import opclass

    curve = PerfProfile.curve

    def on_class(self, cls, phase, op=None, nbytes=None, stale=False):
        return curve(self, cls, phase, None if op in opclass.TRANSCENDENTAL else op, nbytes, stale)

    PerfProfile.curve = on_class  # type: ignore[method-assign]


def _surface_of(points: list[tuple[float, float, float]]):
    """A surface of (size, intensity, rate) points, the last of any repeated (size, intensity)."""
    from trainplay.hardware.profile import Surface

    unique = sorted(dict(((s, i), r) for s, i, r in points).items())
    return Surface(
        sizes=tuple(k[0] for k, _ in unique),
        intensities=tuple(k[1] for k, _ in unique),
        rates=tuple(r for _, r in unique),
    )


def _price_with(transform) -> None:
    """This process reads every curve from ``transform(profile)``, made once per profile."""
    from trainplay.hardware.profile import PerfProfile

    curve, made = PerfProfile.curve, {}

    def priced(self, cls, phase, op=None, nbytes=None, stale=False):
        if id(self) not in made:
            made[id(self)] = (self, transform(self))
        return curve(made[id(self)][1], cls, phase, op, nbytes, stale)

    PerfProfile.curve = priced  # type: ignore[method-assign]


def _without_points(points, classes: tuple[str, ...]) -> None:
    """Every surface of ``classes`` without the sweep's points of the cases ``points``
    (:class:`~trainplay.hardware.measure.sweeps.Case`; matched by their FLOPs and FLOP per byte,
    counted as the sweep counts them)."""
    from dataclasses import replace

    from trainplay.hardware.profile import Surface

    gone = set()
    for case in points:
        cost = case.counted()
        gone.add((round(cost.flops), round(cost.flops / cost.bytes, 6)))

    def keep(key: str, c):
        if not key.startswith(classes) or not isinstance(c, Surface):
            return c
        kept = [
            p
            for p in zip(c.sizes, c.intensities, c.rates, strict=True)
            if (round(p[0]), round(p[1], 6)) not in gone
        ]
        sizes, intensities, rates = zip(*kept, strict=True)
        return Surface(sizes=sizes, intensities=intensities, rates=rates, spread=c.spread)

    _price_with(
        lambda profile: replace(
            profile, classes={k: keep(k, c) for k, c in profile.classes.items()}
        )
    )


def _without_narrow_1x1() -> None:
    """``conv_1x1_narrow`` priced by ``conv_1x1_few``'s surfaces, each with the class's points of
    that phase (and variant: cold, ``@hot``, ``@stale``) put back at their FLOP per byte (the
    sweep's cases of the class, counted on ``meta`` as the sweep counts them)."""
    from dataclasses import replace

    import torch

    from trainplay.hardware.measure.sweeps import cases
    from trainplay.hardware.profile import PerfProfile, Surface
    from trainplay.workload.opclass import positions
    from trainplay.workload.opcost import op_cost

    intensity: dict[tuple[int, int], float] = {}  # (FLOPs, positions) -> FLOP per byte
    for case in cases():
        if case.key.startswith("conv_1x1_narrow."):
            func, args, kwargs = case.build(torch.device("meta"), torch.float32)
            cost = op_cost(func, args, kwargs, func(*args, **kwargs))
            intensity[(round(cost.flops), positions(func, args))] = cost.flops / cost.bytes

    def without(profile: PerfProfile) -> PerfProfile:
        classes = {k: c for k, c in profile.classes.items() if not k.startswith("conv_1x1_narrow")}
        for key, c in profile.classes.items():
            rest = key.removeprefix("conv_1x1_narrow")
            if rest == key or not isinstance(c, Surface):
                continue
            into = classes.get("conv_1x1_few" + rest)
            found = []
            if into is not None:
                found += zip(into.sizes, into.intensities, into.rates, strict=True)
            for size, where, rate in zip(c.sizes, c.intensities, c.rates, strict=True):
                found.append((size, intensity[(round(size), round(where))], rate))
            classes["conv_1x1_few" + rest] = _surface_of(found)
        return replace(profile, classes=classes)

    _price_with(without)
    has = PerfProfile.has_class
    PerfProfile.has_class = lambda self, cls: cls != "conv_1x1_narrow" and has(self, cls)  # type: ignore[method-assign]


def _predicted(row: dict, factors: dict[str, float]) -> float:
    """The case's prediction with the drift factors ``factors`` (priced at them)."""
    drift.drift_of = lambda then, now: dict(factors)  # this process prices nothing else
    model, _, seq_text = row["model"].partition("@")
    seq = int(seq_text) if seq_text else None
    if row["layout"] == "dp":
        prof = run._profile(model, row["batch"], seq)
        cluster = local_cluster(row["procs"], show_progress=False, placement=_placement(row))
        return analyze(prof, cluster, Parallel(dp=row["procs"])).iteration.predicted_s
    return run.two_stage_plan(model, seq, row["batch"], tuple(row["bounds"])).predicted_iteration_s


def _placement(row: dict) -> str:
    """The placement a one-process or data-parallel row was priced in: the one most of its timed
    iterations ran in where this machine has a profile of it, else ``mixed``, which takes the
    profile measured in no one placement (as ``validate`` does), never the placement now."""
    placement = row.get("placement")
    return placement if placement in cached_placements(row["procs"]) else MIXED


def _profiles_used(rows: list[dict]) -> str:
    """When the profiles the rows were priced with were measured, one per layout and placement."""
    layouts = {(r["procs"], _placement(r)) for r in rows if r["layout"] == "dp"}
    used = {(n, p): load_cached(n, placement=p) for n, p in layouts}
    return ", ".join(
        f"{n} process{'es' if n > 1 else ''}"
        + (f" {p}" if p != MIXED else "")
        + f" {m.measured_at if m is not None else 'none'}"
        + (f" (pooled over {len(m.pooled_from)})" if m is not None and m.pooled_from else "")
        for (n, p), m in sorted(used.items())
    )


def _mape(rows: list[dict], key: str) -> float:
    return 100 * statistics.fmean(abs(r[key] - r["measured_s"]) / r["measured_s"] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="held-out-6")
    parser.add_argument("--tag", default="", help="the run's --tag (validate_cpu.py)")
    parser.add_argument("--without", choices=WITHOUT, help="price without this part of the model")
    parser.add_argument("--with", dest="with_", choices=WITH, help="price with a change not kept")
    parser.add_argument(
        "--label", default="", help="added to the written files' names: which profiles priced it"
    )
    args = parser.parse_args()
    tag = f"_{args.tag}" if args.tag else ""
    name = f"validate_cpu_{args.set.replace('-', '_')}{tag}"
    rows = json.loads((run.RESULTS / f"{name}.json").read_text())
    if args.without:
        _without(args.without)
    if args.with_:
        _with(args.with_)
    os.environ[DRIFT_ENV] = "price"
    out = []
    for r in rows:
        recorded = _predicted(r, r.get("drift") or ONE)
        measured = _predicted(r, ONE)
        out.append({**r, "recorded_s": recorded, "as_measured_s": measured})
        print(
            r["model"], r["batch"], r["procs"], r["layout"], f"{1e3 * measured:.1f} ms", flush=True
        )
    beyond = sum(abs(r["as_measured_s"] - r["measured_s"]) > 0.25 * r["measured_s"] for r in out)
    lines = [
        f"# The {args.set} set priced again: as measured, and at the drift factors recorded"
        + (f", without {args.without}" if args.without else "")
        + (f", with {args.with_}" if args.with_ else ""),
        "",
        f"`python benchmarks/validate_cpu_reprice.py --set {args.set}"
        + (f" --tag {args.tag}" if args.tag else "")
        + (f" --without {args.without}" if args.without else "")
        + (f" --with {args.with_}" if args.with_ else "")
        + (f" --label {args.label}" if args.label else "")
        + f"` (profiles measured: {_profiles_used(out)}). Nothing is timed again: the measured "
        "column is the run's.",
        "",
        f"MAPE as run **{_mape(out, 'predicted_s'):.1f}%**; priced again at the recorded factors "
        f"{_mape(out, 'recorded_s'):.1f}%; priced as measured (no drift correction) "
        f"**{_mape(out, 'as_measured_s'):.1f}%**, {beyond} beyond ±25%.",
        "",
        "| model | batch | processes | layout | measured ms | as run ms | as measured ms | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out:
        error = (r["as_measured_s"] - r["measured_s"]) / r["measured_s"]
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['procs']} | {r['layout']} | "
            f"{1e3 * r['measured_s']:.1f} | {1e3 * r['predicted_s']:.1f} | "
            f"{1e3 * r['as_measured_s']:.1f} | {100 * error:+.1f}% |"
        )
    written = (
        f"{name}_repriced"
        + (f"_{args.label}" if args.label else "")
        + (f"_without_{args.without}" if args.without else "")
        + (f"_with_{args.with_}" if args.with_ else "")
    )
    (run.RESULTS / f"{written}.md").write_text("\n".join(lines) + "\n")
    (run.RESULTS / f"{written}.json").write_text(json.dumps(out, indent=2) + "\n")
    print("\n".join(lines[4:5]))


if __name__ == "__main__":
    main()

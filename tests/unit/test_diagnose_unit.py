"""``trainplay diagnose``: reading Kineto traces, the straggler detector, and one-line errors.

The traces here are written by hand, event by event, so every expected number is known exactly;
``tests/integration/test_diagnose.py`` checks the same reading on traces of a real gloo run.
"""

import gzip
import io
import json
import statistics

import pytest
from rich.console import Console

from trainplay.cli import Parser
from trainplay.cli import diagnose as diagnose_cli
from trainplay.errors import UsageError
from trainplay.roofline.diagnose import (
    MARGIN,
    Diagnosis,
    Straggler,
    busy_time_detector,
    diagnose,
    quantile,
)
from trainplay.roofline.kineto import RankTrace, StepTimes, op_class, read_trace

MAIN, GLOO = 100, 200


def x(name, ts, dur, tid=MAIN, cat="cpu_op", seq=None):
    args = {} if seq is None else {"Sequence number": seq}
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur} | {
        "args": args
    }


def step_events(n, t0, seq, *, conv=400, relu=100, wait=300):
    """One DDP-like step, laid out by hand (µs); returns its events and its end.

    forward: block ``a`` = conv2d (GEMM, with an mkldnn child) + a view that records the next
    sequence number without making a node; block ``b`` = relu; the loss outside any block.
    backward: relu's, conv's (with the GEMM inside), the loss's; then an all-reduce launch,
    a wait with gloo's all-reduce in flight, and the optimizer's add.
    """
    ev = [
        x("trainplay.block:a", t0 + 10, conv + 40, cat="user_annotation"),
        x("aten::conv2d", t0 + 15, conv, seq=seq),
        x("aten::mkldnn_convolution", t0 + 16, conv - 2),
        x("aten::view", t0 + conv + 20, 5, seq=seq + 1),
    ]
    b0 = t0 + conv + 50
    ev += [
        x("trainplay.block:b", b0, relu + 10, cat="user_annotation"),
        x("aten::relu", b0 + 5, relu, seq=seq + 1),
    ]
    t = b0 + relu + 10
    ev.append(x("aten::nll_loss", t, 10, seq=seq + 2))
    t += 20
    ev += [
        x("autograd::engine::evaluate_function: NllLossBackward0", t, 10, seq=seq + 2),
        x("autograd::engine::evaluate_function: ReluBackward0", t + 10, 2 * relu, seq=seq + 1),
        x(
            "autograd::engine::evaluate_function: ConvolutionBackward0",
            t + 10 + 2 * relu,
            900,
            seq=seq,
        ),
        x("ConvolutionBackward0", t + 11 + 2 * relu, 898, seq=seq),
        x("aten::convolution_backward", t + 12 + 2 * relu, 890),
    ]
    t += 10 + 2 * relu + 900
    ev += [
        x("c10d::allreduce_", t, 20),
        x("gloo:all_reduce", t + 20, wait, tid=GLOO, cat="user_annotation"),
    ]
    t += 20 + wait
    ev.append(x("aten::add_", t, 30))
    end = t + 40
    ev.append(x(f"ProfilerStep#{n}", t0, end - t0, cat="user_annotation"))
    return ev, end


def trace_json(rank, steps, *, distributed=True, first=1, **sizes):
    """A Kineto-shaped trace: steps ``first``, ``first + 1``, ... of :func:`step_events`, with
    sizes per step (a list) or fixed."""
    events, t = [], 1000.0
    for i in range(steps):
        per_step = {k: (v[i] if isinstance(v, list) else v) for k, v in sizes.items()}
        ev, t = step_events(first + i, t, seq=10 * i, **per_step)
        events += ev
        t += 10
    data = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 0,
        "traceEvents": events,
        "traceName": f"rank{rank}",
    }
    if distributed:
        data["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": 2}
    return data


def write(path, data):
    path.write_text(json.dumps(data))
    return path


# --- reading one trace ---------------------------------------------------------------


def test_one_step_is_read_exactly(tmp_path):
    trace = read_trace(write(tmp_path / "t.json", trace_json(3, 1, conv=400, relu=100, wait=300)))
    assert trace.rank == 3 and trace.world_size == 2
    (s,) = trace.steps
    # 10 + block a 440 + block b 110 + loss 20 + backward 10 + 200 + 900 + launch 20 + wait 300
    # + add and gap 40
    assert s.step == 1 and s.step_s * 1e6 == pytest.approx(2050)
    assert s.compute_s * 1e6 == pytest.approx(400 + 900)  # conv2d tree + conv backward tree
    assert s.memory_s * 1e6 == pytest.approx(5 + 100 + 10 + 10 + 200 + 30)
    assert s.collective_call_s * 1e6 == pytest.approx(20)
    assert s.collective_wait_s * 1e6 == pytest.approx(300)
    # a = span 440 + conv backward 900; b = span 110 + relu backward 200 (the view's sequence
    # number belongs to relu, the last forward op that recorded it); the loss is in no block
    assert s.blocks_s == pytest.approx({"a": 1340e-6, "b": 310e-6})
    assert list(s.blocks_s) == ["a", "b"]
    assert sum(s.blocks_s.values()) < s.step_s


def test_gzip_and_rank_from_file_name(tmp_path):
    path = tmp_path / "rank7.123.pt.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(trace_json(0, 2, distributed=False), f)
    trace = read_trace(path)
    assert trace.rank == 7 and trace.world_size is None and len(trace.steps) == 2
    assert RankTrace.from_dict(json.loads(json.dumps(trace.to_dict()))) == trace


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("aten::conv2d", "compute"),
        ("aten::mkldnn_convolution", "compute"),
        ("aten::addmm", "compute"),
        ("aten::bmm", "compute"),
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "compute"),
        ("autograd::engine::evaluate_function: ConvolutionBackward0", "compute"),
        ("AddmmBackward0", "compute"),
        ("aten::relu_", None),
        ("aten::sum", None),
        ("aten::_convert_indices_from_coo_to_csr", None),
        ("autograd::engine::evaluate_function: ReluBackward0", None),
        ("c10d::allreduce_", "collective"),
        ("gloo:all_reduce", "collective"),
        ("record_param_comms", "collective"),
    ],
)
def test_operator_classes(name, cls):
    assert op_class(name) == cls


def test_backward_node_does_not_make_its_reductions_compute(tmp_path):
    events = [
        x("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        x("autograd::engine::evaluate_function: AddmmBackward0", 10, 300, seq=5),
        x("AddmmBackward0", 11, 298, seq=5),
        x("aten::mm", 20, 100),
        x("aten::sum", 130, 50),  # bias gradient
        x("aten::t", 200, 10),
    ]
    data = trace_json(0, 1) | {"traceEvents": events}
    (s,) = read_trace(write(tmp_path / "t.json", data)).steps
    assert s.compute_s * 1e6 == pytest.approx(300 - 50 - 10)  # node, wrapper and mm self time
    assert s.memory_s * 1e6 == pytest.approx(60)


# --- the detector --------------------------------------------------------------------


def steps(busy, *, compute_share=0.7, step=None, call=0.001, memory_extra=0.0, call_extra=0.0):
    """Synthetic steps: busy times (s); the others' time waits."""
    out = []
    for i, b in enumerate(busy):
        work = b - call - memory_extra - call_extra
        out.append(
            StepTimes(
                step=i + 2,
                step_s=step or 0.1,
                compute_s=compute_share * work,
                memory_s=(1 - compute_share) * work + memory_extra,
                collective_call_s=call + call_extra,
                collective_wait_s=(step or 0.1) - b,
                blocks_s={"a": 0.5 * b},
            )
        )
    return tuple(out)


def rank(r, busy, **kw):
    return RankTrace(path=f"rank{r}.json", rank=r, world_size=None, steps=steps(busy, **kw))


def test_straggler_found_with_slowdown_formula():
    base = [0.040, 0.041, 0.039, 0.040, 0.042, 0.040]
    slow = [b + 0.020 for b in base]
    traces = [rank(0, base), rank(1, base), rank(2, slow), rank(3, [b + 0.001 for b in base])]
    straggler, note = busy_time_detector(traces)
    assert straggler is not None and straggler.rank == 2 and straggler.dimension == "compute"
    others = statistics.median([quantile(b, 0.25) for b in (base, base, [v + 0.001 for v in base])])
    excess = quantile(slow, 0.25) - others
    assert straggler.excess_s == pytest.approx(excess)
    assert straggler.excess_fraction == pytest.approx(excess / others)
    assert straggler.steps_slower == 6 and straggler.steps == 6
    # T = 0.1 s; the others are not busy for 0.1 - 0.040(5) s, more than the excess (0.02 s)
    assert straggler.slowdown == pytest.approx(0.1 / (0.1 - excess))
    assert note.startswith("straggler: rank 2 is the busiest")


def test_slowdown_is_capped_by_the_others_idle_time():
    # rank 0's lower quartile of busy time is 30 ms, so rank 1 is 65 ms busier; but in a
    # typical (median) step rank 0 is idle only 20 ms, all that rank 1 can give back
    traces = [rank(0, [0.03] * 3 + [0.08] * 4), rank(1, [0.095] * 7)]
    straggler, _ = busy_time_detector(traces, 0.10)
    assert straggler.rank == 1 and straggler.excess_s == pytest.approx(0.065)
    assert straggler.slowdown == pytest.approx(0.1 / (0.1 - 0.020))


def test_no_straggler_within_the_margin():
    busy = [0.040, 0.041, 0.039, 0.040, 0.042]
    traces = [rank(0, busy), rank(1, [b * (1 + MARGIN - 0.02) for b in busy])]
    straggler, note = busy_time_detector(traces)
    assert straggler is None and note.startswith("no straggler: rank 1 is the busiest")
    assert f"+{round(100 * (MARGIN - 0.02))}%" in note


def test_no_straggler_when_slower_in_too_few_steps():
    # rank 1's lower quartile is 20% above rank 0's, but rank 0 is as slow in half the steps
    traces = [
        rank(0, [0.010, 0.010, 0.014, 0.014, 0.014, 0.010]),
        rank(1, [0.012] * 6),
    ]
    straggler, note = busy_time_detector(traces, 0.10)
    assert straggler is None and "beyond the 10% margin in 3 of 6 steps" in note
    found, _ = busy_time_detector(
        [traces[0], rank(1, [0.012, 0.012, 0.016, 0.016, 0.016, 0.012])], 0.10
    )
    assert found is not None and found.rank == 1


def test_dimension_is_where_the_excess_goes():
    busy = [0.040] * 5
    memory = busy_time_detector([rank(0, busy), rank(1, [0.060] * 5, memory_extra=0.020)])[0]
    assert memory.dimension == "memory"
    comm = busy_time_detector([rank(0, busy), rank(1, [0.060] * 5, call_extra=0.020)])[0]
    assert comm.dimension == "communication"


def test_a_rank_slower_in_every_class_alike_is_short_of_compute():
    """A CPU quota or a lower clock slows GEMMs and memory-bound operators by the same factor:
    most excess seconds land in the memory-bound ones when most of the work is there, but the
    processor is what falls short (compute). Memory is named only when the memory-bound operators
    slowed beyond the margin more than the GEMMs."""
    busy = [0.040] * 5
    uniform = busy_time_detector(
        [rank(0, busy, compute_share=0.2), rank(1, [0.100] * 5, compute_share=0.2)]
    )[0]
    assert uniform.dimension == "compute"
    # GEMMs 1.2x slower, the rest 2x: beyond the 25% margin, memory
    work = 0.039
    bus = 0.2 * work * 1.2 + 0.8 * work * 2.0 + 0.001
    starved = rank(1, [bus] * 5, compute_share=0.2 * 1.2 * work / (bus - 0.001))
    assert busy_time_detector([rank(0, busy, compute_share=0.2), starved])[0].dimension == "memory"


def test_one_rank_has_no_straggler():
    straggler, note = busy_time_detector([rank(0, [0.04] * 4)])
    assert straggler is None and "one rank" in note


def test_quantile():
    assert quantile([4, 1, 3, 2], 0.25) == pytest.approx(1.75)
    assert quantile([5], 0.25) == 5 and quantile([], 0.5) == 0.0


# --- the facade ----------------------------------------------------------------------


def test_diagnose_a_directory(tmp_path):
    write(tmp_path / "rank0.json", trace_json(0, 5))
    write(tmp_path / "rank1.json", trace_json(1, 5, conv=[400, 1400, 1400, 1400, 1400]))
    result = diagnose(tmp_path)
    assert [r.rank for r in result.ranks] == [0, 1]
    assert result.straggler is not None and result.straggler.rank == 1
    assert result.straggler.dimension == "compute"
    assert result.straggler.excess_s == pytest.approx(1000e-6)
    assert result.ranks[1].blocks["a"] - result.ranks[0].blocks["a"] == pytest.approx(1000e-6)
    assert result.ranks[0].steps == 4 and "step 1 left out as warm-up" in result.notes
    assert Diagnosis.from_dict(json.loads(result.to_json())) == result


def with_meta(data, **meta):
    """A trace with the ``trainplay`` metadata ``trainplay train --profile-steps`` writes."""
    return {**data, "trainplay": meta}


def test_traces_are_judged_against_their_predicted_work(tmp_path):
    """Rank 1 predicted to do three times rank 0's work (a bigger share) and three times as busy
    is no straggler; the same traces without the prediction name it."""
    slow = [1200, 4200, 4200, 4200, 4200]
    write(tmp_path / "rank0.json", with_meta(trace_json(0, 5), predicted={"fwd_s": 0.001}))
    write(
        tmp_path / "rank1.json", with_meta(trace_json(1, 5, conv=slow), predicted={"fwd_s": 0.003})
    )
    assert diagnose(tmp_path).straggler is None
    write(tmp_path / "rank1.json", trace_json(1, 5, conv=slow))
    assert diagnose(tmp_path).straggler.rank == 1


def test_a_cpu_limited_rank_lacks_compute_wherever_its_time_went(tmp_path):
    """Rank 1 ran under a CPU quota (its metadata's ``cpu_floor``, threads over usable CPUs) and
    its extra time landed in memory-bound operators: compute, with the limit named."""
    write(tmp_path / "rank0.json", trace_json(0, 5))
    write(tmp_path / "rank1.json", with_meta(trace_json(1, 5, relu=2000), cpu_floor=2.5))
    result = diagnose(tmp_path)
    assert result.straggler.rank == 1 and result.straggler.dimension == "compute"
    assert "its CPU limit lets its threads run 40% of the time" in result.notes[0]
    write(tmp_path / "rank1.json", trace_json(1, 5, relu=2000))
    assert diagnose(tmp_path).straggler.dimension == "memory"


def test_balanced_directory_names_no_straggler(tmp_path):
    for r in (0, 1, 2):
        write(tmp_path / f"rank{r}.json", trace_json(r, 4, conv=400 + 10 * r))
    result = diagnose(tmp_path)
    assert result.straggler is None and result.to_dict()["straggler"] is None


def test_detector_is_swappable(tmp_path):
    write(tmp_path / "rank0.json", trace_json(0, 3))
    seen = []

    def everyone_is_fine(traces, margin):
        seen.append(([t.rank for t in traces], [len(t.steps) for t in traces], margin))
        return Straggler(0, "memory", 2.0, 0.1, 1.0, 2, 2), "custom"

    result = diagnose(tmp_path, detector=everyone_is_fine, margin=0.5)
    assert seen == [([0], [2], 0.5)]
    assert result.straggler.slowdown == 2.0 and result.notes[0] == "custom"
    assert "traces of 1 of the job's 2 ranks" in result.notes


# --- errors: one line, naming what is wrong ------------------------------------------


def error_of(path):
    with pytest.raises(UsageError) as info:
        diagnose(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_directory(tmp_path):
    assert "does not exist" in error_of(tmp_path / "nope")


def test_file_instead_of_directory(tmp_path):
    assert "is not a directory" in error_of(write(tmp_path / "rank0.json", trace_json(0, 2)))


def test_empty_directory(tmp_path):
    assert "holds no trace files (*.json, *.json.gz)" in error_of(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    assert "holds no trace files" in error_of(tmp_path)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"a": 1}', "(no traceEvents)"),
        ("[1, 2]", "(no traceEvents)"),
        ("{not json", "(not JSON: "),
        ('{"traceEvents": []}', "without Kineto's schemaVersion"),
        (
            '{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a", "ts": "x"}]}',
            "an event without numeric ts/dur",
        ),
    ],
)
def test_not_a_kineto_trace(tmp_path, content, why):
    (tmp_path / "rank0.json").write_text(content)
    message = error_of(tmp_path)
    assert f"{tmp_path / 'rank0.json'} is not a PyTorch profiler trace" in message
    assert why in message


def test_trace_without_steps(tmp_path):
    data = trace_json(0, 1) | {"traceEvents": [x("aten::add_", 0, 10)]}
    write(tmp_path / "rank0.json", data)
    assert "has no step spans (ProfilerStep#N)" in error_of(tmp_path)


def test_ranks_profiled_different_steps(tmp_path):
    write(tmp_path / "rank0.json", trace_json(0, 3))
    write(tmp_path / "rank1.json", trace_json(1, 3, first=3))
    result = diagnose(tmp_path)  # only step 3 is common: nothing is left out as warm-up
    assert [r.steps for r in result.ranks] == [1, 1]
    assert "steps not profiled on every rank are left out" in result.notes
    write(tmp_path / "rank1.json", trace_json(1, 3, first=10))
    assert "the traces share no step number (ProfilerStep#N)" in error_of(tmp_path)


def test_two_traces_of_one_rank(tmp_path):
    write(tmp_path / "a.json", trace_json(0, 2))
    write(tmp_path / "b.json", trace_json(0, 2))
    assert "two traces of rank 0" in error_of(tmp_path)


def test_rank_unknown(tmp_path):
    write(tmp_path / "trace.json", trace_json(0, 2, distributed=False))
    assert "cannot tell its rank" in error_of(tmp_path)


# --- the command ---------------------------------------------------------------------


def run_cli(*argv):
    parser = Parser(prog="trainplay")
    diagnose_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["diagnose", *argv])
    out = Console(record=True, width=120, file=io.StringIO())
    status = args.run(args, out, Console(stderr=True, quiet=True))
    return status, out.export_text()


def test_cli_table_and_json(tmp_path, capsys):
    write(tmp_path / "rank0.json", trace_json(0, 4))
    write(tmp_path / "rank1.json", trace_json(1, 4, conv=1400))
    status, text = run_cli(str(tmp_path))
    assert status == 0
    assert "Per rank, median of 3 steps (ms)" in text and "1 *" in text
    assert "straggler: rank 1, compute-bound excess of 1.00 ms per step" in text
    status, _ = run_cli(str(tmp_path), "--format", "json")
    data = json.loads(capsys.readouterr().out)
    assert data["straggler"]["rank"] == 1 and data["straggler"]["dimension"] == "compute"
    assert data["ranks"][0]["blocks"] == pytest.approx({"a": 440e-6 + 900e-6, "b": 310e-6})


def test_cli_no_straggler_and_errors(tmp_path):
    write(tmp_path / "rank0.json", trace_json(0, 3))
    write(tmp_path / "rank1.json", trace_json(1, 3))
    assert f"no straggler (margin {MARGIN:.0%})" in run_cli(str(tmp_path))[1]
    with pytest.raises(UsageError, match="does not exist"):
        run_cli(str(tmp_path / "missing"))
    with pytest.raises(SystemExit) as info:
        run_cli(str(tmp_path), "--margin", "lots")
    assert info.value.code == 2


def test_cli_margin_is_passed_on(tmp_path):
    write(tmp_path / "rank0.json", trace_json(0, 4))
    write(tmp_path / "rank1.json", trace_json(1, 4, conv=1400))  # busy 2675 vs 1675 µs: +60%
    assert "straggler: rank 1" in run_cli(str(tmp_path), "--margin", "0.5")[1]
    assert "no straggler (margin 70%)" in run_cli(str(tmp_path), "--margin", "0.7")[1]

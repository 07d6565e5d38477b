"""``trainplay plan`` end to end (in process): the JSON contract, re-checkable costs, the trace,
plans for a model no single card holds, makespan decisions over availability windows, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainplay.cli import main
from trainplay.errors import UsageError
from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.api import block_costs, plan_model

LAB = Path(__file__).parents[2] / "src/trainplay/hardware/examples/lab.yaml"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def resnet18_costs():
    return block_costs("resnet18")


def test_json_contract_and_memory(capsys, tmp_path):
    trace = tmp_path / "plan.trace.json"
    code, out, _ = run(
        capsys, "plan", "resnet18", "--cluster", str(LAB), "--global-batch", "64",
        "--format", "json", "--trace", str(trace),
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    plan = data["plan"]
    assert {
        "stages",
        "microbatches",
        "schedule",
        "recompute",
        "predicted_iteration_s",
    } <= plan.keys()
    n = len(plan["block_names"])
    covered = [b for s in plan["stages"] for b in range(s["blocks"][0], s["blocks"][1] + 1)]
    assert covered == list(range(n))
    for stage in plan["stages"]:
        assert sum(stage["batch_shares"]) == 64
        assert len(stage["batch_shares"]) == len(stage["devices"])
    used = {d for s in plan["stages"] for d in s["devices"]}
    for device in data["devices"]:
        assert device["mem_used_bytes"] <= 0.9 * device["mem_capacity_bytes"]
        assert (device["mem_used_bytes"] > 0) == (device["id"] in used)
    assert [b["name"] for b in data["baselines"]] == [
        "gpipe-equal-blocks", "equal-params", "data-parallel", "pipedream-homogeneous",
    ]  # fmt: skip
    fitting = [b["predicted_iteration_s"] for b in data["baselines"] if b["predicted_iteration_s"]]
    assert all(plan["predicted_iteration_s"] <= t * (1 + 1e-9) for t in fitting)
    costs = data["costs"]["blocks"]
    assert len(costs) == n and set(costs[0]["fwd_s"]) == {"V100-16GB", "T4", "RTX3090"}
    events = json.loads(trace.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and max(e["ts"] + e["dur"] for e in spans) == pytest.approx(
        plan["predicted_iteration_s"] * 1e6, rel=1e-6
    )


def test_table_says_what_matters(capsys):
    code, out, err = run(
        capsys, "plan", "resnet18", "--cluster", str(LAB), "--global-batch", "64", "--explain"
    )
    assert code == 0
    assert "against the baselines" in out and "predicted iteration" in out
    assert "stage 0 on" in err and "cost model" in err


def test_llama_7b_fits_only_split_over_small_cards(capsys):
    # 6.7B parameters in fp16 with SGD: 13.5 GB weights + 13.5 gradients + 27 master/momentum
    # (4x, mixed precision): no 16-24 GB card holds it, the lab's eight do together.
    code, out, _ = run(
        capsys, "plan", "llama-7b", "--cluster", str(LAB), "--global-batch", "8", "--seq-len",
        "256", "--dtype", "fp16", "--format", "json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert len(data["plan"]["stages"]) > 1
    for device in data["devices"]:
        assert device["mem_used_bytes"] <= 0.9 * device["mem_capacity_bytes"]
    dp = next(b for b in data["baselines"] if b["name"] == "data-parallel")
    assert dp["predicted_iteration_s"] is None and "does not fit" in dp["reason"]


def _two_v100(tmp_path: Path, window: str) -> Path:
    path = tmp_path / "two.yaml"
    path.write_text(
        "name: two\n"
        "nodes:\n"
        "  - name: a\n"
        "    devices: [{type: V100-16GB, count: 1}]\n"
        "  - name: b\n"
        f"    devices: [{{type: V100-16GB, count: 1, available: {window}}}]\n"
        "inter_link: 100gbe\n"
    )
    return path


def test_short_window_declined_long_window_taken(tmp_path, resnet18_costs):
    # A second V100 joins at t = 100 s. The job: 64-sample steps over 640,000 samples (10,000
    # iterations). Reconfiguring costs ~30 s restart + checkpoint/reload of resnet18's state +
    # 2 iterations: a window of 40 s cannot pay that back, one to the end of the job can.
    def schedule(window: str):
        spec = parse_cluster_file(_two_v100(tmp_path, window))
        return plan_model(
            "resnet18", spec, global_batch=64, dataset_size=640_000, costs=resnet18_costs
        )

    short = schedule("{from_s: 100, until_s: 140}")
    assert len(short.schedule_over_time.periods) == 1
    joins = [e for e in short.schedule_over_time.events if e.decision is not None]
    assert joins and not joins[0].decision.switch
    alone = short.plan.predicted_iteration_s
    assert short.plan.predicted_makespan_s == pytest.approx(10_000 * alone, rel=1e-9)

    long = schedule("{from_s: 100}")
    periods = long.schedule_over_time.periods
    assert len(periods) == 2 and periods[1].iteration_s < alone
    decision = next(e.decision for e in long.schedule_over_time.events if e.decision)
    assert decision.switch and decision.finish_if_switch_s < decision.finish_if_stay_s
    total = sum(p.iterations * p.iteration_s + p.reconfiguration_s + p.lost_s for p in periods)
    assert long.plan.predicted_makespan_s == pytest.approx(total, rel=1e-9)
    assert long.plan.predicted_makespan_s < short.plan.predicted_makespan_s


def parse_cluster_file(path: Path):
    from trainplay.hardware import load_cluster

    return load_cluster(path)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["llama-7b", "--seq-len", "128", "--global-batch", "4", "--optimizer", "adam"],
            "need",
        ),
        (
            ["resnet18", "--global-batch", "12", "--microbatches", "8"],
            "must divide the global batch 12",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, args, needle):
    small = tmp_path / "small.yaml"
    small.write_text(
        "name: small\nnodes:\n  - name: a\n    devices: [{type: T4, count: 2}]\n    intra_link: pcie3\n"
    )
    code, out, err = run(capsys, "plan", *args, "--cluster", str(small))
    assert code == 2 and out == ""
    assert err.startswith("trainplay: error:") and err.count("\n") == 1 and needle in err
    if needle == "need":
        assert "adam state alone need 100 GiB, more than the 28.8 GiB all 2 devices hold" in err
        assert "--optimizer sgd" not in err and "--dtype" not in err  # neither would fit it


def test_empty_or_unknown_cluster_is_one_line(capsys, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("name: empty\nnodes: []\n")
    code, _, err = run(capsys, "plan", "resnet18", "--cluster", str(empty), "--global-batch", "8")
    assert code == 2 and "nodes" in err and err.count("\n") == 1
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("name: u\nnodes:\n  - name: a\n    devices: [{type: V100-16G, count: 1}]\n")
    code, _, err = run(capsys, "plan", "resnet18", "--cluster", str(unknown), "--global-batch", "8")
    assert code == 2 and "V100-16GB" in err and err.count("\n") == 1


def test_cluster_spec_object_is_accepted(resnet18_costs):
    spec = parse_cluster(
        {"name": "one", "nodes": [{"name": "a", "devices": [{"type": "T4", "count": 1}]}]}
    )
    result = plan_model("resnet18", spec, global_batch=16, costs=resnet18_costs)
    assert result.plan.replicas == 1 and len(result.plan.stages) == 1
    assert result.plan.predicted_makespan_s is None and result.iterations is None


def test_decide_on_change_join_and_leave(tmp_path, resnet18_costs):
    from trainplay.plan.api import decide_on_change
    from trainplay.plan.costs import CostModel, devices_of

    spec = parse_cluster_file(_two_v100(tmp_path, "{from_s: 0}"))
    cm = CostModel(resnet18_costs, spec, "sgd")
    a, b = devices_of(spec, "fp32")
    alone = plan_model("resnet18", spec.__class__(name="one", nodes=spec.nodes[:1]),
                       global_batch=64, costs=resnet18_costs).plan  # fmt: skip
    # b joins with most of the job left: the faster plan pays the reconfiguration back
    decision, plan = decide_on_change(
        cm, alone, [a, b], now_s=0.0, remaining_iterations=100_000, joined=b
    )
    assert decision.switch and b.id in plan.devices
    assert plan.predicted_iteration_s < alone.predicted_iteration_s
    # ... with three iterations left it cannot, and the current plan stays
    decision, plan = decide_on_change(
        cm, alone, [a, b], now_s=0.0, remaining_iterations=3, joined=b
    )
    assert not decision.switch and plan == alone
    # b leaves while the plan uses it: re-plan on a alone, no choice
    both = plan_model("resnet18", spec, global_batch=64, costs=resnet18_costs).plan
    assert b.id in both.devices
    decision, plan = decide_on_change(cm, both, [a], now_s=50.0, remaining_iterations=10)
    assert decision.switch and plan.devices == (a.id,)


def test_lab_windows_example_is_a_sequence_of_plans(resnet18_costs):
    from trainplay.hardware import load_cluster

    spec = load_cluster(LAB.with_name("lab-windows.yaml"))
    result = plan_model(
        "resnet18", spec, global_batch=256, dataset_size=200_000_000, costs=resnet18_costs
    )
    ids = [d["id"] for d in result.devices]
    assert len(ids) == len(set(ids)) == 8  # two T4 entries on one node get distinct ids
    periods = result.schedule_over_time.periods
    assert len(periods) >= 2
    assert sum(p.iterations for p in periods) == result.iterations == 781_250
    three_hours = 10_800
    late = [p for p in periods if p.from_s >= three_hours]
    assert all("turing/T4:3" not in p.devices for p in late)  # it left at 3 h


def _new_cards(windows: list[str]):
    """Nodes of two 4 GiB cards (test_plan_search's ``new`` kind), one node per window."""
    from tests.unit.test_plan_search import GIB, KINDS

    flops, bw, mem = KINDS["new"]
    nodes = [
        {
            "name": f"n{k}",
            "devices": [
                {
                    "name": "new",
                    "peak_flops": {"fp32": flops},
                    "mem_bw_bps": bw,
                    "mem_bytes": mem,
                    "count": 2,
                    "available": window,
                }
            ],
            "intra_link": {"bandwidth_bps": 50e9, "latency_s": 5e-6},
        }
        for k, window in enumerate(windows)
    ]
    link = {"bandwidth_bps": 3e9, "latency_s": 2e-5}
    spec = {"name": "comings", "nodes": nodes, "inter_link": link}
    blocks = [(1e9, 1e7, 2**20, 1.0 * GIB)] * 4  # 4 GiB of fp32 weights: 12 GiB with SGD
    return parse_cluster(spec), blocks


def test_waits_for_the_memory_that_arrives_later():
    from tests.unit.test_plan_search import blocks_of

    spec, rows = _new_cards([{"from_s": 0}, {"from_s": 50}])
    result = plan_model("synthetic", spec, global_batch=8, dataset_size=80, costs=blocks_of(rows))
    wait = result.wait
    assert wait is not None and wait.start_s == 50
    assert wait.arriving == ("n1/new:0", "n1/new:1") and wait.arriving_usable_bytes > 7 * 2**30
    assert wait.cause.startswith("on the 2 devices there at the start: its parameters")
    assert "n1/new:0" in result.plan.devices  # the plan shown is the one that starts at 50 s
    periods = result.schedule_over_time.periods
    assert periods[0].from_s == 50 and sum(p.iterations for p in periods) == 10
    assert result.plan.predicted_makespan_s == periods[-1].until_s > 50


def test_nothing_fits_at_any_time_names_the_most_there_at_once():
    from tests.unit.test_plan_search import blocks_of

    spec, rows = _new_cards([{"from_s": 0, "until_s": 100}, {"from_s": 100}])
    with pytest.raises(UsageError) as err:
        plan_model("synthetic", spec, global_batch=8, costs=blocks_of(rows))
    text = str(err.value)
    assert "does not fit on the 2 devices there together from 0 s (the most at any time)" in text
    assert "sgd state alone need 12 GiB" in text


def test_llama_7b_on_lab_windows_waits_for_the_3090s():
    # Acceptance 5 of issue 14: the 6 cards there at the start hold 86.4 GiB usable, less than the
    # 87.9 GiB of fp16 weights, gradients and SGD state; the RTX 3090 box arrives at 1 h.
    from trainplay.report.plan_table import summary_lines

    result = plan_model(
        "llama-7b", "lab-windows", global_batch=8, seq_len=256, dtype="fp16", dataset_size=16000
    )
    said = "\n".join(summary_lines(result))
    assert "no plan fits on the 6 devices there at the start: its parameters" in said
    assert "the plan waits until 3,600 s, when ampere/RTX3090:0, ampere/RTX3090:1 arrive" in said
    assert "at the start, turing/T4:0" in said and "no plan fits: waiting" in said
    data = json.loads(json.dumps(result.to_dict()))
    assert data["wait"]["start_s"] == 3600
    periods = data["schedule_over_time"]["periods"]
    assert periods[0]["from_s"] == 3600 and "ampere/RTX3090:0" in periods[0]["devices"]
    assert sum(p["iterations"] for p in periods) == data["iterations"] == 2000
    assert data["plan"]["predicted_makespan_s"] == periods[-1]["until_s"] > 3600

"""Published, measured end-to-end GPU training results against trainplay's predictions from the
catalog (datasheet peaks and the published-microbenchmark profiles of
``trainplay.hardware.published_profiles``): the cost model's outside check.

The measurements are for validation only: nothing here is fitted to them. Three sources, none of
them named in an issue, each with its workload reproduced from its own configuration files:

1. **Data parallelism, 1 to 32 GPUs** — OneFlow DLPerf, NVIDIA DeepLearningExamples' PyTorch
   ResNet-50 v1.5 on 1-4 nodes of 8 V100-SXM2-16GB (NVLink within a node, one 100 Gb/s EDR
   InfiniBand HCA between nodes), FP32 at 128 and AMP at 256 images per GPU
   (Oneflow-Inc/DLPerf@c89430b ``NVIDIADeepLearningExamples/PyTorch/resnet50v1.5/README.md``
   L478-520, samples/s). Predicted by ``analyze`` (DDP: buckets overlap the backward). The runs
   used DeepLearningExamples at 5cc03caa (NGC 20.03): apex's ``DistributedDataParallel`` with its
   defaults (buckets of 10M elements all-reduced as they fill, overlapping the backward) under
   apex AMP O1 (fp32 parameters and gradients); the model's buckets are PyTorch's (25 MiB).
2. **Data and pipeline parallelism of a GPT** — OneFlow DLPerf, NVIDIA Megatron-LM GPT (hidden
   1536, 16 heads, 16 layers, sequence 2048, fp16, activation checkpointing, Adam) on the same
   cluster: data parallel over 1, 8, 16, 32 GPUs at micro-batch 2, and 8 replicas x 4 pipeline
   stages with 32 micro-batches (Oneflow-Inc/DLPerf@c89430b ``Megatron-LM/README.md`` L160-240,
   ms per iteration; the layouts with tensor parallelism are left out: trainplay does not model
   it). Predicted by the planner's pricing of that layout (all-reduce after the backward, as
   Megatron's does; 1F1B, as Megatron's non-interleaved schedule).
3. **Heterogeneous devices** — AMP (Li et al., NeurIPS 2022): GPT-2 (24 layers, hidden 1024,
   sequence 1024, vocabulary 52256, fp16, global batch 32) on 3 nodes of 4 V100 (p3.8xlarge) and
   one node of 4 T4 (g4dn.12xlarge), DeepSpeed's pipeline engine (1F1B) with Megatron-LM; every
   measured layout without tensor parallelism (DachengLi1/AMP@72eeea4
   ``src/results/het_cluster_results.txt``, s per iteration; the cluster's links as AMP's
   ``src/het_cluster.py`` encodes them: 170 Gb/s within a V100 node, 50 Gb/s within the T4 node
   and from it, 10 Gb/s between V100 nodes).

Writes ``benchmarks/results/published_gpu.{md,json}``: per case predicted against measured, the
MAPE per source and overall, the Spearman rank correlation of the layouts of sources 2 and 3, and
the 1 -> N scaling of source 1 predicted against measured.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.published_models import MegatronGPT  # noqa: E402

from trainplay.hardware.cluster import parse_cluster  # noqa: E402
from trainplay.plan.costs import BlockCosts, CostModel, devices_of  # noqa: E402
from trainplay.plan.layout import Layout, work_of  # noqa: E402
from trainplay.plan.simulate import iteration_s  # noqa: E402
from trainplay.roofline.analysis import analyze  # noqa: E402
from trainplay.roofline.layout import Parallel  # noqa: E402
from trainplay.workload import profile, profile_model  # noqa: E402
from trainplay.workload.decoder import DecoderConfig  # noqa: E402
from trainplay.workload.loss import training_loss  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"

DLPERF_RESNET = {  # (precision, batch per GPU) -> {GPUs: samples/s}
    ("fp32", 128): {1: 367.29, 4: 1449.48, 8: 2887.65, 16: 5716.79, 32: 10917.09},
    ("fp16", 256): {1: 802.9, 4: 3137.44, 8: 6154.66, 16: 11991.94, 32: 22551.16},
}
DLPERF_GPT = {  # case -> (dp, pp, micro-batch, micro-batches, measured s per iteration)
    "DP_1x1x1_2_1536x16": (1, 1, 2, 1, 0.46412),
    "DP_8x1x1_16_1536x16": (8, 1, 2, 1, 0.48096),
    "DP_16x1x1_32_1536x16": (16, 1, 2, 1, 0.66446),
    "DP_32x1x1_64_1536x16": (32, 1, 2, 1, 0.68351),
    "DP_PP_8x1x4_512_1536x16": (8, 4, 2, 32, 4.89355),
}
AMP_HET = [  # (row, micro-batch, dp, pp, AMP's layer partition, measured s per iteration)
    (0, 1, 4, 4, [0, 7, 14, 20, 30], 1.47),
    (1, 1, 2, 8, [0, 5, 9, 12, 15, 18, 21, 24, 30], 1.28),
    (2, 1, 1, 16, [0, 3, 5, 7, 9, 11, 13, 15, 16, 17, 19, 20, 21, 22, 23, 25, 30], 1.52),
    (3, 2, 4, 4, [0, 7, 14, 20, 30], 1.53),
    (4, 2, 2, 8, [0, 5, 9, 12, 14, 17, 20, 23, 30], 1.54),
    (5, 2, 1, 16, [0, 3, 5, 7, 9, 11, 13, 14, 16, 18, 19, 20, 21, 23, 24, 25, 30], 1.58),
    (6, 4, 4, 4, [0, 6, 13, 20, 30], 1.71),
    (7, 1, 8, 2, [0, 14, 30], 2.23),
    (9, 4, 2, 8, [0, 3, 7, 11, 14, 17, 20, 23, 30], 1.71),
    (12, 2, 8, 2, [0, 14, 30], 2.26),
    (15, 4, 8, 2, [0, 14, 30], 2.34),
    (21, 1, 16, 1, [0, 30], 2.90),
    (23, 8, 4, 4, [0, 8, 14, 20, 30], 2.07),
]


def _v100_cluster(gpus: int) -> dict:
    nodes = max(1, math.ceil(gpus / 8))
    per = min(gpus, 8)
    return {
        "name": f"{nodes}x{per} V100",
        "nodes": [
            {
                "name": f"n{i}",
                "devices": [{"type": "V100-16GB", "count": per}],
                "intra_link": "nvlink2",
            }
            for i in range(nodes)
        ],
        "inter_link": "ib-edr",
    }


def resnet_cases() -> list[dict]:
    out = []
    for (dtype, batch), measured in DLPERF_RESNET.items():
        prof = profile("resnet50", batch_size=batch, dtype=dtype, loss=True)
        for gpus, samples_s in measured.items():
            cluster = parse_cluster(_v100_cluster(gpus))
            result = analyze(prof, cluster, Parallel(dp=gpus))
            predicted = gpus * batch / result.iteration.predicted_s
            out.append(
                {
                    "source": "DLPerf ResNet-50 (V100)",
                    "case": f"{dtype} b{batch} x{gpus}",
                    "gpus": gpus,
                    "dtype": dtype,
                    "measured": samples_s,
                    "predicted": predicted,
                    "unit": "samples/s",
                }
            )
    return out


def _decoder_costs(config: DecoderConfig, dtype: str, seq: int) -> BlockCosts:
    """The published systems' GPT (Megatron-LM's: unfused attention, dropout) with ``config``'s
    dimensions, profiled at two micro-batch sizes, with its tied embedding (a stage holding the
    head without the embedding keeps a copy; both systems all-reduce its gradient between the
    first and the last stage, Megatron-LM's embedding group and DeepSpeed's tied modules, one pair
    of ranks per replica; the planner prices it as ``trainplay train`` runs it, one ring over every
    rank of the two stages)."""
    profiles = []
    for batch in (2, 4):
        with torch.device("meta"):
            model = MegatronGPT(
                vocab=config.vocab_size, hidden=config.d_model, heads=config.n_heads,
                layers=config.n_layers, seq=seq,
            )  # fmt: skip
        model = model.to(dtype={"fp16": torch.float16, "fp32": torch.float32}[dtype])
        ids = torch.zeros(batch, seq, dtype=torch.long, device="meta")
        profiles.append(
            profile_model(
                model,
                (ids,),
                name="gpt",
                batch_size=batch,
                input_shape=(seq,),
                dtype=dtype,
                loss=training_loss,
            )
        )
    return BlockCosts.from_profiles(*profiles, input_bytes_per_sample=8 * seq)


def _price(cm: CostModel, grid, bounds, microbatches, share, schedule, recompute) -> float:
    """The planner's price of a layout the source ran (its memory is not judged here: the source
    ran it, so it fit; the planner's memory model is not what this benchmark checks)."""
    grid = tuple(tuple(replace(d, mem_bytes=2**50) for d in row) for row in grid)
    layout = Layout(
        grid=grid,
        bounds=tuple(bounds),
        microbatches=microbatches,
        shares=(share,) * len(grid),
        schedule=schedule,
        recompute=tuple((recompute,) * (len(bounds) - 1) for _ in grid),
    )
    work = work_of(cm, layout)
    if work is None:
        raise RuntimeError(f"layout does not fit: {bounds}")
    return iteration_s(work)


def gpt_cases() -> list[dict]:
    config = DecoderConfig(
        vocab_size=50304, d_model=1536, n_layers=16, n_heads=16, d_ff=6144, context_len=2048
    )
    costs = _decoder_costs(config, "fp16", 2048)
    out = []
    for case, (dp, pp, micro, microbatches, measured) in DLPERF_GPT.items():
        cluster = parse_cluster(_v100_cluster(dp * pp))
        # Megatron-LM's --fp16: half-precision parameters, their gradients all-reduced in fp16
        cm = CostModel(costs, cluster, "adam", grad_bytes_per_param_byte=1.0)
        devices = devices_of(cluster, "fp16")
        # Megatron's rank order: data-parallel ranks within a node, pipeline stages across nodes
        grid = tuple(tuple(devices[s * dp + r] for s in range(pp)) for r in range(dp))
        n = costs.n
        bounds = [0, n] if pp == 1 else [0, 5, 9, 13, n]  # embedding + 4 layers, 4, 4, 4 + head
        schedule = "gpipe" if pp == 1 else "1f1b"
        predicted = _price(cm, grid, bounds, microbatches, micro * microbatches, schedule, True)
        out.append(
            {
                "source": "DLPerf Megatron-LM GPT (V100)",
                "case": case,
                "gpus": dp * pp,
                "measured": measured,
                "predicted": predicted,
                "unit": "s/iteration",
            }
        )
    return out


def _amp_bounds(partition: list[int], blocks: int) -> list[int]:
    """AMP's 30-entry GPT-2 layer list (embedding, a no-op, 24 transformer layers, two no-ops,
    the output embedding, a no-op; src/cost_het_cluster.py) onto trainplay's blocks (embed,
    layers.0-23, head): entry e >= 2 of a transformer layer is block e - 1; the trailing entries
    belong to the head."""
    out = []
    for e in partition:
        out.append(0 if e == 0 else blocks if e >= 30 else min(max(e - 1, 1), blocks - 1))
    return out


def amp_cases() -> list[dict]:
    config = DecoderConfig(
        vocab_size=52256, d_model=1024, n_layers=24, n_heads=16, d_ff=4096, context_len=1024
    )
    costs = _decoder_costs(config, "fp16", 1024)
    gbps = 1e9 / 8
    cluster = parse_cluster(
        {
            "name": "amp-het",
            "nodes": [
                *(
                    {
                        "name": f"p3-{i}",
                        "devices": [{"type": "V100-16GB", "count": 4}],
                        "intra_link": {"bandwidth_bps": 170 * gbps, "latency_s": 0.5e-6},
                    }
                    for i in range(3)
                ),
                {
                    "name": "g4dn",
                    "devices": [{"type": "T4", "count": 4}],
                    "intra_link": {"bandwidth_bps": 50 * gbps, "latency_s": 1e-6},
                },
            ],
            "inter_link": {"bandwidth_bps": 10 * gbps, "latency_s": 25e-6},
        }
    )
    # DeepSpeed's fp16 with "fp32_allreduce": true (AMP's ds_config.json): gradients travel in fp32
    cm = CostModel(costs, cluster, "adam", grad_bytes_per_param_byte=2.0)
    devices = devices_of(cluster, "fp16")
    out = []
    for row, micro, dp, pp, partition, measured in AMP_HET:
        # DeepSpeed's default rank order: the data-parallel ranks of a stage are consecutive
        grid = tuple(tuple(devices[s * dp + r] for s in range(pp)) for r in range(dp))
        microbatches = 32 // (dp * micro)
        predicted = _price(
            cm, grid, _amp_bounds(partition, costs.n), microbatches, 32 // dp, "1f1b", False
        )
        out.append(
            {
                "source": "AMP heterogeneous (12 V100 + 4 T4)",
                "case": f"row {row}: mbs {micro}, dp {dp}, pp {pp}",
                "gpus": 16,
                "measured": measured,
                "predicted": predicted,
                "unit": "s/iteration",
            }
        )
    return out


def _spearman(a: list[float], b: list[float]) -> float:
    def ranks(x: list[float]) -> list[float]:
        order = sorted(range(len(x)), key=x.__getitem__)
        r = [0.0] * len(x)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def _figure(value: float) -> str:
    """Four significant digits, never in scientific notation (10920, 452.7, 0.4641)."""
    digits = max(0, 3 - math.floor(math.log10(abs(value)))) if value else 0
    return f"{value:,.{digits}f}"


def main() -> None:
    started = time.perf_counter()
    rows = [*resnet_cases(), *gpt_cases(), *amp_cases()]
    for r in rows:
        r["error"] = (r["predicted"] - r["measured"]) / r["measured"]
    sources = list(dict.fromkeys(r["source"] for r in rows))

    def mape(subset: list[dict]) -> float:
        return 100 * statistics.fmean(abs(r["error"]) for r in subset)

    scaling = []
    for (dtype, batch), _measured in DLPERF_RESNET.items():
        chosen = [
            r for r in rows if r["source"].startswith("DLPerf ResNet") and r["dtype"] == dtype
        ]
        one = next(r for r in chosen if r["gpus"] == 1)
        for r in chosen:
            if r["gpus"] > 1:
                m, p = r["measured"] / one["measured"], r["predicted"] / one["predicted"]
                scaling.append((f"{dtype} b{batch} 1->{r['gpus']}", m, p, (p - m) / m))
    layouts = {}
    for source in sources[1:]:
        chosen = [r for r in rows if r["source"] == source]
        layouts[source] = _spearman(
            [r["measured"] for r in chosen], [r["predicted"] for r in chosen]
        )
    lines = [
        "# Published GPU training results against trainplay's predictions from the catalog",
        "",
        f"Command: `python benchmarks/published_gpu.py` ({time.perf_counter() - started:.0f} s). "
        "Sources and configurations: the script's docstring. Predictions use datasheet peaks and "
        "the published-microbenchmark profiles of `trainplay.hardware.published_profiles`; no "
        "number here was fitted to these measurements.",
        "",
        f"MAPE over all {len(rows)} cases: **{mape(rows):.1f}%**; "
        + "; ".join(f"{s}: {mape([r for r in rows if r['source'] == s]):.1f}%" for s in sources)
        + ".",
        "",
        "Spearman rank correlation of predicted and measured iteration times over the layouts: "
        + "; ".join(f"{s}: {rho:.2f}" for s, rho in layouts.items())
        + ".",
        "",
        "1 -> N data-parallel scaling (DLPerf ResNet-50), measured against predicted: "
        + "; ".join(f"{name}: {m:.2f}x vs {p:.2f}x ({100 * e:+.1f}%)" for name, m, p, e in scaling)
        + ".",
        "",
        "| source | case | GPUs | measured | predicted | unit | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['source']} | {r['case']} | {r['gpus']} | {_figure(r['measured'])} | "
            f"{_figure(r['predicted'])} | {r['unit']} | {100 * r['error']:+.1f}% |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "published_gpu.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "published_gpu.json").write_text(
        json.dumps({"rows": rows, "spearman": layouts, "scaling": scaling}, indent=2) + "\n"
    )
    print("\n".join(lines[4:9]))


if __name__ == "__main__":
    main()

"""DistributedDataParallel's own work per step in the one cost model: measured on a CPU group
(``hardware.measure.ddp``), priced by ``cost.ddp_step_s`` after the all-reduces of a one-stage
data-parallel iteration, and nowhere else."""

import pytest
import torch.distributed as dist

from trainplay.hardware.measure.ddp import BLOCKS, QUICK_ROUNDS, ROUNDS, fit_ddp, measure_ddp
from trainplay.hardware.profile import PerfProfile
from trainplay.hardware.spec import Peaks
from trainplay.roofline import cost
from trainplay.roofline.analysis import analyze
from trainplay.roofline.layout import Parallel
from trainplay.workload import profile

from .test_runtime_costs import local_pair

TINY = "tests.data.tiny_models:tiny_decoder"
STEP_S, TENSOR_S = 3e-3, 20e-6


def _local(tmp_path, monkeypatch, ddp: bool):
    """Two one-thread workers of this machine with a measured all-reduce and (``ddp``) DDP's
    fixed costs."""
    overheads = {"ddp.step": STEP_S, "ddp.tensor": TENSOR_S} if ddp else {}
    return local_pair(tmp_path, monkeypatch, overheads)


def test_two_depths_give_a_fixed_cost_and_one_per_tensor():
    assert fit_ddp([(60, 3.2e-3), (240, 5.9e-3)]) == pytest.approx(
        {"ddp.step": 2.3e-3, "ddp.tensor": 15e-6}
    )
    # noise that would make either negative is held at zero
    assert fit_ddp([(60, 4e-3), (240, 3e-3)]) == {"ddp.step": 4e-3, "ddp.tensor": 0.0}
    assert fit_ddp([(60, 1e-3), (240, 9e-3)])["ddp.step"] == 0.0


def test_one_stage_of_replicas_pays_ddp_once_a_step_by_its_parameter_tensors(tmp_path, monkeypatch):
    tiny = profile(TINY, batch_size=4, seq_len=16, vocab_size=64, loss=True)
    tensors = sum(x.param_tensors for x in tiny.layers)
    assert tensors > 5
    got = {}
    for ddp in (False, True):
        cluster = _local(tmp_path / str(ddp), monkeypatch, ddp)
        for par in (Parallel(dp=1), Parallel(dp=2), Parallel(dp=1, pp=2, microbatches=1)):
            got[ddp, str(par.to_dict())] = analyze(tiny, cluster, par).iteration
    one, two, piped = (str(p.to_dict()) for p in (Parallel(dp=1), Parallel(dp=2),
                                                  Parallel(dp=1, pp=2, microbatches=1)))  # fmt: skip
    added = got[True, two].predicted_s - got[False, two].predicted_s
    assert added == pytest.approx(STEP_S + tensors * TENSOR_S, rel=1e-9)
    # shown as exposed communication, the data-parallel step's own
    assert got[True, two].exposed_comm_s - got[False, two].exposed_comm_s == pytest.approx(added)
    # one replica, and a pipeline's stages (the runtime's own all-reduce, not DDP), pay nothing
    assert got[True, one].predicted_s == got[False, one].predicted_s
    assert got[True, piped].predicted_s == got[False, piped].predicted_s


def test_a_device_that_did_not_measure_it_pays_nothing():
    assert cost.ddp_step_s(100, Peaks(apf=1e12, apm=1e11)) == 0.0
    measured = Peaks(apf=1e12, apm=1e11, profile=PerfProfile(
        classes={}, overhead_s={"ddp.step": STEP_S, "ddp.tensor": TENSOR_S}))  # fmt: skip
    assert cost.ddp_step_s(100, measured) == pytest.approx(STEP_S + 100 * TENSOR_S)


def test_ddp_is_measured_on_this_cpu_group():
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    priced, quick = [], []
    try:
        got, spread = measure_ddp(lambda nbytes: priced.append(nbytes) or 0.0)
        # hw measure --quick: always three rounds, whatever the spread
        measure_ddp(lambda nbytes: quick.append(nbytes) or 0.0, QUICK_ROUNDS)
    finally:
        dist.destroy_process_group()
    assert QUICK_ROUNDS == (3, 3) and len(quick) == 3 * len(BLOCKS)
    assert set(got) == {"ddp.step", "ddp.tensor"}
    # each depth's all-reduce is priced once a round, for its gradients' bytes (3x3 convolutions
    # of 16 channels and a batch norm's two vectors a block, fp32), in 3 to 5 rounds
    rounds = len(priced) // len(BLOCKS)
    assert ROUNDS[0] <= rounds <= ROUNDS[1]
    assert priced == [n * (16 * 16 * 9 + 2 * 16) * 4 for n in BLOCKS] * rounds
    # fewer than the most rounds only when the price settled
    assert rounds == ROUNDS[1] or spread < 0.05
    assert spread >= 0
    # DDP costs a rank alone something, and nowhere near a millisecond per parameter tensor
    assert 0 <= got["ddp.step"] < 0.05 and 0 <= got["ddp.tensor"] < 1e-3
    assert got["ddp.step"] + 60 * got["ddp.tensor"] > 0

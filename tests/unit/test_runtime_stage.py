"""Stages built on meta: only their own tensors become real, with the same values under any plan."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch import nn

from tests.data.tiny_models import deep_mlp, tiny_decoder
from trainplay.errors import UsageError
from trainplay.plan.plan import Plan, PlanStage
from trainplay.runtime.materialise import check_initialisable, materialise, name_seed
from trainplay.runtime.pipeline import runnable_schedule
from trainplay.runtime.stage import chain_stage, cross_stage_ties, traced_stage
from trainplay.workload.chain import structure, tied_parameters
from trainplay.workload.decoder import INIT_STD, Decoder, preset
from trainplay.workload.stats import Tie
from trainplay.workload.zoo import resolve_model

CPU = torch.device("cpu")
IDS = torch.zeros(2, 16, dtype=torch.int64)


def on_meta(make, example):
    with torch.device("meta"):
        model = make()
    return model, structure(model, (example.to("meta"),))


def plan_of(blocks, bounds) -> Plan:
    stages = tuple(
        PlanStage(blocks=b, devices=(f"d{s}",), batch_shares=(4,)) for s, b in enumerate(bounds)
    )
    names = tuple(b.name for b in blocks)
    return Plan(stages=stages, microbatches=1, schedule="gpipe", predicted_iteration_s=0.0,
                block_names=names)  # fmt: skip


def whole(make, example, seed):
    model, _ = on_meta(make, example)
    materialise(model, model, seed=seed, device=CPU)
    return model


def test_name_seeds_do_not_depend_on_the_process():
    # SHA-256 of "7/layers.0.attn.qkv.weight", first 8 bytes little-endian, top bit cleared
    assert name_seed(7, "layers.0.attn.qkv.weight") == name_seed(7, "layers.0.attn.qkv.weight")
    assert name_seed(7, "a") == 1306207655579950696
    assert name_seed(7, "a") != name_seed(8, "a") != name_seed(7, "b")


@pytest.mark.parametrize("bounds", [[(0, 1), (2, 3)], [(0, 0), (1, 2), (3, 3)]])
def test_a_decoder_stage_holds_its_blocks_with_the_whole_models_values(bounds):
    reference = dict(whole(tiny_decoder, IDS, 3).named_parameters(remove_duplicate=False))
    for s in range(len(bounds)):
        model, shape = on_meta(tiny_decoder, IDS)
        plan = plan_of(shape.blocks, bounds)
        stage = chain_stage(model, shape.blocks, plan, s, seed=3, device=CPU)
        first, last = plan.stages[s].blocks
        mine = {b.name for b in shape.blocks[first : last + 1]}
        for name, p in stage.module.named_parameters(remove_duplicate=False):
            assert name.split(".")[0] in {m.split(".")[0] for m in mine}
            assert p.device == CPU
            torch.testing.assert_close(p, reference[name], rtol=0, atol=0)
        # nothing outside the stage got memory
        held = {id(p) for p in stage.module.parameters()}
        outside = [p for p in model.parameters() if id(p) not in held]
        assert outside and all(p.is_meta for p in outside)


def test_the_tied_embedding_is_copied_to_the_last_stage_under_its_canonical_name():
    model, shape = on_meta(tiny_decoder, IDS)
    # the embedding (block 0) is the head's projection (block 3): a stage holding the head without
    # the embedding keeps a copy, and the planner counts it there
    assert tied_parameters(model, shape.blocks) == (
        Tie("embed.tokens.weight", 64 * 32 * 4, (0, 3)),
    )
    plan = plan_of(shape.blocks, [(0, 1), (2, 3)])
    assert cross_stage_ties(model, shape.blocks, plan) == {"embed.tokens.weight": (0, 1)}
    last = chain_stage(model, shape.blocks, plan, 1, seed=3, device=CPU)
    assert last.tied == {"embed.tokens.weight": (0, 1)}
    assert "embed.tokens.weight" in last.state() and "head.proj.weight" not in last.state()
    model2, _ = on_meta(tiny_decoder, IDS)
    first = chain_stage(model2, shape.blocks, plan, 0, seed=3, device=CPU)
    torch.testing.assert_close(
        last.named_parameters()["embed.tokens.weight"],
        first.named_parameters()["embed.tokens.weight"],
        rtol=0,
        atol=0,
    )
    one = plan_of(shape.blocks, [(0, 3)])
    assert cross_stage_ties(on_meta(tiny_decoder, IDS)[0], shape.blocks, one) == {}


def test_two_stages_compose_to_the_whole_model():
    reference = whole(tiny_decoder, IDS, 1)
    ids = torch.randint(0, 64, (3, 16))
    model, shape = on_meta(tiny_decoder, IDS)
    plan = plan_of(shape.blocks, [(0, 2), (3, 3)])
    first = chain_stage(model, shape.blocks, plan, 0, seed=1, device=CPU).module
    model, _ = on_meta(tiny_decoder, IDS)
    last = chain_stage(model, shape.blocks, plan, 1, seed=1, device=CPU).module
    torch.testing.assert_close(last(first(ids)), reference(ids), rtol=1e-6, atol=1e-6)


def test_gpt2_initialisation():
    model = whole(tiny_decoder, IDS, 0)
    assert isinstance(model, Decoder) and model.head.proj.weight is model.embed.tokens.weight
    layers = model.config.n_layers
    params = dict(model.named_parameters())
    assert params["embed.tokens.weight"].std().item() == pytest.approx(INIT_STD, rel=0.1)
    out = torch.cat([params[f"layers.{k}.mlp.down.weight"].flatten() for k in range(layers)])
    assert out.std().item() == pytest.approx(INIT_STD / (2 * layers) ** 0.5, rel=0.1)
    assert torch.all(params["layers.0.attn.qkv.bias"] == 0)
    assert torch.all(params["head.norm.weight"] == 1)


def test_rotary_tables_are_rebuilt():
    cfg = preset("llama-7b", vocab_size=64, d_model=32, n_heads=4, d_ff=64, n_layers=1,
                 context_len=16)  # fmt: skip
    model = whole(lambda: Decoder(cfg), IDS, 0)
    torch.manual_seed(0)
    eager = Decoder(cfg)
    torch.testing.assert_close(model.layers[0].attn.cos, eager.layers[0].attn.cos)
    assert torch.isfinite(model(torch.randint(0, 64, (1, 16)))).all()


def test_other_modules_use_reset_parameters_seeded_by_name():
    x = torch.zeros(2, 12)
    a = dict(whole(deep_mlp, x, 5).named_parameters())
    model, shape = on_meta(deep_mlp, x)
    plan = plan_of(shape.blocks, [(0, 1), (2, 3)])
    second = chain_stage(model, shape.blocks, plan, 1, seed=5, device=CPU)
    for name, p in second.module.named_parameters():
        torch.testing.assert_close(p, a[name], rtol=0, atol=0)
    b = dict(whole(deep_mlp, x, 6).named_parameters())
    assert not torch.equal(a["0.weight"], b["0.weight"])
    bound = 1 / 12**0.5  # nn.Linear's reset_parameters: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert a["0.weight"].abs().max().item() <= bound


class _Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x * self.gain


class _Forgetful(nn.Linear):
    def __init__(self):
        super().__init__(4, 4)
        self.register_buffer("table", torch.arange(4.0))


def test_tensors_without_an_initialiser_are_named():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4, 4), _Scale())
    with pytest.raises(UsageError, match=r"cannot initialise '1.gain': _Scale has no reset_par"):
        check_initialisable(model)
    with torch.device("meta"):
        forgetful = nn.Sequential(_Forgetful(), nn.Linear(4, 2))
    check_initialisable(forgetful)  # it has a reset_parameters ...
    with pytest.raises(UsageError, match=r"'0.table': _Forgetful leaves it unset"):
        materialise(forgetful, forgetful, seed=0, device=CPU)  # ... that forgets its buffer


class _Glue(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        return self.b(2 * self.a(x))


def test_which_models_are_chains():
    assert on_meta(tiny_decoder, IDS)[1].chain
    assert on_meta(deep_mlp, torch.zeros(2, 12))[1].chain
    glue = on_meta(_Glue, torch.zeros(2, 4))[1]
    assert not glue.chain and glue.why_not == "b is not given the output of the module before it"
    resnet = on_meta(
        lambda: resolve_model("resnet18").builder((3, 64, 64)), torch.zeros(1, 3, 64, 64)
    )
    assert not resnet[1].chain and "fc" in resnet[1].why_not


def test_a_traced_stage_runs_its_graphs_generated_code_and_composes_to_the_model():
    from torch.export.unflatten import InterpreterModule

    def resnet18() -> nn.Module:
        torch.manual_seed(0)
        return resolve_model("resnet18").builder((3, 32, 32))

    example = torch.randn(2, 3, 32, 32)
    _, shape = on_meta(resnet18, example)
    half = len(shape.blocks) // 2
    plan = plan_of(shape.blocks, [(0, half - 1), (half, len(shape.blocks) - 1)])
    # each rank cuts its own copy of the model, as the runtime does (pipeline() marks the model)
    stages = [traced_stage(resnet18(), plan, s, example=example, device=CPU).module for s in (0, 1)]
    model = resnet18()
    unflattened = [m for st in stages for m in st.modules() if isinstance(m, InterpreterModule)]
    assert unflattened and not any(m._run_with_interpreter for m in unflattened)
    with torch.no_grad():  # training mode: the graphs were traced so (batch statistics)
        assert torch.allclose(stages[1](stages[0](example)), model.train()(example), atol=1e-5)


def test_1f1b_with_fewer_microbatches_than_stages_runs_as_gpipe():
    _, shape = on_meta(tiny_decoder, IDS)
    four = plan_of(shape.blocks, [(0, 0), (1, 1), (2, 2), (3, 3)])
    for microbatches, want in ((1, "gpipe"), (2, "gpipe"), (4, "1f1b")):
        plan = replace(four, schedule="1f1b", microbatches=microbatches)
        assert runnable_schedule(plan) == want
    assert runnable_schedule(four) == "gpipe"

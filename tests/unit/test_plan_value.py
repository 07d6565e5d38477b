"""The Plan value: JSON round trip, a stable plan_id, and validation that names what is wrong."""

import json

import pytest

from trainplay.errors import UsageError
from trainplay.plan.plan import Plan, PlanStage


def two_by_two(**kw) -> Plan:
    """Two replicas of a 2-stage pipeline over 6 blocks; 12 + 4 samples per global batch."""
    args = {
        "stages": (
            PlanStage(blocks=(0, 3), devices=("g0", "g2"), batch_shares=(12, 4)),
            PlanStage(blocks=(4, 5), devices=("g1", "g3"), batch_shares=(12, 4), recompute=True),
        ),
        "microbatches": 4,
        "schedule": "1f1b",
        "predicted_iteration_s": 0.125,
        "predicted_makespan_s": 3600.5,
        "block_names": ("stem", "layer1", "layer2", "layer3", "layer4", "head"),
    } | kw
    return Plan(**args)


def roundtrip(plan: Plan) -> Plan:
    return Plan.from_dict(json.loads(json.dumps(plan.to_dict())))


def test_roundtrip_through_json():
    plan = two_by_two()
    back = roundtrip(plan)
    assert back == plan
    assert back.plan_id == plan.plan_id
    assert back.recompute == (False, True)
    assert back.to_dict() == plan.to_dict()


def test_roundtrip_without_optional_fields():
    plan = two_by_two(predicted_makespan_s=None, block_names=())
    assert roundtrip(plan) == plan
    # An older file without recompute or block_names reads as no recomputation.
    data = plan.to_dict()
    del data["recompute"], data["block_names"], data["plan_id"]
    assert Plan.from_dict(data).recompute == (False, False)


def test_derived_values():
    plan = two_by_two()
    assert plan.replicas == 2
    assert plan.global_batch == 16
    assert plan.devices == ("g0", "g2", "g1", "g3")


def test_renamed_moves_the_plan_onto_other_devices():
    plan = two_by_two()
    moved = plan.renamed({"g0": "n/cpu:0", "g1": "n/cpu:1", "g3": "n/cpu:3"})
    assert moved.devices == ("n/cpu:0", "g2", "n/cpu:1", "n/cpu:3")  # g2 not named: kept
    assert [s.blocks for s in moved.stages] == [s.blocks for s in plan.stages]
    assert moved.stages[0].batch_shares == (12, 4) and moved.recompute == (False, True)
    assert moved.predicted_iteration_s == plan.predicted_iteration_s


def test_plan_id_is_a_stable_digest_of_the_layout():
    plan = two_by_two()
    assert len(plan.plan_id) == 12
    int(plan.plan_id, 16)  # hexadecimal
    assert two_by_two().plan_id == plan.plan_id  # same layout, built again
    # Predictions are not layout: ranks that price the plan slightly differently share its id.
    assert two_by_two(predicted_iteration_s=9.0, predicted_makespan_s=None).plan_id == plan.plan_id


@pytest.mark.parametrize(
    "change",
    [
        {"microbatches": 2},
        {"schedule": "gpipe"},
        {
            "stages": (
                PlanStage(blocks=(0, 2), devices=("g0", "g2"), batch_shares=(12, 4)),
                PlanStage(
                    blocks=(3, 5), devices=("g1", "g3"), batch_shares=(12, 4), recompute=True
                ),
            )
        },
        {
            "stages": (
                PlanStage(blocks=(0, 3), devices=("g0", "g2"), batch_shares=(8, 8)),
                PlanStage(blocks=(4, 5), devices=("g1", "g3"), batch_shares=(8, 8), recompute=True),
            )
        },
        {
            "stages": (
                PlanStage(blocks=(0, 3), devices=("g1", "g2"), batch_shares=(12, 4)),
                PlanStage(
                    blocks=(4, 5), devices=("g0", "g3"), batch_shares=(12, 4), recompute=True
                ),
            )
        },
        {
            "stages": (
                PlanStage(blocks=(0, 3), devices=("g0", "g2"), batch_shares=(12, 4)),
                PlanStage(blocks=(4, 5), devices=("g1", "g3"), batch_shares=(12, 4)),
            )
        },
    ],
    ids=["microbatches", "schedule", "cut", "shares", "devices", "recompute"],
)
def test_plan_id_changes_with_the_layout(change):
    assert two_by_two(**change).plan_id != two_by_two().plan_id


def test_edited_plan_id_is_rejected():
    data = two_by_two().to_dict()
    data["plan_id"] = "0" * 12
    with pytest.raises(UsageError, match="plan was edited"):
        Plan.from_dict(data)


def test_edited_layout_under_the_old_id_is_rejected():
    data = two_by_two().to_dict()
    data["microbatches"] = 2
    with pytest.raises(UsageError, match="plan_id does not match"):
        Plan.from_dict(data)


def stages(*specs) -> tuple[PlanStage, ...]:
    return tuple(
        PlanStage(blocks=blocks, devices=devices, batch_shares=shares)
        for blocks, devices, shares in specs
    )


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (stages(((1, 3), ("a",), (4,))), "stage 0 covers blocks 1..3"),  # not from block 0
        (stages(((0, 1), ("a",), (4,)), ((3, 4), ("b",), (4,))), "stage 1 covers blocks 3..4"),
        (stages(((0, 2), ("a",), (4,)), ((2, 4), ("b",), (4,))), "stage 1 covers blocks 2..4"),
        (stages(((0, 2), ("a",), (4,)), ((3, 2), ("b",), (4,))), "stage 1 covers blocks 3..2"),
    ],
    ids=["not-from-zero", "gap", "overlap", "empty"],
)
def test_stages_must_be_contiguous(layout, message):
    with pytest.raises(UsageError, match=message):
        Plan(stages=layout, microbatches=2, schedule="gpipe", predicted_iteration_s=1.0)


@pytest.mark.parametrize(
    "layout",
    [
        stages(((0, 0), ("a", "a"), (4, 4))),  # two replicas on one device
        stages(((0, 0), ("a", "b"), (4, 4)), ((1, 1), ("c", "a"), (4, 4))),  # two stages on one
    ],
    ids=["within-stage", "across-stages"],
)
def test_a_device_runs_one_stage(layout):
    with pytest.raises(UsageError, match="reuses a device"):
        Plan(stages=layout, microbatches=2, schedule="gpipe", predicted_iteration_s=1.0)


@pytest.mark.parametrize(
    "layout",
    [
        stages(((0, 0), ("a", "b"), (4, 4)), ((1, 1), ("c", "d"), (6, 2))),  # shares differ
        stages(((0, 0), ("a", "b"), (4, 4)), ((1, 1), ("c",), (4, 4))),  # a replica short
    ],
    ids=["shares", "devices"],
)
def test_stages_agree_on_replicas(layout):
    with pytest.raises(UsageError, match="stage 1 must have one device and the same share"):
        Plan(stages=layout, microbatches=2, schedule="gpipe", predicted_iteration_s=1.0)


def test_share_must_be_a_multiple_of_the_microbatches():
    layout = stages(((0, 0), ("a", "b"), (8, 3)))
    with pytest.raises(UsageError, match=r"multiple of the 4 micro-batches .* got shares \[8, 3\]"):
        Plan(stages=layout, microbatches=4, schedule="gpipe", predicted_iteration_s=1.0)
    with pytest.raises(UsageError, match=r"multiple of the 3 micro-batches"):  # 8 = 3 + 3 + 2
        Plan(stages=layout, microbatches=3, schedule="gpipe", predicted_iteration_s=1.0)
    # Exactly one sample per micro-batch is enough.
    Plan(stages=stages(((0, 0), ("a", "b"), (6, 3))), microbatches=3, schedule="gpipe",
         predicted_iteration_s=1.0)  # fmt: skip


def test_unknown_schedule_and_bad_counts():
    with pytest.raises(UsageError, match="schedule must be one of gpipe, 1f1b, got 'zb'"):
        two_by_two(schedule="zb")
    with pytest.raises(UsageError, match="microbatches must be at least 1, got 0"):
        two_by_two(microbatches=0)
    with pytest.raises(UsageError, match="at least one stage"):
        two_by_two(stages=())


def test_block_names_must_match_the_blocks():
    with pytest.raises(UsageError, match="covers 6 blocks but names 5"):
        two_by_two(block_names=("a", "b", "c", "d", "e"))
    with pytest.raises(UsageError, match="covers 6 blocks but names 7"):
        two_by_two(block_names=tuple("abcdefg"))


def test_validation_applies_to_from_dict():
    data = two_by_two().to_dict()
    del data["plan_id"]
    data["stages"][1]["devices"] = ["g1", "g0"]
    with pytest.raises(UsageError, match="reuses a device"):
        Plan.from_dict(data)


def without(data: dict, *path) -> dict:
    data = json.loads(json.dumps(data))
    node = data
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return data


GOOD = two_by_two().to_dict()


@pytest.mark.parametrize(
    "data",
    [
        {},
        without(GOOD, "stages"),
        without(GOOD, "microbatches"),
        without(GOOD, "schedule"),
        without(GOOD, "predicted_iteration_s"),
        without(GOOD, "stages", 0, "blocks"),
        without(GOOD, "stages", 1, "devices"),
        without(GOOD, "stages", 0, "batch_shares"),
        GOOD | {"stages": "stem..head"},
        GOOD | {"stages": [{"blocks": [0], "devices": ["a"], "batch_shares": [4]}]},
        GOOD | {"microbatches": "four"},
        GOOD | {"microbatches": None},
        GOOD | {"recompute": [True]},  # one flag for two stages
        GOOD | {"block_names": 6},
    ],
    ids=[
        "empty",
        "no-stages",
        "no-microbatches",
        "no-schedule",
        "no-prediction",
        "no-blocks",
        "no-devices",
        "no-shares",
        "stages-a-string",
        "one-bound",
        "microbatches-text",
        "microbatches-null",
        "recompute-short",
        "block-names-number",
    ],
)
def test_garbage_is_a_usage_error(data):
    with pytest.raises(UsageError):
        Plan.from_dict(data)


@pytest.mark.parametrize("data", [[], None, "plan"], ids=["list", "null", "string"])
def test_non_mapping_is_a_usage_error(data):
    with pytest.raises(UsageError):
        Plan.from_dict(data)


def test_one_share_per_replica():
    with pytest.raises(UsageError):
        Plan(
            stages=stages(((0, 0), ("a", "b"), (8,))),
            microbatches=2,
            schedule="gpipe",
            predicted_iteration_s=1.0,
        )


def test_at_least_one_replica():
    with pytest.raises(UsageError):
        Plan(
            stages=stages(((0, 0), (), ())),
            microbatches=2,
            schedule="gpipe",
            predicted_iteration_s=1.0,
        )


def test_plan_is_a_frozen_value():
    plan = two_by_two()
    with pytest.raises(AttributeError):
        plan.microbatches = 8  # type: ignore[misc]
    assert hash(plan) == hash(two_by_two())

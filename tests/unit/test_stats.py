"""WorkloadProfile round-trips through JSON and CSV and rejects malformed values."""

import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainplay.errors import UsageError
from trainplay.workload import DTYPES, GRANULARITIES, LayerStats, WorkloadProfile
from trainplay.workload.stats import NUMERIC_KEYS

counts = st.integers(min_value=0, max_value=10**15)


@st.composite
def layers(draw):
    values = {key: draw(counts) for key in NUMERIC_KEYS}
    values["fwd_gemm_flops"] = min(values["fwd_gemm_flops"], values["fwd_flops"])
    values["bwd_gemm_flops"] = min(values["bwd_gemm_flops"], values["bwd_flops"])
    return LayerStats(
        name=draw(st.text(min_size=1, max_size=20)), kind=draw(st.text(max_size=20)), **values
    )


profiles = st.builds(
    WorkloadProfile,
    model=st.text(min_size=1, max_size=20),
    batch_size=st.integers(min_value=1, max_value=4096),
    dtype=st.sampled_from(DTYPES),
    input_shape=st.lists(st.integers(min_value=1, max_value=4096), min_size=1, max_size=3).map(
        tuple
    ),
    layers=st.lists(layers(), max_size=6).map(tuple),
    granularity=st.sampled_from(GRANULARITIES),
    notes=st.lists(st.text(max_size=30), max_size=2).map(tuple),
)


@given(profiles)
def test_json_round_trip(profile):
    assert WorkloadProfile.from_json(profile.to_json()) == profile


@given(profiles)
def test_csv_has_a_row_per_layer_and_totals(profile):
    rows = list(csv.DictReader(io.StringIO(profile.to_csv(), newline="")))
    assert len(rows) == len(profile.layers) + 1
    assert rows[-1]["name"] == "total"
    for key in NUMERIC_KEYS:
        assert int(rows[-1][key]) == profile.totals[key] == sum(int(r[key]) for r in rows[:-1])


def test_json_contract_keys():
    layer = LayerStats(name="fc", kind="Linear", fwd_flops=10, fwd_gemm_flops=8)
    data = json.loads(
        WorkloadProfile(
            model="m", batch_size=2, dtype="fp32", input_shape=(4,), layers=(layer,)
        ).to_json()
    )
    assert {"model", "batch_size", "dtype", "input_shape", "layers", "totals"} <= data.keys()
    assert {
        "name",
        "kind",
        "fwd_flops",
        "bwd_flops",
        "fwd_bytes",
        "bwd_bytes",
        "param_bytes",
        "activation_bytes",
        "saved_bytes",
    } <= data["layers"][0].keys()
    assert {"params", "fwd_gemm_flops", "bwd_gemm_flops", "fwd_flops"} <= data["totals"].keys()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"batch_size": 0}, "batch_size must be positive"),
        ({"dtype": "fp64"}, "dtype must be one of"),
        ({"granularity": "layers"}, "granularity must be one of"),
    ],
)
def test_profile_rejects_bad_values(change, message):
    values = {"model": "m", "batch_size": 1, "dtype": "fp32", "input_shape": (1,), "layers": ()}
    with pytest.raises(UsageError, match=message):
        WorkloadProfile(**{**values, **change})


def test_layer_rejects_negative_and_inconsistent_counts():
    with pytest.raises(UsageError, match="fwd_bytes must be an integer >= 0"):
        LayerStats(name="x", kind="k", fwd_bytes=-1)
    with pytest.raises(UsageError, match="GEMM FLOPs exceed"):
        LayerStats(name="x", kind="k", fwd_flops=1, fwd_gemm_flops=2)
    with pytest.raises(UsageError, match="lacks"):
        WorkloadProfile.from_dict({"model": "m"})
    with pytest.raises(UsageError, match="not valid JSON"):
        WorkloadProfile.from_json("{")

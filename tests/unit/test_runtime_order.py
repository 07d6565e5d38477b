"""The job's sample order: the same samples in the same steps on any number of replicas."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplay.errors import UsageError
from trainplay.runtime.order import SampleOrder


def test_epochs_are_permutations_laid_end_to_end():
    order = SampleOrder(dataset_size=10, global_batch=4, seed=7)
    seen = torch.cat([order.indices(i) for i in range(5)])  # 20 positions = 2 epochs
    assert sorted(seen[:10].tolist()) == list(range(10))
    assert sorted(seen[10:].tolist()) == list(range(10))
    assert seen[:10].tolist() != seen[10:].tolist()  # a new order each epoch
    assert order.steps(epochs=3) == 8  # ceil(30 / 4)
    # step 2 runs across the epoch boundary: positions 8..11
    assert order.indices(2).tolist() == seen[8:12].tolist()


def test_same_seed_same_order_other_seed_other_order():
    a = SampleOrder(dataset_size=100, global_batch=10, seed=1)
    b = SampleOrder(dataset_size=100, global_batch=10, seed=1)
    c = SampleOrder(dataset_size=100, global_batch=10, seed=2)
    assert torch.equal(a.indices(3), b.indices(3))
    assert not torch.equal(a.indices(3), c.indices(3))


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 50),
    batch=st.integers(1, 12),
    step=st.integers(0, 30),
    cuts=st.lists(st.integers(1, 11), min_size=0, max_size=3),
)
def test_replicas_partition_the_global_batch_whatever_the_shares(size, batch, step, cuts):
    order = SampleOrder(dataset_size=size, global_batch=batch, seed=3)
    points = sorted({c for c in cuts if 0 < c < batch})
    bounds = [0, *points, batch]
    shares = tuple(b - a for a, b in itertools.pairwise(bounds))
    parts = [order.replica_indices(step, shares, r) for r in range(len(shares))]
    assert torch.equal(torch.cat(parts), order.indices(step))


def test_bad_shares_and_sizes_are_usage_errors():
    order = SampleOrder(dataset_size=10, global_batch=4)
    with pytest.raises(UsageError, match="add up to the global batch 4"):
        order.replica_indices(0, (2, 1), 0)
    with pytest.raises(UsageError, match="at least one sample"):
        SampleOrder(dataset_size=0, global_batch=4)
    with pytest.raises(UsageError, match="--global-batch"):
        SampleOrder(dataset_size=10, global_batch=0)

"""The matrix products the sweep times: rows enough that a product of a few dozen rows against a
real weight has a point of its own near it (sweeps.py, ``gemms``)."""

import re

import pytest

from trainplay.hardware.measure import sweeps


def _products(quick: bool) -> dict[str, set[tuple[int, int, int]]]:
    """(rows, in, out) of each product case, by case key and weight gradient or not."""
    out: dict[str, set[tuple[int, int, int]]] = {}
    for case in sweeps.cases(quick):
        found = re.fullmatch(r"(weight gradient of )?linear (\d+)x(\d+) -> (\d+)", case.label)
        if case.key.startswith("gemm.") and found:
            kind = case.key + (" weight" if found[1] else "")
            out.setdefault(kind, set()).add(tuple(int(x) for x in found.groups()[1:]))
    return out


@pytest.mark.parametrize("quick", [False, True])
def test_products_of_64_rows_against_a_weight_of_a_mebibyte_or_more_are_timed(quick):
    products = _products(quick)
    assert set(products) == {"gemm.fwd", "gemm.bwd", "gemm.bwd weight"}
    for kind, shapes in products.items():
        weights = [k * n * 4 for t, k, n in shapes if t == 64]
        assert weights and max(weights) >= 2**20, (kind, sorted(shapes))


def test_the_quick_sweep_keeps_its_earlier_products_and_adds_two_of_64_rows_and_narrow_ones():
    earlier = {  # the quick sweep's products before the rows of 64 (and its classifier heads)
        (16, 64, 64), (16, 768, 768), (16, 2048, 1000), (128, 256, 1024), (128, 1024, 4096),
        (1024, 64, 64), (1024, 768, 768), (1024, 2048, 1000),
        (32, 4096, 1000), (4, 1280, 1000),
    }  # fmt: skip
    forward = _products(True)["gemm.fwd"]
    # and every third of the short-sequence products (sweeps.NARROW_GEMMS, 2026-12-07)
    added = {(64, 256, 1024), (64, 1024, 4096)} | set(sweeps.NARROW_GEMMS[::3])
    assert forward - earlier == added
    assert earlier <= forward

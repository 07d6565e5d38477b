"""A surface reads between its sweep's points by a local plane or by inverse-distance weighting,
whichever predicts its own points better (trainplay.hardware.interpolate)."""

import math

import pytest

from trainplay.hardware import interpolate
from trainplay.hardware.profile import Surface


def _roofline_surface() -> Surface:
    """Matrix products whose rate grows with their FLOP per byte (memory side of the roofline,
    5 GB/s) and a little with their size: log rate is a plane in (log size, log intensity)."""
    sizes, intensities, rates = [], [], []
    for size in (1e6, 1e7, 1e8, 1e9):
        for intensity in (1.0, 4.0, 16.0):
            sizes.append(size)
            intensities.append(intensity)
            rates.append(5e9 * intensity * (size / 1e6) ** 0.1)
    return Surface(sizes=tuple(sizes), intensities=tuple(intensities), rates=tuple(rates))


def test_a_plane_follows_the_slope_weighting_averages_it_away():
    surface = _roofline_surface()
    size, intensity = 1.2e6, 3.0  # between the sweep's points, near its smallest
    truth = 5e9 * intensity * (size / 1e6) ** 0.1
    assert surface._planar()
    assert surface.rate(size, intensity) == pytest.approx(truth, rel=1e-6)
    weighted = math.exp(
        interpolate.idw(surface._points, math.log10(size), math.log10(intensity))  # type: ignore[attr-defined]
    )
    assert abs(weighted / truth - 1) > 0.15  # a mean of neighbours of 1 to 16 FLOP per byte


def test_exact_points_give_their_own_rate_and_nothing_leaves_the_neighbours_range():
    surface = _roofline_surface()
    assert surface.rate(1e8, 4.0) == pytest.approx(5e9 * 4.0 * 100**0.1)
    # far beyond the sweep: held at the neighbours' rates, no extrapolated growth
    assert surface.rate(1e12, 1e3) <= max(surface.rates) * (1 + 1e-12)
    assert surface.rate(1e3, 1e-3) >= min(surface.rates) * (1 - 1e-12)


def test_a_surface_without_a_slope_keeps_weighting():
    # rates that jump between neighbours (kernels of different shapes at like sizes): no plane
    # predicts a point from the others better than their mean
    sizes = tuple(float(10 ** (6 + i // 4)) * (1 + 0.1 * (i % 4)) for i in range(12))
    intensities = tuple(float(1 + (i % 4)) for i in range(12))
    rates = tuple(1e9 if (i * 7) % 3 else 9e9 for i in range(12))
    jumpy = Surface(sizes=sizes, intensities=intensities, rates=rates)
    assert not jumpy._planar()
    x, y = math.log10(2.5e7), math.log10(2.5)
    assert jumpy.rate(2.5e7, 2.5) == pytest.approx(math.exp(interpolate.idw(jumpy._points, x, y)))  # type: ignore[attr-defined]


def test_too_few_points_or_points_on_a_line_fall_back_to_weighting():
    few = Surface(sizes=(1e6, 1e7, 1e8), intensities=(1.0, 2.0, 4.0), rates=(1e9, 2e9, 4e9))
    assert not few._planar()
    # one intensity only: the points do not span a plane, and the plane's reading is the
    # weighted one
    line = [(float(i), 0.0, math.log(1e9 * (i + 1))) for i in range(10)]
    assert interpolate.plane(line, 4.5, 0.3) == pytest.approx(interpolate.idw(line, 4.5, 0.3))


def test_without_an_intensity_a_surface_weights_by_size_alone():
    surface = _roofline_surface()
    rate = surface.rate(1e8)
    at_size = [r for s, r in zip(surface.sizes, surface.rates, strict=True) if s == 1e8]
    assert min(at_size) <= rate <= max(surface.rates)

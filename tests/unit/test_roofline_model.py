"""MD-Roofline's planes and its largest-time form name the same bound; hand-checked examples."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from trainplay.roofline.model import SystemPeaks, bound_by_times, locate

positive = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)


@given(
    flops=positive,
    mem=positive,
    comm=st.one_of(st.just(0.0), positive),
    apf=positive,
    apm=positive,
    apb=positive,
)
def test_plane_bound_equals_largest_time(flops, mem, comm, apf, apm, apb):
    peaks = SystemPeaks(apf=apf, apm=apm, apb=apb)
    point = locate(flops, mem, comm, peaks)
    times = sorted([point.t_compute_s, point.t_memory_s, point.t_comm_s], reverse=True)
    assume(times[0] - times[1] > 1e-9 * times[0])  # exact ties sit on a ridge; rounding decides
    assert point.bound == bound_by_times(point.t_compute_s, point.t_memory_s, point.t_comm_s)
    assert point.plane == (
        "intra-device"
        if not comm
        else "comm-to-flops"
        if point.a >= peaks.a_max
        else "comm-to-memory"
    )
    assert point.roofline_s == times[0]


def test_hand_examples():
    peaks = SystemPeaks(apf=100e12, apm=2e12, apb=50e9)  # ridges: A 50, O 0.025, C 0.0005
    gemm = locate(flops=1e12, mem_bytes=1e9, comm_bytes=0.0, peaks=peaks)  # A = 1000
    assert (gemm.plane, gemm.bound) == ("intra-device", "compute")
    assert gemm.t_compute_s == pytest.approx(0.01) and gemm.roof_flops == pytest.approx(100e12)
    relu = locate(flops=1e8, mem_bytes=8e8, comm_bytes=0.0, peaks=peaks)  # A = 0.125
    assert relu.bound == "memory" and relu.roof_flops == pytest.approx(2e12 * 0.125)
    grads = locate(flops=1e12, mem_bytes=1e9, comm_bytes=1e9, peaks=peaks)  # C = 0.001 > 0.0005
    assert (grads.plane, grads.bound) == ("comm-to-flops", "communication")
    assert grads.t_comm_s == pytest.approx(0.02)
    stream = locate(flops=1e9, mem_bytes=1e9, comm_bytes=1e7, peaks=peaks)  # O = 0.01 < 0.025
    assert (stream.plane, stream.bound) == ("comm-to-memory", "memory")
    assert (
        math.isclose(peaks.a_max, 50)
        and math.isclose(peaks.o_max, 0.025)
        and math.isclose(peaks.c_max, 5e-4)
    )


def test_communication_needs_a_bandwidth():
    with pytest.raises(ValueError, match="measure two or more workers"):
        locate(1.0, 1.0, 1.0, SystemPeaks(apf=1.0, apm=1.0))
    with pytest.raises(ValueError, match="apf must be positive"):
        SystemPeaks(apf=0.0, apm=1.0)

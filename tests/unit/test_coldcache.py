"""The two knees of a CPU's bandwidth sweep: where streaming leaves cache speed, where it reaches
memory speed."""

from trainplay.hardware.measure.coldcache import knees_of

MIB = 2**20


def _sweep(*gbps: float) -> dict[int, float]:
    return {2 ** (k + 1) * MIB: rate * 1e9 for k, rate in enumerate(gbps)}


def test_the_hot_knee_is_where_streaming_leaves_the_plateau_not_where_it_reaches_memory():
    # one pass of this machine's sweep (2 ... 1024 MiB), rounded
    knees = knees_of(_sweep(113, 130, 124, 90, 13, 25, 25, 29, 31, 30))
    assert knees.hot_bytes == 8 * MIB
    assert knees.memory_bytes == 32 * MIB


def test_a_slow_first_footprint_does_not_hide_the_plateau_after_it():
    knees = knees_of(_sweep(60, 100, 100, 95, 40, 30, 30, 30, 30, 30))
    assert knees.hot_bytes == 16 * MIB
    assert knees.memory_bytes == 64 * MIB


def test_a_machine_whose_caches_never_show_has_both_knees_at_the_smallest_footprint():
    knees = knees_of(_sweep(*[30] * 10))
    assert knees.hot_bytes == knees.memory_bytes == 2 * MIB


def test_the_hot_knee_never_lies_beyond_the_memory_knee():
    # a bump past the memory knee (another process finished) is not cache speed
    knees = knees_of(_sweep(100, 100, 35, 30, 30, 85, 30, 30, 30, 30))
    assert knees.hot_bytes == 4 * MIB
    assert knees.memory_bytes == 8 * MIB

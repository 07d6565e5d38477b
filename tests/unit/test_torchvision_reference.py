"""Our GEMM count agrees with the GMACs torchvision publishes, and parameters match exactly.

torchvision's weights metadata gives ``_ops`` (billions of multiply-accumulates of one forward at
the weights' input size) and ``num_params``. Published counts are convolution and matrix-multiply
only, hence ``fwd_gemm_flops / 2`` per sample. ``benchmarks/torchvision_reference.py`` checks every
torchvision classifier; these are the twelve classic CNNs of the MD-Roofline paper and two more.
"""

import pytest

from trainplay.workload import profile
from trainplay.workload.zoo import CLASSIC_CNNS, torchvision_reference

BATCH = 2  # Inception v3's auxiliary head normalises a 1x1 map: training needs 2+ samples


@pytest.mark.parametrize("name", CLASSIC_CNNS)
def test_gemm_macs_and_params_match_torchvision(name):
    reference = torchvision_reference(name)
    result = profile(name, batch_size=BATCH)
    assert result.input_shape == (3, reference.crop_size, reference.crop_size)
    gmacs = result.totals["fwd_gemm_flops"] / 2 / BATCH / 1e9
    assert gmacs == pytest.approx(reference.gmacs, rel=0.03)
    assert result.totals["params"] == reference.num_params
    # backward runs real backward ops: more than forward, and not a fixed multiple of it
    ratio = result.totals["bwd_flops"] / result.totals["fwd_flops"]
    assert 1.0 < ratio < 2.2

"""Commands that need no model start without torch: ``--help``, ``models``, ``hw list``, ``hw show``.

Each runs in a fresh interpreter (an import in this test process would hide a regression) and
reports the heavy modules it loaded.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainplay.workload.names import DECODER_PRESETS, TORCHVISION_CLASSIFIERS

HEAVY = ("torch", "torchvision", "matplotlib", "numpy")
LAB = str(Path(__file__).parents[2] / "src/trainplay/hardware/examples/lab.yaml")

PROBE = """
import json, sys
from trainplay.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.flush()
print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)
"""


def _heavy_modules(*argv: str, tmp_path: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "TRAINPLAY_CACHE_DIR": str(tmp_path)},
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("models",),
        ("hw", "list"),
        ("hw", "show", LAB),
        ("hw", "show", "8xA100-80GB", "--format", "yaml"),
        ("plan", "--help"),
        ("train", "--help"),
    ],
)
def test_no_torch_before_a_command_needs_it(argv, tmp_path):
    assert _heavy_modules(*argv, tmp_path=tmp_path) == []


def test_model_names_match_torchvision_and_the_presets():
    import torchvision

    from trainplay.workload.decoder import PRESETS

    assert (
        tuple(torchvision.models.list_models(module=torchvision.models)) == TORCHVISION_CLASSIFIERS
    )
    assert tuple(PRESETS) == DECODER_PRESETS


def test_torch_version_read_without_torch_is_torchs_own():
    import torch

    from trainplay.hardware.machine import torch_version

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from trainplay.hardware.machine import torch_version; "
            "print(torch_version(), 'torch' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == [torch.__version__, "False"]
    assert torch_version() == torch.__version__

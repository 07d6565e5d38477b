"""trainplay: why distributed training is slow, and training big models on the devices you have.

The packages follow the loop of ``DESIGN.md``: ``workload`` (what a model asks of the hardware),
``hardware``, ``roofline``, ``plan``, ``runtime``, and ``report`` (how results are shown).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("trainplay")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]

"""The workers' host memory allocator: freed memory stays with the process.

A training step allocates its activations and gradients afresh every iteration. glibc's
``malloc`` serves a request above its mmap threshold with a fresh ``mmap`` and gives a freed top
of its heap back to the kernel beyond its trim threshold (both thresholds dynamic: the
``mallopt(3)`` manual page), so the next step touches new pages again: a minor page fault and a
zeroed page for every 4 KiB. ``benchmarks/cpu_allocator.py`` measured what that costs a plain
PyTorch training step on this project's CPU: 4-38% longer steps on 6 of 7 classic CNNs, with
9,376-61,041 page faults per step against 0-295 when freed memory is kept.

PyTorch's CPU performance tuning guide recommends an allocator that reuses memory (jemalloc or
TCMalloc, preloaded; ``torch.backends.xeon.run_cpu`` does so). Without installing either,
trainplay gives its workers glibc's own tunables that do the same (:data:`RETAINED`): a heap
that is never trimmed below 1 TiB of free memory and no ``mmap`` below 4 GiB, so every block a
step frees serves the next step. The process keeps its peak footprint, as PyTorch's CUDA caching
allocator does on a GPU. ``trainplay hw measure`` and ``trainplay validate`` give their workers
the same setting (:func:`for_workers`, in :func:`trainplay.launch.run_workers`), so the profile
the cost model is calibrated from is measured, and validated, in the regime ``trainplay
train``'s workers run in. Measured before it did (a scratch comparison on this
project's 2-CPU machine, 2026-12-06: every third case of the quick sweep, 85, two runs each in
separate processes): with glibc as shipped the sweep process took 228,000-389,000 minor page
faults against about 2,300; most timings moved no more than between two runs of one regime (the
medians of their ratios 1.00), but the timings of a call whose output is kept alive among
others' (a memory class's *step* rate) ran up to 1.8x slower for large tensors (a layer norm of
5,461x768, a batch norm's backward on 4x16x256x256, a softmax backward on 4,096x1,024).

A user's own choice wins: nothing is set when ``GLIBC_TUNABLES`` is already set, when
``LD_PRELOAD`` names another allocator, when ``TRAINPLAY_MALLOC=system`` asks for glibc as
shipped, or when the C library is not glibc.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from trainplay.errors import UsageError

__all__ = ["MALLOC_ENV", "RETAINED", "TUNABLES_ENV", "environment", "for_workers", "worker_env"]

TUNABLES_ENV = "GLIBC_TUNABLES"
MALLOC_ENV = "TRAINPLAY_MALLOC"
"""``system``: leave glibc's allocator as shipped in the workers; ``retained`` (the default):
keep freed memory."""
RETAINED = "glibc.malloc.trim_threshold=1099511627776:glibc.malloc.mmap_threshold=4294967296"
"""Trim only beyond 1 TiB of free heap; ``mmap`` only requests of 4 GiB or more."""
_OTHER_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")


def worker_env(environ: Mapping[str, str], libc: str | None = None) -> dict[str, str]:
    """What to add to the workers' environment (``environ``: this process's) so that freed
    memory stays with them; empty when the user chose otherwise (module docstring).
    ``libc``: the C library's name, ``platform.libc_ver()``'s by default."""
    choice = environ.get(MALLOC_ENV, "retained").lower()
    if choice not in ("retained", "system"):
        raise UsageError(
            f"{MALLOC_ENV} must be 'retained' (keep freed memory, the default) or 'system' "
            f"(glibc as shipped), got {environ[MALLOC_ENV]!r}"
        )
    if choice == "system":
        return {}
    if (libc if libc is not None else platform.libc_ver()[0]) != "glibc":
        return {}
    if environ.get(TUNABLES_ENV):
        return {}
    preload = environ.get("LD_PRELOAD", "")
    if any(name in preload for name in _OTHER_ALLOCATORS):
        return {}
    return {TUNABLES_ENV: RETAINED}


@contextmanager
def environment(names: Mapping[str, str]) -> Iterator[None]:
    """Inside, this process's environment has ``names`` set (so the processes it starts inherit
    them); each is put back as it was after."""
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def for_workers() -> Iterator[dict[str, str]]:
    """Inside, processes this one starts get :func:`worker_env`'s setting (what it adds to this
    process's environment, yielded); the environment is put back after. A bad
    ``TRAINPLAY_MALLOC`` raises :class:`~trainplay.errors.UsageError` before anything starts."""
    added = worker_env(os.environ)
    with environment(added):
        yield added

"""Token data for language models: ``--data tokens:PATH[:u32]``, ``text:PATH`` or ``synthetic``.

A sample is a window of ``L + 1`` consecutive tokens of one long stream (``L`` is ``--seq-len``):
the model reads the first ``L`` and is trained to predict each next one, the last ``L``. Window
``k`` starts at token ``k·L``, so the ``N = (T − 1) // L`` windows of a stream of ``T`` tokens
cover it once, consecutive windows sharing one token; the job's seeded order
(:mod:`trainplay.runtime.order`) decides which window each step takes, as for any data set.

- ``tokens:PATH``: a flat binary file of token ids, little-endian ``uint16`` (or ``uint32`` with
  ``tokens:PATH:u32``): what nanoGPT's ``prepare.py`` scripts write (``train.bin``). It is
  memory-mapped with ``numpy.memmap`` and only the windows a rank trains on are ever read.
- ``text:PATH``: a UTF-8 text file, or a folder of them (every file below it, in sorted order,
  hidden entries and ``__pycache__`` skipped), as bytes: vocabulary 256, no tokenizer. Files are
  checked to be UTF-8 when opened (read in chunks, never held whole) and memory-mapped.
- ``synthetic``: uniform random tokens below the model's vocabulary; window ``k`` comes from a
  generator seeded from ``(seed, k)`` alone. 1024 windows unless told otherwise.

Bad input is a :class:`~trainplay.errors.UsageError`: a vocabulary larger than the model's, a
stream shorter than one window, a token id at or above the model's vocabulary found while reading.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from trainplay.errors import UsageError
from trainplay.runtime.data import check_indices

__all__ = ["BYTE_VOCAB", "TokenSource", "is_token_spec", "open_tokens"]

BYTE_VOCAB = 256
"""Vocabulary of ``text:`` data: one token per byte."""
_SYNTHETIC_SIZE = 1024
_TOKEN_DTYPES = {"u16": np.uint16, "u32": np.uint32}
_CHECK_CHUNK_BYTES = 1 << 22
_HEAD_TOKENS = 1 << 16
"""Tokens checked against the vocabulary when the data is opened; the rest as they are read."""

_Read = Callable[[int, int], np.ndarray]


@dataclass(frozen=True, kw_only=True)
class TokenSource:
    """An opened token stream cut into windows; :meth:`batch` fetches windows by index."""

    spec: str
    """What the user gave as ``--data``."""
    size: int
    """Windows (samples) in the data set, after ``--dataset-size``."""
    seq_len: int
    """Tokens the model reads per sample (``L``)."""
    vocab_size: int
    """The model's vocabulary: every token id read must lie below it."""
    data_vocab: int
    """The vocabulary the data is written in (256 for text, 65536 for uint16 files, ...)."""
    _read: _Read = field(repr=False, compare=False)
    """``L + 1`` token ids of window ``k`` as an int64 array: ``_read(k, L + 1)``."""

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return (self.seq_len,)

    def batch(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and next-token targets, both int64 ``[n, L]``, of the windows at ``indices``."""
        indices = check_indices(indices, self.size, self.spec)
        windows = np.stack([self._read(int(k), self.seq_len + 1) for k in indices.tolist()])
        windows = windows.reshape(len(indices), self.seq_len + 1)
        if windows.size and int(windows.max()) >= self.vocab_size:
            k, position = np.unravel_index(int(windows.argmax()), windows.shape)
            raise UsageError(
                f"{self.spec}: token {int(windows.max())} (window {int(indices[k])}, position "
                f"{int(position)}) is outside the model's vocabulary of {self.vocab_size}; "
                "was the file written with the model's tokenizer?"
            )
        ids = torch.from_numpy(windows.astype(np.int64))
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def is_token_spec(spec: str) -> bool:
    """Whether ``--data spec`` names token data (``tokens:`` or ``text:``)."""
    return spec.startswith(("tokens:", "text:"))


def open_tokens(
    spec: str, *, seq_len: int, vocab_size: int, seed: int = 0, dataset_size: int | None = None
) -> TokenSource:
    """The :class:`TokenSource` that ``--data spec`` names for a model of ``vocab_size`` tokens
    reading ``seq_len`` of them per sample (see the module docstring)."""
    if seq_len < 1:
        raise UsageError(f"--seq-len must be a positive integer, got {seq_len}")
    if spec == "synthetic":
        return _source(spec, _synthetic(seed, vocab_size), seq_len, vocab_size, vocab_size,
                       windows=dataset_size or _SYNTHETIC_SIZE, dataset_size=None)  # fmt: skip
    if spec.startswith("tokens:"):
        read, total, data_vocab = _token_file(spec)
    elif spec.startswith("text:"):
        read, total = _text(spec)
        data_vocab = BYTE_VOCAB
        if data_vocab > vocab_size:
            raise UsageError(
                f"{spec}: text is read as bytes (vocabulary {BYTE_VOCAB}), more than the model's "
                f"vocabulary of {vocab_size}; use a model with at least {BYTE_VOCAB} tokens"
            )
    else:
        raise UsageError(
            f"language models train on --data tokens:PATH[:u32], text:PATH or synthetic, "
            f"got {spec!r}"
        )
    if total < seq_len + 1:
        raise UsageError(
            f"{spec} holds {total} tokens, fewer than one window of --seq-len {seq_len} + 1; "
            "use more data or a shorter --seq-len"
        )

    head = read(0, min(total, _HEAD_TOKENS))  # a wrong tokenizer shows at once, not mid-run
    if int(head.max()) >= vocab_size:
        raise UsageError(
            f"{spec}: token {int(head.max())} (at {int(head.argmax())}) is outside the model's "
            f"vocabulary of {vocab_size}; was the file written with the model's tokenizer?"
        )

    def window(k: int, count: int) -> np.ndarray:
        return read(k * seq_len, count)

    return _source(spec, window, seq_len, vocab_size, data_vocab,
                   windows=(total - 1) // seq_len, dataset_size=dataset_size)  # fmt: skip


def _source(
    spec: str,
    read: _Read,
    seq_len: int,
    vocab_size: int,
    data_vocab: int,
    *,
    windows: int,
    dataset_size: int | None,
) -> TokenSource:
    if dataset_size is not None and dataset_size > windows:
        raise UsageError(
            f"--dataset-size {dataset_size} is more than the {windows} windows of --seq-len "
            f"{seq_len} in {spec}; pass at most {windows}"
        )
    return TokenSource(
        spec=spec,
        size=dataset_size or windows,
        seq_len=seq_len,
        vocab_size=vocab_size,
        data_vocab=data_vocab,
        _read=read,
    )


def _synthetic(seed: int, vocab_size: int) -> _Read:
    key = seed % 2**64  # SeedSequence takes non-negative integers

    def read(k: int, count: int) -> np.ndarray:
        sample_seed = np.random.SeedSequence([key, k]).generate_state(1, np.uint64)[0]
        generator = torch.Generator().manual_seed(int(sample_seed))
        return torch.randint(vocab_size, (count,), generator=generator).numpy()

    return read


def _token_file(spec: str) -> tuple[_Read, int, int]:
    text = spec.removeprefix("tokens:")
    kind = "u16"
    if text.endswith((":u16", ":u32")):
        text, kind = text[:-4], text[-3:]
    if not text:
        raise UsageError("tokens needs the file after the colon: tokens:PATH or tokens:PATH:u32")
    path = Path(text).expanduser()
    if not path.is_file():
        why = "does not exist" if not path.exists() else "is not a file"
        raise UsageError(f"{spec!r}: {path} {why}; give a flat binary file of token ids")
    dtype = np.dtype(_TOKEN_DTYPES[kind])
    size = path.stat().st_size
    if size % dtype.itemsize:
        raise UsageError(
            f"{spec!r}: {path} has {size} bytes, not a whole number of {dtype.itemsize}-byte "
            f"{dtype.name} tokens; is it a {'uint16' if kind == 'u32' else 'uint32'} file "
            f"({'drop' if kind == 'u32' else 'add'} :u32)?"
        )
    tokens = np.memmap(path, dtype=dtype, mode="r") if size else np.zeros(0, dtype)

    def read(start: int, count: int) -> np.ndarray:
        return np.asarray(tokens[start : start + count], dtype=np.int64)

    return read, len(tokens), int(np.iinfo(dtype).max) + 1


def _text_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    found = []
    for entry in sorted(path.rglob("*")):
        parts = entry.relative_to(path).parts
        if any(p.startswith(".") or p == "__pycache__" for p in parts) or not entry.is_file():
            continue
        found.append(entry)
    return found


def _check_utf8(spec: str, path: Path) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with path.open("rb") as file:
        while chunk := file.read(_CHECK_CHUNK_BYTES):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                raise UsageError(
                    f"{spec!r}: {path} is not UTF-8 text (byte {offset + exc.start}); text: takes "
                    "UTF-8 files, or a folder that holds only such files"
                ) from None
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise UsageError(f"{spec!r}: {path} ends inside a UTF-8 character") from None


def _text(spec: str) -> tuple[_Read, int]:
    text = spec.removeprefix("text:")
    if not text:
        raise UsageError("text needs a file or folder after the colon: text:PATH")
    path = Path(text).expanduser()
    if not path.exists():
        raise UsageError(f"{spec!r}: {path} does not exist; give a UTF-8 file or a folder of them")
    files = [f for f in _text_files(path) if f.stat().st_size]
    if not files:
        raise UsageError(f"{spec!r}: {path} holds no text files")
    for f in files:
        _check_utf8(spec, f)
    maps = [np.memmap(f, dtype=np.uint8, mode="r") for f in files]
    starts = np.cumsum([0] + [len(m) for m in maps])

    def read(start: int, count: int) -> np.ndarray:
        pieces, position, end = [], start, start + count
        k = int(np.searchsorted(starts, start, side="right")) - 1
        while position < end:
            offset = position - int(starts[k])
            take = min(end - position, len(maps[k]) - offset)
            pieces.append(np.asarray(maps[k][offset : offset + take], dtype=np.int64))
            position += take
            k += 1
        return np.concatenate(pieces)

    return read, int(starts[-1])

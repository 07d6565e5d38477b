"""Decoder presets: the published dimensions of GPT-2, GPT-3 and LLaMA sizes, as plain values.

No torch here, so ``trainplay models`` and the CLI's choices load in milliseconds; the module the
configs describe is :class:`trainplay.workload.decoder.Decoder`, whose docstring names the sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainplay.errors import UsageError

__all__ = ["PRESETS", "DecoderConfig"]


@dataclass(frozen=True, kw_only=True)
class DecoderConfig:
    """Dimensions and architectural choices of a decoder-only transformer."""

    vocab_size: int
    """Number of token ids."""
    d_model: int
    """Width of the residual stream."""
    n_layers: int
    """Number of transformer blocks."""
    n_heads: int
    """Attention (query) heads; ``d_model`` must be a multiple."""
    d_ff: int
    """Hidden width of the MLP (of each SwiGLU branch)."""
    context_len: int
    """Longest sequence the model is built for; the default sequence length to profile."""
    n_kv_heads: int | None = None
    """Key/value heads for grouped-query attention; ``None`` means ``n_heads``."""
    style: str = "gpt"
    """``gpt``: learned positions, LayerNorm, GELU, biases. ``llama``: rotary, RMSNorm, SwiGLU, no biases."""
    tie_embeddings: bool = True
    """Share the input embedding with the output projection."""
    published_params: float | None = None
    """Parameter count the source publishes for this size, to check the preset against."""

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "context_len"):
            if getattr(self, name) <= 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise UsageError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")
        if self.n_heads % self.kv_heads:
            raise UsageError(
                f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.kv_heads}"
            )
        if self.style not in ("gpt", "llama"):
            raise UsageError(f"style must be gpt or llama, got {self.style!r}")

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def _gpt(
    d_model: int, n_layers: int, n_heads: int, context_len: int, published: float
) -> DecoderConfig:
    return DecoderConfig(
        vocab_size=50257,
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        d_ff=4 * d_model,
        context_len=context_len,
        style="gpt",
        tie_embeddings=True,
        published_params=published,
    )


def _llama(
    d_model: int,
    n_layers: int,
    n_heads: int,
    d_ff: int,
    context_len: int,
    published: float,
    n_kv_heads: int | None = None,
) -> DecoderConfig:
    return DecoderConfig(
        vocab_size=32000,
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        d_ff=d_ff,
        context_len=context_len,
        n_kv_heads=n_kv_heads,
        style="llama",
        tie_embeddings=False,
        published_params=published,
    )


PRESETS: dict[str, DecoderConfig] = {
    "gpt2-small": _gpt(768, 12, 12, 1024, 124e6),
    "gpt2-medium": _gpt(1024, 24, 16, 1024, 355e6),
    "gpt2-large": _gpt(1280, 36, 20, 1024, 774e6),
    "gpt2-xl": _gpt(1600, 48, 25, 1024, 1558e6),
    "gpt3-175b": _gpt(12288, 96, 96, 2048, 175e9),
    "llama-7b": _llama(4096, 32, 32, 11008, 2048, 6.7e9),
    "llama-13b": _llama(5120, 40, 40, 13824, 2048, 13.0e9),
    "llama-70b": _llama(8192, 80, 64, 28672, 4096, 70e9, n_kv_heads=8),
}
"""Decoder presets by name (sources: the docstring of :mod:`trainplay.workload.decoder`)."""

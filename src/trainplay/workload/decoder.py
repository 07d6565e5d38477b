"""A GPT/LLaMA-style decoder-only transformer defined from a config, with published presets.

The module tree is what the block rule of :mod:`trainplay.workload.blocks` cuts into
``embed`` · ``layers.0`` … ``layers.N-1`` · ``head``, the natural pipeline stages of a decoder.
Attention uses ``torch.nn.functional.scaled_dot_product_attention`` (causal), so each device runs
its fused kernel.

Preset dimensions and the published sizes they are checked against:

- GPT-2 (Radford et al. 2019; sizes as renamed in github.com/openai/gpt-2, whose README corrected the
  paper's 117M/345M/762M/1542M to 124M/355M/774M/1558M): learned positions, LayerNorm, GELU MLP,
  biases, input and output embeddings tied, vocabulary 50257, context 1024.
- GPT-3 175B (Brown et al. 2020, Table 2.1): d_model 12288, 96 layers, 96 heads, context 2048,
  GPT-2 architecture (the alternating sparse attention is not modelled; it does not change sizes).
- LLaMA 7B/13B (Touvron et al. 2023, "LLaMA", Table 2: 6.7B, 13.0B): RMSNorm, SwiGLU, rotary
  positions, no biases, untied embeddings, vocabulary 32000, context 2048.
- Llama 2 70B (Touvron et al. 2023, "Llama 2", Table 1): as LLaMA with grouped-query attention
  (8 key/value heads), SwiGLU width 28672, context 4096.

Initial values (:func:`initial_value`) are a function of a parameter's name, so a stage built on
``meta`` gets the same weights whichever plan cut the model: GPT-2's scheme as nanoGPT writes it
(github.com/karpathy/nanoGPT, model.py ``_init_weights``): weights and embeddings from
N(0, 0.02²), the two projections that write into the residual stream (``attn.out``, ``mlp.down``)
from N(0, (0.02/√(2·n_layers))²), biases 0, norm scales 1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from trainplay.errors import UsageError

__all__ = [
    "INIT_STD",
    "PRESETS",
    "Decoder",
    "DecoderConfig",
    "count_params",
    "initial_value",
    "preset",
]


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
"""Decoder presets by name (see the module docstring for sources)."""


class Embedding(nn.Module):
    """Token embedding, plus learned positions for GPT-style models."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.positions = (
            nn.Embedding(config.context_len, config.d_model) if config.style == "gpt" else None
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids)
        if self.positions is not None:
            x = x + self.positions(torch.arange(ids.shape[1], device=ids.device))
        return x


def _rotary_tables(config: DecoderConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables of rotary position embedding (Su et al. 2021), base 10000 as in LLaMA."""
    half = config.head_dim // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(half, dtype=torch.float32) / half))
    angles = torch.outer(torch.arange(config.context_len, dtype=torch.float32), inv_freq)
    return torch.cos(angles), torch.sin(angles)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class Attention(nn.Module):
    """Causal multi-head (or grouped-query) self-attention with one fused QKV projection."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.config = config
        bias = config.style == "gpt"
        qkv = (config.n_heads + 2 * config.kv_heads) * config.head_dim
        self.qkv = nn.Linear(config.d_model, qkv, bias=bias)
        self.out = nn.Linear(config.d_model, config.d_model, bias=bias)
        if config.style == "llama":
            cos, sin = _rotary_tables(config)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.config
        batch, seq, _ = x.shape
        q, k, v = self.qkv(x).split(
            [c.n_heads * c.head_dim, c.kv_heads * c.head_dim, c.kv_heads * c.head_dim], dim=-1
        )
        q = q.view(batch, seq, c.n_heads, c.head_dim).transpose(1, 2)
        k = k.view(batch, seq, c.kv_heads, c.head_dim).transpose(1, 2)
        v = v.view(batch, seq, c.kv_heads, c.head_dim).transpose(1, 2)
        if c.style == "llama":
            cos, sin = self.cos[:seq].to(x.dtype), self.sin[:seq].to(x.dtype)
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if c.kv_heads != c.n_heads:  # grouped-query attention: share each key/value head
            k = k.repeat_interleave(c.n_heads // c.kv_heads, dim=1)
            v = v.repeat_interleave(c.n_heads // c.kv_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(batch, seq, c.d_model))


class MLP(nn.Module):
    """GELU MLP (GPT) or SwiGLU (LLaMA, Shazeer 2020) with fused gate and up projections."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.swiglu = config.style == "llama"
        bias = not self.swiglu
        self.up = nn.Linear(config.d_model, config.d_ff * (2 if self.swiglu else 1), bias=bias)
        self.down = nn.Linear(config.d_ff, config.d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.swiglu:
            gate, up = self.up(x).chunk(2, dim=-1)
            return self.down(F.silu(gate) * up)
        return self.down(F.gelu(self.up(x), approximate="tanh"))


def _norm(config: DecoderConfig) -> nn.Module:
    return (
        nn.RMSNorm(config.d_model, eps=1e-5)
        if config.style == "llama"
        else nn.LayerNorm(config.d_model)
    )


class TransformerBlock(nn.Module):
    """Pre-norm residual block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.attn_norm = _norm(config)
        self.attn = Attention(config)
        self.mlp_norm = _norm(config)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class Head(nn.Module):
    """Final norm and the projection to vocabulary logits."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.norm = _norm(config)
        self.proj = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.norm(x))


class Decoder(nn.Module):
    """Token ids ``(batch, seq)`` -> logits ``(batch, seq, vocab)``."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.config = config
        self.embed = Embedding(config)
        self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(config.n_layers))
        self.head = Head(config)
        if config.tie_embeddings:
            self.head.proj.weight = self.embed.tokens.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.shape[1] > self.config.context_len:
            raise ValueError(
                f"sequence length {ids.shape[1]} exceeds context {self.config.context_len}"
            )
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


INIT_STD = 0.02
"""Standard deviation of GPT-2's initial weights (nanoGPT's ``_init_weights``)."""
_RESIDUAL_OUT = ("attn.out.weight", "mlp.down.weight")


def initial_value(
    config: DecoderConfig, name: str, shape: tuple[int, ...], generator: torch.Generator
) -> torch.Tensor:
    """The initial fp32 value (on the CPU) of the parameter or buffer ``name`` of a
    :class:`Decoder` of ``config``, drawn from ``generator`` (see the module docstring)."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf in ("cos", "sin"):  # rotary tables: a function of the config, not random
        cos, sin = _rotary_tables(config)
        return cos if leaf == "cos" else sin
    if leaf == "bias":
        return torch.zeros(shape)
    if "norm." in name:
        return torch.ones(shape)
    std = INIT_STD
    if name.endswith(_RESIDUAL_OUT):
        std = INIT_STD / (2 * config.n_layers) ** 0.5
    return torch.empty(shape).normal_(0.0, std, generator=generator)


def preset(name: str, **overrides: int) -> DecoderConfig:
    """A preset's config, optionally with some fields replaced (e.g. ``n_layers=2`` for tests)."""
    return replace(PRESETS[name], **overrides)


def count_params(config: DecoderConfig) -> int:
    """Closed-form parameter count of :class:`Decoder` (checks the module against the formula)."""
    d, c = config.d_model, config
    attn = d * (c.n_heads + 2 * c.kv_heads) * c.head_dim + d * d
    mlp = d * c.d_ff * (3 if c.style == "llama" else 2)
    if c.style == "gpt":
        attn += (c.n_heads + 2 * c.kv_heads) * c.head_dim + d
        mlp += c.d_ff + d
    norms = 2 * d * (1 if c.style == "llama" else 2)
    embed = c.vocab_size * d + (c.context_len * d if c.style == "gpt" else 0)
    head = (d if c.style == "llama" else 2 * d) + (0 if c.tie_embeddings else c.vocab_size * d)
    return embed + c.n_layers * (attn + mlp + norms) + head

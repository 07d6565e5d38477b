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

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from trainplay.workload.presets import PRESETS, DecoderConfig

__all__ = [
    "INIT_STD",
    "PRESETS",
    "Decoder",
    "DecoderConfig",
    "count_params",
    "initial_value",
    "preset",
]


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

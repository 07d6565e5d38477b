"""The GPT the published GPU results trained, as its framework implemented it (for
``benchmarks/published_gpu.py``): Megatron-LM's transformer of 2020-2021 (commit 8aa4619 for
DLPerf, v1.1.5 for AMP's DeepSpeed examples).

It differs from trainplay's own decoder (``trainplay.workload.decoder``, which uses the fused
flash kernel of ``scaled_dot_product_attention``) where the cost differs: attention is computed
unfused — ``Q Kᵀ`` by a batched matrix product, a scaled, causally masked softmax over the whole
``seq x seq`` matrix, dropout on it, and its product with ``V`` — and dropout (p = 0.1, Megatron's
``attention_dropout`` and ``hidden_dropout``) follows the attention and the MLP. The dimensions
come from each source's configuration (see ``published_gpu.py``); the counting is trainplay's.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MegatronGPT"]

DROPOUT = 0.1


class _Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        probs = F.dropout(F.softmax(scores.masked_fill(mask, -10000.0), dim=-1), DROPOUT)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        return F.dropout(self.out(y), DROPOUT)


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = _Attention(hidden, heads)
        self.up, self.down = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + F.dropout(self.down(F.gelu(self.up(self.norm2(x)))), DROPOUT)


class _Embed(nn.Module):
    def __init__(self, vocab: int, hidden: int, seq: int):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        return F.dropout(x, DROPOUT)


class _Head(nn.Module):
    def __init__(self, vocab: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.proj = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.norm(x))


class MegatronGPT(nn.Module):
    """Embedding (tied with the output), ``layers`` pre-norm transformer layers, head."""

    def __init__(self, *, vocab: int, hidden: int, heads: int, layers: int, seq: int):
        super().__init__()
        self.embed = _Embed(vocab, hidden, seq)
        self.layers = nn.ModuleList(_Layer(hidden, heads) for _ in range(layers))
        self.head = _Head(vocab, hidden)
        self.head.proj.weight = self.embed.tokens.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)

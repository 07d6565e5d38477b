"""A user's own decoder (``package.module:factory``) with ``--seq-len`` is a language model to
every command, not only to ``trainplay train``: ``profile``, ``analyze``, ``plan`` and ``validate``
read its vocabulary off the model, as ``train`` does, and feed it token ids."""

from __future__ import annotations

from trainplay.cli import main
from trainplay.plan.api import block_costs
from trainplay.workload.api import profile
from trainplay.workload.zoo import resolve_model

TINY = "tests.data.tiny_models:tiny_decoder"
VOCAB = 64  # tiny_decoder's (tests/data/tiny_models.py)


def test_the_vocabulary_is_read_off_the_model():
    assert resolve_model(TINY, seq_len=8).vocab_size == VOCAB
    assert resolve_model(TINY).vocab_size is None  # without --seq-len: float samples, as before


def test_profile_and_plan_price_it_as_with_the_vocabulary_given():
    read = profile(TINY, batch_size=2, seq_len=8, loss=True)
    given = profile(TINY, batch_size=2, seq_len=8, loss=True, vocab_size=VOCAB)
    assert read.to_dict() == given.to_dict()
    assert read.input_shape == (8,)
    assert block_costs(TINY, seq_len=8) == block_costs(TINY, seq_len=8, vocab_size=VOCAB)


def test_the_commands_take_it(capsys):
    assert main(["profile", TINY, "--seq-len", "8", "--batch", "2"]) == 0
    assert main(["analyze", TINY, "--seq-len", "8", "--batch", "2", "--cluster", "lab"]) == 0
    assert main(["plan", TINY, "--seq-len", "8", "--global-batch", "8", "--cluster", "lab"]) == 0
    out = capsys.readouterr().out
    assert "tiny_decoder" in out

"""``trainplay train`` with a language model refuses bad input before it starts: one line, exit 2."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.test_train_cli import refused

TINY = "tests.data.tiny_models:tiny_decoder"


def tokens(path, values):
    np.asarray(values, dtype=np.uint16).tofile(path)
    return str(path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gpt2-small", "--seq-len", "2048"], "--seq-len 2048 is longer than gpt2-small's context of 1024"),
        (["gpt2-small", "--seq-len", "8", "--data", "digits"], "train it on --data tokens:PATH[:u32], text:PATH or synthetic, not 'digits'"),
        (["gpt2-small", "--seq-len", "8", "--classes", "3"], "--classes is for classifiers"),
        ([TINY, "--data", "text:/tmp"], "takes token ids: give the tokens per sample with --seq-len"),
        ([TINY, "--data", "synthetic"], "(a language model takes --seq-len L)"),
        ([TINY, "--seq-len", "32"], "tiny_decoder does not take token ids [batch, 32]"),
        (["tests.data.tiny_models:deep_mlp", "--seq-len", "8"], "does not take token ids [batch, 8]"),
        (["tests.data.tiny_models:bad_shape_decoder", "--seq-len", "8"], "returns [2, 64] for token ids [2, 8]; a language model returns logits [batch, seq, vocab]"),
        (["tests.data.tiny_models:uninitialisable_decoder", "--seq-len", "8"], "cannot initialise '1.gain': _Gain has no reset_parameters()"),
        ([TINY, "--seq-len", "8", "--data", "tokens:/no/such.bin"], "/no/such.bin does not exist"),
        ([TINY, "--seq-len", "8", "--dtype", "bf16", "--data", "text:/no/such"], "does not exist"),
    ],
)  # fmt: skip
def test_bad_language_jobs(capsys, args, message):
    assert message in refused(capsys, *args, "--global-batch", "4", "--steps", "2")


def test_bad_token_files(capsys, tmp_path):
    short = tokens(tmp_path / "short.bin", range(5))
    err = refused(
        capsys, TINY, "--seq-len", "8", "--data", f"tokens:{short}", "--global-batch", "4"
    )
    assert "holds 5 tokens, fewer than one window of --seq-len 8 + 1" in err
    wide = tokens(tmp_path / "wide.bin", [1, 2, 3, 640, 4, 5, 6, 7, 8, 9])
    err = refused(capsys, TINY, "--seq-len", "8", "--data", f"tokens:{wide}", "--global-batch", "4")
    assert "token 640 (at 3) is outside the model's vocabulary of 64" in err
    text = tmp_path / "a.txt"
    text.write_text("some text that is long enough " * 4)
    err = refused(capsys, TINY, "--seq-len", "8", "--data", f"text:{text}", "--global-batch", "4")
    assert "vocabulary 256), more than the model's vocabulary of 64" in err

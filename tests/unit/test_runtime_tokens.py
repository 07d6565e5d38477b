"""Token data: windows of L+1 tokens by index, from a memory-mapped file, text bytes or a seed."""

from __future__ import annotations

import resource

import numpy as np
import pytest
import torch

from trainplay.errors import UsageError
from trainplay.runtime.tokens import BYTE_VOCAB, open_tokens


def write_tokens(path, values, dtype=np.uint16):
    np.asarray(values, dtype=dtype).tofile(path)
    return path


def test_windows_of_a_token_file_and_their_next_tokens(tmp_path):
    # 11 tokens 0..10 with L = 3: windows start at 0, 3, 6 (the last would need token 12)
    path = write_tokens(tmp_path / "train.bin", range(11))
    data = open_tokens(f"tokens:{path}", seq_len=3, vocab_size=50)
    assert data.size == 3 and data.sample_shape == (3,)
    inputs, targets = data.batch(torch.tensor([2, 0]))
    assert inputs.dtype == targets.dtype == torch.int64
    assert inputs.tolist() == [[6, 7, 8], [0, 1, 2]]
    assert targets.tolist() == [[7, 8, 9], [1, 2, 3]]


def test_uint32_files(tmp_path):
    path = write_tokens(tmp_path / "big.bin", [70000, 1, 2, 3, 4], np.uint32)
    data = open_tokens(f"tokens:{path}:u32", seq_len=4, vocab_size=100000)
    assert data.batch(torch.tensor([0]))[0].tolist() == [[70000, 1, 2, 3]]
    assert data.data_vocab == 2**32


def test_a_large_file_is_mapped_not_read(tmp_path):
    # a 1 GiB sparse file: opening it and reading two windows must not bring it into memory
    path = tmp_path / "huge.bin"
    with path.open("wb") as f:
        f.truncate(2**30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data = open_tokens(f"tokens:{path}", seq_len=1024, vocab_size=50257)
    inputs, _ = data.batch(torch.tensor([0, data.size - 1]))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert data.size == (2**29 - 1) // 1024
    assert inputs.shape == (2, 1024) and int(inputs.max()) == 0
    assert grown_kib < 64 * 1024  # well under the file's 1 GiB


def test_text_is_bytes_and_a_folder_is_its_files_in_order(tmp_path):
    (tmp_path / "b.txt").write_text("cd", encoding="utf-8")
    (tmp_path / "a.txt").write_text("ab", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.txt").write_text("é", encoding="utf-8")  # two bytes
    (tmp_path / ".hidden").write_text("zz")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"\xff\xfe")
    data = open_tokens(f"text:{tmp_path}", seq_len=2, vocab_size=BYTE_VOCAB)
    stream = list(b"abcd" + "é".encode())  # a.txt, b.txt, sub/c.txt; windows span files
    assert data.size == (len(stream) - 1) // 2
    inputs, targets = data.batch(torch.arange(data.size))
    assert inputs.tolist() == [stream[0:2], stream[2:4]]
    assert targets.tolist() == [stream[1:3], stream[3:5]]


def test_synthetic_tokens_depend_on_the_seed_and_index_only():
    a = open_tokens("synthetic", seq_len=8, vocab_size=50, seed=5)
    b = open_tokens("synthetic", seq_len=8, vocab_size=50, seed=5, dataset_size=100)
    assert a.size == 1024 and b.size == 100
    first, _ = a.batch(torch.tensor([7, 3]))
    again, _ = b.batch(torch.tensor([3, 7]))
    assert torch.equal(first, again.flip(0))
    assert int(first.max()) < 50
    other, _ = open_tokens("synthetic", seq_len=8, vocab_size=50, seed=6).batch(torch.tensor([7]))
    assert not torch.equal(other[0], first[0])


@pytest.mark.parametrize(
    ("setup", "spec", "vocab", "message"),
    [
        (lambda p: write_tokens(p / "t.bin", range(3)), "tokens:{p}/t.bin", 50, "fewer than one window"),
        (lambda p: write_tokens(p / "t.bin", [1, 2, 99, 3, 4]), "tokens:{p}/t.bin", 50, "token 99 (at 2) is outside the model's vocabulary of 50"),
        (lambda p: (p / "t.bin").write_bytes(b"\x01\x00\x02"), "tokens:{p}/t.bin", 50, "not a whole number of 2-byte uint16 tokens"),
        (lambda p: None, "tokens:{p}/none.bin", 50, "does not exist"),
        (lambda p: None, "tokens:", 50, "tokens needs the file"),
        (lambda p: (p / "a.txt").write_text("hello world"), "text:{p}/a.txt", 64, "more than the model's vocabulary of 64"),
        (lambda p: (p / "a.txt").write_bytes(b"ok \xff bad"), "text:{p}/a.txt", 256, "is not UTF-8 text (byte 3)"),
        (lambda p: (p / "e").mkdir(), "text:{p}/e", 256, "holds no text files"),
        (lambda p: None, "digits", 256, "language models train on --data tokens:PATH"),
    ],
)  # fmt: skip
def test_bad_token_data(tmp_path, setup, spec, vocab, message):
    setup(tmp_path)
    with pytest.raises(UsageError) as caught:
        open_tokens(spec.format(p=tmp_path), seq_len=3, vocab_size=vocab)
    assert message in str(caught.value)


def test_a_token_out_of_range_found_while_reading(tmp_path):
    values = np.zeros(200_000, dtype=np.uint16)
    values[150_000] = 60000  # past what opening checks
    path = write_tokens(tmp_path / "t.bin", values)
    data = open_tokens(f"tokens:{path}", seq_len=1000, vocab_size=50257)
    data.batch(torch.tensor([0]))
    with pytest.raises(UsageError, match=r"token 60000 .* outside the model's vocabulary of 50257"):
        data.batch(torch.tensor([150]))

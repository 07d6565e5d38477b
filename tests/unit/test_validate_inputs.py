"""``trainplay validate``'s inputs for a model built by a factory, as its worker makes them
(``resolve_model`` with the command's ``--seq-len``, then the source's inputs): token ids for a
decoder given ``--seq-len``, the features themselves for a model of one-dimensional samples given
``--input-shape`` (an MLP)."""

import torch

from trainplay.workload.zoo import resolve_model


def test_a_factory_mlp_of_flat_samples_gets_features():
    source = resolve_model("tests.data.tiny_models:deep_mlp", seq_len=None)
    model = source.build((12,), "cpu", "fp32")
    (x,) = source.inputs(4, (12,), "cpu", "fp32")
    assert x.shape == (4, 12) and x.dtype == torch.float32
    model(x).sum().backward()  # the model takes them


def test_a_factory_decoder_gets_token_ids_below_its_vocabulary():
    source = resolve_model("tests.data.tiny_models:tiny_decoder", seq_len=8)
    model = source.build((8,), "cpu", "fp32")
    (x,) = source.inputs(2, (8,), "cpu", "fp32")
    vocab = next(m for m in model.modules() if isinstance(m, torch.nn.Embedding)).num_embeddings
    assert x.shape == (2, 8) and x.dtype == torch.int64
    assert int(x.min()) >= 0 and int(x.max()) < vocab
    model(x).sum().backward()  # the model takes them

"""``trainplay validate``'s inputs for a model built by a factory: token ids for a decoder, the
features themselves for a model of one-dimensional samples without an embedding (an MLP)."""

import torch

from trainplay.roofline.validate_worker import _inputs
from trainplay.workload.zoo import resolve_model


def test_a_factory_mlp_of_flat_samples_gets_features():
    source = resolve_model("tests.data.tiny_models:deep_mlp")
    model = source.build((12,), "cpu", "fp32")
    x = _inputs(source, model, 4, (12,))
    assert x.shape == (4, 12) and x.dtype == torch.float32
    model(x).sum().backward()  # the model takes them


def test_a_factory_decoder_gets_token_ids_below_its_vocabulary():
    source = resolve_model("tests.data.tiny_models:tiny_decoder")
    model = source.build((8,), "cpu", "fp32")
    x = _inputs(source, model, 2, (8,))
    vocab = next(m for m in model.modules() if isinstance(m, torch.nn.Embedding)).num_embeddings
    assert x.shape == (2, 8) and x.dtype == torch.int64
    assert int(x.min()) >= 0 and int(x.max()) < vocab

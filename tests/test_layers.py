"""Real pruned layers as int8 weights: the sparsity pattern is kept exactly."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.layers import (
    dlmc_layers,
    int8_layer,
    quantize_int8,
    real_slice,
    seeded_int8,
    squeezenet_layers,
)


def test_seeded_int8_is_nonzero_and_replayable():
    values = seeded_int8(10_000, 3)
    assert values.min() >= -128 and values.max() <= 127 and (values != 0).all()
    assert (values == seeded_int8(10_000, 3)).all()
    assert len(np.unique(values)) == 255


def test_quantize_keeps_sign_and_every_nonzero():
    values = np.array([0.5, -0.5, 1e-6, -1e-6, 0.25, 0.0])
    assert quantize_int8(values).tolist() == [127, -127, 1, -1, 64, 0]


@pytest.mark.parametrize("pick", [lambda root: dlmc_layers(root)[0],
                                  lambda root: squeezenet_layers(root)[4]])
def test_real_layers_keep_their_pattern(shared_data, pick):
    path = pick(shared_data)
    weights = int8_layer(path, seed=1)
    original = read_matrix(path)
    original.eliminate_zeros()
    assert weights.shape == original.shape and weights.nnz == original.nnz
    assert (weights.toarray() != 0).sum() == original.nnz
    assert np.abs(weights.data).max() <= 128


def test_real_layer_lists(shared_data):
    assert len(dlmc_layers(shared_data)) > 10
    assert len(squeezenet_layers(shared_data)) == 26


def test_integer_weights_outside_int8_are_rejected(tmp_path):
    path = tmp_path / "w.mtx"
    path.write_text("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 300\n")
    with pytest.raises(ParameterError, match="outside int8"):
        int8_layer(path)


def test_a_real_slice_is_the_layers_block_and_seeded_int8_activations(shared_data):
    path = squeezenet_layers(shared_data)[4]
    weights, activations = real_slice(path, (8, 20), (5, 50), 3, seed=2)
    assert np.array_equal(weights.toarray(), int8_layer(path, 2).toarray()[8:20, 5:50])
    assert activations.shape == (45, 3)
    assert activations.min() >= -128 and activations.max() <= 127
    again = real_slice(path, (8, 20), (5, 50), 3, seed=2)[1]
    assert np.array_equal(activations, again)
    assert not np.array_equal(activations, real_slice(path, (8, 20), (5, 50), 3, seed=3)[1])

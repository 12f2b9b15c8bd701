"""Real pruned layers as int8 weight matrices for the integer MAC datapath.

The shared data holds two kinds of real pruned weights (im2col view, rows are
output channels): DLMC ResNet-50 patterns, which carry no values, and the
SqueezeNet Deep Compression layers, whose values come from an 8-bit codebook
(255 nonzero levels per layer). The MACs multiply int8 by int8, so:

- a pattern gets nonzero int8 values drawn from a seed (:func:`seeded_int8`);
- real values are quantized symmetrically per layer, ``round(127 v / max|v|)``,
  and a nonzero that would round to 0 keeps its sign as +-1, so the sparsity
  pattern, which is what Eureka's cycle counts depend on, is exactly the file's
  (:func:`quantize_int8`);
- integer values are kept if they fit in int8.
"""

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from .formats import read_matrix

DLMC = Path("dnn_weights", "dlmc", "rn50")
SQUEEZENET = Path("dnn_weights", "squeezenet_deep_compression")


def seeded_int8(count, seed):
    """``count`` nonzero int8 values, uniform over the 255 nonzero codes, from ``seed``."""
    drawn = np.random.default_rng(seed).integers(-128, 127, size=count)
    drawn[drawn >= 0] += 1
    return drawn


def quantize_int8(values):
    """Symmetric int8 codes of real ``values``; nonzeros stay nonzero (see the module doc)."""
    values = np.asarray(values, dtype=np.float64)
    top = np.abs(values).max(initial=0.0)
    if top == 0.0:
        return np.zeros(values.shape, dtype=np.int64)
    codes = np.rint(values * (127.0 / top)).astype(np.int64)
    return np.where((codes == 0) & (values != 0), np.sign(values), codes).astype(np.int64)


def int8_layer(path, seed=0):
    """The layer in ``path`` (.mtx, .smtx, .npy) as an int8-valued ``coo_array``.

    A pattern-only file (DLMC ``.smtx``, or all ones) gets values from ``seed``.
    """
    matrix = read_matrix(path)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    data = matrix.data
    if np.iscomplexobj(data):
        raise ParameterError(f"{path}: complex weights have no int8 code")
    if str(path).lower().endswith((".smtx", ".smtx.gz")) or (data == 1).all():
        codes = seeded_int8(matrix.nnz, seed)
    elif np.issubdtype(data.dtype, np.integer) or (data == np.rint(data)).all():
        if data.size and (data.min() < -128 or data.max() > 127):
            raise ParameterError(f"{path}: integer weights outside int8")
        codes = data.astype(np.int64)
    else:
        codes = quantize_int8(data)
    return sp.coo_array((codes, (matrix.row, matrix.col)), shape=matrix.shape)


def dlmc_layers(root, method="magnitude_pruning", sparsity="0.8"):
    """The DLMC ResNet-50 layer files pruned by ``method`` to ``sparsity``, sorted."""
    return sorted((Path(root) / DLMC / method / sparsity).glob("*.smtx*"))


def squeezenet_layers(root):
    """The SqueezeNet Deep Compression layer files, sorted."""
    return sorted((Path(root) / SQUEEZENET).glob("*.mtx"))


def real_slice(path, rows, cols, columns, seed):
    """Rows ``rows`` and columns ``cols`` (``[start, stop]``) of a real layer in int8
    (:func:`int8_layer`), and seeded int8 activations ``[len(cols), columns]`` to multiply
    it by. Returns ``(weights as csr_array, activations)``."""
    weights = int8_layer(path, seed).tocsr()[slice(*rows), slice(*cols)]
    rng = np.random.default_rng([seed, 1])
    activations = rng.integers(-128, 128, size=(weights.shape[1], columns))
    return weights, activations

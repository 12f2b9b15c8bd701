"""The accelerator's host plan (sparseforge.sw.accel_plan): bands, input tiles, passes
and overbooking against values worked out by hand."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.sw import accel_plan, tensaurus_job, wire
from sparseforge.sw.accel_plan import AccelConfig, Band, InputTile

# A 5 x 6 matrix of distinct values; row 2 is empty.
A = sp.csr_array(np.array([
    [0, 3, 0, 0, 5, 0],
    [2, 0, 7, 0, 0, 1],
    [0, 0, 0, 0, 0, 0],
    [0, 0, 0, 4, 0, 0],
    [0, 6, 8, 9, 10, 11],
]))
B = np.arange(30).reshape(6, 5) % 7 - 3          # N = 5 columns: 3 passes of R = 2
CONFIG = AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=3, out_rows=3, depth=8, fifo=2)


def test_uniform_plan_by_hand():
    """Uniform: a capacity of depth * pes = 16 nonzeros over K = 6 columns is 2 rows a
    band. Windows of spm_rows = 3 columns; a window's CISS on 2 PEs (a row's header and
    its nonzeros on the PE that frees first): band 0's first window holds row 0's one
    nonzero (2 entries on PE 0) and row 1's two (3 on PE 1): 3 entries; its second, one
    each: 2. Band 1 has only row 3's nonzero, in the second window. Band 2 is row 4:
    2 nonzeros, then 3."""
    p = accel_plan.plan(A, B, "uniform", CONFIG)
    assert p.band_rows == 2 and p.passes == 3
    assert [(b.i0, b.rows) for b in p.bands] == [(0, 2), (2, 2), (4, 1)]
    assert [b.inputs for b in p.bands] == [
        (InputTile(0, 3, 3, 0, False), InputTile(3, 6, 2, 3, True)),
        (InputTile(3, 6, 2, 0, True),),
        (InputTile(0, 3, 3, 0, False), InputTile(3, 6, 4, 3, True)),
    ]
    assert p.overbooked == 0 and p.refetched_entries() == p.reconverted_entries() == 0
    np.testing.assert_array_equal(p.golden, A.toarray() @ B)


def test_overbooked_band_by_hand():
    """A band of 7 entries in a Tailor of 4 with a FIFO region of 2 keeps 2 entries:
    5 are bumped, and both input tiles hold bumped entries (offsets 0 and 3, past 2), so
    7 entries are converted again on each of the passes after the first."""
    small = AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=3, depth=4, fifo=2)
    band = Band(4, 1, (InputTile(0, 3, 3, 0, False), InputTile(3, 6, 4, 3, True)))
    assert band.entries == 7 and band.bumped(small) == 5
    assert band.refetched_inputs(small) == band.inputs
    # Kept 3: only the second tile (offset 3) is past the buffet region.
    wider = AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=3, depth=4, fifo=1)
    assert band.bumped(wider) == 4 and band.refetched_inputs(wider) == band.inputs[1:]
    # A band exactly the Tailor's depth fits.
    exact = Band(0, 1, (InputTile(0, 3, 4, 0, True),))
    assert exact.bumped(small) == 0 and exact.refetched_inputs(small) == ()


def test_tile_words_carry_each_field():
    p = accel_plan.plan(A, B, "uniform", CONFIG)
    fields = wire.unpack(wire.ACCEL_TILE, accel_plan.tile_words(p))
    assert fields["i0"].tolist() == [0, 0, 2, 4, 4]
    assert fields["k0"].tolist() == [0, 3, 3, 0, 3]
    assert fields["entries"].tolist() == [3, 2, 2, 3, 4]
    assert fields["rows"].tolist() == [2, 2, 2, 1, 1]
    assert fields["kn"].tolist() == [3, 3, 3, 3, 3]
    assert fields["closes"].tolist() == [0, 1, 1, 0, 1]
    assert wire.width(wire.ACCEL_TILE) == 128


@pytest.mark.parametrize("policy", sorted(accel_plan.POLICIES))
def test_every_policy_caps_the_band_at_the_msu(policy):
    p = accel_plan.plan(A, B, policy, AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=3,
                                                  out_rows=1, depth=64, fifo=2), seed=1)
    assert p.band_rows == 1 and p.tiling.strategy == policy


def test_refusals_name_what_is_wrong():
    with pytest.raises(ParameterError, match="--tiling best"):
        accel_plan.plan(A, B, "best", CONFIG)
    with pytest.raises(ParameterError, match=r"B is \(5, 5\)"):
        accel_plan.plan(A, B[:5], "uniform", CONFIG)
    with pytest.raises(ParameterError, match="acc_width=8"):
        accel_plan.plan(A, B * 20, "uniform", AccelConfig(pes=2, acc_width=8))


def test_utilizations_and_entry_bytes_by_hand():
    """Uniform bands of A (5 x 6, 11 nonzeros) hold 5, 2 and 7 entries (as above): in a
    Tailor of 8 the buffer holds 14 of 24 entries over the three bands; in one of 4 the
    overbooked bands fill it, 4 + 2 + 4 of 12. The MACs: 11 nonzeros times B's 5 columns
    over 2 x 3 x 2 = 12 MACs for 100 cycles, 55/1200 (the padded sixth column of the
    last pass is no work). An entry of 2 lanes of 16 + 16 bits is 8 bytes; of 3 lanes,
    96 bits, 16 bytes (a power of two)."""
    p = accel_plan.plan(A, B, "uniform", CONFIG)
    assert [b.entries for b in p.bands] == [5, 2, 7]
    assert p.buffer_utilization() == 14 / 24
    small = replace(p, config=replace(CONFIG, depth=4))
    assert small.buffer_utilization() == 10 / 12
    wide = replace(p, config=replace(CONFIG, cols=3, vlen=2))
    assert wide.config.macs == 12 and wide.mac_utilization(11, 100) == 55 / 1200
    assert CONFIG.entry_bytes == 8 and replace(CONFIG, pes=3).entry_bytes == 16


def _entries_by_encoding(a, b, policy, config, kernel):
    """Each band's input tiles as the CISS streams of tensaurus_job.plan encode them:
    ``[(k0, k1, entries), ...]`` a band."""
    p = accel_plan.plan(a, b, policy, config, seed=1, kernel=kernel)
    per = wire.mv_layout(config.vlen)[0] if kernel == "spmv" else 1
    operand = b[:, 0] if kernel == "spmv" else np.pad(b, ((0, 0), (0, config.width -
                                                                   b.shape[1])))
    out = []
    for band in p.bands:
        job = tensaurus_job.plan(kernel, a[band.i0:band.i0 + band.rows], [operand],
                                 rows=config.pes, cols=config.cols, vlen=config.vlen,
                                 dw=config.dw, iw=config.iw, acc_width=64,
                                 spm_rows=config.spm_rows)
        out.append([(t.rows[-1][0] * per, min(sum(t.rows[-1]) * per, a.shape[1]),
                     t.stream.entries) for t in job.tiles])
    return p, out


@pytest.mark.parametrize("seed, pes, kernel", [(1, 1, "spmm"), (2, 3, "spmm"),
                                               (3, 4, "spmv"), (4, 6, "spmm")])
def test_counted_windows_are_the_encoded_streams(seed, pes, kernel):
    """The plan counts each window's CISS entries without encoding it: on matrices with
    empty rows, empty bands, stored zeros and a dense row, the counts and windows are
    those of the streams tensaurus_job.plan encodes."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((61, 45), density=0.12, rng=rng, format="lil")
    a[7, :] = 3                                     # a dense row
    a[20:33, :] = 0                                 # empty rows: a band of none
    a = sp.csr_array(a)
    a.data = rng.integers(-4, 5, a.nnz).astype(np.int64)   # some stored zeros
    assert (a.data == 0).any()
    b = rng.integers(-3, 4, (45, 1 if kernel == "spmv" else 5))
    config = AccelConfig(pes=pes, cols=1, vlen=2, tlen=3, spm_rows=4, out_rows=6,
                         depth=16, fifo=2)
    p, encoded = _entries_by_encoding(a, b, "uniform", config, kernel)
    assert [[(t.k0, t.k1, t.entries) for t in band.inputs] for band in p.bands] == encoded
    assert any(len(band) == 1 and band[0][2] == 0 for band in encoded)   # the empty band


@pytest.mark.parametrize("policy", accel_plan.POLICIES)
def test_a_tensors_counted_windows_are_the_encoded_streams(policy):
    """SpMTTKRP's bands: each window over j counted as sw.ciss.encode lays out the
    tensor's tile ``T[band, j0:j1, :]`` (fibers of several k, empty slices, a stored
    zero dropped), the golden output the kernel's, C's rows at the scratchpads' edge."""
    from sparseforge.sw import ciss, tensor_kernels
    from sparseforge.sw.formats import Tensor

    rng = np.random.default_rng(11)
    dense = rng.integers(-3, 4, (17, 11, 4)) * (rng.random((17, 11, 4)) < 0.2)
    dense[5:9] = 0
    coords = np.argwhere(dense)
    values = dense[tuple(coords.T)]
    values[0] = 0                                             # a stored zero
    t = Tensor(coords, values, dense.shape)
    b, c = rng.integers(-3, 4, (11, 3)), rng.integers(-3, 4, (4, 3))
    config = AccelConfig(pes=3, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=6, depth=24,
                         fifo=2, order=3)
    p = accel_plan.plan(t, (b, c), policy, config, seed=1, kernel="spmttkrp")
    held = values != 0
    for band in p.bands:
        for tile in band.inputs:
            mine = (held & (coords[:, 0] >= band.i0) & (coords[:, 0] < band.i0 + band.rows)
                    & (coords[:, 1] >= tile.k0) & (coords[:, 1] < tile.k1))
            local = coords[mine] - [band.i0, tile.k0, 0]
            shape = (band.rows, max(tile.k1 - tile.k0, 1), 4)
            assert ciss.encode(Tensor(local, values[mine], shape), 3, 16, 16).entries \
                == tile.entries
    assert sum(t.entries > 0 for band in p.bands for t in band.inputs) > len(p.bands)
    np.testing.assert_array_equal(p.golden, tensor_kernels.spmttkrp(t, [None, b, c]))
    assert p.passes == 2 and p.c_words == 2 * 4 * 2

"""What the host sets up to run a :class:`~sparseforge.sw.tensaurus_job.Job` on the
Tensaurus accelerator: the build that fits the job, its matrices' memory image with each
tile's load of it (Section 5.2.2), and where each output tile is written (Section 5.2.5).

The matrices are laid one after the other, each as its chunk words
(:func:`~sparseforge.sw.wire.chunk_words`), so a tile's rows of an operand are one run
of consecutive words: the MLU's ``base`` and ``rows`` say where it is. The output is laid
in its own memory from word 0, row after row
(:func:`~sparseforge.sw.wire.tensaurus_out_word`), so an output tile is one run of
consecutive words too.
"""

import numpy as np

from ..core.errors import ParameterError
from . import wire


def out_chunks(job, r1=None):
    """Words of an output row: the MSU's chunks a row, ``r1 * tlen * cols`` on a build
    of B's rank ``r1`` (default: the job's)."""
    return (r1 or job.r1) * job.tlen * job.cols


def params_for(job, iw=None):
    """The accelerator ``run tensaurus`` builds for ``job``: its array, and scratchpads and
    an MSU half of an output tile's rows, rounded up to powers of two (so few distinct
    builds), each scratchpad in the paper's 8 banks (Section 6; fewer if it holds fewer
    rows)."""
    def up(n):
        return 1 << max(0, int(n) - 1).bit_length()
    spm_rows = max(2, up(job.spm_rows))
    largest = max(job.entries, *(m.size // job.vlen for m in job.mats),
                  job.out_rows * out_chunks(job), 2)
    return {"rows": job.rows, "cols": job.cols, "vlen": job.vlen, "tlen": job.tlen,
            "r1": job.r1, "dw": job.wire.dw, "iw": iw or job.wire.iw,
            "acc_width": job.acc_width, "order": 2 if job.mode in ("mm", "mv") else 3,
            "spm_rows": spm_rows, "banks": min(8, spm_rows), "out_rows": up(job.out_tile_rows),
            "addr_width": max(16, int(largest).bit_length() + 1)}


def matrix_loads(job, dw, b_chunks=1):
    """``(starts, words, reads)``: each tile's MLU start fields for its rows of the
    matrices, laid one after the other in memory as the MLU's words
    (:func:`~sparseforge.sw.wire.mlu_words`, ``cols`` chunks each); the memory's words
    (ints); and each tile's load's word addresses, in order. A build's MLU loads each row
    of a broadcast operand (TTMc's B, MV's b) as its ``b_chunks`` chunks: the rows are
    padded to them."""
    mats = list(job.mats)
    if job.mode in ("ttmc", "mv"):
        mats[1] = np.pad(mats[1], ((0, 0), (0, b_chunks * job.vlen - mats[1].shape[1])))
    images = [wire.mlu_words(matrix, job.cols, job.vlen, dw) for matrix in mats]
    bases = np.cumsum([0, *map(len, images)])[:-1].tolist()
    starts, reads = [], []
    for tile in job.tiles:
        start, addrs = {"base0": 0, "rows0": 0, "base1": 0, "rows1": 0}, []
        for n, ((first, count), matrix, base) in enumerate(zip(tile.rows, mats, bases,
                                                               strict=False)):
            words = -(-(matrix.shape[1] // job.vlen) // job.cols)       # of a row
            start |= {f"base{n}": base + first * words, f"rows{n}": count}
            addrs += range(base + first * words, base + (first + count) * words)
        starts.append(start)
        reads.append(addrs)
    return starts, [int(w) for image in images for w in image], reads


def output_tiles(job, depth, chunks):
    """Each tile's output tile as the accelerator's tile record holds it: ``{out_base,
    out_rows, closes}``, on a build whose MSU half holds ``depth`` rows of ``chunks``
    words. Refused where the job's output tiles are larger than that half (in the direct
    mode, where the half is unused, its rows are all the output's)."""
    if job.out_tile_rows > depth and not job.direct:
        raise ParameterError(f"out_rows={job.out_tile_rows}: output tiles past the MSU's "
                             f"{depth} rows a half; plan them with out_rows <= {depth}")
    return [{"out_base": tile.out[0] * chunks, "out_rows": tile.out[1],
             "closes": int(tile.closes)} for tile in job.tiles]

"""The host tools called from Python on a scipy.sparse matrix, no command line involved.

On a random 2,000 x 2,000 matrix (integer values, 1% dense):

1. Swiftiles (:mod:`sparseforge.sw.swiftiles`): the tile shape that
   overbooks a 512-nonzero buffer for about 10% of tiles, and the fraction
   that really does, measured over every tile.
2. MINT's format conversion (:mod:`sparseforge.sw.conversion`): CSR to RLC
   with 8-bit runs and back, the round trip checked.
3. CISS (:mod:`sparseforge.sw.ciss`): the Tensaurus stream for 4 PEs, its
   lane utilization and per-PE load, decoded again and checked.
4. SAGE (:mod:`sparseforge.sw.sage`): the memory and compute formats with the
   lowest energy-delay product for SpGEMM with this matrix as A.

Run: python examples/host_tools.py
"""

import numpy as np
import scipy.sparse as sp

from sparseforge.sw import ciss, conversion, sage
from sparseforge.sw.occupancy import Pattern, tile_occupancy
from sparseforge.sw.swiftiles import swiftiles


def main():
    rng = np.random.default_rng(7)
    matrix = sp.random_array((2000, 2000), density=0.01, format="csr", rng=rng,
                             data_sampler=lambda size: rng.integers(1, 100, size)).astype(np.int64)
    print(f"matrix: {matrix.shape[0]} x {matrix.shape[1]}, {matrix.nnz} nonzeros")

    # 1. Swiftiles: one-shot estimate, then the exact occupancy of every tile of that shape.
    buffer = 512
    pattern = Pattern.from_matrix(matrix)
    tiling = swiftiles(pattern, buffer, k=0.1, seed=0)
    occupancy = tile_occupancy(pattern, tiling.tile_shape)
    overbooked = np.count_nonzero(occupancy.counts > buffer) / occupancy.n_tiles
    print(f"swiftiles: tile shape {tiling.tile_shape} for a buffer of {buffer}; "
          f"{overbooked:.1%} of {occupancy.n_tiles} tiles overbook (target 10%)")
    assert 0 < overbooked < 0.3

    # 2. Format conversion: CSR -> RLC -> CSR holds the same matrix.
    rlc = conversion.convert(matrix, "rlc", run_bits=8)
    back = conversion.convert(rlc, "csr")
    assert (back != matrix).nnz == 0
    print(f"conversion: RLC of {len(rlc.values)} pairs ({len(rlc.values) - matrix.nnz} "
          "fillers), back to CSR unchanged")

    # 3. CISS for 4 PEs, decoded again.
    stream = ciss.encode(matrix, pes=4)
    decoded = ciss.decode(stream)
    rows, cols = decoded.coords.T
    again = sp.csr_array((decoded.values, (rows, cols)), shape=matrix.shape)
    assert (again != matrix).nnz == 0
    print(f"ciss: {stream.entries} entries for 4 PEs, {stream.utilization:.1%} of lanes "
          f"carry a nonzero, PE loads {stream.pe_loads().tolist()}; decoded unchanged")

    # 4. SAGE: which formats to keep A in and to compute in.
    best = sage.recommend_matrix(matrix, kernel="spgemm")
    print(f"sage: store A as {best.best.mcf_a}, compute in {best.best.acf_a} x "
          f"{best.best.acf_b}; EDP {best.best.edp:.3g} J*s "
          f"({'converting pays' if best.conversion_pays else 'no conversion needed'})")
    print("PASS")


if __name__ == "__main__":
    main()

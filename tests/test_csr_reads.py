"""The extended-CSR reads of Fig. 3c, worked by hand on the Fig. 3 tensor."""

import numpy as np

from sparseforge.sw import ciss
from sparseforge.sw.csr_reads import csr_reads
from sparseforge.sw.formats import Tensor

FIG3 = Tensor(np.array([[0, 0, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0], [1, 1, 1], [3, 0, 0],
                        [3, 1, 1]]), np.arange(1, 8), (4, 2, 2))


def test_two_pes_interleave_their_slices():
    """Slices 0 and 3 go to PE0, slice 1 to PE1; records 0-6 in slice order, pointer i at
    word 7 + i. Cycle by cycle, PE0 then PE1: both pointers; records 0, 2; 1, 3; PE0's
    next pointer (10) beside record 4; then PE0 alone, records 5, 6."""
    assert list(csr_reads(ciss.encode(FIG3, 2, dw=16, iw=16))) == [7, 8, 0, 2, 1, 3, 10, 4,
                                                                    5, 6]


def test_one_pe_reads_in_order():
    assert list(csr_reads(ciss.encode(FIG3, 1, dw=16, iw=16))) == [7, 0, 1, 8, 2, 3, 4, 10,
                                                                    5, 6]

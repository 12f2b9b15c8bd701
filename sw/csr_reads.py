"""The reads P PEs make streaming a tensor as extended CSR (Tensaurus Fig. 3b, 3c), as
word addresses in the order they reach memory: the workload a memory model times to
measure Fig. 3e's CSR curve (:mod:`sparseforge.tb.dram`).

The layout and schedule are :func:`~sparseforge.sw.ciss_bandwidth.csr_bandwidth`'s (both
take their slots from :func:`access_slots`): each PE takes the same slices as under CISS
and, one access a cycle, reads its slice's pointer pair, then its nonzeros; in each cycle
the PEs' accesses reach memory in PE order. A word is one nonzero's record (value and
indices, a CISS lane's bits): record ``n`` at word ``n``, in slice order; the slice
pointers follow, one a word, a pair read as one access of the first's word.
"""

import numpy as np


def access_slots(ciss):
    """The slot (cycle x P + PE) of each access P PEs make streaming ``ciss``'s tensor as
    extended CSR: each slice's pointer pair, then every nonzero's record, in slice
    order; no two accesses share a slot."""
    pes = ciss.wire.pes
    first = np.cumsum(ciss.count) - ciss.count          # each slice's first record
    return np.concatenate([ciss.start * pes + ciss.pe,
                           np.repeat((ciss.start + 1 - first) * pes + ciss.pe, ciss.count)
                           + np.arange(ciss.nnz) * pes])


def csr_reads(ciss):
    """Word addresses of every access P PEs make streaming ``ciss``'s tensor as extended
    CSR (P = ``ciss.wire.pes``), in the order they reach memory."""
    nnz = ciss.nnz
    address = np.concatenate([nnz + ciss.slices, np.arange(nnz)])
    return address[np.argsort(access_slots(ciss), kind="stable")]

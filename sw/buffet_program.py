"""A Buffet program: its operations in program order, one numpy array per field.

``kind`` holds :data:`FILL`, :data:`READ`, :data:`UPDATE` or :data:`SHRINK`;
``arg`` the filled value, the read or updated index (from the head) or the
shrink's count; ``data`` an update's value. Columnar so that traces of
millions of operations are built, chained and turned into streams without a
Python loop per operation; :meth:`BuffetProgram.ops` gives the ``(kind, arg)``
pairs directed tests write by hand.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError

FILL, READ, UPDATE, SHRINK = 0, 1, 2, 3
KINDS = ("fill", "read", "update", "shrink")


@dataclass(frozen=True, eq=False)
class BuffetProgram:
    """Buffet operations in program order (int64 arrays of one length)."""

    kind: np.ndarray
    arg: np.ndarray
    data: np.ndarray

    @classmethod
    def from_ops(cls, ops):
        """From ``(kind name, arg)`` pairs; an update's arg is ``(index, value)``."""
        ops = list(ops)
        try:
            kind = np.array([KINDS.index(k) for k, _ in ops], dtype=np.int64)
        except ValueError:
            raise ParameterError(f"a Buffet operation must be one of {', '.join(KINDS)}") \
                from None
        arg = np.array([a[0] if k == "update" else a for k, a in ops], dtype=np.int64)
        data = np.array([a[1] if k == "update" else 0 for k, a in ops], dtype=np.int64)
        return cls(kind, arg.reshape(-1), data.reshape(-1))

    @classmethod
    def concat(cls, programs):
        """The programs one after another (each must leave the buffet empty)."""
        programs = list(programs)
        return cls(*(np.concatenate([getattr(p, f) for p in programs]) if programs
                     else np.zeros(0, dtype=np.int64) for f in ("kind", "arg", "data")))

    def __len__(self):
        return len(self.kind)

    def __getitem__(self, span):
        return BuffetProgram(self.kind[span], self.arg[span], self.data[span])

    def ops(self):
        """The ``(kind name, arg)`` pairs, an update's arg ``(index, value)``."""
        return [(KINDS[k], (a, d) if k == UPDATE else a)
                for k, a, d in zip(self.kind.tolist(), self.arg.tolist(), self.data.tolist(),
                                   strict=True)]

    def counts(self):
        """Operations of each kind, by name."""
        return {name: int(np.count_nonzero(self.kind == k)) for k, name in enumerate(KINDS)}

    def before(self, of, among):
        """For each operation of kind ``of``: how many of kind ``among`` come before it."""
        return np.cumsum(self.kind == among)[self.kind == of] - (of == among)

    def responses(self, depth):
        """What each read returns in program order, and how many operations are legal.

        Returns ``(values, legal)``: the reads' values up to the first
        operation a buffet of ``depth`` refuses (a fill while full, an access
        or shrink beyond the occupancy), and the count of operations before it.
        """
        is_fill, is_shrink = self.kind == FILL, self.kind == SHRINK
        filled = np.cumsum(is_fill) - is_fill                 # fills before each operation
        head = np.cumsum(np.where(is_shrink, self.arg, 0)) - np.where(is_shrink, self.arg, 0)
        occupancy = filled - head
        access = (self.kind == READ) | (self.kind == UPDATE)
        bad = ((is_fill & (occupancy >= depth)) | (access & ((self.arg < 0) |
                                                             (self.arg >= occupancy)))
               | (is_shrink & ((self.arg < 0) | (self.arg > occupancy))))
        legal = int(np.argmax(bad)) if bad.any() else len(self)
        order = np.arange(legal)
        where = np.where(is_fill, filled, head + self.arg)[:legal]   # absolute position
        write = (is_fill | (self.kind == UPDATE))[:legal]
        value = np.where(is_fill, self.arg, self.data)[:legal]
        reads = np.flatnonzero((self.kind == READ)[:legal])
        # The latest write to a read's position before it: sort writes by (position, order).
        w = np.flatnonzero(write)
        w = w[np.lexsort((order[w], where[w]))]
        keys = where[w] * (legal + 1) + order[w]
        last = np.searchsorted(keys, where[reads] * (legal + 1) + order[reads]) - 1
        return value[w[last]], legal

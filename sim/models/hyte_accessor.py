"""Behavioural model of the HYTE tensor accessor (HYTE Section 6.3, Fig. 5b).

The executable specification the ``hyte_accessor`` generator is checked against. The
accessor holds fiber segments of a tensor in ``capacity`` words: each held word of
data takes one word, and each segment's metadata (its begin location) one more, the
data growing from one end and the metadata from the other until they meet.

- ``segment(length)`` begins a segment of ``length`` words (legal once the previous
  one is complete, i.e. all its words filled); ``fill(x)`` gives its next word.
- Streaming mode: a segment or a word that does not fit waits (the hardware stalls)
  until ``evict(n)`` frees the ``n`` oldest segments, as a Buffet's shrink does.
- Buffering mode: nothing is evicted to make room. The first segment or word that
  does not fit, and everything after it, *bypass*: they are counted (the segments
  keep their numbers) but not stored, until every held segment has been evicted.
- ``read(s, o)``: word ``o`` of segment ``s`` counted from the oldest held. Its
  answer is ``(HIT, word, last)`` if stored, ``last`` true on the segment's final word;
  ``(MISS, 0, False)`` if the segment's metadata bypassed, or ``o`` is past the stored
  part of the segment that overflowed (the parent, which knows the segment's extent,
  re-fetches); else ``(END, 0, False)`` once the segment is complete. The answer is
  final once known, whenever it is asked.
- ``tile(rows, split_k, split_j)`` (Section 6.4): count the next ``rows`` segments'
  words in four quadrants, ``cnt<r><c>``: ``r`` 1 from the ``split_k``-th segment on
  (the half along k), ``c`` 1 for a word whose coordinate (its low ``coord_width``
  bits, a B element's column) is at least ``split_j``. Every word is counted, stored or
  bypassed: the counts are the tile's, for the controller's tuning. Once the last of
  the ``rows`` segments is complete, ``[[cnt00, cnt01], [cnt10, cnt11]]`` joins
  ``counts``; a tile is given while no segment is open and no other tile is counting.

:meth:`Accessor.step` applies one cycle's accepted operations with the hardware's
rule: legality and reads use the state at the start of the cycle; a segment or fill
is placed before the same cycle's evict frees room.
"""

from collections import deque

from ...sw.wire import HyteMode, HyteStatus


class AccessorError(AssertionError):
    """An operation was accepted that the accessor semantics forbid."""


class Segment:
    def __init__(self, ident, length, stored):
        self.ident, self.length, self.stored = ident, length, stored
        self.words = []         # stored words
        self.filled = 0         # words taken, stored or bypassed
        self.cut = False        # stored metadata, then a word bypassed

    @property
    def complete(self):
        return self.filled == self.length


class Quadrants:
    """A tile being counted: the segments still to complete, the segments begun, and
    the four counters."""

    def __init__(self, rows, split_k, split_j):
        self.left, self.begun, self.split_k, self.split_j = rows, 0, split_k, split_j
        self.cnt = [[0, 0], [0, 0]]


class Accessor:
    def __init__(self, capacity, mode, max_segments=(1 << 16) - 1, coord_width=16):
        self.capacity, self.mode, self.max_segments = capacity, mode, max_segments
        self.coord_mask = (1 << coord_width) - 1
        self.segments = deque()
        self.used = 0           # words taken: stored data, and an entry per stored segment
        self.bypass = False
        self.next_id = 0        # ident of the next segment (absolute, never reused)
        self.counting = None    # the tile being counted (Quadrants), else None
        self.counts = []        # the counted tiles' counts, in order

    @property
    def occupancy(self):
        """Segments held (bypassed ones included)."""
        return len(self.segments)

    @property
    def free(self):
        return self.capacity - self.used

    @property
    def open(self):
        """The segment still waiting for words, else ``None``."""
        return self.segments[-1] if self.segments and not self.segments[-1].complete else None

    def _fits(self):
        return self.used < self.capacity

    def can_segment(self):
        return (self.open is None and self.occupancy < self.max_segments
                and (self.mode == HyteMode.BUFFERING or self._fits()))

    def can_fill(self):
        return self.open is not None and (self.mode == HyteMode.BUFFERING or self._fits())

    def complete_count(self):
        return self.occupancy - (self.open is not None)

    def can_evict(self, n):
        return 0 <= n <= self.complete_count()

    def can_tile(self):
        return self.open is None and self.counting is None

    def tile(self, rows, split_k, split_j):
        if not self.can_tile():
            raise AccessorError("tile given while a segment is open or a tile counting")
        self.counting = Quadrants(rows, split_k, split_j)
        self._completed(0)

    def _completed(self, n):
        """``n`` segments of the counted tile completed: its counts out after its last."""
        q = self.counting
        if q is not None:
            q.left -= n
            if q.left == 0:
                self.counts.append(q.cnt)
                self.counting = None

    def segment(self, length):
        if not self.can_segment():
            raise AccessorError(f"segment accepted with room {self.free} "
                                f"(open: {self.open is not None})")
        stored = not self.bypass and self._fits()
        self.bypass |= not stored
        self.used += stored
        self.segments.append(Segment(self.next_id, length, stored))
        self.next_id += 1
        if self.counting is not None:
            self.counting.begun += 1
        self._completed(length == 0)

    def fill(self, value):
        if not self.can_fill():
            raise AccessorError(f"fill accepted with room {self.free} "
                                f"(open: {self.open is not None})")
        seg = self.open
        if seg.stored and not self.bypass and self._fits():
            seg.words.append(value)
            self.used += 1
        else:
            self.bypass = True
            seg.cut |= seg.stored
        seg.filled += 1
        q = self.counting
        if q is not None:
            q.cnt[q.begun > q.split_k][(value & self.coord_mask) >= q.split_j] += 1
        self._completed(seg.complete)

    def evict(self, n):
        if not self.can_evict(n):
            raise AccessorError(f"evict({n}) with {self.complete_count()} complete segments")
        for _ in range(n):
            gone = self.segments.popleft()
            self.used -= len(gone.words) + gone.stored
        if not self.segments:
            self.bypass = False

    def ident(self, s):
        """The absolute ident of segment ``s`` from the oldest held."""
        if not 0 <= s < self.occupancy:
            raise AccessorError(f"read of segment {s} with {self.occupancy} held")
        return self.segments[0].ident + s

    def answer(self, ident, offset):
        """``(status, data, last)`` of word ``offset`` of segment ``ident``, or ``None``
        while unknown (the segment still filling)."""
        seg = self.segments[ident - self.segments[0].ident]
        if not seg.stored:
            return HyteStatus.MISS, 0, False
        if offset < len(seg.words):
            return HyteStatus.HIT, seg.words[offset], offset == seg.length - 1
        if seg.cut:
            return HyteStatus.MISS, 0, False
        return (HyteStatus.END, 0, False) if seg.complete else None

    def read(self, s, offset):
        """The answer of ``read(s, offset)`` now, or ``None`` while unknown."""
        return self.answer(self.ident(s), offset)

    def step(self, segment=None, fill=None, read=None, evict=None, tile=None):
        """Apply one cycle's accepted operations; return the ident of the read's segment.

        ``segment`` is a length, ``fill`` a word, ``read`` a ``(segment, offset)`` pair,
        ``evict`` a count and ``tile`` a ``(rows, split_k, split_j)``, each ``None`` when
        that port was idle.
        """
        ident = None if read is None else self.ident(read[0])
        if evict is not None and not self.can_evict(evict):
            raise AccessorError(f"evict({evict}) accepted with {self.complete_count()} "
                                "complete segments")
        if segment is not None:
            self.segment(segment)
        if fill is not None:
            self.fill(fill)
        if evict is not None:
            self.evict(evict)
        if tile is not None:
            self.tile(*tile)
        return ident

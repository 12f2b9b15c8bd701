"""Behavioural model of the Tailor: a buffet with overwriting fills (Tailors §3.3).

The executable specification the ``tailor`` generator is checked against.

A tile is a sequence of elements addressed by *index* from the buffer's head.
While a tile fits (occupancy at most the capacity ``D``) the Tailor is a
buffet. A tile longer than ``D`` *overbooks* it: once the buffer is full the
parent sends the rest of the tile with overwriting fills, ``owfill``.

- The first ``owfill`` *splits* the buffer: the buffet region keeps indices
  ``[0, B)`` with ``B = D - F``; the ``F`` elements at the tail are cleared and
  the FIFO region of ``F`` slots takes the new element.
- Every later ``owfill`` replaces the oldest element of the FIFO region.
- The parent streams the *bumped* part of the tile, indices ``[B, L)``, over
  and over, once per pass of the child, and marks index ``L - 1`` with
  ``last``. The stream's elements are numbered by *position*: position ``p``
  holds index ``B + p mod (L - B)``; positions ``0 .. F-1`` are the tail
  elements the buffet filled, the first ``owfill`` is position ``F``. The
  element at position ``p`` sits in buffer offset ``B + p mod F``; the paper's
  FIFO offset is that slot's ``index - offset``.
- A read of a bumped index asks for the index's first occurrence in the
  stream at or after the frontier (below); until an ``owfill`` brings it to
  the FIFO region the read is not accepted (the hardware stalls).

Flow control (what the paper leaves to the parent). The child *passes* a
position by reading it or by requesting a later one: a read is a request for
the next occurrence of its index in the stream, so every earlier position is
one the child no longer needs in this pass. ``frontier`` is the first
position not yet passed. ``fifo_credits`` says how many ``owfill`` the parent
may send without overwriting an element that has not been passed: the first
one (which clears all ``F`` tail slots) needs ``F``, each costs one. A parent
that obeys it and streams the bumped part once per pass never loses an element
and, with a child that requests the tile's last element in every pass, never
deadlocks. The paper's Fig. 5 sequence overwrites before any read; the
mechanism itself does not wait, so that sequence runs unchanged.

Backfill (§3.3.2). The child may free elements of the buffet region between
passes with a partial ``shrink``. Indices shift down as in a buffet, and the
buffet region shrinks to ``[0, first)``. The stream goes on unchanged until it
wraps back to the start of the bumped part, index ``first``: that overwriting
fill *backfills*. It releases the FIFO region, writes at offset ``first`` and
turns the Tailor back into a buffet that later overwriting fills append to,
until the buffer is full and the next one splits it again (or the tile now
fits and the fill marked ``last`` ends the backfill). Because it releases the
whole FIFO region it needs all ``F`` credits; every other owfill needs one.

Rules the model enforces (the hardware stalls instead): ``owfill`` only while
full, split or backfilling; ``update`` only in the buffet region while split
(bumped data is re-streamed by the parent, so an update there would be lost);
while split, ``shrink`` of at most ``first`` elements, or of the whole buffer,
which ends the tile; no ``shrink`` on the cycle of an ``owfill``; a tile that
overbooks starts with an empty buffer.
"""

from .buffet import Buffet, BuffetError


class TailorError(BuffetError):
    """An operation was accepted that the Tailor semantics forbid."""


class Tailor(Buffet):
    def __init__(self, depth, fifo):
        super().__init__(depth)
        if not 1 <= fifo <= depth // 2:
            raise ValueError(f"FIFO region {fifo} outside [1, {depth // 2}]")
        self.fifo = fifo
        self.base = depth - fifo          # B: size of the buffet region at a split
        self.first = self.base            # while split: the first bumped index
        self.frontier = 0
        self.split = False
        self.backfill = False             # re-filling from the stream after a shrink
        self.region = {}                  # position -> (index, value), at most F of them
        self.newest = None                # position of the newest owfill
        self.bumped = None                # L - B, known once ``last`` has been seen

    @property
    def occupancy(self):
        return self.depth if self.split else len(self.data)

    # -- positions -----------------------------------------------------------

    def index_at(self, position):
        """The tile index at stream ``position`` (while split)."""
        if self.bumped is not None:
            return self.first + position % self.bumped
        return self.first + position

    def next_position(self, index):
        """The first position after the newest whose index is ``index``.

        ``None`` when it is unknown because the tile's length is not yet known
        (the child asks for an index of a later pass).
        """
        if self.bumped is not None:
            return self.newest + 1 + (index - self.index_at(self.newest + 1)) % self.bumped
        if index - self.first > self.newest:
            return index - self.first
        return None

    def lookup(self, index):
        """``(position, value)`` of ``index`` in the FIFO region, or ``None``.

        Only a copy at or after the frontier counts: one the child has passed
        belongs to an earlier pass, and the read asks for the next occurrence.
        """
        for position, (held, value) in self.region.items():
            if held == index and position >= self.frontier:
                return position, value
        return None

    @property
    def rejoin_next(self):
        """Whether the next owfill backfills (wraps after a partial shrink)."""
        return (self.split and self.first != self.base and self.bumped is not None
                and (self.newest + 1) % self.bumped == 0)

    def next_owfill_index(self):
        """The tile index the next owfill carries, for a parent that tracks the Tailor."""
        if self.split:
            return self.index_at(self.newest + 1)
        return self.occupancy if self.backfill else self.depth

    @property
    def fifo_credits(self):
        if self.split:
            if self.rejoin_next:
                return self.fifo if self.frontier > self.newest else 0
            return max(0, min(self.fifo, self.frontier + self.fifo - self.newest - 1))
        if self.occupancy == self.depth:
            return self.fifo if self.frontier >= self.fifo else 0
        if self.backfill:
            return min(self.fifo, self.depth - self.occupancy)
        return 0

    # -- buffet operations, region-aware -----------------------------------------

    def can_access(self, index):
        if not self.split:
            return super().can_access(index)
        return 0 <= index < self.first or self.lookup(index) is not None

    def read(self, index):
        if not self.split or index < self.first:
            return super().read(index)
        hit = self.lookup(index)
        if hit is None:
            raise TailorError(f"read({index}) of a bumped element not in the FIFO region")
        return hit[1]

    def update(self, index, value):
        if self.split and index >= self.first:
            raise TailorError(f"update({index}) of a bumped element (region [0, {self.first}))")
        super().update(index, value)

    def can_shrink(self, count):
        if self.split:
            return 0 <= count <= self.first or count == self.depth
        return super().can_shrink(count)

    def shrink(self, count):
        if not self.can_shrink(count):
            raise TailorError(f"shrink({count}) while split: at most {self.first} or the "
                              f"whole buffer")
        if self.split and count == self.depth:                # the tile ends
            self.data.clear()
            self.region.clear()
            self.split, self.newest, self.bumped, self.frontier = False, None, None, 0
            self.backfill = False
        elif self.split:                                      # indices shift down
            super().shrink(count)
            self.first -= count
            self.region = {p: (i - count, v) for p, (i, v) in self.region.items()}
        else:
            super().shrink(count)
            self.frontier = max(0, self.frontier - count)

    def owfill(self, value, last):
        """Overwrite the oldest FIFO element, split, or backfill (see the module doc)."""
        if self.split and self.rejoin_next:
            self.region.clear()
            self.data.append(value)                           # at offset ``first``
            self.split, self.newest, self.bumped, self.frontier = False, None, None, 0
            self.backfill = not last
            return
        if not self.split:
            if self.occupancy != self.depth:
                if not self.backfill:
                    raise TailorError("owfill while not full")
                self.data.append(value)
                self.backfill = not last
                return
            for _ in range(self.fifo):
                self.data.pop()                           # clear the tail F slots
            self.split, self.first, self.newest = True, self.base, self.fifo - 1
            self.backfill = False
        position = self.newest + 1
        index = self.index_at(position)
        self.region.pop(position - self.fifo, None)
        self.region[position] = (index, value)
        self.newest = position
        if last:
            self.bumped = index + 1 - self.first

    def slots(self):
        """``(index, value)`` or ``None`` per buffer offset, as drawn in Fig. 5."""
        view = [(i, v) for i, v in enumerate(self.data)]
        if not self.split:
            return view + [None] * (self.depth - len(view))
        view += [None] * (self.depth - len(view))
        for position, held in self.region.items():
            view[self.first + position % self.fifo] = held
        return view

    # -- one clock cycle ---------------------------------------------------------

    def _pass(self, index, accepted):
        """Advance the frontier for a read request of ``index``."""
        if not self.split:
            if index < self.base:
                return
            if accepted:
                candidate = index - self.base + 1
            elif index >= self.occupancy:
                candidate = index - self.base
            else:
                return
        else:
            if index < self.first:
                return
            hit = self.lookup(index)
            if hit is not None:
                if not accepted:
                    return
                candidate = hit[0] + 1
            else:
                if self.bumped is not None and index >= self.first + self.bumped:
                    raise TailorError(f"read({index}) beyond the tile's last index")
                upcoming = self.next_position(index)
                candidate = self.newest + 1 if upcoming is None else upcoming
        self.frontier = max(self.frontier, candidate)

    def _victim(self):
        """The buffer offset the next owfill writes."""
        if self.split:
            if self.rejoin_next:
                return self.first
            return self.first + (self.newest + 1) % self.fifo
        return self.base if self.occupancy == self.depth else self.occupancy

    def _offset(self, index):
        """The buffer offset a read of ``index`` would take (``None``: absent)."""
        if not self.split or index < self.first:
            return index if self.can_access(index) else None
        hit = self.lookup(index)
        return None if hit is None else self.first + hit[0] % self.fifo

    def step(self, fill=None, read=None, update=None, shrink=None, owfill=None, request=None):
        """Apply one cycle; return the read data or ``None``.

        As :meth:`Buffet.step`, plus ``owfill`` as a ``(value, last)`` pair and
        ``request``, the index of a read presented but not accepted this cycle
        (it still passes earlier positions when its element is absent).
        """
        writes = sum(op is not None for op in (fill, update, owfill))
        if writes > 1:
            raise TailorError("two writes accepted on one cycle (one write port)")
        if fill is not None and (self.split or not self.can_fill()):
            raise TailorError("fill accepted while full")
        if owfill is not None and not (self.split or self.backfill
                                       or self.occupancy == self.depth):
            raise TailorError("owfill accepted while not full")
        if shrink is not None and not self.can_shrink(shrink):
            raise TailorError(f"shrink({shrink}) accepted: not allowed now")
        if shrink is not None and owfill is not None:
            raise TailorError("shrink and owfill accepted on one cycle")
        if read is not None and owfill is not None and self._offset(read) == self._victim():
            raise TailorError(f"read({read}) accepted from the slot being overwritten")

        if update is not None:
            self.update(*update)
        result = None if read is None else self.read(read)
        for index, accepted in ((read, True), (request, False)):
            if index is not None:
                self._pass(index, accepted)
        # The frontier moves with the start-of-cycle state; then the writes land.
        if fill is not None:
            self.data.append(fill)
        if owfill is not None:
            self.owfill(*owfill)
        if shrink is not None:
            self.shrink(shrink)
        return result

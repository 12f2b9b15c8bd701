"""Behavioural model of the Buffet storage idiom (Pellauer et al., ASPLOS 2019).

The executable specification the ``buffet`` generator is checked against. A
buffet is a queue with random access relative to its head:

- ``fill(x)`` appends ``x`` at the tail; legal while not full.
- ``read(i)`` returns the element ``i`` places from the head; legal while
  ``i < occupancy`` (the hardware stalls otherwise, never returning stale data).
- ``update(i, x)`` overwrites the element ``i`` places from the head; legal
  while ``i < occupancy``.
- ``shrink(n)`` frees ``n`` elements from the head and returns ``n`` credits
  to the parent; legal while ``n <= occupancy``.

:meth:`Buffet.step` applies the operations the hardware accepted on one clock
cycle with the hardware's concurrency rule: every operation's legality and
addressing use the state at the start of the cycle, except that a read of the
element updated on the same cycle returns the new data.
"""

from collections import deque


class BuffetError(AssertionError):
    """An operation was accepted that the buffet semantics forbid."""


class Buffet:
    def __init__(self, depth):
        self.depth = depth
        self.data = deque()

    @property
    def occupancy(self):
        return len(self.data)

    @property
    def credits(self):
        """Free slots: how many fills the parent may still send."""
        return self.depth - self.occupancy

    def can_fill(self):
        return self.occupancy < self.depth

    def can_access(self, index):
        return 0 <= index < len(self.data)

    def can_shrink(self, count):
        return 0 <= count <= len(self.data)

    def fill(self, value):
        if not self.can_fill():
            raise BuffetError(f"fill while full (depth {self.depth})")
        self.data.append(value)

    def read(self, index):
        if not self.can_access(index):
            raise BuffetError(f"read({index}) beyond occupancy {self.occupancy}")
        return self.data[index]

    def update(self, index, value):
        if not self.can_access(index):
            raise BuffetError(f"update({index}) beyond occupancy {self.occupancy}")
        self.data[index] = value

    def shrink(self, count):
        if not self.can_shrink(count):
            raise BuffetError(f"shrink({count}) beyond occupancy {self.occupancy}")
        for _ in range(count):
            self.data.popleft()

    def step(self, fill=None, read=None, update=None, shrink=None):
        """Apply one cycle's accepted operations; return the read data or ``None``.

        ``fill`` is a value, ``read`` an index, ``update`` an ``(index, value)``
        pair and ``shrink`` a count, each ``None`` when that port was idle.
        """
        if fill is not None and not self.can_fill():
            raise BuffetError(f"fill accepted while full (depth {self.depth})")
        if fill is not None and update is not None:
            raise BuffetError("fill and update accepted on one cycle (one write port)")
        # Update, then read (a same-cycle read sees the update), then fill at
        # the old tail, then shrink: each sees the start-of-cycle head.
        if update is not None:
            self.update(*update)
        result = None if read is None else self.read(read)
        if shrink is not None and not self.can_shrink(shrink):
            raise BuffetError(f"shrink({shrink}) accepted beyond occupancy {self.occupancy}")
        if fill is not None:
            self.data.append(fill)
        if shrink is not None:
            self.shrink(shrink)
        return result

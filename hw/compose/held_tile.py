# amaranth: UnusedElaboratable=no
"""A tile held in a Tailor across passes: fed by a replaying producer, read by tag."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.utils import ceil_log2

from ...core.params import Param, check_params
from ...core.registry import block
from ..tailor import Tailor
from ..tailor_feed import TaggedResponder, TailorFeed

_TAILOR = {p.name: p for p in Tailor.PARAMS}


@block("held_tile")
class HeldTile(wiring.Component):
    """A Tailor between a producer that replays the tile and a tagged reader (Tailors §3).

    A :class:`~sparseforge.hw.tailor.Tailor`, its parent a
    :class:`~sparseforge.hw.tailor_feed.TailorFeed` and its child's reads a
    :class:`~sparseforge.hw.tailor_feed.TaggedResponder`, joined with
    ``wiring.connect``: the accelerator's path from a converter re-run per pass to the
    TLU's reads, A's tile on chip, its bumped part refetched each pass.

    Parameters
    ----------
    depth, width, fifo, tile : the Tailor's (capacity D, element bits, FIFO region F,
        longest tile).
    tags : the reader's tags (a power of two).
    count_width : bits of the report's counts.
    addr_width : (Python only) bits of the reader's addresses, the tile's index bits by
        default; a wider address's upper bits must be 0 (a reader of a memory, as the
        TLU, whose addresses are the accelerator's).

    Members
    -------
    passes, entries : In(stream)
        The feed's (:class:`~sparseforge.hw.tailor_feed.TailorFeed`): a command a pass,
        the producer's entries and each pass's end marker.
    mem : In(TaggedMemoryPortSignature)
        The reader's port, address = the entry's index in the tile
        (:class:`~sparseforge.hw.tailor_feed.TaggedResponder`).
    report : Out(stream)
        Each tile's length and the entries dropped and refetched.

    Latency and throughput: the Tailor's reads (latency 2), one a cycle; the feed's
    entries, one a cycle (:mod:`~sparseforge.hw.tailor_feed` gives a tile's cycles).

    Clock: below 100 MHz on the ECP5 (the synthesis report), near the Tailor's own row:
    the critical path is the Tailor's, from the read's index (a register of the
    responder) through the lookup into the frontier's registered outcomes, two thirds of
    it routing. The feed's owfill waits for credits it keeps in registers (a cycle
    late), so no path runs from the frontier through the feed and back. The responder
    (a queue of tags beside the reads) is shorter.
    """

    PARAMS = (_TAILOR["depth"], _TAILOR["width"], _TAILOR["fifo"], _TAILOR["tile"],
              Param("tags", 8, 2, 256, "reads in flight (the reader's tags)", pow2=True),
              Param("count_width", 32, 8, 64, "bits of the report's counts"))
    REPORT = ({"depth": 1024, "width": 272, "fifo": 64, "tile": 4096, "tags": 16},)

    def __init__(self, addr_width=None, **params):
        v = check_params(self.PARAMS, params)
        self.depth, self.fifo, self.tile = v["depth"], v["fifo"], v["tile"]
        self.tailor = Tailor(depth=v["depth"], width=v["width"], fifo=v["fifo"],
                             tile=v["tile"])
        index = ceil_log2(v["tile"])
        self.feed = TailorFeed(v["depth"], v["fifo"], v["tile"], v["width"], v["count_width"])
        self.responder = TaggedResponder(v["width"], index, addr_width or index,
                                         ceil_log2(v["tags"]), self.tailor.latency)
        feed = self.feed.signature.members
        super().__init__({"passes": feed["passes"], "entries": feed["entries"],
                          "mem": self.responder.signature.members["mem"],
                          "report": feed["report"]})

    def elaborate(self, platform):
        m = Module()
        m.submodules.tailor = tailor = self.tailor
        m.submodules.feed = feed = self.feed
        m.submodules.responder = responder = self.responder
        wiring.connect(m, wiring.flipped(self.passes), feed.passes)
        wiring.connect(m, wiring.flipped(self.entries), feed.entries)
        wiring.connect(m, feed.tailor, tailor.parent)
        wiring.connect(m, feed.shrink, tailor.child.shrink)
        wiring.connect(m, responder.read, tailor.child.read)
        wiring.connect(m, tailor.child.read_data, responder.read_data)
        wiring.connect(m, responder.reads, feed.reads)
        wiring.connect(m, wiring.flipped(self.mem), responder.mem)
        wiring.connect(m, feed.report, wiring.flipped(self.report))
        return m

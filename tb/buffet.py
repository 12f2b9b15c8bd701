"""Testbench for the Buffet: random or directed programs, checked every cycle.

A *program* is a list of operations valid in program order. The bench splits
it into the four input streams and enforces the ordering a buffet's parent
and child must keep between separate ports (the buffet itself cannot see
across them): a read or update waits until every earlier shrink has been
accepted (its index is relative to the head), and a shrink waits until every
earlier read and update has been accepted. Fills run ahead freely; a full
buffet holds them back.

Every cycle the scoreboard feeds the operations the design accepted to the
model (:class:`sparseforge.sim.models.buffet.Buffet`), which rejects any that
were illegal, and compares occupancy, credits and every read response.
"""

from collections import deque

from amaranth.utils import ceil_log2

from ..sim.models.buffet import Buffet as BuffetModel
from ..sim.runners import cocotb_test
from .streams import Bench, StreamSink, StreamSource

FILL, READ, UPDATE, SHRINK = "fill", "read", "update", "shrink"


def random_program(rng, depth, width, n_ops):
    """A random program of ``n_ops`` operations, legal in program order.

    Occupancy swings between empty and full in phases, so full, empty,
    read-of-the-newest and shrink-to-empty all happen often.
    """
    model = BuffetModel(depth)
    program = []
    filling = True
    while len(program) < n_ops:
        occ = model.occupancy
        if occ == depth or (occ > 0 and rng.random() < 0.02):
            filling = False
        elif occ == 0 or rng.random() < 0.02:
            filling = True
        roll = rng.random()
        if occ and roll < 0.35:
            index = occ - 1 if rng.random() < 0.2 else rng.randrange(occ)
            program.append((READ, index))
        elif occ and roll < 0.45:
            index = rng.randrange(occ)
            value = rng.getrandbits(width)
            model.update(index, value)
            program.append((UPDATE, (index, value)))
        elif occ and (roll < 0.55 or (not filling and roll < 0.8)):
            count = occ if rng.random() < 0.1 else rng.randint(0, min(occ, 4))
            model.shrink(count)
            program.append((SHRINK, count))
        elif occ < depth:
            value = rng.getrandbits(width)
            model.fill(value)
            program.append((FILL, value))
    return program


class BuffetBench(Bench):
    """Runs a program on a buffet and checks it against the model each cycle.

    ``rates`` gives, per port, the probability of acting on a cycle
    (``fill``, ``read``, ``update``, ``shrink`` sources; ``read_data`` sink).
    ``index_bits`` is the design's index width (the Tailor's is wider).
    """

    def __init__(self, depth, width, program, seed, rates=None, index_bits=None):
        super().__init__(seed)
        rates = {FILL: 0.7, READ: 0.7, UPDATE: 0.7, SHRINK: 0.7, "read_data": 0.7,
                 **(rates or {})}
        self.depth, self.width = depth, width
        self.index_bits = ceil_log2(depth) if index_bits is None else index_bits
        self.model = BuffetModel(depth)
        self.expected = deque()
        self.responses = 0
        self.last_shrink = 0

        streams = {FILL: [], READ: [], UPDATE: [], SHRINK: []}
        needs = {kind: [] for kind in streams}   # per item: counts that must be accepted first
        for kind, arg in program:
            counts = {k: len(v) for k, v in streams.items()}
            if kind in (READ, UPDATE):
                needs[kind].append({SHRINK: counts[SHRINK]})
            elif kind == SHRINK:
                needs[kind].append({READ: counts[READ], UPDATE: counts[UPDATE]})
            else:
                needs[kind].append({})
            streams[kind].append(self._payload(kind, arg))
        self.reads = len(streams[READ])

        self.sources = {}
        for kind, items in streams.items():
            self.sources[kind] = StreamSource(kind, items, self.stall(rates[kind]),
                                              gate=self._gate(needs[kind]))
        self.sink = StreamSink("read_data", self.stall(rates["read_data"]))
        self.drivers = [*self.sources.values(), self.sink]

    def _payload(self, kind, arg):
        if kind == UPDATE:
            index, value = arg
            return index | value << self.index_bits
        return arg

    def _gate(self, needs):
        def ordered(n):
            return all(len(self.sources[k].accepted) >= c for k, c in needs[n].items())
        return ordered

    def check(self, io, cycle):
        if io.get("occupancy") != self.model.occupancy:
            self.fail(f"occupancy {io.get('occupancy')} != model {self.model.occupancy}")
        if io.get("credit") != self.last_shrink:
            self.fail(f"credit {io.get('credit')} != last shrink {self.last_shrink}")
        if self.sink.fired is not None:
            if not self.expected:
                self.fail(f"read response {self.sink.fired:#x} with no read outstanding")
            want = self.expected.popleft()
            if self.sink.fired != want:
                self.fail(f"read response {self.responses}: got {self.sink.fired:#x}, "
                          f"model says {want:#x}")
            self.responses += 1
        update = self.sources[UPDATE].fired
        if update is not None:
            mask = (1 << self.index_bits) - 1
            update = (update & mask, update >> self.index_bits)
        try:
            data = self.model.step(fill=self.sources[FILL].fired, read=self.sources[READ].fired,
                                   update=update, shrink=self.sources[SHRINK].fired)
        except AssertionError as exc:
            self.fail(f"design accepted an illegal operation: {exc}")
        if self.sources[READ].fired is not None:
            self.expected.append(data)
        self.last_shrink = self.sources[SHRINK].fired or 0

    def finished(self):
        return all(s.done for s in self.sources.values()) and self.responses == self.reads


async def _run(dut, n_ops_default):
    """Run the program in the arguments, or a random one; optionally dump results."""
    import json
    import random

    from ..sim.runners import cocotb_args, cocotb_loop, seed_from_env

    params, args = cocotb_args()
    seed = seed_from_env(args.get("seed", 1))
    program = args.get("program") or random_program(
        random.Random(seed), params["depth"], params["width"], args.get("ops", n_ops_default))
    bench = BuffetBench(params["depth"], params["width"], [tuple(op) for op in program], seed,
                        args.get("rates"))
    dut._log.info("buffet: %d ops, seed %d", len(program), seed)
    cycles = await cocotb_loop(dut, bench)
    dut._log.info("buffet: %d ops in %d cycles, %d reads checked", len(program), cycles,
                  bench.responses)
    if args.get("dump"):
        with open(args["dump"], "w") as f:
            json.dump({"cycles": cycles, "read_data": [v for _, v in bench.sink.received],
                       "fills": len(bench.sources[FILL].accepted)}, f)


@cocotb_test
async def random_mixed_operations(dut):
    """Random fills, reads, updates and shrinks under random stalls on every stream."""
    await _run(dut, 10_000)

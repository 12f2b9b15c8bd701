"""cocotb test of the whole accelerator (``accel``) against cocotbext-axi's models, an
implementation of AXI independent of ours, on Verilator (run by
:func:`~sparseforge.sim.runners.cocotb_verilog`).

:func:`accel_through_cocotbext_axi` attaches the accelerator as a host would: its memory
is cocotbext-axi's ``AxiRam`` holding the run's image (:mod:`~sparseforge.sw.accel_image`:
A's CSR as stored, B, the tile list, Y's region), its registers are written and
``status`` polled by cocotbext-axi's ``AxiLiteMaster`` (:mod:`~sparseforge.sw.regmap`),
every channel of both paused at random. The case's runs go back to back on one design,
each image at its own offset (so each run's registers differ); after each: Y read from
the RAM equals the golden product, nothing else in the RAM changed, the counters read
over AXI-Lite equal what :class:`BusWatch` counted on the pins and the plan's refetches,
and the bytes read from each region the plan's (:func:`planned_reads`). The first run
also writes a register while busy: refused (SLVERR), unchanged, flagged in ``status``
until the next start.

The RAM checks each burst's size against the bus, the 4 KiB boundary, WLAST on the
burst's last beat, and applies WSTRB byte by byte; :class:`BusWatch` checks what it does
not (AXI's handshake rules, responses only to IDs in flight, each burst's beats).
"""

import logging
import random

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam, AxiResp

from ..sim.runners import case_args
from ..sw import accel_image, accel_model, regmap
from .axi_cocotb import pause_every_channel, reset

PAYLOADS = {"ar": ("id", "addr", "len", "size", "burst"),
            "aw": ("id", "addr", "len", "size", "burst"),
            "w": ("data", "strb", "last"), "r": ("id", "last"), "b": ("id", "resp")}
"""The fields of each AXI4 channel :class:`BusWatch` samples."""


class BusWatch:
    """The AXI4 master's pins, sampled every cycle beside the RAM that answers them.

    Checks that a ``valid`` the master raises stays up with its payload unchanged until
    ``ready`` (AR, AW, W), that every R and B answers an ID with a burst in flight, and
    that every read burst has ``ARLEN + 1`` beats; counts the bytes of the bursts taken
    (as the accelerator's counters count them), the IDs used, the reads in flight at
    most, the write strobes seen. A broken rule is kept in ``errors`` (the test asserts
    it empty) with its cycle.
    """

    def __init__(self, dut, prefix="m_axi__"):
        self.pins = {f"{c}{f}": getattr(dut, f"{prefix}{c}{f}")
                     for c, fields in PAYLOADS.items() for f in (*fields, "valid", "ready")}
        self.cycle = 0
        self.errors = []
        self.offered = {}                   # channel -> payload offered, not yet taken
        self.reads = {}                     # ARID -> beats of each burst in flight
        self.writes = {}                    # AWID -> bursts in flight
        self.bytes_read = self.bytes_written = 0
        self.read_ids, self.write_ids, self.strobes, self.lengths = set(), set(), set(), set()
        self.in_flight = 0
        self.bursts = []                    # (ARADDR, bytes) of every read burst
        self.first_ar = self.last_b = None

    def _get(self, name):
        value = self.pins[name].value
        return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)

    async def run(self, clk):
        while True:
            await RisingEdge(clk)
            await ReadOnly()
            self.cycle += 1
            self.sample()

    def sample(self):
        for channel, fields in PAYLOADS.items():
            valid = self._get(f"{channel}valid")
            payload = tuple(self._get(f"{channel}{f}") for f in fields) if valid else None
            held = self.offered.pop(channel, None)
            if held is not None and payload != held and channel in ("ar", "aw", "w"):
                self.errors.append((self.cycle, channel, "valid dropped or payload changed "
                                    "before ready", held, payload))
            if not valid:
                continue
            if not self._get(f"{channel}ready"):
                self.offered[channel] = payload
                continue
            getattr(self, f"_{channel}")(dict(zip(fields, payload, strict=True)))

    def _ar(self, p):
        self.reads.setdefault(p["id"], []).append(p["len"] + 1)
        self.read_ids.add(p["id"])
        self.lengths.add(p["len"])
        self.bytes_read += (p["len"] + 1) << p["size"]
        self.bursts.append((p["addr"], (p["len"] + 1) << p["size"]))
        self.in_flight = max(self.in_flight, sum(map(len, self.reads.values())))
        if self.first_ar is None:
            self.first_ar = self.cycle

    def _r(self, p):
        beats = self.reads.get(p["id"])
        if not beats:
            self.errors.append((self.cycle, "r", f"RID {p['id']} has no read in flight"))
            return
        beats[0] -= 1
        if bool(p["last"]) != (beats[0] == 0):
            self.errors.append((self.cycle, "r", f"RLAST {p['last']} with {beats[0]} beats "
                                "of the burst left"))
        if p["last"] or beats[0] == 0:
            beats.pop(0)

    def _aw(self, p):
        self.writes[p["id"]] = self.writes.get(p["id"], 0) + 1
        self.write_ids.add(p["id"])
        self.lengths.add(p["len"])
        self.bytes_written += (p["len"] + 1) << p["size"]

    def _w(self, p):
        self.strobes.add(p["strb"])

    def _b(self, p):
        if not self.writes.get(p["id"]):
            self.errors.append((self.cycle, "b", f"BID {p['id']} has no write in flight"))
            return
        self.writes[p["id"]] -= 1
        self.last_b = self.cycle

    def idle(self):
        """No read or write in flight."""
        return not any(self.reads.values()) and not any(self.writes.values())


class Host:
    """The host's side over cocotbext-axi's ``AxiLiteMaster``: register accesses checked
    for their response."""

    def __init__(self, master):
        self.master = master
        self.regs = regmap.by_name()

    async def write(self, name, value, resp=AxiResp.OKAY):
        done = await self.master.write(self.regs[name].offset, value.to_bytes(4, "little"))
        assert done.resp == resp, (name, done.resp, resp)

    async def read(self, name):
        got = await self.master.read(self.regs[name].offset, 4)
        assert got.resp == AxiResp.OKAY, (name, got.resp)
        return int.from_bytes(got.data, "little")

    async def status(self):
        return regmap.decode_status(await self.read("status"))


def read_by_region(bursts, regions, at):
    """Bytes of the read ``bursts`` (``(address, bytes)``) by the region of ``regions``
    (placed ``at`` bytes up) each starts in."""
    found = dict.fromkeys(regions, 0)
    for addr, n in bursts:
        name = next((k for k, r in regions.items() if r.base <= addr - at < r.base + r.size),
                    f"outside at {addr:#x}")
        found[name] = found.get(name, 0) + n
    return found


def planned_reads(plan, matrix, regions):
    """Bytes a run of ``plan`` reads, by region: the host model's exact traffic
    (:func:`~sparseforge.sw.accel_model.traffic`), A's column ids with the converter's
    pre-pass."""
    reads, _ = accel_model.traffic(plan, matrix)
    want = dict.fromkeys(regions, 0) | {k: v for k, v in reads.items() if k in regions}
    want["a_colid"] += reads["a_prepass"]
    return want


def _moved(values, at):
    """Register values for an image placed ``at`` bytes up: every base moved with it."""
    return {k: v + at if k.endswith("_base") else v for k, v in values.items()}


async def _run(dut, ram, host, watch, case, watchdog, refuse):
    """One run of ``case`` (``label``, ``plan``, ``matrix``, ``b``, ``at``: its image's
    offset in the RAM), checked, its counters logged; ``refuse``: also write a register
    while it is busy."""
    plan, at = case["plan"], case["at"]
    image, regions = accel_image.image(plan, case["matrix"], case["b"])
    ram.write(at, image.tobytes())
    before = np.frombuffer(ram.read(0, ram.size), dtype=np.uint8).copy()
    values = _moved(accel_image.registers(plan, regions), at)
    for offset, value in regmap.writes(values)[:-1]:
        name = next(r.name for r in regmap.REGISTERS if r.offset == offset)
        await host.write(name, value)
        assert await host.read(name) == value, name
    bytes_read, bytes_written, bursts = watch.bytes_read, watch.bytes_written, len(watch.bursts)
    watch.first_ar = watch.last_b = None
    began = watch.cycle
    await host.write("start", 1)
    if refuse:
        await host.write("out_base", values["out_base"] + 4096, AxiResp.SLVERR)
        state = await host.status()
        assert state["busy"] == 1 and state["refused"] == 1, state
    while True:
        state = await host.status()
        if state["done"] and not state["busy"]:
            break
        assert watch.cycle - began < watchdog, f"{case['label']}: not done after " \
                                               f"{watchdog} cycles: a hang"
    ended = watch.cycle
    assert state == {"done": 1, "error": 0, "busy": 0, "refused": int(refuse)}, state
    assert await host.read("out_base") == values["out_base"]
    got = {name: await host.read(name) for name in ("cycles", "bytes_read", "bytes_written",
                                                    "refetched")}
    assert not watch.errors, watch.errors[:4]
    assert watch.idle(), (watch.reads, watch.writes)

    after = np.frombuffer(ram.read(0, ram.size), dtype=np.uint8)
    out = regions["out"]
    y = accel_image.output(plan, after[at:], regions)
    np.testing.assert_array_equal(y, plan.golden, err_msg=case["label"])
    changed = np.flatnonzero(after != before) - at
    assert ((changed >= out.base) & (changed < out.base + out.size)).all(), \
        f"{case['label']}: bytes written outside Y's region, at {changed[:4] + at}"

    assert got["refetched"] == plan.refetched_entries(), (got, plan.refetched_entries())
    assert got["bytes_read"] == watch.bytes_read - bytes_read, got
    read = read_by_region(watch.bursts[bursts:], regions, at)
    assert read == planned_reads(plan, case["matrix"], regions), read
    assert got["bytes_written"] == watch.bytes_written - bytes_written == out.size, got
    assert watch.last_b - watch.first_ar <= got["cycles"] <= ended - began, \
        (got["cycles"], watch.first_ar, watch.last_b, began, ended)
    dut._log.info("accel %s: %s", case["label"], got)


@cocotb.test()
async def accel_through_cocotbext_axi(dut):
    """The case's ``runs`` back to back through one ``accel``, every AXI channel of the RAM
    and the host paused with probability ``pause``; each run done within ``watchdog``
    cycles. Checks that the design used more than one ARID and kept several reads in
    flight, and (``strobes``) that its writes took partial byte strobes."""
    args = case_args()
    rng = random.Random(args["seed"])
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi_"), dut.clk, dut.rst, size=args["bytes"])
    master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
    interfaces = (ram.write_if, ram.read_if, master.write_if, master.read_if)
    for interface in interfaces:
        interface.log.setLevel(logging.WARNING)     # a line a burst otherwise
    pause_every_channel(rng, args["pause"], *interfaces)
    watch = BusWatch(dut)
    host = Host(master)
    await reset(dut)
    cocotb.start_soon(watch.run(dut.clk))
    for n, case in enumerate(args["runs"]):
        await _run(dut, ram, host, watch, case, args["watchdog"], refuse=n == 0)
    dut._log.info("accel: ARIDs %s, AWIDs %s, reads in flight at most %d, burst lengths %s, "
                  "write strobes %s", sorted(watch.read_ids), sorted(watch.write_ids),
                  watch.in_flight, sorted(watch.lengths), sorted(map(hex, watch.strobes)))
    assert len(watch.read_ids) > 1 and watch.in_flight > 1
    full = (1 << len(dut.m_axi__wstrb)) - 1
    assert (watch.strobes - {full} != set()) == args["strobes"], watch.strobes

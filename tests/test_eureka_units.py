# amaranth: UnusedElaboratable=no
"""The Eureka sub-array's parts alone (sequencer, MAC grid, slot barrier) and
the Eureka interfaces' layouts."""

import pytest
from amaranth.sim import Simulator

from sparseforge.hw.compose.eureka_systolic import EurekaSystolic
from sparseforge.hw.eureka_array import BlockSequencer, EurekaArray, MacGrid, SlotBarrier
from sparseforge.hw.interfaces import EurekaRowSignature, slot_counts_layout
from sparseforge.sw.wire import PER_SLOT, slot_count_bits
from sparseforge.tb.streams import Codec, codecs


def simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-8, if_exists=True)
    sim.add_testbench(testbench)
    sim.run()


def block(cycles, rotation=0, displaced=()):
    """A P = 1 block's beats: beat t gives MAC row m the weight 10 t + m from input row
    (t + m) % 4; ``displaced`` lists the (t, m) lanes marked displaced. An empty block
    (``cycles`` 0) is one beat of zero lanes."""
    if not cycles:
        return [{"slot": [{"value": 0, "column": 0, "displaced": 0}] * 4,
                 "rotation": rotation, "last": 1, "empty": 1}]
    return [{"slot": [{"value": 10 * t + m, "column": (t + m) % 4,
                       "displaced": int((t, m) in displaced)} for m in range(4)],
             "rotation": rotation, "last": int(t == cycles - 1), "empty": 0}
            for t in range(cycles)]


# -- the block sequencer ------------------------------------------------------------

LATENCY = 2  # the sequencer's grid latency in these tests


def lanes(ctx, seq):
    """What the sequencer drives into the grid and its streams this cycle."""
    macs = seq.macs
    return {"weight": [ctx.get(macs.weight[m]) for m in range(4)],
            "select": [ctx.get(macs.select[m]) for m in range(4)],
            "displaced": ctx.get(macs.displaced), "enable": ctx.get(macs.enable),
            "clear": ctx.get(macs.clear), "advance": ctx.get(macs.advance),
            "busy": ctx.get(seq.busy), "slab": ctx.get(seq.inputs.ready),
            "drain": ctx.get(seq.drain.payload) if ctx.get(seq.drain.valid) else None}


async def trace(ctx, seq, cycles, beats, slab=lambda cycle: 1, drain=lambda cycle: 1):
    """Offer ``beats`` one after the other, the slab when ``slab(cycle)`` and take tiles
    when ``drain(cycle)``; the sequencer's :func:`lanes` and ``taken`` (a beat) each cycle."""
    beats, seen = list(beats), []
    for cycle in range(cycles):
        ctx.set(seq.filter.valid, bool(beats))
        if beats:
            ctx.set(seq.filter.payload, beats[0])
        ctx.set(seq.inputs.valid, slab(cycle))
        ctx.set(seq.drain.ready, drain(cycle))
        state = lanes(ctx, seq)
        state["taken"] = int(bool(beats) and ctx.get(seq.filter.ready))
        if state["taken"]:
            beats.pop(0)
        seen.append(state)
        await ctx.tick()
    return seen


def test_sequencer_registers_beat_t_and_takes_the_slab_with_the_last():
    seq = BlockSequencer(1, 8, 8, latency=LATENCY)

    async def testbench(ctx):
        seen = await trace(ctx, seq, 7, block(3, rotation=2, displaced={(1, 2)}))
        assert [s["taken"] for s in seen] == [1, 1, 1, 0, 0, 0, 0]
        assert [s["busy"] for s in seen] == [1, 1, 1, 0, 0, 0, 0]
        assert [s["enable"] for s in seen] == [0, 1, 1, 1, 0, 0, 0]     # the grid a cycle later
        assert [s["slab"] for s in seen] == [0, 0, 0, 1, 0, 0, 0]       # with the last slot
        assert [s["weight"] for s in seen[1:4]] == [[10 * t + m for m in range(4)]
                                                    for t in range(3)]
        assert [s["select"] for s in seen[1:4]] == [[(t + m) % 4 for m in range(4)]
                                                    for t in range(3)]
        assert [s["displaced"] for s in seen[1:4]] == [0, 0b0100, 0]
        assert [s["clear"] for s in seen[1:4]] == [1, 0, 0]
        # The tile is in the accumulators LATENCY cycles after its last slot entered the grid.
        assert [s["drain"] for s in seen] == [None] * (3 + LATENCY) + [2] + [None] * (3 - LATENCY)

    simulate(seq, testbench)


def test_sequencer_holds_a_slot_until_its_slab_is_there():
    seq = BlockSequencer(1, 8, 8, latency=LATENCY)

    async def testbench(ctx):
        seen = await trace(ctx, seq, 5, block(2), slab=lambda cycle: cycle >= 3)
        assert [s["taken"] for s in seen] == [1, 0, 0, 1, 0]  # slot 0 waits, slot 1 behind it
        assert [s["busy"] for s in seen] == [1, 0, 0, 1, 0]
        assert [s["enable"] for s in seen] == [0, 0, 0, 1, 1]
        assert [s["weight"] for s in seen[1:5]] == [[0, 1, 2, 3]] * 3 + [[10, 11, 12, 13]]

    simulate(seq, testbench)


def test_sequencer_passes_an_empty_block_in_one_cycle_with_zero_weights():
    seq = BlockSequencer(1, 8, 8, latency=LATENCY)

    async def testbench(ctx):
        seen = await trace(ctx, seq, 2 + LATENCY, block(0, rotation=3))
        assert seen[0]["taken"] and not seen[0]["busy"]
        assert seen[1]["weight"] == [0, 0, 0, 0] and seen[1]["enable"] and seen[1]["clear"]
        assert seen[1]["slab"]
        assert [s["drain"] for s in seen] == [None] * (1 + LATENCY) + [3]

    simulate(seq, testbench)


def test_sequencer_holds_everything_while_a_tile_waits():
    seq = BlockSequencer(1, 8, 8, latency=LATENCY)
    waits = 1 + LATENCY + 3

    async def testbench(ctx):
        seen = await trace(ctx, seq, waits + 2, block(1) * 6, drain=lambda cycle: cycle >= waits)
        assert [s["busy"] for s in seen[:waits]] == [1] * (1 + LATENCY) + [0] * 3  # blocks go on
        held = seen[1 + LATENCY:waits]
        assert all(s["drain"] == 0 and not s["advance"] for s in held)  # until a tile waits
        assert not any(s["taken"] or s["slab"] for s in held)
        moving = seen[waits]                                  # taken: everything moves at once
        assert moving["advance"] and moving["taken"] and moving["slab"]
        assert seen[waits + 1]["drain"] == 0                  # the next block's tile

    simulate(seq, testbench)


def test_sequencer_dense_mode_selects_row_t_of_4p_beats():
    seq = BlockSequencer(2, 8, 8, latency=LATENCY)
    beats = [{"slot": [{"value": 1, "column": 7, "displaced": 1}] * 4, "rotation": 3,
              "last": int(t == 7), "empty": 0} for t in range(8)]

    async def testbench(ctx):
        ctx.set(seq.dense, 1)
        seen = await trace(ctx, seq, 9 + LATENCY, beats)
        assert [s["select"] for s in seen[1:9]] == [[t] * 4 for t in range(8)]
        assert not any(s["displaced"] for s in seen)
        assert [s["drain"] for s in seen[8:]] == [None] * LATENCY + [0]  # no rotation

    simulate(seq, testbench)


# -- the MAC grid -------------------------------------------------------------------

@pytest.mark.parametrize("pipeline", [0, 2])
def test_grid_accumulates_a_displaced_product_in_the_mac_row_above(pipeline):
    """Two slots into the pipelined grid, held for a cycle in between by ``advance``."""
    grid = MacGrid(1, 8, 8, 32, columns=2, pipeline=pipeline)
    slab = [[1, -1], [2, -2], [3, -3], [4, -4]]             # input row k, column n

    async def testbench(ctx):
        macs = grid.macs
        ctx.set(macs.operands, slab)
        ctx.set(macs.advance, 1)
        ctx.set(macs.enable, 1)
        ctx.set(macs.clear, 1)
        ctx.set(macs.weight, [5, 6, 7, 0])
        ctx.set(macs.select, [0, 1, 3, 0])
        ctx.set(macs.displaced, 0b0100)                    # MAC row 2's value is row 1's
        await ctx.tick()
        ctx.set(macs.clear, 0)
        ctx.set(macs.displaced, 0)
        ctx.set(macs.weight, [1, 0, 0, 2])
        await ctx.tick()
        ctx.set(macs.enable, 0)
        ctx.set(macs.weight, [9, 9, 9, 9])                 # not enabled: never accumulated
        ctx.set(macs.advance, 0)                           # held: nothing moves
        frozen = ctx.get(grid.acc)
        await ctx.tick()
        assert ctx.get(grid.acc) == frozen
        ctx.set(macs.advance, 1)
        for _ in range(grid.latency - 1):
            await ctx.tick()
        assert ctx.get(grid.acc) == [[5 + 1, -5 - 1], [12 + 28, -12 - 28], [0, 0], [2, -2]]

    simulate(grid, testbench)


# -- the slot barrier ---------------------------------------------------------------

def test_slot_barrier_releases_each_rows_blocks_of_the_slot_then_takes_it():
    barrier = SlotBarrier(2, 1, 8)

    async def testbench(ctx):
        for r in range(2):
            ctx.set(barrier.filter[r].valid, 1)
            ctx.set(barrier.filter[r].payload, block(1)[0])    # one-beat blocks
            ctx.set(barrier.release[r].ready, 1)
        ctx.set(barrier.slots.payload, [2, 0])
        assert not ctx.get(barrier.release[0].valid)        # no slot yet: all held
        await ctx.tick()
        ctx.set(barrier.slots.valid, 1)
        taken = []
        for _ in range(2):
            assert ctx.get(barrier.release[0].valid) and not ctx.get(barrier.release[1].valid)
            assert not ctx.get(barrier.filter[1].ready)
            taken.append(ctx.get(barrier.slots.ready))
            await ctx.tick()
        assert taken == [0, 1]                              # with row 0's second block
        ctx.set(barrier.slots.payload, [0, 1])              # the next slot, at once
        assert ctx.get(barrier.release[1].valid) and not ctx.get(barrier.release[0].valid)
        ctx.set(barrier.release[1].ready, 0)                # row 1 not done: slot held
        assert not ctx.get(barrier.slots.ready)
        await ctx.tick()
        ctx.set(barrier.release[1].ready, 1)
        assert ctx.get(barrier.slots.ready)

    simulate(barrier, testbench)


def test_slot_barrier_counts_a_block_at_its_last_beat():
    barrier = SlotBarrier(1, 1, 8)

    async def testbench(ctx):
        ctx.set(barrier.slots.payload, [1])
        ctx.set(barrier.slots.valid, 1)
        ctx.set(barrier.filter[0].valid, 1)
        ctx.set(barrier.release[0].ready, 1)
        for beat in block(3):                               # one block of three beats
            ctx.set(barrier.filter[0].payload, beat)
            assert ctx.get(barrier.release[0].valid)
            assert ctx.get(barrier.slots.ready) == beat["last"]
            await ctx.tick()
        ctx.set(barrier.slots.valid, 0)
        assert not ctx.get(barrier.release[0].valid)        # the slot is through

    simulate(barrier, testbench)


# -- interfaces --------------------------------------------------------------------

def test_the_array_and_each_systolic_row_share_the_row_signature():
    assert EurekaArray(compaction=2, cols=3).signature.members["filter"] == \
        EurekaRowSignature(2, 8, 8, 32, columns=12).members["filter"]
    row = EurekaSystolic(rows=2, cols=3, compaction=2).signature.members["row"]
    assert row.dimensions == (2,)
    assert dict(row.signature.members) == dict(EurekaRowSignature(2, 8, 8, 32, 12).members)


@pytest.mark.parametrize("per_slot", [PER_SLOT, 4, 7])
def test_slot_descriptors_pack_each_count_at_its_field_width(per_slot):
    """Each row's count is as wide as ``per_slot`` needs: 2 bits for the schedule's 2 blocks a
    slot, 3 for a wider one (a 2-bit shift would put row 1's count into row 0's)."""
    layout = slot_counts_layout(3, per_slot)
    bits = per_slot.bit_length()
    codec = Codec(layout)
    assert layout.size == 3 * bits
    assert codec.pack([per_slot, 1, per_slot]) == per_slot | 1 << bits | per_slot << 2 * bits
    assert codec.unpack(codec.pack([per_slot, 0, 1])) == [per_slot, 0, 1]


def test_the_systolic_bench_packs_slots_through_the_components_layout():
    assert slot_counts_layout(4).size == 4 * slot_count_bits()
    assert codecs(EurekaSystolic(rows=4, cols=1))["slots"].layout == slot_counts_layout(4)

# amaranth: UnusedElaboratable=no
"""The Eureka sub-array's parts alone (sequencer, MAC grid, un-rotation, slot barrier) and
the Eureka interfaces' layouts."""

import pytest
from amaranth.sim import Simulator

from sparseforge.hw.compose.eureka_systolic import EurekaSystolic
from sparseforge.hw.eureka_array import BlockSequencer, EurekaArray, MacGrid, SlotBarrier, Unrotate
from sparseforge.hw.interfaces import EurekaRowSignature, slot_counts_layout
from sparseforge.sw.wire import PER_SLOT, slot_count_bits
from sparseforge.tb.streams import Codec, codecs


def simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-8, if_exists=True)
    sim.add_testbench(testbench)
    sim.run()


def record(cycles, rotation=0, displaced=()):
    """A P = 1 block record: slot t gives MAC row m the weight 10 t + m from input row
    (t + m) % 4; ``displaced`` lists the (t, m) lanes marked displaced."""
    return {"header": {"rotation": rotation, "cycles": cycles},
            "slots": [[{"value": 10 * t + m, "column": (t + m) % 4,
                        "displaced": int((t, m) in displaced)} for m in range(4)]
                      for t in range(4)]}


# -- the block sequencer ------------------------------------------------------------

def present(ctx, seq, block, slab=1, drain=1):
    ctx.set(seq.filter.payload, block)
    ctx.set(seq.filter.valid, 1)
    ctx.set(seq.inputs.valid, slab)
    ctx.set(seq.drain.ready, drain)


def lanes(ctx, seq):
    """What the sequencer drives into the grid this cycle."""
    macs = seq.macs
    return {"weight": [ctx.get(macs.weight[m]) for m in range(4)],
            "select": [ctx.get(macs.select[m]) for m in range(4)],
            "displaced": ctx.get(macs.displaced), "enable": ctx.get(macs.enable),
            "clear": ctx.get(macs.clear), "busy": ctx.get(seq.busy),
            "ready": (ctx.get(seq.filter.ready), ctx.get(seq.inputs.ready))}


def test_sequencer_steps_t_and_takes_the_record_and_slab_on_the_last_cycle():
    seq = BlockSequencer(1, 8, 8)

    async def testbench(ctx):
        present(ctx, seq, record(3, rotation=2, displaced={(1, 2)}), slab=0)
        assert not ctx.get(seq.macs.enable) and ctx.get(seq.filter.ready) == 0  # no slab yet
        await ctx.tick()
        ctx.set(seq.inputs.valid, 1)
        seen = []
        for _ in range(3):
            seen.append(lanes(ctx, seq))
            assert not ctx.get(seq.drain.valid)
            await ctx.tick()
        assert [s["weight"] for s in seen] == [[10 * t + m for m in range(4)] for t in range(3)]
        assert [s["select"] for s in seen] == [[(t + m) % 4 for m in range(4)] for t in range(3)]
        assert [s["displaced"] for s in seen] == [0, 0b0100, 0]
        assert [s["clear"] for s in seen] == [1, 0, 0]
        assert all(s["enable"] and s["busy"] for s in seen)
        assert [s["ready"] for s in seen] == [(0, 0), (0, 0), (1, 1)]
        ctx.set(seq.filter.valid, 0)
        assert ctx.get(seq.drain.valid) and ctx.get(seq.drain.payload) == 2
        await ctx.tick()
        assert not ctx.get(seq.drain.valid)                 # taken: drain.ready was high

    simulate(seq, testbench)


def test_sequencer_passes_an_empty_block_in_one_cycle_with_zero_weights():
    seq = BlockSequencer(1, 8, 8)

    async def testbench(ctx):
        present(ctx, seq, record(0, rotation=3))
        state = lanes(ctx, seq)
        assert state["weight"] == [0, 0, 0, 0] and state["enable"] and state["clear"]
        assert state["ready"] == (1, 1) and not state["busy"]
        await ctx.tick()
        ctx.set(seq.filter.valid, 0)
        assert ctx.get(seq.drain.valid) and ctx.get(seq.drain.payload) == 3

    simulate(seq, testbench)


def test_sequencer_holds_the_next_block_until_the_tile_is_taken():
    seq = BlockSequencer(1, 8, 8)

    async def testbench(ctx):
        present(ctx, seq, record(1), drain=0)
        assert ctx.get(seq.filter.ready)                    # the first block runs at once
        await ctx.tick()
        for _ in range(3):                                  # its tile waits: no second block
            assert ctx.get(seq.drain.valid)
            assert not ctx.get(seq.macs.enable) and not ctx.get(seq.filter.ready)
            await ctx.tick()
        ctx.set(seq.drain.ready, 1)                         # taken on the block's first cycle
        assert ctx.get(seq.macs.enable) and ctx.get(seq.filter.ready)
        await ctx.tick()
        assert ctx.get(seq.drain.valid)                     # the second block's tile

    simulate(seq, testbench)


def test_sequencer_dense_mode_runs_4p_cycles_selecting_row_t():
    seq = BlockSequencer(2, 8, 8)

    async def testbench(ctx):
        ctx.set(seq.dense, 1)
        block = {"header": {"rotation": 3, "cycles": 1},
                 "slots": [[{"value": 1, "column": 7, "displaced": 1}] * 4] * 8}
        present(ctx, seq, block)
        seen = []
        for _ in range(8):
            seen.append(lanes(ctx, seq))
            await ctx.tick()
        assert [s["select"] for s in seen] == [[t] * 4 for t in range(8)]
        assert not any(s["displaced"] for s in seen)
        assert [s["ready"][0] for s in seen] == [0] * 7 + [1]
        assert ctx.get(seq.drain.payload) == 0              # no rotation in dense mode

    simulate(seq, testbench)


# -- the MAC grid and the un-rotation ------------------------------------------------

def test_grid_accumulates_a_displaced_product_in_the_mac_row_above():
    grid = MacGrid(1, 8, 8, 32, columns=2)
    slab = [[1, -1], [2, -2], [3, -3], [4, -4]]             # input row k, column n

    async def testbench(ctx):
        macs = grid.macs
        ctx.set(macs.operands, slab)
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
        await ctx.tick()
        assert ctx.get(grid.acc) == [[5 + 1, -5 - 1], [12 + 28, -12 - 28], [0, 0], [2, -2]]

    simulate(grid, testbench)


@pytest.mark.parametrize("rotation", range(4))
def test_unrotate_puts_mac_row_m_on_output_row_m_plus_rotation(rotation):
    unrotate = Unrotate(16, columns=1)
    acc = [[100 + m] for m in range(4)]

    async def testbench(ctx):
        ctx.set(unrotate.acc, acc)
        ctx.set(unrotate.drain.payload, rotation)
        ctx.set(unrotate.drain.valid, 1)
        ctx.set(unrotate.outputs.ready, 1)
        assert ctx.get(unrotate.outputs.valid) and ctx.get(unrotate.drain.ready)
        tile = ctx.get(unrotate.outputs.payload)
        assert [tile[(m + rotation) % 4] for m in range(4)] == acc

    simulate(unrotate, testbench)


# -- the slot barrier ---------------------------------------------------------------

def test_slot_barrier_releases_each_rows_blocks_of_the_slot_then_takes_it():
    barrier = SlotBarrier(2, 1, 8)

    async def testbench(ctx):
        for r in range(2):
            ctx.set(barrier.filter[r].valid, 1)
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


# -- interfaces --------------------------------------------------------------------

def test_the_array_and_each_systolic_row_share_the_row_signature():
    assert EurekaArray(2, cols=3).signature.members["filter"] == \
        EurekaRowSignature(2, 8, 8, 32, columns=12).members["filter"]
    row = EurekaSystolic(2, 3, 2).signature.members["row"]
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
    assert codecs(EurekaSystolic(4, 1))["slots"].layout == slot_counts_layout(4)

"""The accelerator's memory image and registers (sparseforge.sw.accel_image): every region
where the registers say, each read back to what it holds."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.sw import accel_image, accel_plan, regmap, wire
from sparseforge.sw.accel_plan import AccelConfig

A = sp.csr_array(np.array([[0, 3, 0, 0, 5, 0], [2, 0, 7, 0, 0, 1], [0, 0, 0, 0, 0, 0],
                           [0, 0, 0, 4, 0, 0], [0, 6, 8, 9, 10, -11]]))
B = np.arange(30).reshape(6, 5) % 7 - 3
CONFIG = AccelConfig(pes=2, cols=1, vlen=2, tlen=2, spm_rows=3, out_rows=3, depth=8, fifo=2)


def _setup():
    plan = accel_plan.plan(A, B, "uniform", CONFIG)
    memory, regions = accel_image.image(plan, A, B)
    return plan, memory, regions


def _words(memory, region):
    return accel_image.from_bytes(memory[region.base:region.base + region.size], region.word)


def test_regions_are_paged_apart_and_hold_the_operands():
    plan, memory, regions = _setup()
    spans = sorted((r.base, r.base + r.size) for r in regions.values())
    assert all(base % accel_image.PAGE == 0 for base, _ in spans)
    assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans))
    assert _words(memory, regions["a_rowptr"]).tolist() == [0, 2, 5, 5, 6, 11]
    assert _words(memory, regions["a_colid"]).tolist() == [1, 4, 0, 2, 5, 3, 1, 2, 3, 4, 5]
    assert _words(memory, regions["a_values"])[-1] == (1 << 16) - 11     # dw bits
    # B: R = 4 columns a pass, 2 passes; panel 1 is columns 4.. (one real, three zero).
    words = _words(memory, regions["b"])
    assert regions["b"].count == 2 * 6 * 2
    row2 = int(words[6 * 2 + 2 * 2])               # panel 1, row 2, word 0: B[2, 4], 0
    assert (row2 & 0xFFFF, row2 >> 16) == ((1 << 16) + B[2, 4], 0)
    tiles = wire.unpack(wire.ACCEL_TILE, _words(memory, regions["tiles"]).astype(object))
    assert tiles["entries"].tolist() == [b.entries for b in plan.bands[0].inputs] + [
        t.entries for band in plan.bands[1:] for t in band.inputs]


def test_output_reads_back_the_panels_the_msu_writes():
    """Writing the golden output as the MSU lays it out (panel after panel, row ``i``'s
    chunk ``g`` at word ``i * chunks + g``) reads back as Y."""
    plan, memory, regions = _setup()
    R = CONFIG.width
    padded = np.zeros((plan.passes, 5, R), dtype=np.int64)
    for p in range(plan.passes):
        part = plan.golden[:, p * R:(p + 1) * R]
        padded[p, :, :part.shape[1]] = part
    words = wire.tensaurus_out_words(padded.reshape(-1, CONFIG.vlen), CONFIG.acc_width)
    region = regions["out"]
    memory[region.base:region.base + region.size] = accel_image.to_bytes(words, region.word)
    np.testing.assert_array_equal(accel_image.output(plan, memory, regions), A @ B)


def test_registers_program_the_regions():
    plan, _, regions = _setup()
    values = accel_image.registers(plan, regions)
    writes = dict(regmap.writes(values))
    regs = regmap.by_name()
    assert writes[regs["out_base"].offset] == regions["out"].base
    assert values["passes"] == 2 and values["tiles_count"] == regions["tiles"].count
    assert values["b_panel"] == 6 * 2 * regions["b"].word       # K rows of tlen words
    assert values["out_panel"] == 5 * 2 * regions["out"].word   # M rows of tlen*cols words


def test_a_layout_made_by_hand_is_checked():
    """Regions that touch are accepted and one byte of overlap refused; a region whose
    last word is the 2**24th of its width is accepted and one word more refused (its
    address would wrap onto the image's start); a base off its words is refused."""
    Region = accel_image.Region
    accel_image.check({"a": Region(0, 32, 4), "b": Region(16, 16, 1)})
    with pytest.raises(ParameterError, match="regions a and b overlap"):
        accel_image.check({"a": Region(0, 32, 4), "b": Region(14, 16, 1)})
    top = 2 << accel_image.ADDR_WIDTH                  # bytes of 2**24 words of 2 bytes
    accel_image.check({"colid": Region(top - 8, 16, 4)})
    with pytest.raises(ParameterError, match="region colid ends at byte 0x2000002"):
        accel_image.check({"colid": Region(top - 8, 16, 5)})
    with pytest.raises(ParameterError, match="not on its 4-byte words"):
        accel_image.check({"rowptr": Region(4098, 24, 1)})
    # Empty regions hold no byte to share.
    accel_image.check({"a": Region(0, 32, 4), "empty": Region(8, 16, 0)})

"""The Eureka filter stream: field widths, golden words, encode/decode round trips."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import FormatError, ParameterError
from sparseforge.sw import wire
from sparseforge.sw.compaction import compact
from sparseforge.sw.eureka_format import EurekaFormat, operand_codes
from sparseforge.sw.suds import displace, optimal


def _placed(matrix, compaction, empty=True):
    """Every block of ``matrix`` placed by optimal SUDS (the non-empty ones alone unless
    ``empty``)."""
    compacted = compact(matrix, compaction, empty=empty)
    return displace(compacted, optimal(compacted.counts))


def _figure_7():
    a = np.zeros((4, 4), dtype=np.int64)
    a[0] = [1, 2, 3, 4]
    a[1, 2], a[2, 2], a[3, 3] = -5, 6, 7
    return a


@pytest.mark.parametrize(("compaction", "value_width", "lane", "header", "word"), [
    (1, 8, {"value": 8, "column": 2, "displaced": 1}, {"rotation": 2, "cycles": 3}, 44),
    (2, 8, {"value": 8, "column": 3, "displaced": 1}, {"rotation": 2, "cycles": 4}, 48),
    (4, 16, {"value": 16, "column": 4, "displaced": 1}, {"rotation": 2, "cycles": 5}, 84),
])
def test_field_widths(compaction, value_width, lane, header, word):
    fmt = EurekaFormat(compaction, value_width)
    assert [(f.name, f.width) for f in fmt.lane] == list(lane.items())  # packing order too
    assert [(f.name, f.width) for f in fmt.header] == list(header.items())
    assert fmt.lanes == 4 and fmt.word_width == word


def test_golden_words_figure_7():
    """Figure 7's block, spelled out bit by bit from the field table, for the RTL."""
    fmt = EurekaFormat(1, 8)
    words = fmt.encode(_placed(_figure_7(), 1))

    def lane(value, column, displaced=0):
        return (value & 0xFF) | column << 8 | displaced << 10

    def slot(*lanes):
        return sum(v << (11 * m) for m, v in enumerate(lanes))

    # base row 2 goes to MAC row 3: rotation 3, MAC rows hold block rows 3, 0, 1, 2
    assert words == [
        3 | 2 << 2,
        slot(lane(7, 3), lane(1, 0), lane(3, 2, 1), lane(6, 2)),
        slot(0, lane(2, 1), lane(4, 3, 1), lane(-5, 2, 1)),
    ]


@pytest.mark.parametrize("compaction", [1, 2, 4])
@pytest.mark.parametrize("value_width", [8, 16])
def test_round_trip(compaction, value_width):
    rng = np.random.default_rng(compaction * value_width)
    top = 1 << (value_width - 1)
    shape = (37, 70)
    matrix = sp.random_array(shape, density=0.35, rng=rng, format="coo",
                             data_sampler=lambda size: rng.integers(-top, top, size))
    matrix = matrix.astype(np.int64)
    placed = _placed(matrix, compaction)
    fmt = EurekaFormat(compaction, value_width)
    words = fmt.encode(placed)
    assert len(words) == fmt.words(placed.cycles)
    assert all(0 <= w < 1 << fmt.word_width for w in words)
    decoded = fmt.decode(words, shape)
    for field in ("values", "columns", "displaced", "rotation", "cycles"):
        assert np.array_equal(getattr(decoded, field), getattr(placed, field)), field
    assert (decoded.matrix() != matrix).nnz == 0


def test_round_trip_fp16_and_empty_blocks():
    weights = np.zeros((8, 32))
    weights[5, [0, 3, 17]] = [0.5, -1.25e-3, 300.0]
    matrix = sp.coo_array(weights)
    codes, width = operand_codes(matrix.data)
    assert width == 16
    coded = sp.coo_array((codes, (matrix.row, matrix.col)), shape=matrix.shape)
    fmt = EurekaFormat(4, width)
    words = fmt.encode(_placed(coded, 4))
    assert len(words) == 4 + 2  # four headers, one block of 2 cycles
    decoded = fmt.decode(words, matrix.shape).matrix()
    restored = np.zeros(weights.shape, dtype=np.float16)
    restored[decoded.row, decoded.col] = decoded.data.astype(np.int16).view(np.float16)
    assert np.array_equal(restored, weights.astype(np.float16))


def test_a_stream_of_some_blocks_decodes_with_their_positions():
    matrix = np.zeros((12, 40), dtype=np.int64)
    matrix[1, [0, 3]] = [5, -6]
    matrix[9, 39] = 7                                # blocks (0, 0) and (2, 4) of a 3x5 grid
    placed = _placed(matrix, 2, empty=False)
    assert placed.block_rows.tolist() == [0, 2] and placed.block_cols.tolist() == [0, 4]
    fmt = EurekaFormat(2, 8)
    words = fmt.encode(placed)
    assert len(words) == fmt.words(placed.cycles) == 2 + 1 + 1
    decoded = fmt.decode(words, matrix.shape, (placed.block_rows, placed.block_cols))
    assert decoded.block_rows.tolist() == [0, 2] and decoded.block_cols.tolist() == [0, 4]
    assert np.array_equal(decoded.matrix().toarray(), matrix)
    with pytest.raises(FormatError, match="2 blocks, 3 expected"):
        fmt.decode(words, matrix.shape, ([0, 1, 2], [0, 0, 4]))
    with pytest.raises(FormatError, match="2 blocks, but a 12x40 matrix has 15"):
        fmt.decode(words, matrix.shape)


def test_header_chain_is_found_without_a_loop_over_blocks():
    """Headers are found by pointer doubling: check it on many blocks of every length."""
    rng = np.random.default_rng(5)
    density = rng.random((16, 1, 25, 1)) ** 2            # one per 4 x 16 block
    matrix = rng.integers(1, 100, (16, 4, 25, 16)) * (rng.random((16, 4, 25, 16)) < density)
    placed = _placed(matrix.reshape(64, 400), 4)
    fmt = EurekaFormat(4, 8)
    decoded = fmt.decode(fmt.encode(placed), (64, 400))
    assert np.array_equal(decoded.cycles, placed.cycles)
    assert len(set(placed.cycles.tolist())) == 17       # 0 (empty) to 16 cycles
    assert np.array_equal(decoded.values, placed.values)


def test_operand_codes():
    assert operand_codes(np.array([-128, 127]))[1] == 8
    assert operand_codes(np.array([-129, 5]))[1] == 16
    assert operand_codes(np.array([1 << 20]))[1] == 32
    assert operand_codes(np.array([1.0]))[0].tolist() == [0x3C00]
    for bad in ([1e-9], [1e6]):
        with pytest.raises(ParameterError, match="FP16"):
            operand_codes(np.array(bad))
    with pytest.raises(ParameterError, match="32 bits"):
        operand_codes(np.array([1 << 40]))


def test_encode_rejects():
    fmt = EurekaFormat(1, 8)
    with pytest.raises(ParameterError, match="integer operand codes"):
        fmt.encode(_placed(np.eye(4), 1))
    with pytest.raises(ParameterError, match=r"\[-128, 127\]"):
        fmt.encode(_placed(np.eye(4, dtype=np.int64) * 200, 1))
    with pytest.raises(ParameterError, match="P=2"):
        EurekaFormat(2, 8).encode(_placed(_figure_7(), 1))
    with pytest.raises(ParameterError, match="value_width"):
        EurekaFormat(1, 40)


def test_decode_rejects():
    fmt = EurekaFormat(1, 8)
    words = fmt.encode(_placed(_figure_7(), 1))
    with pytest.raises(FormatError, match="truncated"):
        fmt.decode(words[:-1], (4, 4))
    with pytest.raises(FormatError, match="2 blocks"):
        fmt.decode([*words, 0], (4, 4))
    with pytest.raises(FormatError, match="44 bits"):
        fmt.decode([words[0] | 1 << 44, *words[1:]], (4, 4))
    with pytest.raises(FormatError, match="claims 5 cycles"):
        fmt.decode([3 | 5 << 2] + [0] * 5, (4, 4))
    with pytest.raises(FormatError, match="MAC row 0"):
        fmt.decode([words[0], words[1] | 1 << 10, words[2]], (4, 4))


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_records_hold_each_block_header_then_slots(compaction):
    rng = np.random.default_rng(7 + compaction)
    matrix = sp.random_array((12, 40), density=0.3, rng=rng, format="coo",
                             data_sampler=lambda size: rng.integers(-100, 100, size))
    placed = _placed(matrix.astype(np.int64), compaction)
    fmt = EurekaFormat(compaction, 8)
    words, records = fmt.encode(placed), fmt.records(placed)
    header_bits = wire.width(fmt.header)
    assert len(records) == len(placed.cycles)
    at = 0
    for record, cycles in zip(records, placed.cycles.tolist(), strict=True):
        assert 0 <= record < 1 << fmt.record_width
        assert record & ((1 << header_bits) - 1) == words[at]
        slots = [(record >> (header_bits + i * fmt.slot_width)) & ((1 << fmt.slot_width) - 1)
                 for i in range(4 * compaction)]
        assert slots == words[at + 1:at + 1 + cycles] + [0] * (4 * compaction - cycles)
        at += 1 + cycles
    assert at == len(words)

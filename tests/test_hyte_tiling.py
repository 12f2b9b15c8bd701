# amaranth: UnusedElaboratable=no
"""HYTE's tiling loop closed in RTL: the controller's commands on real matrices, tuned
from the counts the accessor takes of the tiles the composite fetches from memory at
the positions kept across tiles, and the words the parent reads, equal to the model's
under random stalls; a tile of B kept across A's tiles fetched and counted once;
parameters and lint."""

from collections import Counter

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.hyte_tiling import HyteTiling
from sparseforge.sim.models.hyte_controller import Config, J, K
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.hyte_schedule import hyte_fetches
from sparseforge.sw.wire import HyteStatus
from sparseforge.tb.hyte_tiling import TilingBench, simulate


def run(shared_data, name, config, seed):
    """``(matrix, commands, bench)``: ``name`` as B through the composite, ``config``
    its job."""
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / f"{name}.mtx")
    comp = HyteTiling(dim_width=8, depth=16, width=8, pos_width=12, addr_width=14)
    commands, bench = simulate(comp, matrix, config, seed_from_env(seed))
    assert commands == bench.trace.commands and bench.counts == bench.trace.counts
    return matrix, commands, bench


def statuses(bench):
    """How many of the parent's reads answered each status."""
    return Counter(HyteStatus(a["status"]) for a in bench.outputs["read_data"])


def test_a_real_matrixs_tiles_fetched_from_memory_tune_the_shape_in_rtl(shared_data):
    # bcspwr03 as B (118 x 118) from 16 x 16 tiles with 12 words of buffer: the shape
    # changes mid-run, decided from the RTL accessor's counts of the tiles the
    # composite fetched itself from B's CSR arrays; every word the parent read (each
    # tile's, stored or bypassed) equals the model's.
    matrix, commands, bench = run(shared_data, "bcspwr03",
                                  Config(8, 118, 118, 3, 4, 4, 0, 12), 6)
    shapes = {(c[K]["t"], c[J]["t"]) for c in commands}
    assert len(shapes) > 1 and (16, 16) in shapes
    assert sum(port == "fill" for port, _ in bench.trace.fetches) == matrix.nnz
    # Both paths of the buffer: words held (HIT) and bypassed (MISS), and segments
    # ended (END); the bench checked each answer as it left. A kept entry written per
    # segment found.
    seen = statuses(bench)
    assert min(seen[HyteStatus.HIT], seen[HyteStatus.MISS], seen[HyteStatus.END]) > 0
    assert len(bench.streams["writes__request"].received) == sum(
        port == "segment" for port, _ in bench.trace.fetches)


def test_a_rectangular_matrix_in_another_order(shared_data):
    # lp_afiro as B (27 x 51, so K and J differ), order jik, 8 x 8 tiles, 6 words.
    matrix, commands, bench = run(shared_data, "lp_afiro",
                                  Config(8, 51, 27, 3, 3, 3, 2, 6), 8)
    assert matrix.shape == (27, 51) and len({(c[K]["t"], c[J]["t"]) for c in commands}) > 1
    seen = statuses(bench)
    assert min(seen[HyteStatus.HIT], seen[HyteStatus.MISS]) > 0


def test_a_tile_kept_across_tiles_of_a_is_neither_fetched_nor_counted(shared_data):
    # bcspwr01 as B (39 x 39), order jki (i innermost) over two tiles of A's rows: every
    # second command keeps B's tile, so the composite fetches and counts each tile of B
    # once, a kept entry written per segment of those fetches alone.
    matrix, commands, bench = run(shared_data, "bcspwr01",
                                  Config(16, 39, 39, 3, 4, 4, 3, 12), 9)
    fetches = hyte_fetches(commands)
    assert fetches[1::2] == [False] * (len(commands) // 2) and all(fetches[::2])
    assert len(bench.counts) == sum(fetches) == len(commands) // 2
    assert sum(port == "fill" for port, _ in bench.trace.fetches) == matrix.nnz
    assert len(bench.streams["writes__request"].received) == sum(
        port == "segment" for port, _ in bench.trace.fetches)


class Ahead(TilingBench):
    """The bench, watching how many of B's words the fetcher asked for beyond those of
    the segments the accessor has taken."""

    most = asked = taken = 0

    def check(self, io, cycle):
        super().check(io, cycle)
        get, fetcher = io.ctx.get, self.component.fetcher
        self.asked += bool(get(fetcher.columns.request.valid)
                           and get(fetcher.columns.request.ready))
        if get(fetcher.segment.valid) and get(fetcher.segment.ready):
            self.taken += get(fetcher.segment.payload)
        self.most = max(self.most, self.asked - self.taken)


def test_the_next_segments_words_are_asked_while_the_last_ones_fill(shared_data):
    # bcspwr01 as B under random stalls: the fetcher asks for a segment's words before
    # the accessor has taken the segment (the last one's words still filling it); one
    # segment at a time it would ask for none before.
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / "bcspwr01.mtx")
    comp = HyteTiling(dim_width=8, depth=16, width=8, pos_width=12, addr_width=14,
                      inflight=4)
    bench = Ahead(comp, matrix, Config(8, 39, 39, 3, 5, 5, 0, 12), seed_from_env(10))
    assert pysim(bench) == bench.trace.commands
    assert bench.most > 0


@pytest.mark.parametrize("params, message", [({"width": 7, "dim_width": 8}, "width=7"),
                                             ({"count_width": 15}, "count_width=15")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        HyteTiling(**params)


@pytest.mark.parametrize("params", [{}, {"dim_width": 8, "width": 8, "depth": 4}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("hyte_tiling", params) == ""

# amaranth: UnusedElaboratable=no
"""HYTE's tiling loop closed in RTL: the controller's commands on a real matrix, tuned
from the counts the accessor takes of the tiles the parent fetches, equal to the
model's under random stalls; the tile to count derived from a command; parameters and
lint."""

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.hyte_tiling import HyteTiling
from sparseforge.sim.models.hyte_controller import Config, J, K
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw.formats import read_matrix
from sparseforge.tb.hyte_tiling import simulate


def test_a_real_matrixs_tiles_tune_the_shape_in_rtl(shared_data):
    # bcspwr03 as B (118 x 118) from 16 x 16 tiles with 12 words of buffer: the shape
    # changes mid-run, decided from the RTL accessor's counts of the tiles fetched.
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / "bcspwr03.mtx")
    config = Config(8, 118, 118, 3, 4, 4, 0, 12)
    commands, bench = simulate(HyteTiling(dim_width=8, depth=16, width=8), matrix, config,
                               seed_from_env(6))
    assert commands == bench.trace.commands and bench.counts == bench.trace.counts
    shapes = {(c[K]["t"], c[J]["t"]) for c in commands}
    assert len(shapes) > 1 and (16, 16) in shapes
    assert sum(port == "fill" for port, _ in bench.trace.fetches) == matrix.nnz


@pytest.mark.parametrize("params, message", [({"width": 7, "dim_width": 8}, "width=7"),
                                             ({"count_width": 15}, "count_width=15")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        HyteTiling(**params)


@pytest.mark.parametrize("params", [{}, {"dim_width": 8, "width": 8, "depth": 4}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("hyte_tiling", params) == ""

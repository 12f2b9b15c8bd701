"""``sparseforge bench ciss-dram``: Fig. 3e measured on the DRAM model prints its figures
beside the paper's, and CISS beats per-PE CSR once PEs read apart."""

import json

import pytest

from sparseforge.cli import main


@pytest.mark.soak
@pytest.mark.verilator
def test_quick_run_measures_both_formats(shared_data, capsys):
    main(["bench", "ciss-dram", "--quick", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["peak"] == 16e9 and [r["pes"] for r in result["rows"]] == [1, 2]
    one, two = result["rows"]
    assert two["ciss"] > 4 * two["csr"] and 0 < two["ciss"] <= result["peak"]
    assert two["csr"] < one["csr"]


def test_bad_clock_is_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "ciss-dram", "--clock", "0"])
    err = capsys.readouterr().err
    assert "clock" in err and "Traceback" not in err

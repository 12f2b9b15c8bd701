"""``sparseforge bench hyte --quick``: the figures it prints are there and sane."""

import json

import pytest

from sparseforge.cli import main


@pytest.mark.soak
def test_bench_hyte_quick(shared_data, capsys):
    main(["bench", "hyte", "--quick", "--json"])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and "error" not in err
    result = json.loads(out)
    assert len(result["errors"]) == 12 and len(result["schedules"]) == 2
    for r in result["schedules"]:
        assert r["optimum_cycles"] <= r["hyte_cycles"]          # the optimum is a floor
        for baseline in ("drt", "harp", "tailors"):
            assert r["optimum_cycles"] <= r[f"{baseline}_cycles"]
        assert 0 < r["schedule_seconds"] < r["exact_seconds"]
        assert r["nnz_ctk_error_median"] < 0.1
    (tuned,) = result["tuning"]
    assert len(tuned["shapes"]) > 1 and tuned["hit_after"] > tuned["hit_before"]

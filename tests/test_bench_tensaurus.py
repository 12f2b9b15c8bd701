"""``sparseforge bench tensaurus --quick``: the RTL's results equal the golden kernels and
the figures the bench prints are there and sane."""

import json

from sparseforge.cli import main


def test_bench_tensaurus_quick(shared_data, capsys, tmp_path):
    main(["bench", "tensaurus", "--quick", "--json", "--plot", str(tmp_path / "roof.png")])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and "error" not in err
    rows = json.loads(out)["workloads"]
    assert {r["kernel"] for r in rows} == {"spmttkrp", "spttmc", "spmm"}
    for r in rows:
        assert r["equal_to_golden"]
        counted = r["load_cycles"] + r["compute_cycles"]     # the accelerator's own count
        assert counted <= r["cycles"] <= counted + 10
        assert 0 < r["utilization"] <= 1 and 0 < r["of_attainable"] <= 1
        assert r["ops_per_cycle"] <= r["attainable_ops_per_cycle"] <= r["peak_ops_per_cycle"]
        assert 0 < r["csr_fraction"] < r["ciss_fraction"] <= 1      # Fig. 3e's point
    assert (tmp_path / "roof.png").read_bytes()[:4] == b"\x89PNG"

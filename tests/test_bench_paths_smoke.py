"""Smoke test of benchmarks/scripts/bench_paths.py on generated data (speed never asserted)."""

import csv

from strategies import load_bench_script


def test_bench_paths_writes_csv_and_png(tmp_path, capsys):
    bench = load_bench_script("bench_paths")
    out_csv, out_png = tmp_path / "paths.csv", tmp_path / "paths.png"
    assert bench.main(["--dataset", "synthetic-multiclass", "--eps", "0.2", "--lam-min", "0.25",
                       "--step", "fw", "--no-cache", "--csv", str(out_csv),
                       "--png", str(out_png)]) == 0
    rows = list(csv.DictReader(out_csv.open()))
    assert {r["method"] for r in rows} == set(bench.METHODS)
    for method in bench.METHODS:
        mine = [r for r in rows if r["method"] == method]
        lams = [float(r["lam"]) for r in mine]
        assert lams == sorted(lams, reverse=True) and len(set(lams)) == len(lams)
        passes = [float(r["effective_passes"]) for r in mine]
        assert passes == sorted(passes)
        if method.startswith("grid-"):
            assert len(mine) == 18 and all(float(r["gap"]) <= 0.9 * 0.2 for r in mine)
        if method == "eps-path":
            assert all(float(r["gap_bound"]) <= 0.2 * (1 + 1e-9) for r in mine)
    assert out_png.read_bytes()[:4] == b"\x89PNG"
    assert "ratio path / grid" in capsys.readouterr().out

"""benchmarks/scripts/bench_pystruct_examples.py: its parsing and table, and a real run of ours.

Speed is never asserted. The runs need pystruct's sdist (``tests/pystruct_upstream.py``); they
skip without it. No pystruct installation is needed: the "pystruct" side is given this Python,
where ``import pystruct`` fails, which is how an example pystruct cannot run looks.
"""

import json
import sys

import pystruct_upstream
import pytest
from strategies import load_bench_script

bench = load_bench_script("bench_pystruct_examples")

PRINTED = """Score with pystruct n-slack ssvm: 0.960000 (took 12.500000 seconds)
iteration 3
Box constraints at C: 3
Score with latent SVM:
Train: 1.00
Test: 0.98
Latent class counts: array([ 93,  78])
Test: 0.50
Test accuracy: 0.861
Test accuracy: 0.993
"""


def test_parse_scores_keeps_scores_only():
    scores = bench.parse_scores(PRINTED)
    assert scores == {
        "Score with pystruct n-slack ssvm": {"value": 0.96, "took": 12.5},
        "Score with latent SVM Train": {"value": 1.0, "took": None},
        "Score with latent SVM Test": {"value": 0.98, "took": None},
        "Test accuracy": {"value": 0.861, "took": None},
        "Test accuracy #2": {"value": 0.993, "took": None},
    }   # "Box constraints" is progress; "Test: 0.50" is no longer under the header


def _run(error=None, stdout="", seconds=2.0, cpu=1.0, tree=None, startup=0.0, latent=None):
    return {"error": error, "stdout": stdout, "seconds": seconds, "cpu_seconds": cpu,
            "tree_cpu_seconds": tree, "startup_cpu_seconds": startup,
            "scores": bench.parse_scores(stdout), "latent": latent or {}}


def test_table_ratios_rows_and_merge():
    latent = {"clf": {"learner": "OneSlackSSVM", "tol": 0.1, "exact": False,
                      "gaps": [9.9], "gaps_over_Cn": [0.099], "changes": [0]}}
    first = {"load_before": [1, 2, 3], "load_after": [4, 5, 6], "date": "d1",
             "machine": {"nproc": 2, "cpu_model": "cpu"}, "not_run": {"x.py": "network"},
             "results": {
                 "a.py": {"pystruct": _run(stdout="Score: 0.5 (took 2 seconds)", cpu=4.0,
                                           tree=8.5, startup=0.5),
                          "ours": _run(stdout="Score: 0.6 (took 1 seconds)", cpu=2.0,
                                       tree=2.0, latent=latent)},
                 "b.py": {"pystruct": _run(error="ModuleNotFoundError: No module named 'ad3'")},
             }}
    second = dict(first, load_before=[0, 9, 9], load_after=[9, 0, 9], date="d2",
                  not_run={}, results={"b.py": {"pystruct": _run(stdout="score: 1.0"),
                                                "ours": _run(stdout="score: 1.0", cpu=3.0)}})
    table = bench.markdown_table(first["results"], first["not_run"]).splitlines()
    # pystruct's CPU seconds are its process tree's less its start-up (8.5 - 0.5), not its
    # own (4)
    assert table[2] == ("| a.py | script: ending; s wall / CPU | ran | ran | 2.00 / 8.00 | "
                        "2.00 / 2.00 | 0.25 (CPU) |")
    assert table[3] == "| | Score; fit s (wall) | 0.5 | 0.6 | 2.00 | 1.00 | 0.50 |"
    assert "0.099" in table[4] and "inexact oracle" in table[4]
    assert table[5].startswith("| b.py |") and table[5].endswith("| - |")  # nothing compared
    assert table[6] == "| x.py | not run | network | | | | |"
    merged = bench.merge_reports([first, second])
    assert list(merged["results"]) == ["a.py", "b.py"]
    assert merged["results"]["b.py"]["ours"]["scores"] == {"score": {"value": 1.0, "took": None}}
    assert merged["load_before"] == [0, 2, 3] and merged["load_after"] == [9, 5, 9]
    assert merged["date"] == "d1 / d2" and merged["not_run"] == {"x.py": "network"}
    b_row = bench.markdown_table(merged["results"], {}).splitlines()[5]
    assert b_row.endswith("| 3.00 (CPU) |")             # ours 3.0 / pystruct 1.0


@pytest.fixture(scope="module")
def sdist():
    try:
        return pystruct_upstream.sdist_root()
    except pystruct_upstream.Unavailable as err:
        pytest.skip(f"pystruct's sdist could not be had: {err}")


def test_runs_ours_only_where_pystruct_runs(sdist, tmp_path, capsys):
    out = tmp_path / "raw.json"
    assert bench.main(["--pystruct-python", sys.executable, "--examples", "svm_as_crf.py",
                       "--json", str(out), "--output", str(tmp_path / "table.md")]) == 0
    runs = json.loads(out.read_text())["results"]["svm_as_crf.py"]
    assert runs["pystruct"]["error"] == "ModuleNotFoundError: No module named 'pystruct'"
    assert "ours" not in runs
    assert "svm_as_crf.py [ours]: not run" in capsys.readouterr().out
    assert (tmp_path / "table.md").read_text().startswith("| example |")


def test_runs_an_example_on_ours(sdist, tmp_path):
    out = tmp_path / "raw.json"
    assert bench.main(["--flavours", "ours", "--examples", "svm_as_crf.py",
                       "--json", str(out)]) == 0
    run = json.loads(out.read_text())["results"]["svm_as_crf.py"]["ours"]
    assert run["error"] is None, run["stderr_tail"]
    score = run["scores"]["Score with pystruct crf svm"]
    assert score["value"] == pytest.approx(0.947368) and score["took"] > 0
    assert 0 < run["startup_cpu_seconds"]
    assert 0 < run["cpu_seconds"] <= run["tree_cpu_seconds"] - run["startup_cpu_seconds"] + 1e-6
    assert run["seconds"] > 0 and run["latent"] == {}

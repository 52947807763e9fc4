"""Smoke test of benchmarks/: the asv suites and scripts run, at the smallest size.

asv itself does not run in CI; this keeps the suites from rotting.  Every
suite's setup (and setup_cache) and each benchmark method run once with
SSVM_BENCH_PROFILE=fast on synthetic OCR-like words, and bench_ocr.py runs
with a few synthetic words.  Speed is never asserted here.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from strategies import load_bench_script

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    """The ssvm_bench package, with the fast profile and no real data."""
    monkeypatch.setenv("SSVM_BENCH_PROFILE", "fast")
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)
    monkeypatch.syspath_prepend(str(BENCH_DIR))
    import ssvm_bench.common
    import ssvm_bench.oracles
    import ssvm_bench.solvers

    for cached in (ssvm_bench.common._load_words, ssvm_bench.common._bound_oracle,
                   ssvm_bench.common.graphcut_problem, ssvm_bench.solvers._pass_inputs):
        cached.cache_clear()
    # ``params`` is evaluated at import, from the environment of that moment.
    ssvm_bench.solvers._variant_state.cache_clear()
    for suite in (ssvm_bench.oracles.ViterbiSuite, ssvm_bench.solvers.BCFWSuite,
                  ssvm_bench.solvers.VariantsSuite):
        params = [["ocr-like-fast"], *suite.params[1:]]
        monkeypatch.setattr(suite, "params", params)
    monkeypatch.setattr(ssvm_bench.oracles.GraphCutSuite, "params",
                        [["horseseg-like-fast"], *ssvm_bench.oracles.GraphCutSuite.params[1:]])
    return ssvm_bench


def _methods(suite, prefixes=("time_", "track_", "peakmem_")):
    return sorted(name for name in dir(suite) if name.startswith(prefixes))


def test_common_profile_and_data(bench):
    common = bench.common
    assert common.profile() == "fast"
    assert common.default_dataset() == "ocr-like-fast"
    assert common.parse_dataset("ocr-large") == ("ocr-large", common.OCR_LARGE_WORDS)
    assert common.parse_dataset("ocr-like-fast") == ("ocr-like", common.FAST_WORDS)
    with pytest.raises(ValueError):
        common.parse_dataset("conll")
    X, Y = common.load_words("ocr-like-fast")
    assert len(X) == len(Y) == common.FAST_WORDS
    assert all(x.shape == (len(y), 128) for x, y in zip(X, Y, strict=True))
    with pytest.raises(NotImplementedError):  # asv's skip
        common.load_words("ocr-large-fast")
    order = common.block_order(7)
    assert order.dtype.kind == "i" and order.min() >= 0 and order.max() < 7
    timer = common.PerCallTimer(4)
    assert timer.calls == 4 and timer() <= timer()


def test_viterbi_suite(bench):
    suite_cls = bench.oracles.ViterbiSuite
    assert _methods(suite_cls) == ["time_oracle_call"]
    suite = suite_cls()
    weights = suite.setup_cache()
    assert set(weights) == {"ocr-like-fast"}
    for params in itertools.product(*suite_cls.params):
        suite.setup(weights, *params)
        assert suite.timer.calls == bench.common.FAST_WORDS  # seconds per oracle call
        assert suite.number == 1
        suite.time_oracle_call(weights, *params)
    assert weights["ocr-like-fast"].any()  # trained weights are not the zero vector


def test_graphcut_suite(bench):
    suite_cls = bench.oracles.GraphCutSuite
    assert _methods(suite_cls) == ["time_oracle_call"]
    suite = suite_cls()
    weights = suite.setup_cache()
    assert set(weights) == {"horseseg-like-fast"}
    w = weights["horseseg-like-fast"]
    assert np.all(w[1969:] >= 0) and w.any()       # inside the box, trained
    for params in itertools.product(*suite_cls.params):
        suite.setup(weights, *params)
        assert suite.timer.calls == bench.common.FAST_IMAGES
        suite.time_oracle_call(weights, *params)
    with pytest.raises(ValueError, match="unknown graph-cut dataset"):
        bench.common.graphcut_problem("ocr-like", "float64")


def test_bcfw_suite(bench):
    suite_cls = bench.solvers.BCFWSuite
    assert _methods(suite_cls) == ["peakmem_fit", "time_one_pass", "track_gap_after_10_passes",
                                   "track_gap_plain_after_10_passes"]
    suite = suite_cls()
    gaps = suite.setup_cache()
    (dataset,) = suite_cls.params[0]
    suite.setup(gaps, dataset)

    suite_cls.time_one_pass.setup(gaps, dataset)  # the function's own setup
    oracle, state, order = bench.solvers.pass_inputs(dataset)
    assert state.passes == 1 and len(order) == oracle.n_blocks == bench.common.FAST_WORDS
    steps = state.n_steps
    suite.time_one_pass(gaps, dataset)
    assert state.n_steps == steps + oracle.n_blocks

    for name in ("track_gap_after_10_passes", "track_gap_plain_after_10_passes"):
        method = getattr(suite, name)
        assert method.unit == "duality gap"
        gap = method(gaps, dataset)
        assert math.isfinite(gap) and 0.0 <= gap < 1.0
    suite.peakmem_fit(gaps, dataset)


def test_variants_suite(bench):
    suite_cls = bench.solvers.VariantsSuite
    assert _methods(suite_cls) == ["time_one_pass", "track_effective_passes_after_10_passes",
                                   "track_gap_after_10_passes"]
    suite = suite_cls()
    results = suite.setup_cache()
    assert len(results) == 8
    for dataset, variant in itertools.product(*suite_cls.params):
        suite.setup(results, dataset, variant)
        oracle, state = bench.solvers._variant_state(dataset, variant, None)
        steps = state.n_steps
        suite.time_one_pass(results, dataset, variant)
        assert state.n_steps == steps + oracle.n_blocks
        assert 0.0 <= suite.track_gap_after_10_passes(results, dataset, variant) < 1.0
        eff = suite.track_effective_passes_after_10_passes(results, dataset, variant)
        assert 1.0 <= eff <= 12.0 + 1e-9          # 10 passes + 2 gap checks at most
    assert suite.track_gap_after_10_passes.unit == "duality gap"


@pytest.mark.shared_data
def test_ocr_large_fast_profile(monkeypatch):
    home = os.environ.get("SSVM_DATA_HOME")
    if not home or not (Path(home) / "ocr").is_dir():
        pytest.skip("needs SSVM_DATA_HOME with the OCR files")
    monkeypatch.setenv("SSVM_BENCH_PROFILE", "fast")
    monkeypatch.syspath_prepend(str(BENCH_DIR))
    from ssvm_bench import common

    assert common.default_dataset() == "ocr-large-fast"
    X, _ = common.load_words("ocr-large-fast")
    assert len(X) == common.FAST_WORDS and X[0].shape[1] == 128
    assert common.bound_oracle("ocr-large-fast").n_blocks == common.FAST_WORDS


def test_bench_ocr_script(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)
    out = tmp_path / "ocr.json"
    report = load_bench_script("bench_ocr").main(["--synthetic", "12", "--passes", "5",
                                                  "--repeat", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert printed.startswith("$ bench_ocr.py --synthetic 12")
    assert "nproc=" in printed and "CPU:" in printed
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert report["data"]["n_words"] == 12
    assert set(report["gap"]) == {"1", "5"}
    for gaps in report["gap"].values():
        assert gaps["averaged"] >= 0.0 and gaps["plain"] >= 0.0
    assert len(report["pass_s"]["first_all"]) == 2
    assert len(report["pass_s"]["steady_all"]) == 2 * 4
    assert report["oracle_call_s"]["w_zero"] > 0 and report["oracle_call_s"]["w_trained"] > 0
    assert math.isfinite(report["solver_overhead_ratio"])
    # The manual pass loop is the public solver, step for step.
    assert report["solve_check"]["max_abs_gap_difference"] < 1e-9


def test_bench_variants_script(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)
    out, png = tmp_path / "variants.csv", tmp_path / "variants.png"
    script = load_bench_script("bench_variants")
    assert script.main(["--dataset", "synthetic-ocr", "--n", "12", "--passes", "2",
                        "--gap-check-every", "1", "--seeds", "2", "--csv", str(out),
                        "--png", str(png)]) == 0
    assert "gap" in capsys.readouterr().out
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert {r["variant"] for r in rows} == set(script.DEFAULT_VARIANTS)
    assert len(rows) == 8 * 2 * 3           # variants x seeds x (start, pass 1, pass 2)
    assert all(float(r["gap"]) >= -1e-12 for r in rows)
    assert png.stat().st_size > 0


def test_asv_config():
    text = (BENCH_DIR / "asv.conf.json").read_text()
    config = json.loads(re.sub(r"(?m)^\s*//.*$", "", text))  # asv allows // comments
    assert config["repo"] == ".."
    assert config["environment_type"] == "virtualenv"
    assert (BENCH_DIR / config["benchmark_dir"] / "__init__.py").is_file()
    built = [re.search(r"\{build_dir\}/(\w+)", cmd).group(1)
             for cmd in config["build_command"] if "pip wheel" in cmd]
    assert built == ["ssvm_data", "ssvm_core", "ssvm_oracles", "ssvm_paths"]
    for package in built:
        assert (BENCH_DIR.parent / package / "pyproject.toml").is_file()
    assert all("--no-index" in cmd for cmd in config["install_command"])
    assert set(config["matrix"]["req"]) >= {"numpy", "scipy", "Cython"}


def test_bench_active_overhead_script(capsys):
    script = load_bench_script("bench_active_overhead")
    assert script.main(["--synthetic", "8", "--passes", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert all(v in out for v in script.VARIANTS)

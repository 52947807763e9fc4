"""Pipelined BCFW (``pipeline_lag``, ``ssvm_core.pipeline``): iterates independent of the
number of threads, L = 0 is serial BCFW, the lag's definition, a monotone dual, w = sum of
the block states, certificates, refused options, stops between steps."""

import threading
import time

import numpy as np
import pytest

import ssvm_core.pipeline as pipeline_module
from ssvm_core import FrankWolfeSSVM, SolverState, _fw, solve
from ssvm_core._batch import AnswerOracle, solve_blocks
from ssvm_core._pipeline import CompiledPipeline
from ssvm_core.objectives import dual_objective
from ssvm_core.options import sampling_order
from ssvm_core.parallel import max_scores
from ssvm_core.pipeline import Pipeline
from ssvm_core.shards import ShardExecutor
from ssvm_data import lsp_like
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
from ssvm_oracles import ApproximateOracle, ChainModel, PoseModel


def _pose(n=16, seed=5):
    """Pose trees with the box their oracle needs (dense blocks)."""
    X, Y = lsp_like(n, grid=(5, 5), n_types=2, random_state=seed)
    model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS, n_types=2)
    return model.bind(X, Y), model.weight_bounds()


def _chain(n=12, seed=0):
    """Chains without a box (sparse blocks); small n, so blocks repeat within the lag."""
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, 6), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=3, n_features=4, blocks="sparse").bind(X, Y), None


PROBLEMS = {"pose": _pose, "chain": _chain}


def _state(oracle, box, lam=0.05):
    return SolverState.for_oracle(oracle, lam, False, box)


def _pipelined(oracle, box, lag, workers, passes=3, sampling="uniform", duals=None):
    """The state after ``passes`` pipelined passes (seed 1); ``duals`` collects the dual
    after every step."""
    state = _state(oracle, box)
    rng = np.random.default_rng(1)

    def record() -> bool:
        if duals is not None:
            duals.append(dual_objective(state))
        return False

    with Pipeline(oracle, state, lag, workers, sampling) as pipe:
        for _ in range(passes):
            assert pipe.one_pass(rng, should_stop=record) == oracle.n_blocks
    return state


def _assert_v_is_sum(state):
    total = np.sum([state.block_vector(i) for i in range(state.n_blocks)], axis=0)
    assert np.abs(state.v - total).max() <= 1e-12 * max(np.abs(total).max(), 1e-300)
    assert abs(state.ell - state.block_ell.sum()) <= 1e-12 * max(abs(state.ell), 1e-300)
    np.testing.assert_array_equal(state.w, state.project(state.v))


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("lag", [1, 4])
def test_iterates_do_not_depend_on_the_number_of_threads(name, lag):
    oracle, box = PROBLEMS[name]()
    states = [_pipelined(oracle, box, lag, workers) for workers in (1, 2, 3)]
    for other in states[1:]:
        np.testing.assert_array_equal(other.v, states[0].v)
        np.testing.assert_array_equal(other.w, states[0].w)
        assert other.ell == states[0].ell and other.n_steps == states[0].n_steps
    _assert_v_is_sum(states[0])


def test_auto_lag_follows_its_rule():
    from ssvm_core.pipeline import auto_lag

    assert auto_lag(6251, 1) == 0                      # one thread: serial BCFW
    assert auto_lag(32, 2) == 1                        # small n: W - 1 keeps W threads busy
    assert auto_lag(6251, 2) == 4 and auto_lag(8936, 2) == 4   # OCR-large, CoNLL: 2 W
    assert auto_lag(2500, 2) == 2 and auto_lag(2500, 4) == 3   # L / n <= 1/1000 in between


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_auto_lag_runs_the_lag_it_records(name):
    from ssvm_core.pipeline import auto_lag

    oracle, box = PROBLEMS[name]()
    lag = auto_lag(oracle.n_blocks, 2)
    runs = [solve(oracle, 0.05, box=box, pipeline_lag=L, n_jobs=2, max_passes=3, tol=0,
                  random_state=3, gap_check_every=3) for L in ("auto", lag)]
    np.testing.assert_array_equal(runs[0].w, runs[1].w)
    assert [h["pipeline_lag"] for h in runs[0].history] == [lag] * len(runs[0].history)
    with pytest.raises(ValueError, match="pipeline_lag"):
        solve(oracle, 0.05, box=box, pipeline_lag="fast", n_jobs=2)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_lag_zero_is_serial_bcfw(name):
    oracle, box = PROBLEMS[name]()
    piped = _pipelined(oracle, box, 0, 2, sampling="perm")
    serial = _state(oracle, box)
    rng = np.random.default_rng(1)
    for _ in range(3):
        _fw.bcfw_pass(oracle, serial, sampling_order(rng, "perm", oracle.n_blocks), True)
    np.testing.assert_array_equal(piped.v, serial.v)
    assert piped.ell == serial.ell
    a = solve(oracle, 0.05, box=box, pipeline_lag=0, n_jobs=2, max_passes=4, tol=0,
              random_state=3, gap_check_every=2)
    b = solve(oracle, 0.05, box=box, max_passes=4, tol=0, random_state=3, gap_check_every=2)
    np.testing.assert_array_equal(a.w, b.w)
    assert a.gap == b.gap and [h["gap"] for h in a.history] == [h["gap"] for h in b.history]


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_the_call_of_step_j_is_made_at_the_iterate_after_step_j_minus_lag(name):
    oracle, box = PROBLEMS[name]()
    lag, n = 3, oracle.n_blocks
    reference = _state(oracle, box)
    rng = np.random.default_rng(1)
    for _ in range(2):                     # each pass fills the pipeline at its start
        order = sampling_order(rng, "uniform", n)
        iterates = [reference.w.copy()]
        for j in range(n):
            answers = solve_blocks(oracle, iterates[max(j - lag, 0)], order[j:j + 1])
            _fw.bcfw_pass(AnswerOracle(oracle, answers), reference, order[j:j + 1], True)
            iterates.append(reference.w.copy())
    piped = _pipelined(oracle, box, lag, 2, passes=2)
    np.testing.assert_array_equal(piped.v, reference.v)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_the_dual_never_decreases(name):
    oracle, box = PROBLEMS[name]()
    duals = []
    state = _pipelined(oracle, box, 5, 2, passes=4, duals=duals)
    assert len(duals) == 4 * oracle.n_blocks
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:]))
    _assert_v_is_sum(state)
    gap = 0.5 * state.lam * state.w @ state.w + max_scores(oracle, state.w).sum() / \
        oracle.n_blocks - dual_objective(state)
    assert gap >= -1e-12


def test_a_block_in_flight_is_called_again_only_after_its_earlier_call(monkeypatch):
    """Blocks drawn again within the lag: their calls never overlap, in draw order."""
    oracle, box = _chain(n=4)                 # 4 blocks, lag 6: every block repeats in flight
    spans, lock = [], threading.Lock()

    def slow_solve_blocks(o, w, blocks, n_samples=1):
        start = time.perf_counter()
        time.sleep(0.002 * (1 + int(blocks[0]) % 3))     # uneven, so threads overtake
        out = solve_blocks(o, w, blocks, n_samples)
        with lock:
            spans.append((int(blocks[0]), start, time.perf_counter(), w.copy()))
        return out

    monkeypatch.setattr(pipeline_module, "solve_blocks", slow_solve_blocks)
    threaded = _pipelined(oracle, box, 6, 3, passes=2)
    for block in range(4):
        mine = sorted(s for s in spans if s[0] == block)
        assert all(a[2] <= b[1] for a, b in zip(mine, mine[1:]))      # no overlap
    spans.clear()
    inline = _pipelined(oracle, box, 6, 1, passes=2)
    np.testing.assert_array_equal(threaded.v, inline.v)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_call_raises_and_keeps_the_steps_made(monkeypatch, workers):
    oracle, box = _chain(n=12)
    bad = sampling_order(np.random.default_rng(0), "perm", 12)[6]     # step 6's block

    def failing(o, w, blocks, n_samples=1):
        if blocks[0] == bad:
            raise RuntimeError("oracle failed")
        return solve_blocks(o, w, blocks, n_samples)

    monkeypatch.setattr(pipeline_module, "solve_blocks", failing)
    state = _state(oracle, box)
    with Pipeline(oracle, state, 2, workers, "perm") as pipe, \
            pytest.raises(RuntimeError, match="oracle failed"):
        pipe.one_pass(np.random.default_rng(0))
    assert state.n_steps == 6                  # the steps before the failed call
    _assert_v_is_sum(state)


def test_an_oracle_with_per_block_memory_follows_the_draw_order():
    """ApproximateOracle remembers each block's earlier answers: its calls of one block
    run in draw order, so the iterates still do not depend on the threads."""
    oracle, _ = _chain(n=6)
    states = [_pipelined(ApproximateOracle(oracle, 0.5, 2), None, 4, k) for k in (1, 3)]
    np.testing.assert_array_equal(states[0].v, states[1].v)


def test_an_inexact_oracle_makes_the_run_uncertified():
    oracle, _ = _chain(n=10)
    approx = ApproximateOracle(oracle, 0.5, 2)
    with pytest.warns(RuntimeWarning, match="approximate"):
        result = solve(approx, 0.05, pipeline_lag=2, n_jobs=2, max_passes=3, tol=0,
                       random_state=0)
    assert not result.certified
    _assert_v_is_sum(result.state)


def test_solve_certificate_is_primal_minus_dual():
    oracle, box = _pose()
    result = solve(oracle, 10.0, box=box, pipeline_lag=4, executor="threads", n_jobs=2,
                   max_passes=3, tol=0, random_state=0, averaging="plain")
    assert result.certified and result.status == "max_passes"
    state = result.state
    primal = 0.5 * state.lam * state.w @ state.w + \
        max_scores(oracle, state.w).sum() / oracle.n_blocks
    assert result.gap == pytest.approx(primal - dual_objective(state), rel=1e-10, abs=1e-12)
    assert state.oracle_calls == 3 * oracle.n_blocks + 2 * oracle.n_blocks  # + 2 gap checks


@pytest.mark.parametrize("options, match", [
    (dict(batch_blocks=2), "batch_blocks"),
    (dict(batch=True), "batch"),
    (dict(pipeline_cache_steps=2), "needs cache=True"),
    (dict(parallel_steps=True, executor="threads"), "pick one"),
    (dict(pipeline_lag=None, pipeline_cache_steps=2, cache=True), "needs pipeline_lag"),
    (dict(line_search=False), "line_search"),
    (dict(sampling="gap"), "not 'gap'"),
    (dict(executor=ShardExecutor(2)), "threads of this process"),
    (dict(pipeline_lag=-1), "pipeline_lag must be"),
    (dict(pipeline_lag=1.5), "pipeline_lag must be"),
])
def test_options_the_pipeline_does_not_take_are_refused(options, match):
    oracle, _ = _chain()
    with pytest.raises(ValueError, match=match):
        solve(oracle, 0.05, **{"pipeline_lag": 2, **options})


ACTIVE = [dict(step="pairwise"), dict(step="fw", cache=True),
          dict(step="sequential", n_samples=2), dict(step="hybrid", cache=True)]


def _solve(oracle, box, passes=4, **kw):
    return solve(oracle, 0.05, box=box, max_passes=passes, tol=0, random_state=3,
                 gap_check_every=2, averaging="plain", **kw)


@pytest.mark.parametrize("options", ACTIVE, ids=lambda o: "-".join(map(str, o.values())))
def test_active_set_steps_and_caching_lag_zero_is_serial(options):
    oracle, box = _pose()
    a = _solve(oracle, box, pipeline_lag=0, n_jobs=2, **options)
    b = _solve(oracle, box, **options)
    np.testing.assert_array_equal(a.w, b.w)
    assert [h["gap"] for h in a.history] == [h["gap"] for h in b.history]
    assert a.state.oracle_calls == b.state.oracle_calls
    assert a.state.cache_hits_local == b.state.cache_hits_local


@pytest.mark.parametrize("options", ACTIVE + [dict(step="pairwise", cache=True,
                                                   pipeline_cache_steps=2)],
                         ids=lambda o: "-".join(map(str, o.values())))
def test_active_set_steps_and_cache_steps_do_not_depend_on_the_threads(options):
    oracle, box = _pose()
    runs = [_solve(oracle, box, pipeline_lag=3, n_jobs=k, **options) for k in (1, 2, 3)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.w, runs[0].w)
        assert other.state.oracle_calls == runs[0].state.oracle_calls
    _assert_v_is_sum(runs[0].state)
    assert runs[0].certified


def test_master_cache_steps_make_no_calls_and_keep_the_dual_monotone():
    oracle, box = _pose()
    state = SolverState.for_oracle(oracle, 10.0, False, box, active_sets=True)
    rng, duals, calls = np.random.default_rng(0), [], 0

    def record() -> bool:
        duals.append(dual_objective(state))
        return False

    with Pipeline(oracle, state, 3, 2, step="pairwise", cache=True, cache_steps=2) as pipe:
        for _ in range(6):
            # a scheduled exact gap check feeds the caching rule, as in solve
            state.record_gap_pass(max_scores(oracle, state.w), refresh=True)
            calls += pipe.one_pass(rng, should_stop=record)
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:]))
    steps = state.n_steps
    assert steps > 6 * oracle.n_blocks                     # cache steps were made
    assert calls <= 6 * oracle.n_blocks                    # and none of them called
    assert state.cache_hits_local + state.cache_hits_global >= steps - 6 * oracle.n_blocks
    _assert_v_is_sum(state)


def test_time_budget_and_ctrl_c_stop_between_steps():
    oracle, box = _pose()
    state = _state(oracle, box)
    with Pipeline(oracle, state, 3, 2) as pipe:
        calls = pipe.one_pass(np.random.default_rng(0), should_stop=lambda: True)
    # one step applied; the calls of steps 1..3 were dispatched with it, made or cancelled
    assert state.n_steps == 1 and 1 <= calls <= 4
    _assert_v_is_sum(state)
    result = solve(oracle, 0.05, box=box, pipeline_lag=3, n_jobs=2, time_budget=1e-9, tol=0,
                   random_state=0)
    assert result.status == "time_budget" and result.state.passes == 1
    assert result.state.fw_steps == 1 and np.isfinite(result.gap)


def test_the_estimator_takes_pipeline_lag():
    X, Y = lsp_like(12, grid=(5, 5), n_types=2, random_state=2)
    model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS, n_types=2)
    kw = dict(lam=10.0, box="model", max_passes=2, tol=0, random_state=0)
    a = FrankWolfeSSVM(model, pipeline_lag=2, n_jobs=2, **kw).fit(X, Y)
    b = FrankWolfeSSVM(model, pipeline_lag=2, n_jobs=3, **kw).fit(X, Y)
    np.testing.assert_array_equal(a.w_, b.w_)
    assert a.certified_ and a.get_params()["pipeline_lag"] == 2


def test_bench_parallel_measures_pipelined_runs(tmp_path, capsys):
    import csv

    from strategies import load_bench_script

    bench = load_bench_script("bench_parallel")
    report = bench.main(["--problems", "pose", "--pose-images", "6", "--pose-grid", "5",
                         "--executors", "serial", "--taus", "1", "--lags", "0", "2",
                         "--passes", "2", "--check-every", "1", "--target-passes", "2",
                         "--seeds", "0", "--pairs", "3", "--csv", str(tmp_path / "p.csv")])
    summary = report["summary"]
    # L = 0 is serial BCFW: the same curve, so it reaches BCFW's gap in the same passes
    assert summary["pose/pipeline/L=0/passes_to_bcfw_gap@2"] == 2
    assert summary["pose/pipeline/L=2/speedup_vs_bcfw"] > 0
    rows = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert sorted(r["lag"] for r in rows if r["executor"] == "pipeline"
                  and r["kind"] == "time") == ["0", "2"]
    # the interleaved pairs: a ratio per pair, summarised; with the curves, the time to
    # BCFW's gap is the passes over the paired speed-up
    pairs = {r["lag"]: r for r in rows if r["kind"] == "pairs"}
    assert sorted(pairs) == ["0", "2"] and pairs["2"]["pairs"] == "3"
    paired = summary["pose/pipeline/L=2/paired_speedup_vs_bcfw"]
    assert float(pairs["2"]["paired_min"]) <= paired <= float(pairs["2"]["paired_max"])
    assert summary["pose/pipeline/L=0/paired_time_to_bcfw_gap_vs_bcfw"] == pytest.approx(
        2 / (2 * summary["pose/pipeline/L=0/paired_speedup_vs_bcfw"]))
    out = capsys.readouterr().out
    assert "pipeline L=2 on 2 threads" in out and "3 interleaved pairs" in out
    cached = bench.main(["--problems", "pose", "--pose-images", "6", "--pose-grid", "5",
                         "--executors", "serial", "--taus", "1", "--lags", "2", "--passes", "2",
                         "--check-every", "1", "--target-passes", "1", "--seeds", "0",
                         "--pipeline-cache-steps", "1", "--pipeline-step", "pairwise"])
    assert cached["summary"]["pose/pipeline/L=2/speedup_vs_bcfw"] > 0


# -- the compiled pass (``_pipeline.CompiledPipeline``): compact blocks, compiled oracles --

def _compact(n=30, seed=0):
    """Chains on compact blocks (the compiled path), real-valued features; n small enough
    that blocks repeat within the lag."""
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, 7), 5)) for _ in range(n)]
    Y = [rng.integers(0, 4, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=4, n_features=5, blocks="compact").bind(X, Y)


def _compiled_run(oracle, lag, workers, passes=3, share=None, compiled=True, duals=None):
    """The state after ``passes`` pipelined passes (seed 1, averaging on); ``duals``
    collects the dual whenever ``should_stop`` is asked and after every pass."""
    state = SolverState.for_oracle(oracle, 0.05, True, None)
    rng = np.random.default_rng(1)

    def record() -> bool:
        if duals is not None:
            duals.append(dual_objective(state))
        return False

    with Pipeline(oracle, state, lag, workers, compiled=compiled) as pipe:
        assert pipe.path == ("compiled" if compiled else "python")
        if share is not None:           # a fixed share of the calls made by the master
            pipe._compiled = CompiledPipeline(oracle, state, lag, workers, master_share=share)
        for _ in range(passes):
            assert pipe.one_pass(rng, should_stop=record) == oracle.n_blocks
            record()
    return state


@pytest.mark.parametrize("lag", [0, 1, 3])
def test_compiled_pass_equals_the_python_pipeline(lag):
    oracle = _compact()
    python = _compiled_run(oracle, lag, 2, compiled=False)
    runs = [_compiled_run(oracle, lag, 1), _compiled_run(oracle, lag, 2),
            _compiled_run(oracle, lag, 2, share=0.0), _compiled_run(oracle, lag, 2, share=0.4),
            _compiled_run(oracle, lag, 2, share=1.0)]
    for state in runs:
        scale = np.abs(python.v).max()
        assert np.abs(state.v - python.v).max() <= 1e-12 * scale
        assert np.abs(state.avg_u - python.avg_u).max() <= 1e-12 * np.abs(python.avg_u).max()
        assert state.ell == pytest.approx(python.ell, rel=1e-12)
        assert state.ell_avg == pytest.approx(python.ell_avg, rel=1e-12)
        gaps = python.block_gap_estimates              # NaN: a block never drawn
        np.testing.assert_allclose(state.block_gap_estimates, gaps, rtol=0,
                                   atol=1e-12 * np.nanmax(np.abs(gaps)))
        assert state.n_steps == python.n_steps and state.fw_steps == python.fw_steps
        # the threads and the share of calls the master makes never change the iterates
        np.testing.assert_array_equal(state.v, runs[0].v)
        np.testing.assert_array_equal(state.avg_u, runs[0].avg_u)
        _assert_v_is_sum(state)


def test_compiled_pass_keeps_the_dual_monotone_and_the_lag_definition():
    oracle, lag = _compact(n=200), 2
    duals = []
    state = _compiled_run(oracle, lag, 2, passes=3, duals=duals)
    assert len(duals) == 3 * (200 // 64 + 1)
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:]))
    _assert_v_is_sum(state)
    # the call of step j is made at the iterate after step j - L (AnswerOracle's replay)
    reference = SolverState.for_oracle(oracle, 0.05, True, None)
    rng = np.random.default_rng(1)
    for _ in range(3):
        order = sampling_order(rng, "uniform", oracle.n_blocks)
        iterates = [reference.w.copy()]
        for j in range(oracle.n_blocks):
            answers = solve_blocks(oracle, iterates[max(j - lag, 0)], order[j:j + 1])
            _fw.bcfw_pass(AnswerOracle(oracle, answers), reference, order[j:j + 1], True)
            iterates.append(reference.w.copy())
    assert np.abs(state.v - reference.v).max() <= 1e-12 * np.abs(reference.v).max()


def test_the_compiled_path_is_chosen_in_one_place_and_says_why_not():
    oracle = _compact()
    state = SolverState.for_oracle(oracle, 0.05, False, None)
    assert Pipeline(oracle, state, 2, 2).path == "compiled"
    assert "3 threads" in Pipeline(oracle, state, 2, 3).python_reason
    sparse, _ = _chain()
    assert "sparse blocks" in Pipeline(sparse, _state(sparse, None), 2, 2).python_reason
    pose, box = _pose()
    assert "box" in Pipeline(pose, _state(pose, box), 2, 2).python_reason
    active = SolverState.for_oracle(oracle, 0.05, False, None, active_sets=True)
    assert "active sets" in Pipeline(oracle, active, 2, 2, step="pairwise").python_reason
    with pytest.raises(ValueError, match="does not run this problem"):
        CompiledPipeline(sparse, _state(sparse, None), 2, 2)


def test_compiled_solve_does_not_depend_on_the_threads_and_certifies():
    oracle = _compact(n=40)
    kw = dict(pipeline_lag=2, max_passes=4, tol=0, random_state=0, gap_check_every=2,
              averaging="plain")
    a = solve(oracle, 0.05, n_jobs=1, **kw)
    b = solve(oracle, 0.05, n_jobs=2, **kw)
    np.testing.assert_array_equal(a.w, b.w)
    assert b.certified and [h["gap"] for h in a.history] == [h["gap"] for h in b.history]
    state = b.state
    primal = 0.5 * state.lam * state.w @ state.w + \
        max_scores(oracle, state.w).sum() / oracle.n_blocks
    assert b.gap == pytest.approx(primal - dual_objective(state), rel=1e-10, abs=1e-12)
    assert state.oracle_calls == 4 * oracle.n_blocks + 3 * oracle.n_blocks  # + 3 gap checks
    with pytest.warns(RuntimeWarning, match="approximate"):
        approx = solve(ApproximateOracle(oracle, 0.5, 2), 0.05, n_jobs=2, **kw)
    assert not approx.certified
    _assert_v_is_sum(approx.state)


def test_compiled_pass_stops_between_steps_with_the_model_kept():
    oracle = _compact(n=300)
    state = SolverState.for_oracle(oracle, 0.05, False, None)
    with Pipeline(oracle, state, 3, 2) as pipe:
        calls = pipe.one_pass(np.random.default_rng(0), should_stop=lambda: True)
        master, helper = pipe.cpu_seconds
    # asked after 64 steps; the calls of the steps in flight were made, their answers dropped
    assert state.n_steps == 64 and 64 <= calls <= 64 + 4
    assert master >= 0 and helper >= 0
    _assert_v_is_sum(state)
    result = solve(oracle, 0.05, pipeline_lag=3, n_jobs=2, time_budget=1e-9, tol=0,
                   random_state=0)
    assert result.status == "time_budget" and result.state.passes == 1
    assert result.state.fw_steps == 64 and np.isfinite(result.gap)
    _assert_v_is_sum(result.state)


def test_the_helpers_copy_of_w_follows_moves_made_between_passes():
    """The helper keeps its copy of w from one pass to the next only if nothing else
    moved the state: a serial pass in between makes it copy w again."""
    oracle = _compact()
    states = []
    for workers in (1, 2):
        state = SolverState.for_oracle(oracle, 0.05, False, None)
        rng = np.random.default_rng(4)
        with Pipeline(oracle, state, 2, workers) as pipe:
            for k in range(4):
                pipe.one_pass(rng)
                if k == 1:
                    _fw.bcfw_pass(oracle, state, sampling_order(rng, "perm", 30), True)
        states.append(state)
    np.testing.assert_array_equal(states[0].v, states[1].v)
    _assert_v_is_sum(states[1])


def test_bench_pipeline_work_runs_the_pass_it_names(capsys):
    """The instruction-count script: the pipelined pass from the warm state does not
    depend on the threads, and with a lag it differs from the serial pass."""
    from strategies import load_bench_script
    script = load_bench_script("bench_pipeline_work")
    common = ["--synthetic", "40", "--warm", "2"]
    one = script.main(common + ["--pass", "pipeline", "--lag", "3", "--threads", "1"])
    two = script.main(common + ["--pass", "pipeline", "--lag", "3", "--threads", "2"])
    serial = script.main(common + ["--pass", "serial"])
    np.testing.assert_array_equal(one.w, two.w)
    assert one.n_steps == two.n_steps == serial.n_steps == 3 * 40
    assert np.abs(one.w - serial.w).max() > 0
    _assert_v_is_sum(one)
    out = capsys.readouterr().out
    assert out.count("ocr_like(40) pipeline pass") == 2 and "master" in out
    assert "ocr_like(40) serial pass" in out

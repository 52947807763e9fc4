"""Mini-batch BCFW (``batch_blocks``): replayed answers, rounds, threads, monotone duals."""

import pickle

import numpy as np
import pytest

from ssvm_core import BruteForceOracle, FrankWolfeSSVM, SolverState, _fw, as_oracle, solve
from ssvm_core._batch import AnswerOracle, Answers, max_scores, solve_blocks
from ssvm_core.executors import Executor, SerialExecutor, ThreadExecutor, resolve_executor
from ssvm_core.minibatch import minibatch_pass, round_blocks
from ssvm_core.objectives import dual_objective
from ssvm_core.testing import enumerate_problem, primal_by_enumeration
from ssvm_oracles import ChainModel

STEP_VARIANTS = [dict(step="fw"), dict(step="away"), dict(step="pairwise"),
                 dict(step="hybrid"), dict(step="corrective", n_samples=3),
                 dict(step="sequential", n_samples=2), dict(step="pairwise", cache=True),
                 dict(step="fw", cache=True, n_samples=2)]


def _chain(seed=0, n=30, max_len=5, blocks="dense"):
    """A small chain problem; dense blocks unless asked, so Python oracles of the same
    model (BruteForceOracle) can continue its states."""
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, max_len + 1), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=3, n_features=4, blocks=blocks), X, Y


@pytest.fixture(scope="module")
def chain_oracle():
    model, X, Y = _chain()
    return model.bind(X, Y)


def test_answers_replay_the_oracle_and_rescore_at_the_given_w(chain_oracle):
    o = chain_oracle
    rng = np.random.default_rng(1)
    w0, w1 = rng.normal(size=(2, o.n_features))
    answers = solve_blocks(o, w0, [4, 9, 0], n_samples=2)
    assert list(answers.blocks) == [4, 9, 0] and answers.replaced == 0
    replay = AnswerOracle(o, answers)
    for i in (4, 9, 0):
        labels, psi, loss, score = o.solve_py(i, w0)
        r_labels, r_psi, r_loss, r_score = replay.solve_py(i, w0)
        np.testing.assert_array_equal(r_labels, labels)
        np.testing.assert_allclose(r_psi, psi, rtol=0, atol=1e-14)
        assert r_loss == loss and r_score == pytest.approx(score, rel=1e-13)
        # At another w: the same labelling, its score H(y; w1) = L - <psi, w1>.
        r_labels, r_psi, r_loss, r_score = replay.solve_py(i, w1)
        if loss - psi @ w1 < -1e-9:                   # stale, below the truth: the truth
            assert r_score == 0.0 and r_loss == 0.0 and not r_psi.any()
        else:
            np.testing.assert_array_equal(r_labels, labels)
            assert r_score == pytest.approx(loss - psi @ w1, rel=1e-12, abs=1e-12)
        many = replay.solve_many_py(i, w0, 5)
        assert len(many) == answers.ans_ptr[answers.blocks.tolist().index(i) + 1] - \
            answers.ans_ptr[answers.blocks.tolist().index(i)]
    assert replay.fallbacks == 0
    np.testing.assert_array_equal(replay.solve_py(5, w1)[0], o.solve_py(5, w1)[0])
    assert replay.fallbacks == 1                      # no stored answer: the real oracle
    clone = pickle.loads(pickle.dumps(replay))
    assert clone.solve_py(9, w1)[3] == replay.solve_py(9, w1)[3]


def test_stale_answer_below_the_truth_becomes_the_ground_truth_corner(chain_oracle):
    o = chain_oracle
    w = np.random.default_rng(2).normal(size=o.n_features)
    answers = solve_blocks(o, w, [3])
    labels, psi, loss, _ = o.solve_py(3, w)
    w_bad = w + 100.0 * psi / (psi @ psi)             # <psi, w_bad> grows: H(y; w_bad) < 0
    assert loss - psi @ w_bad < 0
    r_labels, r_psi, r_loss, r_score = AnswerOracle(o, answers).solve_py(3, w_bad)
    assert r_loss == 0.0 and r_score == 0.0 and not r_psi.any()


def test_answers_concat_and_bad_input(chain_oracle):
    o = chain_oracle
    w = np.zeros(o.n_features)
    a, b = solve_blocks(o, w, [1, 2]), solve_blocks(o, w, [7])
    both = Answers.concat([a, b])
    assert list(both.blocks) == [1, 2, 7]
    assert both.answers_of(2)[0][2] == a.answers_of(1)[0][2]
    assert pickle.loads(pickle.dumps(both)).answers_of(2)[0][2] == b.answers_of(0)[0][2]
    with pytest.raises(ValueError, match="distinct"):
        solve_blocks(o, w, [1, 1])
    with pytest.raises(IndexError):
        solve_blocks(o, w, [o.n_blocks])
    with pytest.raises(ValueError, match="w has"):
        solve_blocks(o, np.zeros(3), [0])
    with pytest.raises(TypeError, match="Answers"):
        AnswerOracle(o, "answers")


@pytest.mark.parametrize("executor", [SerialExecutor(), ThreadExecutor(2)])
def test_max_scores_are_the_oracle_scores(chain_oracle, executor):
    o = chain_oracle
    w = np.random.default_rng(3).normal(size=o.n_features)
    expected = [max(o.solve_py(i, w)[3], 0.0) for i in range(o.n_blocks)]
    np.testing.assert_allclose(executor.max_scores(o, w), expected, rtol=1e-13)
    np.testing.assert_allclose(max_scores(o, w, np.arange(o.n_blocks)), expected, rtol=1e-13)


@pytest.mark.parametrize("sampling", ["uniform", "perm", "gap"])
def test_rounds_are_distinct_blocks_covering_n_steps(sampling):
    state = SolverState(1.0, 23, 2)
    state.block_gap_estimates[:10] = np.linspace(0, 1, 10)   # 13 unvisited, one zero gap
    rounds = list(round_blocks(np.random.default_rng(0), sampling, state, 5))
    assert [len(r) for r in rounds] == [5, 5, 5, 5, 3]
    assert all(len(set(r.tolist())) == len(r) for r in rounds)
    if sampling == "perm":
        assert sorted(np.concatenate(rounds).tolist()) == list(range(23))
    if sampling == "gap":                             # unvisited first, then by gap, never 0
        flat = np.concatenate(rounds)
        assert set(flat[:13].tolist()) == set(range(10, 23))
        assert 0 not in flat[13:15].tolist() and set(flat[15:].tolist()) <= set(range(1, 10))


def test_tau_one_replays_bcfw_bit_for_bit(chain_oracle):
    o = chain_oracle
    order = np.random.default_rng(4).permutation(o.n_blocks).astype(np.intp)
    ref = SolverState.for_oracle(o, 0.05)
    _fw.bcfw_pass(o, ref, order, True)
    _fw.bcfw_pass(o, ref, order[::-1].copy(), True)
    # perm sampling with tau = 1 visits the permutation rng.permutation(n) draws.
    got = SolverState.for_oracle(o, 0.05)

    class FixedOrder:
        def __init__(self, orders):
            self.orders = list(orders)

        def permutation(self, n):
            return self.orders.pop(0)
    for executor in (SerialExecutor(), ThreadExecutor(2)):
        state = got.copy()
        rng = FixedOrder([order, order[::-1].copy()])
        minibatch_pass(o, state, executor, rng, 1, sampling="perm")
        minibatch_pass(o, state, executor, rng, 1, sampling="perm")
        np.testing.assert_array_equal(state.w, ref.w)
        np.testing.assert_array_equal(state.block_values, ref.block_values)
        np.testing.assert_array_equal(state.avg_u, ref.avg_u)
        assert state.ell == ref.ell and state.n_steps == ref.n_steps


def test_solve_tau_one_threads_equals_serial_bcfw(chain_oracle):
    a = solve(chain_oracle, 0.05, sampling="perm", max_passes=4, tol=0, random_state=5)
    b = solve(chain_oracle, 0.05, sampling="perm", max_passes=4, tol=0, random_state=5,
              executor="threads", n_jobs=2)
    np.testing.assert_array_equal(a.w, b.w)
    assert a.state.oracle_calls == b.state.oracle_calls


@pytest.mark.parametrize("variant", STEP_VARIANTS + [dict(batch=True),
                                                     dict(sampling="gap"),
                                                     dict(box=(-0.3, 0.4), sampling="perm")])
def test_threads_follow_the_serial_run(chain_oracle, variant):
    kw = dict(max_passes=4, tol=0, random_state=6, batch_blocks=8, gap_check_every=2)
    a = solve(chain_oracle, 0.05, **kw, **variant)
    b = solve(chain_oracle, 0.05, executor="threads", n_jobs=2, **kw, **variant)
    np.testing.assert_allclose(b.w, a.w, rtol=1e-12, atol=1e-14)
    assert b.state.oracle_calls == a.state.oracle_calls
    for ra, rb in zip(a.history, b.history):
        assert rb["dual"] == pytest.approx(ra["dual"], rel=1e-12, abs=1e-15)


class _Recording(Executor):
    """Serial executor that records the dual at the start of every round."""

    def __init__(self, state):
        self.state, self.duals, self.inner = state, [], SerialExecutor()

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        self.duals.append(dual_objective(self.state))
        return self.inner.solve_blocks(oracle, w, blocks, n_samples)

    def max_scores(self, oracle, w):
        return self.inner.max_scores(oracle, w)


@pytest.mark.parametrize("variant", STEP_VARIANTS + [dict(box=(-0.2, 0.3))])
@pytest.mark.parametrize("tau", [7, 30])
def test_dual_never_decreases_within_a_pass(chain_oracle, variant, tau):
    o = chain_oracle
    variant = dict(variant)
    step, cache, n_samples = (variant.pop("step", "fw"), variant.pop("cache", False),
                              variant.pop("n_samples", 1))
    active = step != "fw" or cache or n_samples > 1
    state = SolverState.for_oracle(o, 0.05, active_sets=active, **variant)
    rng = np.random.default_rng(7)
    rec = _Recording(state)
    for _ in range(4):
        minibatch_pass(o, state, rec, rng, tau, step=step, cache=cache, n_samples=n_samples,
                       active_sets=active)
    rec.duals.append(dual_objective(state))
    assert np.all(np.diff(rec.duals) >= -1e-12 * max(1.0, abs(rec.duals[-1])))
    assert rec.duals[-1] > rec.duals[0]
    if active:
        state.check_atoms()


def test_cache_predictions_save_oracle_calls(chain_oracle):
    res = solve(chain_oracle, 0.05, step="pairwise", cache=True, batch_blocks=6,
                max_passes=8, tol=0, random_state=8, gap_check_every=4, averaging=False)
    steps = res.state.n_steps
    hits = res.state.cache_hits_local + res.state.cache_hits_global
    assert hits > 0
    gap_calls = sum(chain_oracle.n_blocks for r in res.history if r["gap"] is not None)
    # Every step that is no cache hit used an answer; mispredicted hits cost a call too.
    pass_calls = res.state.oracle_calls - gap_calls
    assert steps - hits <= pass_calls < steps


@pytest.mark.parametrize("variant", [dict(), dict(step="pairwise", cache=True),
                                     dict(batch=True), dict(box=(-0.5, 0.5))])
def test_minibatch_certificates_are_exact(variant):
    model, X, Y = _chain(9, n=6, max_len=3)
    brute = BruteForceOracle(model, X, Y)
    problem = enumerate_problem(brute)
    box = variant.get("box")
    res = solve(brute, 0.1, max_passes=5, tol=0, random_state=9, batch_blocks=4,
                gap_check_every=1, averaging=False, **variant)
    if box is None:
        primal = primal_by_enumeration(problem.psi, problem.loss, 0.1, res.w)
        assert res.gap == pytest.approx(primal - dual_objective(res.state), rel=1e-10,
                                        abs=1e-13)
    # Block gaps of the last exact check sum to the certificate, each from enumeration.
    maxes = np.array([problem.scores(i, res.state.w).max() for i in range(len(X))])
    inner = np.array([0.1 * res.state.block_vector(i) @ res.state.w for i in range(len(X))])
    np.testing.assert_allclose(res.state.block_gap_estimates,
                               inner - res.state.block_ell + maxes / len(X), atol=1e-12)
    assert res.gap >= -1e-12


def test_estimator_and_bad_options(chain_oracle):
    model, X, Y = _chain(10, n=12)
    est = FrankWolfeSSVM(model, lam=0.05, batch_blocks=4, executor="threads", n_jobs=2,
                         max_passes=3, tol=0, random_state=0).fit(X, Y)
    ref = solve(model.bind(X, Y), 0.05, batch_blocks=4, max_passes=3, tol=0, random_state=0)
    np.testing.assert_allclose(est.w_, ref.w, rtol=1e-12, atol=1e-14)
    for bad in (0, 2.5):
        with pytest.raises(ValueError, match="batch_blocks"):
            solve(chain_oracle, 0.1, batch_blocks=bad)
    with pytest.raises(ValueError, match="executor"):
        solve(chain_oracle, 0.1, executor="processes")
    with pytest.raises(TypeError, match="executor"):
        resolve_executor(3)
    ex = ThreadExecutor(2)
    assert resolve_executor(ex) is ex and isinstance(resolve_executor(None), SerialExecutor)


def test_python_oracles_run_in_one_thread_with_a_warning():
    model, X, Y = _chain(11, n=8, max_len=3)
    brute = as_oracle(BruteForceOracle(model, X, Y))
    with pytest.warns(RuntimeWarning, match="needs the GIL"):
        b = solve(brute, 0.1, batch_blocks=3, executor="threads", n_jobs=2, max_passes=2,
                  tol=0, random_state=1)
    a = solve(brute, 0.1, batch_blocks=3, max_passes=2, tol=0, random_state=1)
    np.testing.assert_array_equal(a.w, b.w)


def test_cli_batch_blocks_with_threads_follows_serial(tmp_path):
    from ssvm.cli import main
    base = ["train", "--dataset", "synthetic-chain", "--max-passes", "3", "--tol", "0",
            "--gap-check-every", "3", "--batch-blocks", "8", "--quiet"]
    assert main(base + ["--out", str(tmp_path / "serial")]) == 0
    assert main(base + ["--n-jobs", "2", "--out", str(tmp_path / "threads")]) == 0
    a, b = (np.load(tmp_path / name / "model.npz")["w"] for name in ("serial", "threads"))
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
    plain = ["train", "--dataset", "synthetic-chain", "--max-passes", "3", "--tol", "0",
             "--gap-check-every", "3", "--quiet", "--out", str(tmp_path / "bcfw")]
    assert main(plain) == 0
    assert not np.array_equal(np.load(tmp_path / "bcfw" / "model.npz")["w"], a)


def test_bench_parallel_script_and_asv_suite_run(tmp_path, monkeypatch):
    import csv
    import itertools
    from pathlib import Path

    from strategies import load_bench_script
    bench = load_bench_script("bench_parallel")
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)
    report = bench.main(["--problems", "horseseg", "ocr", "--executors", "serial", "threads",
                         "--taus", "1", "4", "--horse-images", "4", "--ocr-words", "12",
                         "--passes", "2", "--check-every", "1", "--seeds", "0", "1",
                         "--csv", str(tmp_path / "p.csv"), "--png", str(tmp_path / "p.png")])
    assert (tmp_path / "p.png").stat().st_size > 0
    rows = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert {r["kind"] for r in rows} == {"time", "gap"}
    assert len([r for r in rows if r["kind"] == "time"]) == 2 * 2 * 2
    assert report["summary"]["ocr/tau=4/median_gap_after_2"] >= 0
    monkeypatch.setenv("SSVM_BENCH_PROFILE", "fast")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import ssvm_bench.common
    import ssvm_bench.parallel
    ssvm_bench.common._bound_oracle.cache_clear()
    ssvm_bench.parallel._warm_state.cache_clear()
    suite = ssvm_bench.parallel.MiniBatchSuite()
    for tau, executor in itertools.product(*suite.params[1:]):
        suite.setup("ocr-like-fast", tau, executor)
        steps = suite.state.n_steps
        suite.time_one_pass("ocr-like-fast", tau, executor)
        suite.teardown("ocr-like-fast", tau, executor)
        assert suite.state.n_steps == steps + suite.oracle.n_blocks


def test_uniform_rounds_draw_every_subset_equally_often():
    from ssvm_core.minibatch import _distinct_uniform
    rng = np.random.default_rng(12)
    counts = {}
    for _ in range(20000):
        key = tuple(sorted(_distinct_uniform(rng, 5, 2).tolist()))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 10
    freq = np.array(list(counts.values())) / 20000
    assert np.all(np.abs(freq - 0.1) < 0.011)                 # 5 standard deviations
    assert sorted(_distinct_uniform(rng, 6, 5).tolist()) != [] and \
        len(set(_distinct_uniform(rng, 6, 5).tolist())) == 5


class _PerRound(Executor):
    """A serial executor that is not in-process for ``minibatch_pass``: every round goes
    through ``solve_blocks`` and the Python round loop (the path Dask takes)."""

    def __init__(self):
        self.inner = SerialExecutor()

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        return self.inner.solve_blocks(oracle, w, blocks, n_samples)

    def max_scores(self, oracle, w):
        return self.inner.max_scores(oracle, w)


@pytest.mark.parametrize("kind", ["plain", "box", "compact"])
@pytest.mark.parametrize("sampling", ["uniform", "perm"])
def test_compiled_rounds_equal_the_python_round_loop(kind, sampling):
    model, X, Y = _chain(seed=3, n=23)
    o = (ChainModel(n_states=3, n_features=4, blocks="compact") if kind == "compact"
         else model).bind(X, Y)
    box = (-0.3, 0.4) if kind == "box" else None
    for tau, line_search in ((1, True), (5, True), (7, False), (23, True)):
        ref = SolverState.for_oracle(o, 0.02, box=box)
        states = [ref.copy() for _ in range(3)]
        calls = []
        for executor, state in zip((_PerRound(), SerialExecutor(), ThreadExecutor(2)), states):
            rng = np.random.default_rng(tau)
            calls.append([minibatch_pass(o, state, executor, rng, tau, sampling=sampling,
                                         line_search=line_search) for _ in range(3)])
        assert states[0].compact_blocks == (kind == "compact")
        for state in states[1:]:                       # compiled (1 and 2 threads)
            np.testing.assert_array_equal(state.w, states[0].w)
            np.testing.assert_array_equal(state.block_values, states[0].block_values)
            np.testing.assert_array_equal(state.avg_u, states[0].avg_u)
            np.testing.assert_array_equal(state.block_gap_estimates,
                                          states[0].block_gap_estimates)
            assert (state.ell, state.ell_avg, state.n_steps, state.fw_steps) == \
                (states[0].ell, states[0].ell_avg, states[0].n_steps, states[0].fw_steps)
        assert calls[1] == calls[2] == calls[0] == [o.n_blocks] * 3


def test_compiled_rounds_check_input_and_book_the_steps_before_an_oracle_error():
    from ssvm_core._batch import fw_rounds
    model, X, Y = _chain(seed=3, n=12, max_len=3)
    o = model.bind(X, Y)
    state = SolverState.for_oracle(o, 0.02)
    order = np.arange(12, dtype=np.intp)
    with pytest.raises(ValueError, match="round_ptr"):
        fw_rounds(o, state, order, np.array([0, 5], dtype=np.intp), True, 2)
    with pytest.raises(ValueError, match="distinct"):
        fw_rounds(o, state, np.zeros(12, dtype=np.intp), np.array([0, 12], dtype=np.intp),
                  True, 2)
    assert state.n_steps == 0

    class Failing(BruteForceOracle):
        calls = 0

        def solve(self, i, w):
            Failing.calls += 1
            if Failing.calls == 9:
                raise RuntimeError("oracle failed")
            return super().solve(i, w)
    failing = as_oracle(Failing(model, X, Y))
    with pytest.raises(RuntimeError, match="oracle failed"):
        fw_rounds(failing, state, order, np.array([0, 4, 8, 12], dtype=np.intp), True, 2)
    assert state.n_steps == 8 and state.fw_steps == 8          # two whole rounds
    ref = SolverState.for_oracle(o, 0.02)            # the two rounds alone, same oracle
    fw_rounds(as_oracle(BruteForceOracle(model, X, Y)), ref, order[:8].copy(),
              np.array([0, 4, 8], dtype=np.intp), True, 1)
    np.testing.assert_array_equal(state.w, ref.w)
    assert state.ell == ref.ell

"""Grid searches and cross-validation with their solves in parallel (threads and Dask).

Each parallel run is compared exactly (bit for bit) with the serial computation it
promises to equal: the serial search for cold starts, a serial search per segment for
warm starts, a hand-written loop of ``grid_search`` per fold for ``validation_curve``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from python_oracles import KillingChain, PythonChain

from ssvm_core import as_oracle, solve
from ssvm_core.executors import DaskExecutor, Executor, SerialExecutor, ThreadExecutor
from ssvm_core.testing import (
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    solve_dual_qp,
)
from ssvm_oracles import ChainModel
from ssvm_paths import ValidationCurve, grid_search, mean_loss_score, validation_curve

GRID = 2.0 ** np.arange(2, -5, -1)              # 7 lambdas: segments of 4 and 3 on 2 workers
TOL = 0.01
FIELDS = ("weights", "gaps", "duals", "exact")


def _data(n=24, seed=0):
    X, Y = random_chain_data(np.random.default_rng(seed), n, 4, 3, 3)
    return ChainModel(3, 3), X, Y


def _assert_points_equal(a, b, rows=slice(None)):
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name)[rows], getattr(b, name), err_msg=name)
    assert a.statuses[rows] == b.statuses


def test_cold_grid_in_threads_equals_the_serial_search():
    model, X, Y = _data()
    serial = grid_search(model, X, Y, GRID, warm_start="cold", tol=TOL)
    parallel = grid_search(model, X, Y, GRID, warm_start="cold", tol=TOL, n_jobs=2)
    _assert_points_equal(parallel, serial)
    # the same solves, so the same oracle calls, added up in grid order
    np.testing.assert_array_equal(parallel.effective_passes, serial.effective_passes)
    np.testing.assert_array_equal(parallel.starts, np.arange(GRID.size))


@pytest.mark.parametrize("warm_start", ["keep-duals", "keep-primal"])
def test_warm_grid_in_threads_equals_a_serial_search_per_segment(warm_start):
    model, X, Y = _data()
    parallel = grid_search(model, X, Y, GRID, warm_start=warm_start, tol=TOL,
                           executor="threads", n_jobs=2)
    np.testing.assert_array_equal(parallel.starts, [0, 4])
    calls = 0                     # oracle calls of the segments before, in grid order
    for start, stop in [(0, 4), (4, 7)]:
        alone = grid_search(model, X, Y, GRID[start:stop], warm_start=warm_start, tol=TOL)
        _assert_points_equal(parallel, alone, slice(start, stop))
        np.testing.assert_array_equal(parallel.effective_passes[start:stop] * len(X),
                                      (calls + alone.effective_passes * len(X)).round())
        calls += round(alone.effective_passes[-1] * len(X))
    # the second segment started cold: it is not the serial warm search there
    serial = grid_search(model, X, Y, GRID, warm_start=warm_start, tol=TOL)
    np.testing.assert_array_equal(parallel.weights[:4], serial.weights[:4])
    assert not np.array_equal(parallel.weights[4:], serial.weights[4:])


@pytest.mark.parametrize("warm_start", ["cold", "keep-duals", "keep-primal"])
def test_one_worker_is_the_serial_loop_bit_for_bit(warm_start):
    """n_jobs=1 and the serial executor run today's loop: solve, warm-started in turn."""
    model, X, Y = _data()
    oracle = as_oracle(model.bind(X, Y))
    state, ws, gaps, calls, passes = None, [], [], 0, []
    for lam in GRID:
        if warm_start == "cold":
            state = None
        elif warm_start == "keep-primal" and state is not None:
            state.shrink_duals(lam)
        result = solve(oracle, lam, state=state, tol=TOL, averaging=False, box=None,
                       initial_gap_pass=False, step="pairwise", sampling="gap", cache=True,
                       max_passes=1000, gap_check_every=10, random_state=0)
        state = result.state
        ws.append(result.w)
        gaps.append(result.gap)
        passes.append((calls + state.oracle_calls) / oracle.n_blocks)
        if warm_start == "cold":
            calls += state.oracle_calls
    for kw in ({}, {"n_jobs": 1}, {"executor": "serial"}, {"executor": SerialExecutor()},
               {"executor": "threads", "n_jobs": 1}):
        got = grid_search(model, X, Y, GRID, warm_start=warm_start, tol=TOL, **kw)
        np.testing.assert_array_equal(got.weights, np.array(ws))
        np.testing.assert_array_equal(got.gaps, gaps)
        np.testing.assert_array_equal(got.effective_passes, passes)
        np.testing.assert_array_equal(got.starts, np.arange(GRID.size) if warm_start == "cold"
                                      else [0])


def test_every_parallel_point_is_certified_by_its_own_primal_and_dual():
    """gap = P(w) - D(alpha) with P by enumeration; D <= P* <= P by an independent QP."""
    X, Y = random_chain_data(np.random.default_rng(1), 6, 3, 2, 2)
    model = ChainModel(2, 2)
    enum = enumerate_problem(model, X, Y)
    grid = 2.0 ** np.arange(1, -2, -1)
    p_stars = [solve_dual_qp(enum.psi, enum.loss, lam).primal for lam in grid]
    for warm_start in ("cold", "keep-duals", "keep-primal"):
        result = grid_search(model, X, Y, grid, warm_start=warm_start, tol=TOL, n_jobs=2)
        assert np.all(result.certified) and result.statuses == ["converged"] * grid.size
        for lam, w, gap, dual, p_star in zip(grid, result.weights, result.gaps, result.duals,
                                             p_stars):
            primal = primal_by_enumeration(enum.psi, enum.loss, lam, w)
            assert gap == pytest.approx(primal - dual, rel=1e-9, abs=1e-12)
            assert 0 <= gap <= TOL
            assert dual <= p_star + 1e-9 and p_star <= primal + 1e-9


def test_callback_sees_the_points_in_grid_order():
    model, X, Y = _data()
    records = []
    result = grid_search(model, X, Y, GRID, warm_start="keep-duals", tol=TOL, n_jobs=2,
                         callback=records.append)
    assert [r["lam"] for r in records] == list(GRID)
    assert [r["effective_passes"] for r in records] == list(result.effective_passes)
    assert [r["gap"] for r in records] == list(result.gaps)


def _serial_validation(model, X, Y, folds, warm_start, scoring=mean_loss_score):
    """The loop validation_curve promises to equal: a serial grid search per fold."""
    rows = []
    for train, test in folds:
        search = grid_search(model, [X[i] for i in train], [Y[i] for i in train], GRID,
                             warm_start=warm_start, tol=TOL)
        scores = [scoring(model, w, [X[i] for i in test], [Y[i] for i in test])
                  for w in search.weights]
        rows.append((search, scores))
    return rows


@pytest.mark.parametrize("warm_start", ["cold", "keep-duals"])
def test_validation_curve_in_threads_equals_a_serial_loop(warm_start):
    model, X, Y = _data()
    curve = validation_curve(model, X, Y, GRID, cv=3, warm_start=warm_start, tol=TOL,
                             n_jobs=2)
    folds = [(np.r_[8:24], np.r_[0:8]), (np.r_[0:8, 16:24], np.r_[8:16]),
             (np.r_[0:16], np.r_[16:24])]                       # KFold(3), no shuffle
    for (train, test), (got_train, got_test) in zip(folds, curve.folds):
        np.testing.assert_array_equal(got_train, train)
        np.testing.assert_array_equal(got_test, test)
    rows = _serial_validation(model, X, Y, folds, warm_start)
    for j, (search, scores) in enumerate(rows):
        np.testing.assert_array_equal(curve.test_scores[:, j], scores)
        np.testing.assert_array_equal(curve.gaps[:, j], search.gaps)
        np.testing.assert_array_equal(curve.duals[:, j], search.duals)
        np.testing.assert_array_equal(curve.effective_passes[:, j], search.effective_passes)
        assert [s[j] for s in curve.statuses] == search.statuses
    assert np.all(curve.certified)
    means = np.mean([scores for _, scores in rows], axis=0)
    np.testing.assert_array_equal(curve.mean_test_scores, means)
    assert curve.best_lam == GRID[int(np.argmax(means))]
    # scores are 1 - mean Hamming loss on the held-out fold: in [0, 1], not all equal
    assert np.all((0 <= curve.test_scores) & (curve.test_scores <= 1))
    assert np.ptp(curve.mean_test_scores) > 0


def _negative_norm(model, w, X, Y):
    return -float(np.linalg.norm(w))


def test_validation_curve_takes_folds_and_a_scorer():
    model, X, Y = _data(n=12)
    folds = [(np.r_[0:6], np.r_[6:12]), (np.r_[6:12], np.r_[0:6])]
    curve = validation_curve(model, X, Y, GRID, cv=folds, scoring=_negative_norm, tol=TOL,
                             n_jobs=2)
    rows = _serial_validation(model, X, Y, folds, "keep-duals", _negative_norm)
    for j, (_, scores) in enumerate(rows):
        np.testing.assert_array_equal(curve.test_scores[:, j], scores)
    # the smallest norm is at the largest lambda: the first point
    assert curve.best_index == 0 and curve.best_lam == GRID[0]


class _Splitter:
    def split(self, X, Y):
        n = len(X)
        yield np.arange(n // 2, n), np.arange(n // 2)
        yield np.arange(n // 2), np.arange(n // 2, n)


def test_validation_curve_takes_a_splitter():
    model, X, Y = _data(n=12)
    a = validation_curve(model, X, Y, GRID[:3], cv=_Splitter(), tol=TOL)
    b = validation_curve(model, X, Y, GRID[:3], cv=2, tol=TOL)
    assert isinstance(a, ValidationCurve)
    np.testing.assert_array_equal(a.test_scores, b.test_scores)     # KFold's folds


def test_a_python_oracle_is_solved_one_problem_at_a_time():
    model, X, Y = _data()
    oracle = PythonChain(model.bind(X, Y))
    serial = grid_search(oracle, lams=GRID[:4], tol=TOL, box=None)
    with pytest.warns(RuntimeWarning, match="needs the GIL"):
        threads = grid_search(oracle, lams=GRID[:4], tol=TOL, box=None, n_jobs=2)
    _assert_points_equal(threads, serial)
    np.testing.assert_array_equal(threads.starts, [0])          # one segment: one worker


class _RoundExecutor(Executor):
    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        raise NotImplementedError

    def max_scores(self, oracle, w):
        raise NotImplementedError


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_jobs": 0}, ValueError, "n_jobs must be a nonzero integer"),
    ({"n_jobs": 1.5}, ValueError, "n_jobs must be a nonzero integer"),
    ({"executor": "gpu"}, ValueError, "executor must be None, 'serial', 'threads'"),
    ({"executor": object()}, TypeError, "executor must be None, 'serial', 'threads'"),
    ({"executor": _RoundExecutor()}, TypeError, "_RoundExecutor runs oracle calls only"),
    ({"executor": "serial", "n_jobs": 2}, ValueError, "n_jobs=2 counts threads"),
    ({"executor": ThreadExecutor(2), "n_jobs": -1}, ValueError, "n_jobs=-1 counts threads"),
    ({"n_jobs": 2, "random_state": np.random.default_rng(0)}, ValueError,
     "random_state must be an int or None when solves run in parallel"),
])
def test_bad_parallel_input_raises(kwargs, error, match):
    model, X, Y = _data(n=6)
    with pytest.raises(error, match=match):
        grid_search(model, X, Y, GRID[:2], **kwargs)
    with pytest.raises(error, match=match):
        validation_curve(model, X, Y, GRID[:2], cv=2, **kwargs)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"cv": 1}, ValueError, "at least 2 folds"),
    ({"cv": 7}, ValueError, "at most the 6 examples"),
    ({"cv": [([0, 1], [9])]}, ValueError, r"fold 0: .* in \[0, 6\)"),
    ({"cv": []}, ValueError, "no folds"),
    ({"cv": 2.5}, TypeError, "cv must be an int"),
    ({"scoring": "accuracy"}, TypeError, "scoring must be a callable"),
    ({"warm_start": "hot"}, ValueError, "warm_start"),
])
def test_bad_validation_input_raises(kwargs, error, match):
    model, X, Y = _data(n=6)
    with pytest.raises(error, match=match):
        validation_curve(model, X, Y, GRID[:2], **kwargs)
    with pytest.raises(TypeError, match="structured model with bind"):
        validation_curve(model.bind(X, Y), X, Y, GRID[:2])


distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def inprocess_client():
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                            dashboard_address=None) as client:
        yield client


@pytest.mark.parametrize("warm_start", ["cold", "keep-primal"])
def test_dask_equals_threads(inprocess_client, warm_start):
    model, X, Y = _data()
    threads = grid_search(model, X, Y, GRID, warm_start=warm_start, tol=TOL, n_jobs=2)
    dask = grid_search(model, X, Y, GRID, warm_start=warm_start, tol=TOL,
                       executor=inprocess_client)
    _assert_points_equal(dask, threads)
    np.testing.assert_array_equal(dask.effective_passes, threads.effective_passes)
    np.testing.assert_array_equal(dask.starts, threads.starts)
    curve_threads = validation_curve(model, X, Y, GRID, cv=3, warm_start=warm_start, tol=TOL,
                                     n_jobs=2)
    curve_dask = validation_curve(model, X, Y, GRID, cv=3, warm_start=warm_start, tol=TOL,
                                  executor=inprocess_client)
    for name in ("test_scores", "gaps", "duals", "effective_passes"):
        np.testing.assert_array_equal(getattr(curve_dask, name), getattr(curve_threads, name))
    assert curve_dask.best_lam == curve_threads.best_lam


@pytest.mark.filterwarnings("ignore:PythonOracle is an approximate max oracle")
def test_an_inexact_oracle_on_dask_is_reported_here(inprocess_client):
    model, X, Y = _data(n=8)
    oracle = PythonChain(model.bind(X, Y), exact=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                        # the workers' own warnings
        serial = grid_search(oracle, lams=GRID[:3], tol=TOL, box=None, warm_start="cold")
    assert not np.any(serial.certified)
    with pytest.warns(RuntimeWarning, match="approximate on a worker of the executor at 3"):
        dask = grid_search(oracle, lams=GRID[:3], tol=TOL, box=None, warm_start="cold",
                           executor=inprocess_client)
    assert not np.any(dask.exact) and not np.any(dask.certified)
    np.testing.assert_array_equal(dask.gaps, serial.gaps)


@pytest.fixture(scope="module")
def process_client():
    """One worker process (its nanny restarts it when it dies)."""
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_an_oracle_that_does_not_pickle_is_named(process_client):
    import threading

    model, X, Y = _data(n=6)
    oracle = PythonChain(model.bind(X, Y))
    oracle.lock = threading.Lock()                             # a lock does not pickle
    with pytest.raises(TypeError) as info:
        grid_search(oracle, lams=GRID[:2], tol=TOL, box=None, executor=process_client)
    message = str(info.value)
    assert "PythonChain cannot be sent to the Dask workers (an oracle must pickle)" in message
    assert "cannot pickle '_thread.lock' object" in message


def test_problem_executors():
    from ssvm_core.problems import map_problems, problem_executor, problem_workers

    assert isinstance(problem_executor(), SerialExecutor)
    assert isinstance(problem_executor(n_jobs=2), ThreadExecutor)
    assert problem_workers(problem_executor(n_jobs=2)) == 2
    assert problem_workers(problem_executor(n_jobs=2), needs_gil=True) == 1
    # results come in job order whatever finishes first
    import time

    def job(delay, value):
        time.sleep(delay)
        return value

    got = list(map_problems(ThreadExecutor(2), job, [0.05, 0.0], [(0, (k,)) for k in range(3)]
                            + [(1, (k,)) for k in range(3, 6)]))
    assert got == list(range(6))


def test_a_killed_worker_leaves_the_search_undisturbed(process_client, tmp_path):
    """The only worker dies mid-solve (its nanny restarts it): the oracle is sent again
    and the solve submitted again, with the serial search's result."""
    model, X, Y = _data(n=8)
    oracle = KillingChain(model.bind(X, Y), tmp_path / "killed")
    undisturbed = grid_search(oracle, lams=GRID[:4], tol=TOL, box=None)
    executor = DaskExecutor(process_client)
    result = grid_search(oracle, lams=GRID[:4], tol=TOL, box=None, executor=executor)
    assert (tmp_path / "killed").exists() and executor.resubmitted >= 1
    _assert_points_equal(result, undisturbed)
    np.testing.assert_array_equal(result.effective_passes, undisturbed.effective_passes)

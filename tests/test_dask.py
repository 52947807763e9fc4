"""Bound oracles pickle; mini-batch BCFW on Dask equals the serial run, even losing a worker."""

import os
import pickle

import numpy as np
import pytest

from ssvm_core import BruteForceOracle, as_oracle, solve
from ssvm_core._batch import AnswerOracle, solve_blocks
from ssvm_core.executors import DaskExecutor, SerialExecutor
from ssvm_data import horseseg_like, lsp_like
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
from ssvm_data.synthetic import chain, matching, multiclass
from ssvm_oracles import (
    ApproximateOracle,
    ChainModel,
    CountingOracle,
    DispatchOracle,
    EnumerationModel,
    GraphCutModel,
    MatchingModel,
    MulticlassModel,
    PoseModel,
    ProductOracle,
)


def _pair_feature(x, y):
    return np.array([x[0] * y[0], x[1] * y[1], 1.0])


def _hamming(truth, labels):
    return float(np.sum(np.asarray(truth) != np.asarray(labels)))


def _bound_oracles():
    """(name, oracle, box or None) for every model's bound oracle and every combinator."""
    Xc, Yc = chain(5, length=(1, 4), n_states=3, n_features=2, random_state=0)
    Xm, Ym = multiclass(5, n_features=3, n_classes=3, random_state=1)
    Xa, Ya = matching(5, length=(1, 3), n_features=4, band=1.0, random_state=2)
    Xg, Yg = horseseg_like(3, n_nodes=8, n_unary=4, n_pairwise=3, random_state=3)
    Xp, Yp = lsp_like(3, grid=(6, 6), n_types=2, random_state=4)
    chain_o = ChainModel(3, 2).bind(Xc, Yc)
    multi_o = MulticlassModel(3, 3).bind(Xm, Ym)
    graph, pose = GraphCutModel(), PoseModel(POSE_TREE_PARENTS, SCALE_PARTS, n_types=2)
    ranking = EnumerationModel(_pair_feature, 3, [[0, 1], [1, 0], [1, 1]], loss=_hamming)
    brute = BruteForceOracle(ChainModel(3, 2), Xc[:3], Yc[:3])
    out = [("chain", chain_o, None), ("multiclass", multi_o, None),
           ("matching", MatchingModel().bind(Xa, Ya), None),
           ("graphcut", graph.bind(Xg, Yg), graph.weight_bounds()),
           ("graphcut-float32", GraphCutModel(feature_dtype="float32").bind(Xg, Yg),
            graph.weight_bounds()),
           ("pose", pose.bind(Xp, Yp), pose.weight_bounds()),
           ("enumeration", as_oracle(ranking.bind(list(np.eye(2)[[0, 1, 0]]),
                                                  [[0, 1], [1, 1], [1, 0]])), None),
           ("python", as_oracle(brute), None),
           ("counting", CountingOracle(chain_o, timing=True), None),
           ("approximate", ApproximateOracle(chain_o, 0.5, 2), None),
           ("product", ProductOracle([chain_o, multi_o]), None),
           ("dispatch", DispatchOracle([chain_o, brute]), None)]
    try:
        out.append(("pymaxflow", as_oracle(GraphCutModel(backend="pymaxflow").bind(Xg, Yg)),
                    graph.weight_bounds()))
    except ImportError:                              # the optional graphcut extra
        pass
    return out


@pytest.mark.parametrize("name, oracle, box", _bound_oracles(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_every_bound_oracle_pickles_with_the_same_answers(name, oracle, box):
    rng = np.random.default_rng(5)
    w = rng.normal(size=oracle.n_features)
    if box is not None:
        w = np.clip(w, *box)
    clones = [pickle.loads(pickle.dumps(oracle))]
    clones.append(pickle.loads(pickle.dumps(AnswerOracle(
        oracle, solve_blocks(oracle, w, np.arange(oracle.n_blocks))))))
    fresh = pickle.loads(pickle.dumps(oracle))        # stateful oracles: compare fresh copies
    for clone in clones:
        assert (clone.n_blocks, clone.n_features, clone.max_labels) == \
            (oracle.n_blocks, oracle.n_features, oracle.max_labels)
        for i in range(oracle.n_blocks):
            labels, psi, loss, score = fresh.solve_py(i, w)
            got = clone.solve_py(i, w)
            if score > 0:                            # a zero score may be the truth's
                np.testing.assert_array_equal(got[0], labels)
            np.testing.assert_allclose(got[1], psi, rtol=0, atol=1e-12)
            assert got[2] == loss and got[3] == pytest.approx(score, rel=1e-12, abs=1e-12)
            if score > 0:
                e_psi, e_loss, e_score = clone.evaluate_py(i, labels, w)
                np.testing.assert_allclose(e_psi, psi, rtol=0, atol=1e-12)
                assert e_loss == loss


distributed = pytest.importorskip("distributed")


def _chain_oracle(seed=0, n=40):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, 6), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=3, n_features=4).bind(X, Y)


@pytest.fixture(scope="module")
def inprocess_client():
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1,
                            dashboard_address=None) as client:
        yield client


@pytest.mark.parametrize("variant", [dict(), dict(step="pairwise", cache=True),
                                     dict(step="corrective", n_samples=2), dict(batch=True),
                                     dict(sampling="gap", box=(-0.4, 0.4))])
def test_inprocess_dask_cluster_equals_serial(inprocess_client, variant):
    oracle = _chain_oracle()
    kw = dict(max_passes=3, tol=0, random_state=2, batch_blocks=6, gap_check_every=3)
    a = solve(oracle, 0.05, **kw, **variant)
    b = solve(oracle, 0.05, executor=inprocess_client, **kw, **variant)
    np.testing.assert_allclose(b.w, a.w, rtol=1e-12, atol=1e-14)
    assert b.state.oracle_calls == a.state.oracle_calls
    assert b.gap == pytest.approx(a.gap, rel=1e-10)


def test_dask_shards_and_max_scores(inprocess_client):
    oracle = _chain_oracle(1, n=13)
    w = np.random.default_rng(3).normal(size=oracle.n_features)
    with DaskExecutor(inprocess_client, n_shards=3) as ex:
        np.testing.assert_allclose(ex.max_scores(oracle, w),
                                   SerialExecutor().max_scores(oracle, w), rtol=1e-13)
        blocks = np.array([12, 0, 5, 6, 1])
        got = ex.solve_blocks(oracle, w, blocks, n_samples=2)
        ref = solve_blocks(oracle, w, blocks, 2)
        assert sorted(got.blocks.tolist()) == sorted(blocks.tolist())
        for b, i in enumerate(got.blocks):
            mine, theirs = got.answers_of(b), ref.answers_of(blocks.tolist().index(i))
            assert len(mine) == len(theirs)
            for (l1, (i1, v1), L1), (l2, (i2, v2), L2) in zip(mine, theirs):
                np.testing.assert_array_equal(l1, l2)
                np.testing.assert_array_equal(i1, i2)
                np.testing.assert_array_equal(v1, v2)
                assert L1 == L2
        assert len(ex._shards) == 3
    assert ex._shards == []
    with pytest.raises(ValueError, match="n_shards"):
        DaskExecutor(inprocess_client, n_shards=0)


def _pose_oracle(n=5):
    model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS, n_types=2)
    X, Y = lsp_like(n, grid=(6, 6), n_types=2, random_state=6)
    lower, upper = model.weight_bounds()
    w = np.clip(np.random.default_rng(7).normal(size=model.size_joint_feature), lower, upper)
    return model.bind(X, Y), w


def test_pose_oracle_takes_blocks():
    oracle, w = _pose_oracle()
    sub = oracle.take_blocks([3, 1])
    assert sub.n_blocks == 2 and sub.n_features == oracle.n_features
    for k, i in enumerate([3, 1]):
        for a, b in zip(sub.solve_py(k, w), oracle.solve_py(i, w)):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(IndexError):
        oracle.take_blocks([5])
    with pytest.raises(ValueError, match="indices"):
        oracle.take_blocks([])


def test_dask_shards_of_a_slicable_oracle_hold_only_their_blocks(inprocess_client):
    oracle, w = _pose_oracle()
    with DaskExecutor(inprocess_client, n_shards=2) as ex:
        got = ex.solve_blocks(oracle, w, np.array([4, 0, 2]))
        shards = inprocess_client.gather(ex._shards)
        assert [s.oracle.n_blocks for s in shards] == [2, 3]     # blocks [0, 2) and [2, 5)
        ref = solve_blocks(oracle, w, got.blocks)
        np.testing.assert_array_equal(got.labels, ref.labels)
        np.testing.assert_array_equal(got.psi_val, ref.psi_val)
        np.testing.assert_allclose(ex.max_scores(oracle, w),
                                   SerialExecutor().max_scores(oracle, w), rtol=1e-13)


class KillingOracle:
    """A Python oracle that kills the Dask worker process running it, once.

    The first call for ``block`` on a worker (never in the client) creates
    ``marker`` and exits the process, in the middle of a round.
    """

    def __init__(self, oracle, marker, block):
        self.oracle, self.marker, self.block = oracle, str(marker), block
        self.n_blocks, self.n_features = oracle.n_blocks, oracle.n_features
        self.max_labels = oracle.max_labels

    def solve(self, i, w):
        if i == self.block and not os.path.exists(self.marker):
            try:
                distributed.get_worker()
            except ValueError:                       # in the client
                pass
            else:
                open(self.marker, "w").close()
                os._exit(1)
        labels, psi, loss, _ = self.oracle.solve_py(i, w)
        return labels, psi, loss

    def evaluate(self, i, labels, w):
        psi, loss, _ = self.oracle.evaluate_py(i, labels, w)
        return psi, loss


def test_killed_worker_mid_round_gives_the_undisturbed_result(tmp_path):
    marker = tmp_path / "killed"
    oracle = as_oracle(KillingOracle(_chain_oracle(2, n=30), marker, block=17))
    kw = dict(max_passes=3, tol=0, random_state=4, batch_blocks=8, gap_check_every=3)
    undisturbed = solve(oracle, 0.05, **kw)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        executor = DaskExecutor(client)
        result = solve(oracle, 0.05, executor=executor, **kw)
    assert marker.exists() and executor.resubmitted >= 1
    np.testing.assert_allclose(result.w, undisturbed.w, rtol=1e-12, atol=1e-14)
    assert result.gap == pytest.approx(undisturbed.gap, rel=1e-10)
    assert result.state.oracle_calls == undisturbed.state.oracle_calls


def test_cli_dask_local_cluster_follows_serial(tmp_path):
    from ssvm.cli import main
    base = ["train", "--dataset", "synthetic-chain", "--max-passes", "2", "--tol", "0",
            "--gap-check-every", "2", "--batch-blocks", "16", "--quiet"]
    assert main(base + ["--out", str(tmp_path / "serial")]) == 0
    assert main(base + ["--dask-local", "1", "--out", str(tmp_path / "dask")]) == 0
    a, b = (np.load(tmp_path / name / "model.npz")["w"] for name in ("serial", "dask"))
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
    with pytest.raises(SystemExit):
        main(base + ["--dask-local", "1", "--scheduler", "tcp://127.0.0.1:1"])


# ---------------------------------------------------------------------------
# Certificates and models survive distribution


class TiringOracle:
    """A Python oracle that stops being exact after ``calls`` solves (as a graph-cut
    oracle does once it falls back to loopy max-product): the copy on a worker tires,
    the caller's copy never answers and stays exact."""

    def __init__(self, oracle, calls):
        self.oracle, self.calls, self.n_blocks = oracle, calls, oracle.n_blocks
        self.n_features, self.max_labels = oracle.n_features, oracle.max_labels

    @property
    def exact(self):
        return self.calls > 0

    def solve(self, i, w):
        self.calls -= 1
        labels, psi, loss, _ = self.oracle.solve_py(i, w)
        return labels, psi, loss

    def evaluate(self, i, labels, w):
        psi, loss, _ = self.oracle.evaluate_py(i, labels, w)
        return psi, loss


class SlowOracle(TiringOracle):
    """An exact Python oracle whose calls take ``seconds``."""

    def __init__(self, oracle, seconds):
        super().__init__(oracle, calls=1)
        self.seconds = seconds

    @property
    def exact(self):
        return True

    def solve(self, i, w):
        import time
        time.sleep(self.seconds)
        return super().solve(i, w)


@pytest.fixture(scope="module")
def process_client():
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_an_inexact_answer_on_a_worker_makes_the_run_uncertified(process_client):
    oracle = TiringOracle(_chain_oracle(3, n=20), calls=25)
    serial = solve(as_oracle(TiringOracle(_chain_oracle(3, n=20), calls=25)), 0.05,
                   max_passes=3, batch_blocks=5, random_state=0)
    assert not serial.certified                              # serially it is flagged
    with pytest.warns(RuntimeWarning, match="on a worker of the executor"):
        result = solve(as_oracle(oracle), 0.05, max_passes=3, batch_blocks=5,
                       random_state=0, executor=process_client)
    assert oracle.exact                                      # the caller's copy never ran
    assert not result.certified


def test_a_failed_scatter_shows_its_own_error(process_client):
    import threading

    oracle = as_oracle(TiringOracle(_chain_oracle(3, n=8), calls=100))
    oracle.obj.lock = threading.Lock()                       # a lock does not pickle
    with pytest.raises(Exception) as info:
        solve(oracle, 0.05, max_passes=1, batch_blocks=4, executor=process_client)
    message = str(info.value)
    assert "TiringOracle cannot be sent to the Dask workers" in message, message
    assert "cannot pickle '_thread.lock' object" in message


def test_the_time_budget_ends_a_pass_between_rounds(inprocess_client):
    oracle = as_oracle(SlowOracle(_chain_oracle(4, n=40), seconds=0.01))
    result = solve(oracle, 0.05, max_passes=50, batch_blocks=2, time_budget=0.1,
                   gap_check_every=1000, initial_gap_pass=False, random_state=0,
                   executor=inprocess_client)
    assert result.status == "time_budget"
    assert result.state.passes == 1 and result.state.n_steps < 40   # stopped mid-pass
    result.state.check()


def test_a_fitted_estimator_on_dask_pickles_clones_and_grid_searches(inprocess_client):
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    from ssvm_core import FrankWolfeSSVM

    rng = np.random.default_rng(5)
    X = [rng.normal(size=(rng.integers(1, 5), 4)) for _ in range(24)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    svm = FrankWolfeSSVM(ChainModel(3), lam=0.1, max_passes=3, batch_blocks=4,
                         executor=inprocess_client, random_state=0).fit(X, Y)
    loaded = pickle.loads(pickle.dumps(svm))
    assert loaded.executor is None and svm.executor is inprocess_client
    np.testing.assert_array_equal(loaded.w_, svm.w_)
    assert [p.tolist() for p in loaded.predict(X)] == [p.tolist() for p in svm.predict(X)]
    copy = clone(svm)
    assert copy.executor is inprocess_client and not hasattr(copy, "w_")
    np.testing.assert_allclose(copy.fit(X, Y).w_, svm.w_, rtol=1e-12, atol=1e-14)
    search = GridSearchCV(svm, {"lam": [0.1, 1.0]}, cv=2).fit(X, Y)
    assert search.best_estimator_.executor is inprocess_client
    pickle.loads(pickle.dumps(search))

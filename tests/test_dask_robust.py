"""Distributed runs keep their model: Ctrl-C to the process group, killed and lost workers,
and the shards' copies of w updated by their changed entries only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from ssvm_core import SolverState, solve
from ssvm_core.executors import DaskExecutor, _WVersions
from ssvm_core.objectives import dual_objective, primal_objective
from ssvm_data.synthetic import multiclass
from ssvm_oracles import ChainModel, MulticlassModel

distributed = pytest.importorskip("distributed")


def _chain_oracle(seed=0, n=40):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, 6), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=3, n_features=4).bind(X, Y)


def _wide_oracle():
    """Multiclass with 50 classes: a block step changes 2 of the 50 class rows of w."""
    X, Y = multiclass(24, n_features=5, n_classes=50, random_state=0)
    return MulticlassModel(50, 5).bind(X, Y)


def _assert_certified(result, oracle, lam):
    """w = sum of the block states, and the gap is P(w) - D, each evaluated anew."""
    state = result.state
    state.check(atol=1e-12)
    averaged = result.iterate == "average"
    primal = primal_objective(oracle, lam, result.w)
    assert result.gap == pytest.approx(primal - dual_objective(state, averaged=averaged),
                                       rel=1e-10, abs=1e-12)


@pytest.fixture(scope="module")
def two_workers():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        yield cluster, client


# ---------------------------------------------------------------------------
# Sparse changes of w


def test_w_versions_send_the_union_of_the_changes_since_a_shard_s_version():
    versions = _WVersions()
    w = np.zeros(10)
    versions.advance(w)
    assert versions.version == 1 and versions.changes_since(None) is None
    w[[2, 7]] = 1.0
    versions.advance(w)
    w[[7, 9]] = -0.0                      # -0.0 differs from 0.0 bit for bit: sent
    versions.advance(w)
    versions.advance(w)                   # unchanged: no new version
    assert versions.version == 3
    np.testing.assert_array_equal(versions.changes_since(1), [2, 7, 9])
    np.testing.assert_array_equal(versions.changes_since(2), [7, 9])
    assert versions.changes_since(3).shape == (0,)
    versions.forget_before(2)
    assert versions.changes_since(1) is None          # forgotten: sent whole
    np.testing.assert_array_equal(versions.changes_since(2), [7, 9])
    w[:] = 5.0                            # a change of every entry is not kept
    versions.advance(w)
    assert versions.changes_since(3) is None
    np.testing.assert_array_equal(versions.w, w)


@pytest.mark.parametrize("variant", [dict(), dict(step="pairwise", cache=True)])
def test_sparse_changes_of_w_give_the_dense_run_bit_for_bit(two_workers, variant):
    _, client = two_workers
    oracle = _wide_oracle()
    kw = dict(max_passes=2, tol=0, random_state=1, batch_blocks=2, gap_check_every=1,
              **variant)
    runs = {}
    for sparse in (False, True):
        with DaskExecutor(client, sparse_w=sparse) as executor:
            runs[sparse] = (solve(oracle, 0.01, executor=executor, **kw), executor)
    (dense, ex_dense), (sparse, ex_sparse) = runs[False], runs[True]
    np.testing.assert_array_equal(sparse.w, dense.w)
    np.testing.assert_array_equal(sparse.state.w, dense.state.w)
    assert sparse.gap == dense.gap
    assert ex_dense.w_messages == ex_dense.dense_messages == ex_sparse.w_messages
    # the first message to each shard is whole; most later ones are a few entries
    assert 2 <= ex_sparse.dense_messages < ex_sparse.w_messages / 4
    assert ex_sparse.bytes_sent < ex_dense.bytes_sent / 2
    serial = solve(oracle, 0.01, **kw)
    np.testing.assert_allclose(sparse.w, serial.w, rtol=1e-12, atol=1e-14)


def test_a_shard_whose_copy_of_w_is_not_the_one_assumed_gets_it_whole(two_workers):
    _, client = two_workers
    oracle = _wide_oracle()
    w = np.random.default_rng(0).normal(size=oracle.n_features)
    with DaskExecutor(client) as executor:
        reference = executor.max_scores(oracle, w)
        w2 = w.copy()
        w2[[3, 40]] += 1.0
        executor._held[0] -= 1            # as if its last update had been lost
        dense_before = executor.dense_messages
        got = executor.max_scores(oracle, w2)
        assert executor.dense_messages == dense_before + 1     # shard 0 once more, whole
        np.testing.assert_array_equal(got, executor.max_scores(oracle, w2))
        np.testing.assert_allclose(got, [oracle.solve_py(i, w2)[3]
                                         for i in range(oracle.n_blocks)], rtol=1e-13)
        assert not np.array_equal(got, reference)


# ---------------------------------------------------------------------------
# Killed and lost workers


def _kill_workers_at(client, at_pass, how_many):
    """A callback that kills ``how_many`` worker processes after pass ``at_pass``."""
    killed = []

    def callback(record):
        if record["pass"] == at_pass and not killed:
            pids = sorted(client.run(os.getpid).values())[:how_many]
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed.extend(pids)

    return callback, killed


def _killed_worker_run(client):
    """A run whose first worker is killed after pass 1 equals the undisturbed one and is
    certified."""
    oracle = _chain_oracle(1, n=24)
    kw = dict(max_passes=3, tol=0, random_state=3, batch_blocks=6, gap_check_every=2)
    undisturbed = solve(oracle, 0.05, **kw)
    callback, killed = _kill_workers_at(client, 1, 1)
    executor = DaskExecutor(client)
    result = solve(oracle, 0.05, executor=executor, callback=callback, **kw)
    assert len(killed) == 1 and executor.resubmitted >= 1
    assert result.status == "max_passes" and result.certified
    np.testing.assert_allclose(result.w, undisturbed.w, rtol=1e-12, atol=1e-14)
    assert result.state.oracle_calls == undisturbed.state.oracle_calls
    _assert_certified(result, oracle, 0.05)
    return killed


def test_the_only_worker_killed_is_restarted_gets_its_shard_and_ignores_sigint():
    from ssvm_core.dask_cluster import local_cluster

    with local_cluster(1, silence_logs=50) as cluster, distributed.Client(cluster) as client:
        (pid,) = client.run(os.getpid).values()
        os.kill(pid, signal.SIGINT)                       # ignored
        time.sleep(0.3)
        assert list(client.run(os.getpid).values()) == [pid]
        _killed_worker_run(client)                        # the nanny starts another one
        handlers = client.run(lambda: (os.getpid(), int(signal.getsignal(signal.SIGINT))))
        assert [h for _, h in handlers.values()] == [int(signal.SIG_IGN)]
        assert [p for p, _ in handlers.values()] != [pid]


def test_one_of_two_workers_killed_mid_run(two_workers):
    _, client = two_workers
    _killed_worker_run(client)
    client.wait_for_workers(2, timeout=60)        # its nanny restarts it for the next tests


def test_losing_every_worker_stops_the_run_with_the_model_kept():
    oracle = _chain_oracle(2, n=30)
    kw = dict(tol=0, random_state=5, batch_blocks=6, gap_check_every=1)
    two_passes = solve(oracle, 0.05, max_passes=2, **kw)
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:

        def callback(record):
            if record["pass"] == 2:       # the only worker leaves; none comes back
                cluster.scale(0)
                while client.scheduler_info()["workers"]:
                    time.sleep(0.02)

        executor = DaskExecutor(client, worker_timeout=0.5)
        with pytest.warns(RuntimeWarning, match="workers lost.*model and its state are kept"):
            result = solve(oracle, 0.05, max_passes=10, executor=executor,
                           callback=callback, **kw)
    assert result.status == "workers lost" and np.isnan(result.gap)
    # the steps of the two passes made are all there, and consistent
    np.testing.assert_allclose(result.state.w, two_passes.state.w, rtol=1e-12, atol=1e-14)
    result.state.check(atol=1e-12)
    assert result.history[-1]["pass"] == result.state.passes
    # and it resumes (serially here) to a certified gap
    resumed = solve(oracle, 0.05, max_passes=2, state=result.state, **kw)
    _assert_certified(resumed, oracle, 0.05)


# ---------------------------------------------------------------------------
# Ctrl-C to the whole process group (a terminal's Ctrl-C)


def _wait_for(proc, text, timeout=120.0):
    """Read ``proc``'s stdout until a line starts with ``text``; the lines read."""
    lines, start = [], time.monotonic()
    while time.monotonic() - start < timeout:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(text):
            return lines
    proc.kill()
    raise AssertionError(f"no line {text!r} in {lines} / {proc.stderr.read()}")


def _group_process(args, **kwargs):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True, **kwargs)


LIBRARY_RUN = textwrap.dedent("""
    import pickle, sys
    import distributed
    import numpy as np
    from ssvm_core import FrankWolfeSSVM
    from ssvm_core.dask_cluster import local_cluster
    from ssvm_core.executors import DaskExecutor
    from ssvm_oracles import ChainModel

    rng = np.random.default_rng(0)
    X = [rng.normal(size=(rng.integers(1, 6), 4)) for _ in range(60)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    if sys.argv[2] == "ours":
        cluster = local_cluster(2, silence_logs=50)
    else:                                   # workers that die of Ctrl-C
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=":0", silence_logs=50)
    client = distributed.Client(cluster)
    try:
        svm = FrankWolfeSSVM(ChainModel(3), lam=0.01, tol=0, max_passes=10**6,
                             batch_blocks=4, gap_check_every=10**6, random_state=0,
                             # the plain cluster's workers die of Ctrl-C: the stopping
                             # run waits this long for one (the default 60 s only
                             # lengthens the test)
                             executor=DaskExecutor(client, worker_timeout=10),
                             callback=lambda rec: print("pass", rec["pass"], flush=True))
        svm.fit(X, Y)
        print("workers", len(client.scheduler_info()["workers"]), flush=True)
        svm.set_params(callback=None)
        with open(sys.argv[1], "wb") as f:
            pickle.dump((svm, [p.tolist() for p in svm.predict(X)]), f)
        print("status", svm.status_, flush=True)
    finally:
        client.close()
        try:
            cluster.close()
        except KeyError as exc:
            # distributed's SpecCluster can lose a race while its nannies restart the workers
            # Ctrl-C killed (a worker address missing from scheduler_info): the plain
            # cluster's shutdown, not the run, whose model is saved above
            if sys.argv[2] == "ours":
                raise
            print("cluster close:", repr(exc), file=sys.stderr)
""")


@pytest.mark.slow(seconds=12)
@pytest.mark.skipif(os.name != "posix", reason="process groups")
@pytest.mark.parametrize("cluster", ["ours", "plain"])
def test_sigint_to_the_process_group_keeps_the_library_s_model(tmp_path, cluster):
    """Our local cluster's workers outlive Ctrl-C; a plain LocalCluster's die of it (their
    nannies may or may not have restarted them when the executor looks), and the run still
    stops after its round with the model kept."""
    import pickle

    out = tmp_path / "svm.pkl"
    proc = _group_process([sys.executable, "-c", LIBRARY_RUN, str(out), cluster])
    _wait_for(proc, "pass 1")                              # training, on the workers
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "status interrupted" in stdout and "interrupted by SIGINT" in stderr
    if cluster == "ours":
        assert "workers 2" in stdout                       # the workers outlived Ctrl-C
    with open(out, "rb") as f:
        svm, predictions = pickle.load(f)
    assert svm.status_ == "interrupted" and svm.state_.n_steps > 0
    svm.state_.check(atol=1e-12)
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(rng.integers(1, 6), 4)) for _ in range(60)]
    assert [p.tolist() for p in svm.predict(X)] == predictions


@pytest.mark.slow(seconds=3)
@pytest.mark.skipif(os.name != "posix", reason="process groups")
def test_sigint_to_the_process_group_keeps_ssvm_train_s_outputs(tmp_path):
    from ssvm.cli import main
    from ssvm_core import load_model

    out = tmp_path / "run"
    proc = _group_process([sys.executable, "-m", "ssvm", "train", "--dataset",
                           "synthetic-chain", "--tol", "0", "--max-passes", "1000000",
                           "--gap-check-every", "1000000", "--batch-blocks", "4",
                           "--dask-local", "2", "--quiet", "--out", str(out)])
    line = _wait_for(proc, "Dask: a local cluster of 2 worker processes at ")[-1]
    # training has started (the stop handler is in place) once the shards are scattered
    with distributed.Client(line.split(" at ")[1].split()[0], timeout=60) as watcher:
        while not watcher.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
            time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "status interrupted" in stdout and "interrupted by SIGINT" in stderr
    state = SolverState.load(out / "state.npz")
    assert state.n_steps > 0
    state.check(atol=1e-12)
    svm = load_model(out / "model.npz")
    import ssvm_data
    X, _, _, _ = ssvm_data.load_dataset("synthetic-chain", random_state=0)
    assert len(svm.predict(X[:5])) == 5
    np.testing.assert_array_equal(svm.w_, np.load(out / "model.npz")["w"])
    assert main(["train", "--resume", str(out), "--max-passes", "1", "--tol", "0", "--quiet",
                 "--out", str(tmp_path / "more")]) == 0
    assert SolverState.load(tmp_path / "more" / "state.npz").passes == state.passes + 1

"""Shard rounds (``ssvm_core.shards``): a monotone dual, w = sum of the block states, K = 1
is serial BCFW, exact certificates, recovery of a lost shard, Dask equal to the simulation."""

import numpy as np
import pytest

from ssvm_core import SolverState, _fw, solve
from ssvm_core._oracle import DelegatingOracle
from ssvm_core.objectives import dual_objective
from ssvm_core.parallel import max_scores
from ssvm_core.shards import LocalShards, ShardExecutor, ShardRounds
from ssvm_data import lsp_like
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
from ssvm_oracles import ChainModel, PoseModel


def _pose(n=24, seed=5):
    """Pose trees (``take_blocks``, a box the oracle needs), dense blocks."""
    X, Y = lsp_like(n, grid=(5, 5), n_types=2, random_state=seed)
    model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS, n_types=2)
    return model.bind(X, Y), model.weight_bounds()


def _chain_data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, 6), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return X, Y


def _chain(n=30, seed=0, blocks="sparse"):
    """Chains (no ``take_blocks``: each shard uses the whole oracle), no box."""
    return ChainModel(n_states=3, n_features=4, blocks=blocks).bind(*_chain_data(n, seed)), None


class _TakingChain(DelegatingOracle):
    """A chain oracle with ``take_blocks``: a shard's view binds only its examples."""

    def __init__(self, blocks, X, Y):
        super().__init__(ChainModel(n_states=3, n_features=4, blocks=blocks).bind(X, Y))
        self.args = (blocks, X, Y)

    def take_blocks(self, indices):
        blocks, X, Y = self.args
        return _TakingChain(blocks, [X[k] for k in indices], [Y[k] for k in indices])


PROBLEMS = {"pose": _pose, "chain": _chain,
            "chain-compact": lambda n=30, seed=0: _chain(n, seed, "compact")}


def _sum_of_blocks(state):
    return np.sum([state.block_vector(i) for i in range(state.n_blocks)], axis=0)


def _assert_v_is_sum(state):
    total = _sum_of_blocks(state)
    scale = max(np.abs(total).max(), 1e-300)
    assert np.abs(state.v - total).max() <= 1e-12 * scale
    assert abs(state.ell - state.block_ell.sum()) <= 1e-12 * max(abs(state.ell), 1e-300)
    np.testing.assert_array_equal(state.w, state.project(state.v))


def _rounds(oracle, box, lam, K, **kw):
    state = SolverState.for_oracle(oracle, lam, False, box)
    return ShardRounds(oracle, state, LocalShards(), K, **kw), state


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_rounds_never_decrease_the_dual_and_w_is_the_sum_of_blocks(name):
    oracle, box = PROBLEMS[name]()
    lam = 0.05 if name.startswith("chain") else 10.0
    rounds, state = _rounds(oracle, box, lam, 4, round_steps=3)
    rng = np.random.default_rng(1)
    dual = dual_objective(state)
    ts = []
    for _ in range(25):
        rounds.round(rng)
        new = dual_objective(state)
        assert new >= dual - 1e-14 * max(1.0, abs(dual))
        dual = new
        ts.append(rounds.log[-1]["t"])
    assert dual > 0.0 and all(0.0 <= t <= 1.0 for t in ts)
    rounds.checkpoint()
    _assert_v_is_sum(state)
    state.check()


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_one_shard_with_t_fixed_is_serial_bcfw(name):
    oracle, box = PROBLEMS[name]()
    lam = 0.05 if name.startswith("chain") else 10.0
    rounds, state = _rounds(oracle, box, lam, 1, sigma=1.0, round_steps=7)
    serial = SolverState.for_oracle(oracle, lam, False, box)
    rng, twin = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(6):
        rounds.round(rng, t=1.0)
        _fw.bcfw_pass(oracle, serial, twin.integers(0, oracle.n_blocks, 7).astype(np.intp),
                      True)
        np.testing.assert_allclose(state.v, serial.v, rtol=1e-12, atol=1e-15)
        assert state.ell == pytest.approx(serial.ell, rel=1e-12)
    rounds.checkpoint()
    for i in range(oracle.n_blocks):
        np.testing.assert_allclose(state.block_vector(i), serial.block_vector(i),
                                   rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_solve_certificate_is_primal_minus_dual(name):
    oracle, box = PROBLEMS[name]()
    lam = 0.05 if name.startswith("chain") else 10.0
    ex = ShardExecutor(5, round_steps=2)
    result = solve(oracle, lam, executor=ex, box=box, max_passes=4, gap_check_every=2,
                   averaging="plain", tol=0, random_state=0)
    assert result.certified and result.status == "max_passes"
    state = result.state
    _assert_v_is_sum(state)
    w = result.w
    primal = 0.5 * lam * w @ w + max_scores(oracle, w).sum() / oracle.n_blocks
    if box is None:
        dual = state.ell - 0.5 * lam * state.v @ state.v
    else:
        c = np.clip(state.v, *box) if np.ndim(box[0]) else np.clip(state.v, box[0], box[1])
        dual = state.ell - lam * (c @ state.v - 0.5 * c @ c)
    assert result.gap == pytest.approx(primal - dual, rel=1e-10, abs=1e-13)
    assert result.gap > 0 and state.oracle_calls >= 4 * oracle.n_blocks
    # the averaged iterate is certified too
    avg = solve(oracle, lam, executor=ShardExecutor(5, round_steps=2), box=box, max_passes=3,
                gap_check_every=3, tol=0, random_state=0)
    wa = avg.w
    primal_avg = 0.5 * lam * wa @ wa + max_scores(oracle, wa).sum() / oracle.n_blocks
    assert avg.gap == pytest.approx(primal_avg - dual_objective(avg.state, averaged=True),
                                    rel=1e-10, abs=1e-13)


@pytest.mark.parametrize("take", [False, True])
def test_compact_shard_rounds_equal_dense_ones(take):
    # The shards' local states keep the oracle's storage: the same rounds on dense
    # and on compact blocks (with and without per-shard views) give the same iterates.
    X, Y = _chain_data(n=24, seed=4)
    runs = {}
    for blocks in ("dense", "compact"):
        oracle = (_TakingChain(blocks, X, Y) if take
                  else ChainModel(n_states=3, n_features=4, blocks=blocks).bind(X, Y))
        rounds, state = _rounds(oracle, None, 0.02, 3, round_steps=4)
        assert state.blocks.storage == blocks
        assert all(s.state.blocks.storage == blocks for s in rounds.backend.shards)
        if take:
            assert all(s.oracle.n_blocks == len(p)
                       for s, p in zip(rounds.backend.shards, rounds.parts))
        rng = np.random.default_rng(2)
        duals = [dual_objective(state)]
        for _ in range(20):
            rounds.round(rng)
            duals.append(dual_objective(state))
        rounds.checkpoint()
        assert np.all(np.diff(duals) >= -1e-14 * np.abs(duals[1:]))
        assert duals[-1] > 0.0
        _assert_v_is_sum(state)
        state.check()
        runs[blocks] = state, [log["t"] for log in rounds.log]
    (dense, t_dense), (compact, t_compact) = runs["dense"], runs["compact"]
    np.testing.assert_allclose(t_compact, t_dense, rtol=0, atol=1e-10)
    np.testing.assert_allclose(compact.v, dense.v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(compact.block_ell, dense.block_ell, rtol=0, atol=1e-10)
    for i in range(dense.n_blocks):
        np.testing.assert_allclose(compact.block_vector(i), dense.block_vector(i), rtol=0,
                                   atol=1e-10)


def test_a_lost_shard_is_restored_from_its_checkpoint():
    oracle, box = _pose(n=24)
    lam = 10.0
    rounds, state = _rounds(oracle, box, lam, 4, round_steps=2)
    rng = np.random.default_rng(7)
    for _ in range(6):
        rounds.round(rng)
    rounds.checkpoint()
    at_checkpoint = [state.block_vector(i) for i in rounds.parts[2]]
    ell_checkpoint = state.block_ell[rounds.parts[2]].copy()
    for _ in range(5):
        rounds.round(rng)
    before = dual_objective(state)
    # what the shards hold now: shard 2 loses its progress since the checkpoint
    expected = SolverState.for_oracle(oracle, lam, False, box)
    for blocks, values, ells in rounds.backend.checkpoint():
        for i, vals in zip(blocks, values):
            expected.block_values[expected.block_ptr[i]:expected.block_ptr[i + 1]] = vals
        expected.block_ell[blocks] = ells
    for i, vec in zip(rounds.parts[2], at_checkpoint):
        expected.block_values[expected.block_ptr[i]:expected.block_ptr[i + 1]] = vec
    expected.block_ell[rounds.parts[2]] = ell_checkpoint
    v = _sum_of_blocks(expected)
    c = np.clip(v, *box)
    expected_dual = expected.block_ell.sum() - lam * (c @ v - 0.5 * c @ c)

    rounds.restore(2)
    after = dual_objective(state)
    assert after == pytest.approx(expected_dual, rel=1e-12)
    assert after < before
    np.testing.assert_allclose(state.v, v, rtol=0, atol=1e-12 * np.abs(v).max())
    # every shard's copy of v moved with the master's
    for shard in rounds.backend.shards:
        np.testing.assert_array_equal(shard.v, state.v)
    rounds.checkpoint()
    _assert_v_is_sum(state)
    for _ in range(3):                                  # and the rounds go on, monotone
        rounds.round(rng)
        assert dual_objective(state) >= after
        after = dual_objective(state)


def test_dask_actors_follow_the_simulation():
    distributed = pytest.importorskip("distributed")
    oracle, box = _pose(n=18)
    kw = dict(box=box, max_passes=3, gap_check_every=3, tol=0, random_state=2)
    simulated = solve(oracle, 10.0, executor=ShardExecutor(3, round_steps=2), **kw)
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        ex = ShardExecutor(3, client, round_steps=2)
        on_dask = solve(oracle, 10.0, executor=ex, **kw)
    np.testing.assert_array_equal(on_dask.state.v, simulated.state.v)
    np.testing.assert_array_equal(on_dask.w, simulated.w)
    assert on_dask.gap == simulated.gap and on_dask.certified
    _assert_v_is_sum(on_dask.state)


@pytest.mark.parametrize("options, match", [
    (dict(batch_blocks=4), "batch_blocks"), (dict(step="away"), "plain FW"),
    (dict(cache=True), "plain FW"), (dict(line_search=False), "line_search"),
    (dict(sampling="gap"), "gap")])
def test_options_shard_rounds_do_not_take_are_refused(options, match):
    oracle, _ = _chain(n=8)
    with pytest.raises(ValueError, match=match):
        solve(oracle, 0.1, executor=ShardExecutor(2), max_passes=1, **options)


def test_bad_executor_arguments():
    with pytest.raises(ValueError, match="n_shards"):
        ShardExecutor(0)
    with pytest.raises(ValueError, match="sigma"):
        ShardExecutor(4, sigma=5.0)
    with pytest.raises(ValueError, match="round_steps"):
        ShardExecutor(4, round_steps=0)


def test_a_killed_dask_worker_loses_only_its_shards_progress():
    distributed = pytest.importorskip("distributed")
    import os
    import time

    from ssvm_core.shards import DaskShards

    oracle, box = _pose(n=18)
    lam = 10.0
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        state = SolverState.for_oracle(oracle, lam, False, box)
        rounds = ShardRounds(oracle, state, DaskShards(client), 3, round_steps=2)
        rng = np.random.default_rng(0)
        for _ in range(3):
            rounds.round(rng)
        rounds.checkpoint()
        for _ in range(3):
            rounds.round(rng)
        victim = sorted(client.scheduler_info()["workers"])[0]
        with pytest.raises(Exception):      # noqa: B017 (the worker dies mid-call)
            client.run(os._exit, 1, workers=[victim])
        time.sleep(1.0)
        assert rounds.round(rng) == 0 and rounds.recovered >= 1     # restored, not stepped
        dual = dual_objective(state)
        for _ in range(3):
            rounds.round(rng)
            assert dual_objective(state) >= dual
            dual = dual_objective(state)
        rounds.checkpoint()
        _assert_v_is_sum(state)
        scores = max_scores(oracle, state.w)
        assert rounds.max_scores(state.w).tolist() == scores.tolist()
    gap = 0.5 * lam * state.w @ state.w + scores.sum() / oracle.n_blocks - dual
    assert gap > 0


def test_time_budget_and_ctrl_c_are_checked_between_rounds():
    oracle, box = _chain(n=30)
    rounds, state = _rounds(oracle, box, 0.05, 3, round_steps=2)
    calls = rounds.one_pass(np.random.default_rng(0), should_stop=lambda: True)
    assert calls == 6 and rounds.rounds == 1          # one round, then the checkpoint
    _assert_v_is_sum(state)
    uneven, _ = _rounds(oracle, box, 0.05, 4, round_steps=2)       # 30 = 3 * 8 + 6
    assert uneven.one_pass(np.random.default_rng(0)) == 30 and uneven.rounds == 4
    result = solve(oracle, 0.05, executor=ShardExecutor(3, round_steps=2), time_budget=1e-9,
                   tol=0, random_state=0)
    assert result.status == "time_budget" and result.state.passes == 1
    assert result.state.fw_steps == 6 and np.isfinite(result.gap)


def test_bench_shards_script_measures_efficiency(tmp_path, capsys):
    import json

    from strategies import load_bench_script

    script = load_bench_script("bench_shards")
    assert script.passes_to([1.0, 0.5, 0.25], 0.5) == 1.0
    assert script.passes_to([1.0, 0.5, 0.25], 0.3535533905932738) == pytest.approx(1.5)
    assert script.passes_to([1.0, 0.5], 0.1) is None
    out = tmp_path / "shards.json"
    script.main(["--n", "16", "--grid", "4", "--shards", "1", "4", "--round-steps", "1",
                 "--sigma", "1", "--passes", "2", "--targets", "1", "2", "--json", str(out),
                 "--csv", str(tmp_path / "shards.csv")])
    printed = capsys.readouterr().out
    assert printed.startswith("$ bench_shards.py --n 16") and "K=4 H=1 sigma=1" in printed
    report = json.loads(out.read_text())
    assert len(report["serial_gaps"]) == 3 and len(report["rows"]) == 2
    # one shard, one step per round, sigma' = 1: serial BCFW up to the master's t <= 1
    assert all(r["eff@1"] is not None and r["eff@1"] > 0 for r in report["rows"])
    script.main(["--n", "16", "--grid", "4", "--shards", "2", "--passes", "2", "--targets", "1",
                 "--serial-from", str(out)])
    assert "K=2 H=auto sigma=auto" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        script.main(["--n", "16", "--no-simulation"])
    assert "--no-simulation needs --dask" in capsys.readouterr().err


def test_an_approximate_oracle_makes_the_run_uncertified():
    from ssvm_oracles import ApproximateOracle

    oracle, _ = _chain(n=20)
    approx = ApproximateOracle(oracle, 0.5, 2)
    with pytest.warns(RuntimeWarning, match="approximate"):
        result = solve(approx, 0.05, executor=ShardExecutor(3, round_steps=2), max_passes=2,
                       tol=0, random_state=0)
    assert not result.certified
    _assert_v_is_sum(result.state)

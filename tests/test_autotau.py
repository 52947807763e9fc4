"""batch_blocks="auto": the staleness measurement, the rule that picks tau, and runs with it."""

import json
import math

import numpy as np
import pytest

from ssvm.cli import main
from ssvm_core import FrankWolfeSSVM, as_oracle, solve
from ssvm_core.autotau import (
    FIRST_RETRY,
    RATE_MARGIN,
    AutoTau,
    staleness_curve,
    staleness_efficiency,
)
from ssvm_core.executors import SerialExecutor
from ssvm_core.minibatch import minibatch_pass
from ssvm_core.objectives import dual_objective, primal_objective
from ssvm_core.shards import ShardExecutor
from ssvm_core.testing import ToyMulticlassModel
from ssvm_data import horseseg_like
from ssvm_oracles import ChainModel, GraphCutModel


def _orthogonal(n=64):
    """n multiclass examples whose joint features live on disjoint coordinates (x_i = e_i),
    all alike: a step on one block leaves every other block's scores unchanged."""
    return ToyMulticlassModel(3, n).bind(np.eye(n), np.zeros(n, dtype=np.int64)), None


def _chain(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(2, 6), 6)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=3, n_features=6).bind(X, Y), None


@pytest.fixture(scope="module")
def horseseg():
    X, Y = horseseg_like(50, random_state=0)
    model = GraphCutModel()
    return model.bind(X, Y), model.weight_bounds()


def _measured(problem, lam, tau, warm, seed=0):
    """(E(tau), tail) of one pass of rounds (serial executor) after ``warm`` passes of BCFW."""
    oracle, box = as_oracle(problem[0]), problem[1]
    state = solve(oracle, lam, box=box, sampling="perm", max_passes=warm, tol=0,
                  gap_check_every=10**9, random_state=seed).state
    rounds = []
    minibatch_pass(oracle, state, SerialExecutor(), np.random.default_rng(seed), tau,
                   sampling="perm", rounds_out=rounds)
    assert sum(len(r) for r in rounds) == oracle.n_blocks
    return staleness_efficiency(staleness_curve(rounds, state.block_gap_estimates))


def _seconds_per_step(tau, t_oracle, t_step, handoff, workers=2):
    """The cost model of docs/scaling.md: serial BCFW at tau = 1, else rounds whose calls
    split over the workers and pay a hand-off."""
    if tau == 1:
        return t_oracle + t_step
    return t_step + (math.ceil(tau / workers) * t_oracle + handoff) / tau


def _walk(n_blocks, efficiency, passes, **costs):
    """Drive the rule for ``passes`` passes; returns it and the tau of every pass."""
    auto, taus = AutoTau(n_blocks, workers=2), []
    for _ in range(passes):
        tau = auto.tau
        taus.append(tau)
        auto.update(tau, _seconds_per_step(tau, **costs),
                    *(efficiency(tau) if tau > 1 else (None, None)))
    return auto, taus


# -- the measurement -----------------------------------------------------------------------

def test_efficiency_is_the_mean_gap_over_positions_over_the_fresh_one():
    gaps = np.array([2.0, 1.0, 4.0, 1.0, 6.0, -3.0])
    # position 0: blocks 0, 2, 4 (mean 4); position 1: blocks 1, 3, 5 (mean (1+1+0)/3)
    curve = staleness_curve([np.array([0, 1]), np.array([2, 3]), np.array([4, 5])], gaps)
    np.testing.assert_allclose(curve, [1.0, 2.0 / 3.0 / 4.0])
    assert staleness_efficiency(curve) == pytest.approx(((1.0 + 1.0 / 6.0) / 2.0, 1.0 / 6.0))
    # a block drawn twice in a pass holds the gap of its last step: only that one counts
    # (block 1 at position 1 of the second round; position 1: blocks 0 and 1)
    curve = staleness_curve([np.array([1, 0]), np.array([2, 1])], np.array([3.0, 1.0, 5.0]))
    np.testing.assert_allclose(curve, [1.0, 2.0 / 5.0])
    # a short last round: position 2 has one sample, position 3 none
    curve = staleness_curve([np.array([0, 1, 2, 3]), np.array([4, 5, 6])],
                            np.array([4.0, 2.0, 1.0, 0.0, 2.0, 1.0, 1.0]))
    np.testing.assert_allclose(curve, [1.0, 0.5, 1.0 / 3.0, 0.0])
    curve = staleness_curve([np.array([0, 1, 2]), np.array([4, 5])],
                            np.array([4.0, 2.0, 1.0, 0.0, 2.0, 1.0]))
    assert curve[2] == pytest.approx(1.0 / 3.0) and staleness_efficiency(curve)[1] == \
        pytest.approx((0.5 + 1.0 / 3.0) / 2.0)
    assert staleness_curve([np.array([0]), np.array([1])], gaps) is None     # tau = 1
    assert staleness_curve([np.array([5, 0])], gaps) is None   # no fresh gap > 0
    assert staleness_efficiency(None) == (None, None)
    # above 1 is noise (a stale corner's gap is at most the fresh one's): clipped
    assert staleness_efficiency(np.array([1.0, 1.5, 1.2, np.nan])) == (1.0, 1.0)


def test_no_staleness_on_orthogonal_blocks():
    for tau in (2, 4, 16):
        assert _measured(_orthogonal(), 0.1, tau, warm=1) == pytest.approx((1.0, 1.0), rel=1e-9)


def test_staleness_costs_most_of_the_gap_on_synthetic_horseseg(horseseg):
    # docs/scaling.md: a stale corner keeps 4-20% of the fresh block gap from position 1 on
    for seed in (0, 1):
        assert _measured(horseseg, 0.01, 8, warm=2, seed=seed)[0] < 0.6
        assert _measured(horseseg, 0.01, 2, warm=2, seed=seed)[0] < 0.9


@pytest.mark.parametrize("sampling", ["uniform", "perm", "gap"])
def test_a_pass_cut_after_k_steps_makes_the_first_k_steps_of_its_rounds(sampling):
    oracle = as_oracle(_chain(40)[0])
    start = solve(oracle, 0.1, max_passes=1, tol=0, random_state=0).state
    whole, cut = start.copy(), start.copy()
    r_whole, r_cut = [], []
    minibatch_pass(oracle, whole, SerialExecutor(), np.random.default_rng(3), 4,
                   sampling=sampling, rounds_out=r_whole)
    calls = minibatch_pass(oracle, cut, SerialExecutor(), np.random.default_rng(3), 4,
                           sampling=sampling, rounds_out=r_cut, n_steps=10)
    assert calls == 10 and cut.n_steps - start.n_steps == 10
    assert [len(r) for r in r_cut] == [4, 4, 2]
    if sampling != "gap":                     # gap draws later rounds from the gaps
        np.testing.assert_array_equal(np.concatenate(r_cut), np.concatenate(r_whole)[:10])
    assert dual_objective(cut) >= dual_objective(start)


# -- the rule -----------------------------------------------------------------------------

HORSE_COSTS = dict(t_oracle=0.17, t_step=0.02, handoff=0.05)   # ms, docs/scaling.md


def test_rule_keeps_serial_bcfw_where_staleness_costs_more_than_threads_give(horseseg):
    measured = {}

    def efficiency(tau):
        return measured.setdefault(tau, _measured(horseseg, 0.01, tau, warm=2))

    auto, taus = _walk(50, efficiency, 40, **HORSE_COSTS)
    assert measured[2][0] < 0.9                        # measured, not assumed
    assert auto.best == 1 and auto.tau == 1
    walk = taus.index(1, 1)                            # the passes of the first walk
    assert taus[:walk] == [1, 2, 4, 8][:walk]
    # the tries come back after FIRST_RETRY passes, then twice as many: few passes lost
    assert taus[walk:walk + FIRST_RETRY] == [1] * FIRST_RETRY
    assert taus[walk + FIRST_RETRY] == 2
    # a later try costs one pass: [2] after 10 passes, [2] after 20 more
    assert sum(t > 1 for t in taus) == walk - 1 + 2


def test_rule_picks_rounds_where_staleness_is_cheap():
    measured = {}

    def efficiency(tau):
        return measured.setdefault(tau, _measured(_orthogonal(), 0.1, tau, warm=1))

    auto, taus = _walk(64, efficiency, 20, **HORSE_COSTS)
    assert auto.best > 1 and taus[-1] == auto.best
    s = {t: _seconds_per_step(t, **HORSE_COSTS) for t in (1, auto.best)}
    assert s[1] / s[auto.best] >= 1.0 + RATE_MARGIN           # it is faster per step


def test_rule_stays_serial_with_one_worker_or_few_blocks():
    for auto in (AutoTau(1000, workers=1), AutoTau(7, workers=4)):
        for _ in range(5):
            assert auto.update(auto.tau, 1e-3, None) == 1
        assert auto.max_tau == 1
    assert "one worker" in AutoTau(1000, workers=1).reason


def test_rule_steps_down_when_the_chosen_tau_stops_paying():
    auto = AutoTau(1000, workers=2)
    assert auto.update(1, 1.0, None) == 2
    assert auto.update(2, 0.5, 1.0) == 4
    assert auto.update(4, 0.47, 1.0) == 8                 # < 10% better, but 8 could be
    assert auto.update(8, 0.45, 0.5, 0.2) == 2            # worse, and 16 cannot pay
    assert auto.best == 2 and "nor could 16; tau = 2, 4 tried again" in auto.reason
    # while tau = 2 runs, its staleness grows: back to serial BCFW
    assert auto.update(2, 0.5, 0.4) == 1
    assert "fell below" in auto.reason


# -- runs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("problem", ["chain", "horseseg"])
def test_auto_runs_certify_and_report_their_choices(problem, horseseg):
    oracle, box = _chain() if problem == "chain" else horseseg
    lam = 0.1 if problem == "chain" else 0.01
    result = solve(oracle, lam, box=box, batch_blocks="auto", executor="threads", n_jobs=2,
                   max_passes=6, gap_check_every=3, tol=0, random_state=0)
    history = result.history[1:]
    # the first pass is serial BCFW, the second tries tau = 2 and measures it
    assert [h["batch_blocks"] for h in history[:2]] == [1, 2]
    # every pass, a try's split pass too, makes n block steps with one call each
    n = oracle.n_blocks
    assert np.all(np.diff([h["n_steps"] for h in result.history]) == n)
    assert history[0]["staleness_efficiency"] is None
    assert 0.0 <= history[1]["staleness_efficiency"] <= 1.0
    for h in history:
        assert h["batch_blocks_next"] >= 1 and h["batch_blocks_reason"]
    duals = [h["dual"] for h in result.history]
    assert all(b >= a - 1e-12 * abs(a) for a, b in zip(duals, duals[1:]))
    primal = primal_objective(oracle, lam, result.w)
    assert result.gap == pytest.approx(primal - dual_objective(result.state, averaged=True),
                                       rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("options", [dict(sampling="gap"), dict(step="pairwise"),
                                     dict(cache=True, sampling="perm"), dict(parallel_steps=True)])
def test_auto_with_other_options_splits_its_tries_into_n_steps(options):
    oracle, _ = _chain(60)
    result = solve(oracle, 0.1, batch_blocks="auto", executor="threads", n_jobs=2,
                   max_passes=4, gap_check_every=2, tol=0, random_state=1, **options)
    assert [h["batch_blocks"] for h in result.history[1:3]] == [1, 2]
    assert np.all(np.diff([h["n_steps"] for h in result.history]) == 60)
    primal = primal_objective(oracle, 0.1, result.w)
    assert result.gap == pytest.approx(primal - dual_objective(result.state, averaged=True),
                                       rel=1e-9, abs=1e-12)


def test_estimator_takes_auto():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(3, 4)) for _ in range(40)]
    Y = [rng.integers(0, 3, 3).astype(np.int32) for _ in range(40)]
    svm = FrankWolfeSSVM(ChainModel(n_states=3, n_features=4), lam=0.1, batch_blocks="auto",
                         executor="threads", n_jobs=2, max_passes=3, tol=0).fit(X, Y)
    assert [h["batch_blocks"] for h in svm.history_[1:3]] == [1, 2]


@pytest.mark.parametrize("options, message", [
    (dict(batch_blocks="fast"), "batch_blocks must be an integer >= 1 or 'auto'"),
    (dict(batch_blocks=0), "batch_blocks must be an integer >= 1 or 'auto'"),
    (dict(batch_blocks="auto", batch=True), "batch_blocks='auto' chooses the rounds"),
    (dict(batch_blocks="auto", pipeline_lag=2), "nor batch_blocks='auto'"),
    (dict(batch_blocks="auto", executor=ShardExecutor(2)), "nor batch_blocks='auto'"),
])
def test_bad_values_are_refused(options, message):
    oracle, _ = _orthogonal(8)
    with pytest.raises(ValueError, match=message):
        solve(oracle, 0.1, **options)


def test_cli_batch_blocks_auto(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--dataset", "synthetic-chain", "--max-passes", "3", "--quiet",
                 "--batch-blocks", "auto", "--n-jobs", "2", "--out", "run"]) == 0
    records = json.loads((tmp_path / "run" / "history.json").read_text())["history"]
    assert [r["batch_blocks"] for r in records[1:3]] == [1, 2]
    with pytest.raises(SystemExit):
        main(["train", "--batch-blocks", "some"])
    assert "invalid int or auto value: 'some'" in capsys.readouterr().err

"""Mini-batch block-coordinate Frank-Wolfe: one pass in rounds of tau blocks.

Wang et al. (2016) parallelise BCFW by making the oracle calls of a
mini-batch of tau blocks at once.  Here each round draws tau distinct
blocks, gets their oracle answers at the round's w from an executor
(``ssvm_core.executors``: serial, threads or Dask) and then applies the tau
block steps in the order drawn with the existing kernels
(``_fw.bcfw_pass``, ``_active.active_pass``), through an ``AnswerOracle``
that recomputes each stored answer's score at the up-to-date iterate.  With
plain FW steps, uniform or permutation sampling and an executor in this
process (serial or threads), a whole pass runs in one compiled loop
(``_batch.fw_rounds``: the same calls and steps, the same iterates bit for
bit, no return to Python between rounds).  Every
step therefore has its exact line search at the current point, so the dual
never decreases however stale the answers are; a stale answer only makes a
smaller step (Lacoste-Julien et al. (2013) line search, on a corner that is
no longer the best one).  The order of the steps never depends on which
worker answered first, so serial, threads and Dask give the same iterates up
to rounding.

With caching (Osokin et al. (2016), Alg. 5) the round first predicts which
blocks the cache will serve, from the stored labellings at the round's w,
and asks the executor only for the others; the kernel decides at the
current w, and a predicted hit that misses calls the oracle in place.

``parallel_steps=True`` takes the block steps of the compiled loop off the
master as well (``_batch.replay_rounds``, exact parallel replay): the threads
form the round's directions and their inner products, the master computes the
step sizes from those scalars in draw order, and the moves are applied in
parallel over a fixed partition of the features.  The iterates equal those of
the serial replay up to rounding, whatever the number of threads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from ssvm_core import _active, _fw
from ssvm_core._batch import AnswerOracle, fw_rounds, predict_cache_hits, replay_rounds
from ssvm_core._oracle import MaxOracle
from ssvm_core.exceptions import WorkersLostError
from ssvm_core.executors import Executor
from ssvm_core.options import SAMPLINGS, sampling_order
from ssvm_core.state import SolverState
from ssvm_core.step_counts import StepCounts

__all__ = ["batch_fw_step", "minibatch_pass", "round_blocks"]


def round_blocks(rng: np.random.Generator, sampling: str, state: SolverState,
                 tau: int) -> Iterator[np.ndarray]:
    """The rounds of one pass: arrays of distinct blocks, n blocks in all.

    Parameters
    ----------
    rng : numpy Generator
        Randomness of the draws.
    sampling : {"uniform", "perm", "gap", "seq"}
        ``uniform``: tau blocks drawn uniformly without replacement per round;
        ``perm``: consecutive chunks of one fresh permutation; ``seq``:
        consecutive chunks of 0, 1, ..., n - 1; ``gap``: the
        never-visited blocks first (in random order), then tau blocks per round
        drawn without replacement with probability proportional to their
        current gap estimates (read when the round is drawn, so the steps of
        earlier rounds count), as the serial gap sampler (Osokin et al.
        (2016), Alg. 2) does.
    state : SolverState
        Its ``block_gap_estimates`` drive gap sampling.
    tau : int
        Blocks per round (the last round of a pass may have fewer).

    Yields
    ------
    ndarray of intp
    """
    n = state.n_blocks
    if sampling in ("perm", "seq"):
        order = sampling_order(rng, sampling, n)
        for start in range(0, n, tau):
            yield order[start:start + tau]
        return
    if sampling == "uniform":
        for start in range(0, n, tau):
            yield _distinct_uniform(rng, n, min(tau, n - start))
        return
    if sampling != "gap":
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    unvisited = rng.permutation(np.flatnonzero(np.isnan(state.block_gap_estimates)))
    for start in range(0, n, tau):
        size = min(tau, n - start)
        head = unvisited[start:start + size].astype(np.intp)
        if head.shape[0] < size:
            tail = _draw_by_gaps(rng, state.block_gap_estimates, size - head.shape[0], head)
            head = np.concatenate([head, tail])
        yield head


def _distinct_uniform(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """k distinct blocks, uniformly: repeats are drawn again (O(k), not O(n), per round).

    Each later occurrence of a block is drawn again until none is left.  The
    rule treats every block alike, so the set drawn is uniform over k-subsets.
    """
    if 2 * k > n:
        return rng.permutation(n)[:k].astype(np.intp)
    out = rng.integers(0, n, size=k).astype(np.intp)
    while True:
        seen, repeat = set(), []
        for pos, block in enumerate(out.tolist()):
            if block in seen:
                repeat.append(pos)
            seen.add(block)
        if not repeat:
            return out
        out[repeat] = rng.integers(0, n, size=len(repeat))


def _draw_by_gaps(rng: np.random.Generator, gaps: np.ndarray, k: int,
                  exclude: np.ndarray) -> np.ndarray:
    """k distinct blocks not in ``exclude``, proportional to max(gap, 0) without
    replacement; blocks with zero weight are drawn uniformly once the others run out."""
    weights = np.nan_to_num(np.maximum(gaps, 0.0), nan=0.0)
    allowed = np.ones(gaps.shape[0], dtype=bool)
    allowed[exclude] = False
    positive = np.flatnonzero(allowed & (weights > 0.0))
    if positive.shape[0] >= k:
        p = weights[positive] / weights[positive].sum()
        return rng.choice(positive, size=k, replace=False, p=p).astype(np.intp)
    zero = np.flatnonzero(allowed & ~(weights > 0.0))
    rest = rng.choice(zero, size=k - positive.shape[0], replace=False)
    return np.concatenate([rng.permutation(positive), rest]).astype(np.intp)


def minibatch_pass(oracle: MaxOracle, state: SolverState, executor: Executor,
                   rng: np.random.Generator, tau: int, *, sampling: str = "uniform",
                   line_search: bool = True, active_sets: bool = False, step: str = "fw",
                   cache: bool = False, cache_factor: float = 0.25, cache_nu: float = 0.01,
                   n_samples: int = 1, should_stop: Callable[[], bool] | None = None,
                   parallel_steps: bool = False, rounds_out: list | None = None,
                   n_steps: int | None = None) -> int:
    """One pass of n block steps in rounds of ``tau`` blocks; returns the oracle calls.

    Parameters
    ----------
    oracle : MaxOracle
        The bound oracle.
    state : SolverState
        Updated in place (with ``state.atoms`` when ``active_sets``).
    executor : Executor
        Makes each round's oracle calls.
    rng : numpy Generator
        Draws the rounds (see ``round_blocks``).
    tau : int
        Blocks per round.
    sampling : {"uniform", "perm", "gap", "seq"}, default "uniform"
        See ``round_blocks``.
    line_search : bool, default True
        False: the predefined step 2n / (k + 2n) (FW steps).
    active_sets : bool, default False
        Steps over explicit active sets (``_active.active_pass``): needed by
        every ``step`` but "fw", by ``cache`` and by ``n_samples > 1``.
    step, cache, cache_factor, cache_nu, n_samples :
        As in ``ssvm_core.solve``; ``n_samples`` answers are stored per block.
    should_stop : callable or None, default None
        Asked after every round of the rounds made in Python (the executors that
        are not threads of this process, e.g. Dask, or gap sampling and active
        sets): True ends the pass there (Ctrl-C, a spent time budget).  The steps
        taken so far are kept; the compiled loop of local threads runs the whole
        pass, which takes no longer than a pass of serial BCFW.  An executor that loses
        its workers raises ``WorkersLostError`` between rounds, its ``oracle_calls``
        set to the calls of the rounds made (their steps are kept).
    parallel_steps : bool, default False
        Apply the steps of the compiled loop in parallel too (exact parallel replay,
        ``_batch.replay_rounds``; the same iterates up to rounding).  The rounds made in
        Python (Dask, gap sampling, active sets) replay their steps in the master as
        before; so do a box, sparse blocks and oracles that need the GIL
        (``_batch.replay_fallback`` names the reason).
    rounds_out : list or None, default None
        The blocks of every round made are appended to it, in order (what
        ``ssvm_core.autotau`` measures staleness from).
    n_steps : int or None, default None
        Make only the first ``n_steps`` block steps of the pass (the rounds drawn
        for the whole pass, cut there); None: all n.

    Returns
    -------
    int
        Oracle calls made (executor calls plus in-place calls of missed cache
        predictions).
    """
    if int(tau) != tau or tau < 1:
        raise ValueError(f"batch_blocks must be a positive integer, got {tau!r}")
    threads = executor.local_threads(oracle)
    if threads is not None and not active_sets and sampling != "gap":
        # The rounds do not depend on the steps: draw them all, run them in C.
        rounds = list(_first_steps(round_blocks(rng, sampling, state, int(tau)), n_steps))
        if rounds_out is not None:
            rounds_out.extend(rounds)
        bounds = np.cumsum([0] + [r.shape[0] for r in rounds]).astype(np.intp)
        run = replay_rounds if parallel_steps else fw_rounds
        return run(oracle, state, np.concatenate(rounds).astype(np.intp), bounds, line_search,
                   threads)
    calls = 0
    for blocks in _first_steps(round_blocks(rng, sampling, state, int(tau)), n_steps):
        ask = blocks
        if cache:
            ask = blocks[~predict_cache_hits(state, blocks, cache_factor, cache_nu, oracle)]
        try:
            answers = executor.solve_blocks(oracle, state.w, ask, n_samples)
        except WorkersLostError as exc:
            exc.oracle_calls = calls            # the finished rounds' steps are kept
            raise
        replay = AnswerOracle(oracle, answers)
        try:
            if active_sets:
                _active.active_pass(replay, state, blocks, step=step, line_search=line_search,
                                    cache=cache, cache_factor=cache_factor,
                                    cache_nu=cache_nu, n_samples=n_samples)
            else:
                _fw.bcfw_pass(replay, state, blocks, line_search)
        finally:
            calls += ask.shape[0] + replay.fallbacks
            state.record_steps(StepCounts(replaced=answers.replaced))
        if rounds_out is not None:
            rounds_out.append(blocks)
        if should_stop is not None and should_stop():
            break
    return calls


def _first_steps(rounds: Iterator[np.ndarray], n_steps: int | None) -> Iterator[np.ndarray]:
    """The rounds up to ``n_steps`` block steps in all (the last one cut); None: all.

    Lazy, as ``round_blocks`` is: gap sampling draws a round after the earlier steps.
    """
    left = math.inf if n_steps is None else int(n_steps)
    for blocks in rounds:
        if left <= 0:
            return
        yield blocks if blocks.shape[0] <= left else blocks[:left]
        left -= blocks.shape[0]


def batch_fw_step(oracle: MaxOracle, state: SolverState, executor: Executor,
                  line_search: bool = True) -> float:
    """One batch Frank-Wolfe step (``_fw.fw_step``) with the n corners from ``executor``.

    Returns the FW gap at the old point (exact: P(w) - D before the step).
    """
    answers = executor.solve_blocks(oracle, state.w, np.arange(oracle.n_blocks, dtype=np.intp))
    gap = _fw.fw_step(AnswerOracle(oracle, answers), state, line_search)
    state.record_steps(StepCounts(replaced=answers.replaced))
    return gap

"""Pipelined BCFW for expensive oracles: dynamic dispatch with a fixed lag.

Mini-batch rounds (``ssvm_core.minibatch``) split a round's oracle calls
among the workers in advance and wait for all of them: with expensive calls
of uneven cost (pose trees: 13-200 ms a call) a worker that drew cheap calls
idles at the round's end.  Here there are no rounds.  The blocks of a pass
are drawn as serial BCFW draws them (the same sampling, the same random
stream) and the oracle call for step j is made at the iterate after step
j - L of the pass (the iterate at the start of the pass for j <= L), by
whichever worker is free: a fixed lag ``L``.  The master applies the
answers in draw order, each with the exact line search at the current
iterate (``_fw.bcfw_pass`` through ``_batch.AnswerOracle``, which re-scores
the stored answer there and replaces a stale answer below the ground truth
by the ground truth), so the dual never decreases, and every call is
dispatched by the master, at a point of the run fixed by ``L``, with a copy
of that iterate: the iterates do not depend on timing or on the number of
workers for a given ``L``.  ``L = 0`` is serial BCFW.

A block drawn again while its earlier call is still in flight gets a call
of its own, made at the iterate fixed by its own step (j - L), but only once
the earlier call of that block has returned: no two calls of one block run
at once (an oracle may keep per-block state), and the answer does not
depend on which of the two finished first.

Each pass fills the pipeline at its start and drains it at its end (the
gap checks between passes see a settled state), so up to ``L + 1`` calls are
in flight; ``L`` about twice the number of workers keeps them busy when
call costs vary.  Ctrl-C and a spent time budget end the pass after the
current step: calls not yet started are cancelled, running ones are waited
for (and counted), their answers dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from ssvm_core import _fw
from ssvm_core._batch import AnswerOracle, solve_blocks
from ssvm_core._oracle import MaxOracle
from ssvm_core.executors import SerialExecutor, ThreadExecutor
from ssvm_core.options import ORDER_SAMPLINGS, sampling_order
from ssvm_core.state import SolverState
from ssvm_core.step_counts import StepCounts

__all__ = ["Pipeline", "check_pipeline_executor", "pipeline_workers"]


def check_pipeline_executor(executor) -> None:
    """Refuse an executor whose calls do not run in threads of this process.

    The other options are checked with the options table
    (``ssvm_core.options.validate``).
    """
    if not isinstance(executor, (SerialExecutor, ThreadExecutor)):
        raise ValueError("pipeline_lag runs its oracle calls in threads of this process: "
                         "executor must be None, 'serial' or 'threads', got "
                         f"{type(executor).__name__}")


def pipeline_workers(executor, n_jobs: int) -> int:
    """Threads of a pipelined run: the executor's for threads, else ``n_jobs``."""
    return executor.n_workers if isinstance(executor, ThreadExecutor) else int(n_jobs)


class Pipeline:
    """The passes of a pipelined run: ``one_pass`` for ``solve``'s pass loop.

    Parameters
    ----------
    oracle : MaxOracle
        The bound oracle (its calls run without the GIL in the workers; a
        Python oracle runs its calls in the master, with a warning).
    state : SolverState
        Moved in place, step by step.
    lag : int
        L >= 0: the call for step j is made at the iterate after step j - L.
    n_workers : int
        Threads that make the calls (1: the master makes each call when it is
        dispatched); the iterates do not depend on it.
    sampling : {"uniform", "perm", "seq"}, default "uniform"
        The block order, drawn as ``bcfw_pass`` draws it.
    """

    def __init__(self, oracle: MaxOracle, state: SolverState, lag: int, n_workers: int,
                 sampling: str = "uniform"):
        if int(lag) != lag or lag < 0:
            raise ValueError(f"pipeline_lag must be an integer >= 0, got {lag!r}")
        if int(n_workers) != n_workers or n_workers < 1:
            raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
        if sampling not in ORDER_SAMPLINGS:
            raise ValueError(f"sampling must be one of {ORDER_SAMPLINGS}, got {sampling!r}")
        if state.atoms is not None:
            raise ValueError("pipeline_lag takes plain FW block steps, and this state keeps "
                             "active sets (from away/pairwise steps or caching); start from a "
                             "fresh state")
        self.oracle, self.state = oracle, state
        self.lag, self.sampling = int(lag), sampling
        self.n_workers = int(n_workers)
        if oracle.needs_gil and self.n_workers > 1:
            warnings.warn(f"{type(oracle).__name__} needs the GIL (a Python oracle): the "
                          "pipeline makes its calls in the master", RuntimeWarning,
                          stacklevel=2)
            self.n_workers = 1
        self._pool: ThreadPoolExecutor | None = None

    def one_pass(self, rng: np.random.Generator,
                 should_stop: Callable[[], bool] | None = None) -> int:
        """n pipelined block steps; returns the oracle calls made.

        ``should_stop`` is asked after every step: True ends the pass there
        (the steps made are kept).
        """
        state, lag = self.state, self.lag
        n = state.n_blocks
        order = sampling_order(rng, self.sampling, n)
        pending: list[Future | None] = [None] * n
        latest: dict[int, Future] = {}        # each block's last call

        def dispatch(j: int, w: np.ndarray) -> None:
            block = int(order[j])
            pending[j] = self._submit(block, w, latest.get(block))
            latest[block] = pending[j]

        start = state.w.copy()
        for j in range(min(lag + 1, n)):
            dispatch(j, start)
        applied = 0
        try:
            for j in range(n):
                answers = pending[j].result()
                pending[j] = None
                replay = AnswerOracle(self.oracle, answers)
                try:
                    _fw.bcfw_pass(replay, state, order[j:j + 1], True)
                finally:
                    state.record_steps(StepCounts(replaced=answers.replaced))
                applied += 1
                if j + 1 + lag < n:
                    dispatch(j + 1 + lag, state.w.copy())
                if should_stop is not None and should_stop():
                    break
        finally:
            # later calls first: a call waiting for its block's earlier call is
            # cancelled before that one's cancellation could start it
            left = [f for f in reversed(pending) if f is not None]
            made = [f for f in left if not f.cancel()]
            wait(made)
        return applied + len(made)

    def _submit(self, block: int, w: np.ndarray, earlier: Future | None) -> Future:
        """The call of ``block`` at ``w``, started once ``earlier`` (its block's last
        call) has returned."""
        blocks = np.array([block], dtype=np.intp)
        if self.n_workers == 1:
            done: Future = Future()
            try:
                done.set_result(solve_blocks(self.oracle, w, blocks))
            except BaseException as exc:
                done.set_exception(exc)
            return done
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.n_workers)
        if earlier is None or earlier.done():
            return self._pool.submit(solve_blocks, self.oracle, w, blocks)
        relay: Future = Future()

        def start(_: Future) -> None:
            if not relay.set_running_or_notify_cancel():     # cancelled by a stop
                return
            try:
                call = self._pool.submit(solve_blocks, self.oracle, w, blocks)
            except BaseException as exc:
                relay.set_exception(exc)
                return
            call.add_done_callback(lambda f: _settle(relay, f))

        earlier.add_done_callback(start)
        return relay

    def close(self) -> None:
        """Stop the worker threads (a later pass starts them again)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _settle(relay: Future, call: Future) -> None:
    """Give ``relay`` (running) the outcome of ``call`` (done)."""
    if call.cancelled():
        relay.set_exception(RuntimeError("a pipelined oracle call was cancelled"))
    elif call.exception() is not None:
        relay.set_exception(call.exception())
    else:
        relay.set_result(call.result())

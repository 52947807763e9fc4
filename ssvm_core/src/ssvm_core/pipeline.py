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

Active-set steps, ``n_samples`` and caching go through ``_active.active_pass``
as in mini-batch rounds: with caching, a step the caching rule is predicted to
serve (at the iterate its call would be made at) gets no call, and a predicted
hit that misses at the current iterate calls the oracle in the master.  With
``cache_steps = c`` the master also makes c cache steps (no oracle call) after
each step from an answer, on blocks whose calls are not in flight: work that
overlaps the calls, in a number fixed in advance so that the iterates still
do not depend on timing.

A block drawn again while its earlier call is still in flight gets a call
of its own, made at the iterate fixed by its own step (j - L), but only once
the earlier call of that block has returned: no two calls of one block run
at once (an oracle may keep per-block state), and the answer does not
depend on which of the two finished first.

Cheap compiled oracles on compact blocks (plain FW steps, no box) run their
passes in C (``_pipeline.CompiledPipeline``: one helper thread making the calls
with its own copy of w, no Python object per step; the same iterates up to
rounding); ``Pipeline.python_reason`` says why a run takes the Python path
(``_pipeline.compiled_problem``).

Each pass fills the pipeline at its start and drains it at its end (the
gap checks between passes see a settled state), so up to ``L + 1`` calls are
in flight: ``L = W - 1`` keeps W workers busy, ``L = W`` leaves one call of
slack for uneven calls.  Each answer is L steps stale, which costs passes
(as a mini-batch of about 2L + 1 blocks does: ``docs/scaling.md``).  Ctrl-C
and a spent time budget end the pass after the current step: calls not yet
started are cancelled, running ones are waited for (and counted), their
answers dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from ssvm_core import _active, _fw, _pipeline
from ssvm_core._batch import AnswerOracle, Answers, predict_cache_hits, solve_blocks
from ssvm_core._oracle import MaxOracle
from ssvm_core.executors import SerialExecutor, ThreadExecutor
from ssvm_core.options import ORDER_SAMPLINGS, needs_active_sets, sampling_order
from ssvm_core.state import SolverState
from ssvm_core.step_counts import StepCounts

__all__ = ["Pipeline", "auto_lag", "check_pipeline_executor", "pipeline_workers"]


def check_pipeline_executor(executor) -> None:
    """Refuse an executor whose calls do not run in threads of this process.

    The other options are checked with the options table
    (``ssvm_core.options.validate``).
    """
    if not isinstance(executor, (SerialExecutor, ThreadExecutor)):
        raise ValueError("pipeline_lag runs its oracle calls in threads of this process: "
                         "executor must be None, 'serial' or 'threads', got "
                         f"{type(executor).__name__}")


def auto_lag(n_blocks: int, n_workers: int) -> int:
    """The lag ``pipeline_lag="auto"`` takes: 0 on one thread, else
    ``max(W - 1, min(2 W, n_blocks // 1000))`` for W threads.

    L = W - 1 keeps W threads busy; a longer lag gives uneven calls slack but makes every
    answer L steps staler, which costs passes in proportion to L / n.  Measured on 2
    threads (``docs/scaling.md``): on OCR-large (n = 6,251) and CoNLL-2000 (n = 8,936) the
    time to serial BCFW's 20-pass gap falls from L = 1 to L = 4 and no further (0.95 ->
    0.74 and 0.82 -> 0.62 of serial's); on ``lsp_like`` pose trees with n = 32, L = 1
    already needs 1.5x BCFW's passes and L = 2 twice them.  Hence 2 W, the lag of the
    large problems, only while L / n stays under 1/1000, and W - 1 below that.

    Parameters
    ----------
    n_blocks : int
        n, the training examples.
    n_workers : int
        W, the threads that make the calls.
    """
    if n_workers <= 1:
        return 0
    return max(n_workers - 1, min(2 * n_workers, n_blocks // 1000))


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
        Moved in place, step by step (with ``state.atoms``, the steps are those
        of ``_active.active_pass``).
    lag : int
        L >= 0: the call for step j is made at the iterate after step j - L.
    n_workers : int
        Threads that make the calls (1: the master makes each call when it is
        dispatched); the iterates do not depend on it.
    sampling : {"uniform", "perm", "seq"}, default "uniform"
        The block order, drawn as ``bcfw_pass`` draws it.
    step, cache, cache_factor, cache_nu, n_samples :
        As in ``ssvm_core.solve``; all but ``step="fw"`` without cache and with
        ``n_samples=1`` need a state with active sets.  With ``cache``, a step
        the caching rule is predicted to serve (``_batch.predict_cache_hits``,
        at the iterate its call would be made at) gets no call; the kernel
        decides at the current iterate, and a predicted hit that misses calls
        the oracle in the master.
    cache_steps : int, default 0
        c, with ``cache``: after each step from an answer the master makes c
        cache steps (no oracle call), each on a block drawn uniformly among
        those whose steps are not yet applied but dispatched (j + 1 ... j + L
        are excluded), when the caching rule serves it at the current iterate
        (else that slot makes no step).  c is fixed, so the iterates still do
        not depend on timing; the draws take one number from ``rng`` per pass.
    compiled : bool, default True
        Run the passes in C (``_pipeline.CompiledPipeline``) when the problem
        allows it (False: always the Python passes, e.g. to compare them).

    Attributes
    ----------
    path : {"compiled", "python"}
        Which passes run.
    python_reason : str or None
        Why the passes run in Python (None on the compiled path).
    """

    def __init__(self, oracle: MaxOracle, state: SolverState, lag: int, n_workers: int,
                 sampling: str = "uniform", *, step: str = "fw", cache: bool = False,
                 cache_factor: float = 0.25, cache_nu: float = 0.01, n_samples: int = 1,
                 cache_steps: int = 0, compiled: bool = True):
        if int(lag) != lag or lag < 0:
            raise ValueError(f"pipeline_lag must be an integer >= 0, got {lag!r}")
        if int(n_workers) != n_workers or n_workers < 1:
            raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
        if sampling not in ORDER_SAMPLINGS:
            raise ValueError(f"sampling must be one of {ORDER_SAMPLINGS}, got {sampling!r}")
        if int(cache_steps) != cache_steps or cache_steps < 0:
            raise ValueError(f"pipeline_cache_steps must be an integer >= 0, "
                             f"got {cache_steps!r}")
        if cache_steps and not cache:
            raise ValueError("pipeline_cache_steps needs cache=True (they are steps toward "
                             "cached labellings)")
        if state.atoms is None and needs_active_sets(step, cache, n_samples):
            raise ValueError(f"step={step!r}, cache and n_samples > 1 need a state with "
                             "active sets")
        self.oracle, self.state = oracle, state
        self.lag, self.sampling = int(lag), sampling
        self.step, self.cache, self.n_samples = step, bool(cache), int(n_samples)
        self.cache_factor, self.cache_nu = float(cache_factor), float(cache_nu)
        self.cache_steps = int(cache_steps)
        self.n_workers = int(n_workers)
        if oracle.needs_gil and self.n_workers > 1:
            warnings.warn(f"{type(oracle).__name__} needs the GIL (a Python oracle): the "
                          "pipeline makes its calls in the master", RuntimeWarning,
                          stacklevel=2)
            self.n_workers = 1
        self._pool: ThreadPoolExecutor | None = None
        self.python_reason = (_pipeline.compiled_problem(oracle, state, self.n_workers)
                              if compiled else "compiled=False")
        self._compiled = (None if self.python_reason is not None else
                          _pipeline.CompiledPipeline(oracle, state, self.lag, self.n_workers))
        self.path = "python" if self._compiled is None else "compiled"

    @property
    def cpu_seconds(self) -> tuple[float, float] | None:
        """CPU seconds of the master and of the helper thread in the last compiled
        pass (None on the Python path)."""
        return None if self._compiled is None else self._compiled.cpu_seconds

    def one_pass(self, rng: np.random.Generator,
                 should_stop: Callable[[], bool] | None = None) -> int:
        """n pipelined block steps (and their cache steps); returns the oracle calls made.

        ``should_stop`` is asked after every step (on the compiled path every 64
        steps): True ends the pass there (the steps made are kept).
        """
        state, lag, oracle = self.state, self.lag, self.oracle
        n = state.n_blocks
        order = sampling_order(rng, self.sampling, n)
        if self._compiled is not None:
            return self._compiled.one_pass(order, should_stop)
        draws = np.random.default_rng(rng.integers(2**63)) if self.cache_steps else None
        none = Answers(*([np.zeros(0)] + [np.zeros(1)] * 2 + [np.zeros(0)] + [np.zeros(1)]
                         + [np.zeros(0)] * 5))                            # no answers
        pending: list[Future | None] = [None] * n
        latest: dict[int, Future] = {}        # each block's last call

        def dispatch(j: int, w: np.ndarray) -> None:
            block = int(order[j])
            if self.cache and self._cache_serves(block):
                pending[j] = _done(none)
                return
            pending[j] = self._submit(block, w, latest.get(block))
            latest[block] = pending[j]

        start = state.w.copy()
        for j in range(min(lag + 1, n)):
            dispatch(j, start)
        calls = 0
        try:
            for j in range(n):
                answers = pending[j].result()
                pending[j] = None
                calls += answers.blocks.shape[0]
                calls += self._step(AnswerOracle(oracle, answers), order[j:j + 1],
                                    answers.replaced)
                for _ in range(self.cache_steps):
                    block = self._cache_block(draws, order[j + 1:j + 1 + lag])
                    if block >= 0:
                        calls += self._step(AnswerOracle(oracle, none),
                                            np.array([block], dtype=np.intp), 0)
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
        return calls + sum(f.result().blocks.shape[0] for f in made if f.exception() is None)

    def _step(self, replay: AnswerOracle, blocks: np.ndarray, replaced: int) -> int:
        """One block step from ``replay``; returns the calls it made in place."""
        try:
            if self.state.atoms is None:
                _fw.bcfw_pass(replay, self.state, blocks, True)
            else:
                _active.active_pass(replay, self.state, blocks, step=self.step,
                                    line_search=True, cache=self.cache,
                                    cache_factor=self.cache_factor, cache_nu=self.cache_nu,
                                    n_samples=self.n_samples)
        finally:
            self.state.record_steps(StepCounts(replaced=replaced))
        return replay.fallbacks

    def _cache_serves(self, block: int) -> bool:
        """Whether the caching rule serves ``block`` at the current iterate."""
        return bool(predict_cache_hits(self.state, np.array([block], dtype=np.intp),
                                       self.cache_factor, self.cache_nu, self.oracle)[0])

    def _cache_block(self, draws: np.random.Generator, scheduled: np.ndarray) -> int:
        """A block for a master cache step: drawn among the blocks not in ``scheduled``,
        or -1 when the cache does not serve it (or every block is scheduled)."""
        n = self.state.n_blocks
        free = np.setdiff1d(np.arange(n), scheduled, assume_unique=False)
        if free.shape[0] == 0:
            return -1
        block = int(free[draws.integers(free.shape[0])])
        return block if self._cache_serves(block) else -1

    def _submit(self, block: int, w: np.ndarray, earlier: Future | None) -> Future:
        """The call of ``block`` at ``w``, started once ``earlier`` (its block's last
        call) has returned."""
        blocks = np.array([block], dtype=np.intp)
        call = (solve_blocks, self.oracle, w, blocks, self.n_samples)
        if self.n_workers == 1:
            try:
                return _done(call[0](*call[1:]))
            except BaseException as exc:
                failed: Future = Future()
                failed.set_exception(exc)
                return failed
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.n_workers)
        if earlier is None or earlier.done():
            return self._pool.submit(*call)
        relay: Future = Future()

        def start(_: Future) -> None:
            if not relay.set_running_or_notify_cancel():     # cancelled by a stop
                return
            try:
                made = self._pool.submit(*call)
            except BaseException as exc:
                relay.set_exception(exc)
                return
            made.add_done_callback(lambda f: _settle(relay, f))

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


def _done(answers) -> Future:
    """A future that already holds ``answers``."""
    done: Future = Future()
    done.set_result(answers)
    return done


def _settle(relay: Future, call: Future) -> None:
    """Give ``relay`` (running) the outcome of ``call`` (done)."""
    if call.cancelled():
        relay.set_exception(RuntimeError("a pipelined oracle call was cancelled"))
    elif call.exception() is not None:
        relay.set_exception(call.exception())
    else:
        relay.set_result(call.result())

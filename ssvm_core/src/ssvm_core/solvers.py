"""Frank-Wolfe solvers: ``solve`` (on the shared ``pass_loop``) and the estimator."""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ssvm_core import _active, _fw
from ssvm_core.autotau import AutoTau
from ssvm_core.base import BaseSSVM
from ssvm_core.convergence import BUDGET_STATUSES, budget_message
from ssvm_core.exceptions import ConvergenceWarning, WorkersLostError
from ssvm_core.executors import SerialExecutor, resolve_executor
from ssvm_core.minibatch import batch_fw_step, minibatch_pass
from ssvm_core.objectives import dual_objective
from ssvm_core.options import NAMES, needs_active_sets, sampling_order, validate, with_options_doc
from ssvm_core.oracles import as_oracle
from ssvm_core.parallel import effective_n_jobs, max_scores
from ssvm_core.pass_loop import Budgets, PassLoop
from ssvm_core.pipeline import Pipeline, auto_lag, check_pipeline_executor, pipeline_workers
from ssvm_core.shards import ShardExecutor
from ssvm_core.state import SolverState
from ssvm_core.validation import check_lam, resolve_box

HEURISTIC_EXIT = 0.8      # gapBCFW: check the exact gap early once estimates sum <= 0.8 tol


@dataclass
class SolveResult:
    """What ``solve`` returns.

    Attributes
    ----------
    w : ndarray
        The returned iterate: the last one, the weighted average, or (with
        ``averaging="best"``) whichever had the smaller exact gap at the final
        gap check (``iterate`` says which; the average when the run ended
        without a check, e.g. interrupted).
    gap : float
        Exact duality gap P(w) - D of ``w`` (NaN if interrupted before a check).
    state : SolverState
        Everything needed to resume or warm-start.
    history : list of dict
        One record per pass (see ``solve``).
    status : str
        Why the solver stopped: ``"converged"``, ``"max_passes"``,
        ``"max_oracle_calls"``, ``"time_budget"``, ``"callback"``,
        ``"interrupted"`` or ``"workers lost"`` (a distributed executor lost
        every worker: the steps made are kept, without a final gap check).
    iterate : {"plain", "average"}
        Which iterate ``w`` is.
    certified : bool
        Whether ``gap`` certifies P(w) - min P <= gap: False when the oracle
        is approximate (``oracle.exact`` is False), whose gap passes may
        underestimate the primal.
    """

    w: np.ndarray
    gap: float
    state: SolverState
    history: list[dict] = field(default_factory=list)
    status: str = ""
    certified: bool = True
    iterate: str = "average"


@with_options_doc
def solve(oracle, lam: float, *, batch: bool = False, line_search: bool = True,
          sampling: str = "uniform", step: str = "fw", cache: bool = False,
          cache_size: int = 50, cache_factor: float = 0.25, cache_nu: float = 0.01,
          n_samples: int = 1, psi_float32: bool = False, box="auto",
          averaging: str | bool = "average",
          tol: float = 1e-3,
          max_passes: int = 100, max_oracle_calls: int | None = None,
          time_budget: float | None = None, gap_check_every: int = 10,
          gap_check_growth: float = 0.0, state: SolverState | None = None,
          initial_gap_pass: bool = True,
          random_state=None,
          callback: Callable[[dict], bool | None] | None = None,
          n_jobs: int | None = None, verbose: int = 0,
          batch_blocks: int | str = 1, parallel_steps: bool = False,
          executor=None, pipeline_lag: int | str | None = None,
          pipeline_cache_steps: int = 0) -> SolveResult:
    """Minimise the SSVM primal through its dual with (block-coordinate) Frank-Wolfe.

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        A model bound to the training set (``model.bind(X, Y)``).
    lam : float
        lambda > 0 of P(w) = lam/2 ||w||^2 + (1/n) sum_i max_y H_i(y; w).
    state : SolverState, optional
        Warm start / resume.  It is updated in place; a different ``lam``
        rescales it keeping alpha (``SolverState.rescale``).  It must come
        from this oracle (see ``SolverState.check_compatible``).
    {options}

    Returns
    -------
    SolveResult

    Notes
    -----
    History records hold ``pass``, ``effective_passes`` (oracle calls / n),
    ``oracle_calls``, ``n_steps``, ``time`` (s), ``replaced_answers`` (answers
    of an inexact oracle scoring below the ground truth, replaced by it and
    counted, with a warning), the cumulative step counts ``fw_steps``,
    ``away_steps``, ``pairwise_steps``, ``corrective_steps`` and
    ``drop_steps`` (atoms zeroed by a step) and cache hits ``cache_hits_local`` /
    ``cache_hits_global`` (by the larger threshold of the rule), ``dual``,
    ``gap_estimate``
    (sum of the latest block gap estimates), and on gap checks ``primal`` and
    ``gap`` (exact) and, with averaging, ``primal_avg``, ``dual_avg`` and
    ``gap_avg``, and ``iterate`` ("plain" or "average": the one returned and
    certified from this check on); missing values are None.  With
    ``batch_blocks="auto"`` a record also holds the pass's ``batch_blocks``, its
    ``staleness_efficiency`` (None at tau = 1), the next pass's tau
    ``batch_blocks_next`` and ``batch_blocks_reason`` (``ssvm_core.autotau``); with
    ``pipeline_lag``, the lag L (``pipeline_lag="auto"``: ``pipeline.auto_lag``'s).  Ctrl-C (SIGINT)
    or SIGTERM stops after the current pass (mini-batch rounds outside this
    process: after the current round; pipelined steps: after the current
    step, or within 64 steps on the compiled path) and returns the model; a second
    signal raises ``KeyboardInterrupt``.  A Dask executor that loses every
    worker (``WorkersLostError``) stops the run the same way, with status
    ``"workers lost"`` and a ``RuntimeWarning``.  A stop on a budget (``max_passes``,
    ``max_oracle_calls``, ``time_budget``) with the certified gap above
    ``tol > 0`` issues a ``ConvergenceWarning`` naming the gap and an
    estimate of the passes still needed (``ssvm_core.convergence``).
    """
    # the signature is the options table (a test checks it): validate its values
    options = validate({name: value for name, value in locals().items() if name in NAMES})
    box = resolve_box(box, oracle)
    oracle = as_oracle(oracle)
    lam = check_lam(lam)
    mode = options["averaging"]
    averaging = mode != "plain"              # keep the weighted average
    n_jobs = effective_n_jobs(n_jobs)
    pool = resolve_executor(executor, n_jobs)
    rounds = batch_blocks != 1 or not isinstance(pool, SerialExecutor)
    if parallel_steps and (not rounds or isinstance(pool, ShardExecutor)):
        raise ValueError("parallel_steps applies to mini-batch rounds: set batch_blocks > 1 "
                         "or a thread executor (not plain BCFW or shard rounds)")
    pipe = auto = None
    active_sets = needs_active_sets(step, cache, n_samples, state)
    state = _prepare_state(oracle, lam, averaging, state, box, active_sets, cache_size,
                           psi_float32)
    rng = np.random.default_rng(random_state)
    if state.rng_state is not None:
        rng.bit_generator.state = state.rng_state
    if pipeline_lag is not None:
        check_pipeline_executor(pool)
        workers = pipeline_workers(pool, n_jobs)
        if pipeline_lag == "auto":
            pipeline_lag = auto_lag(oracle.n_blocks, workers)
        pipe = Pipeline(oracle, state, pipeline_lag, workers, sampling,
                        step=step, cache=cache, cache_factor=cache_factor, cache_nu=cache_nu,
                        n_samples=n_samples, cache_steps=pipeline_cache_steps)
        one_pass = functools.partial(pipe.one_pass, rng)
    elif isinstance(pool, ShardExecutor):
        _check_shard_options(batch, batch_blocks, active_sets, line_search, sampling)
        one_pass = functools.partial(pool.start(oracle, state, sampling).one_pass, rng)
    else:
        one_pass = functools.partial(
            _one_pass, oracle, state, rng, pool, batch=batch, active_sets=active_sets,
            sampling=sampling, line_search=line_search, step=step, cache=cache,
            cache_factor=cache_factor, cache_nu=cache_nu, n_samples=n_samples,
            parallel_steps=parallel_steps)
        if batch_blocks == "auto":
            auto = AutoTau(oracle.n_blocks, _workers(pool, oracle), verbose=verbose)
            one_pass = functools.partial(auto.one_pass, state, one_pass)
        else:
            one_pass = functools.partial(one_pass, rounds=rounds, batch_blocks=batch_blocks)
    budgets = Budgets(max_passes, max_oracle_calls, time_budget)
    run = _FrankWolfeLoop(oracle, state, rng, budgets, one_pass, mode=mode, tol=tol,
                          gap_check_every=gap_check_every, gap_check_growth=gap_check_growth,
                          initial_gap_pass=initial_gap_pass,
                          callback=callback, n_jobs=n_jobs, verbose=verbose,
                          pool=None if isinstance(pool, SerialExecutor) else pool, auto=auto,
                          lag=None if pipe is None else pipe.lag)
    replaced_before = state.replaced_answers
    with pool if pool is not executor or isinstance(pool, ShardExecutor) else \
            contextlib.nullcontext(), pipe if pipe is not None else contextlib.nullcontext():
        status = run.run()
    if status == "workers lost":
        warnings.warn(f"{run.lost}: the run stopped with status 'workers lost'; the model "
                      "and its state are kept (resume from the state once the cluster is "
                      "back)", RuntimeWarning, stacklevel=2)
    replaced = state.replaced_answers - replaced_before
    if replaced:
        warnings.warn(f"{replaced} oracle answers scored below the ground truth (an inexact "
                      "oracle) and were replaced by it; the gaps certify the true objective "
                      "only if the gap passes were exact", RuntimeWarning, stacklevel=2)
    exact = bool(oracle.exact) and pool.exact   # a worker's copy may have fallen back
    if not exact:
        where = " (on a worker of the executor)" if oracle.exact else ""
        warnings.warn(f"{type(oracle).__name__} is an approximate max oracle{where}: the "
                      "reported gaps are estimates (they may underestimate P(w) - min P), "
                      "not certificates", RuntimeWarning, stacklevel=2)
    if not run.gap_is_current:           # no check at the end: nothing to choose by
        run.iterate = "average" if averaging else "plain"
    w = state.averaged_w() if run.iterate == "average" else state.w.copy()
    gap = run.gap if run.gap_is_current else math.nan
    if status in BUDGET_STATUSES and tol > 0 and gap > tol:
        warnings.warn(budget_message(status, state.passes, gap, tol, run.history, exact),
                      ConvergenceWarning, stacklevel=2)
    return SolveResult(w=w, gap=gap, state=state, history=run.history, status=status,
                       certified=exact, iterate=run.iterate)


def _check_shard_options(batch, batch_blocks, active_sets, line_search, sampling) -> None:
    """Refuse the options shard rounds do not take (``ssvm_core.shards``)."""
    if batch or batch_blocks != 1:
        raise ValueError("shard rounds (ShardExecutor) run BCFW on each shard: batch=True and "
                         "batch_blocks > 1 do not apply (nor batch_blocks='auto')")
    if active_sets:
        raise ValueError("shard rounds take plain FW block steps: step='fw', no cache, "
                         "n_samples=1, and a state without active sets")
    if not line_search:
        raise ValueError("shard rounds need line_search=True (the master's step is an "
                         "exact line search)")
    if sampling == "gap":
        raise ValueError("shard rounds sample 'uniform', 'perm' or 'seq', not 'gap'")


def _workers(pool, oracle) -> int:
    """Oracle calls ``pool`` runs at once for ``oracle`` (what ``batch_blocks="auto"`` weighs)."""
    threads = pool.local_threads(oracle)
    return pool.n_workers if threads is None else min(pool.n_workers, threads)


def _one_pass(oracle, state, rng, pool, *, batch, rounds, active_sets, batch_blocks, sampling,
              line_search, step, cache, cache_factor, cache_nu, n_samples,
              parallel_steps=False, should_stop=None, rounds_out=None, n_steps=None) -> int:
    """One pass of the Frank-Wolfe variant the options pick; returns its oracle calls.

    ``should_stop`` (a callable) may end a pass of mini-batch rounds between rounds;
    ``rounds_out`` (a list) receives the rounds of a pass of mini-batch rounds;
    ``n_steps`` makes only the first that many block steps of the pass (None: all;
    ``batch_blocks="auto"`` splits a pass that tries a tau in two).
    """
    if batch and rounds:
        batch_fw_step(oracle, state, pool, line_search)
    elif batch:
        _fw.fw_step(oracle, state, line_search)
    elif rounds:
        return minibatch_pass(oracle, state, pool, rng, batch_blocks, sampling=sampling,
                              line_search=line_search, active_sets=active_sets, step=step,
                              cache=cache, cache_factor=cache_factor, cache_nu=cache_nu,
                              n_samples=n_samples, should_stop=should_stop,
                              parallel_steps=parallel_steps, rounds_out=rounds_out,
                              n_steps=n_steps)
    elif active_sets:
        order, uniforms = _block_order(rng, sampling, state, n_steps)
        return _active.active_pass(oracle, state, order, step=step, line_search=line_search,
                                   cache=cache, cache_factor=cache_factor, cache_nu=cache_nu,
                                   n_samples=n_samples, gap_uniforms=uniforms).oracle_calls
    else:
        order, uniforms = _block_order(rng, sampling, state, n_steps)
        _fw.bcfw_pass(oracle, state, order, line_search, uniforms)
        return order.shape[0] + (0 if uniforms is None else uniforms.shape[0])
    return oracle.n_blocks


class _FrankWolfeLoop(PassLoop):
    """The pass loop of ``solve``: exact gap checks, averaging and its history fields."""

    VERBOSE_FIELDS = (("dual", ".6g"), ("gap", ".3e"), ("gap_avg", ".3e"))

    def __init__(self, oracle, state, rng, budgets, one_pass, *, mode, tol, gap_check_every,
                 gap_check_growth, initial_gap_pass, callback, n_jobs, verbose, pool,
                 auto=None, lag=None):
        super().__init__(state, rng, oracle.n_blocks, budgets, gap_check_every, callback,
                         verbose)
        self.check_growth = gap_check_growth
        self.oracle, self.pool, self.n_jobs = oracle, pool, n_jobs
        self.auto = auto                     # AutoTau of batch_blocks="auto", or None
        self.lag = lag                       # the pipeline's lag, or None (no pipeline)
        self._pass = one_pass
        self.mode, self.averaging = mode, mode != "plain"
        self.tol, self.initial_gap_pass = tol, initial_gap_pass
        # the iterate returned and certified: the last checked one ("best"
        # starts from the average, as an unchecked run returns it)
        self.iterate = "plain" if mode == "plain" else "average"
        self.gap = math.inf
        self.gap_is_current = False
        self.lost: WorkersLostError | None = None   # why the executor's workers are gone

    def first_check(self) -> str | None:
        st = self.state
        if (self.initial_gap_pass or not st.exact_gaps
                or (self.averaging and st.n_steps > 0)):
            # a state that has not stepped since its dual point was set (fresh,
            # rescaled, shrunk) has no estimates to keep: the check feeds them
            self.gap_check(refresh=st.n_steps == 0 or self.scheduled())
        else:
            self.known_gap()
        return "converged" if self.gap <= self.tol else None

    def check(self, status: str | None, scheduled: bool) -> str | None:
        if status in ("interrupted", "workers lost"):   # stop at once, without a gap pass
            return status
        try:
            self.gap_check(refresh=scheduled)
        except WorkersLostError as exc:
            self.lost, self.gap_is_current = exc, False
            return "workers lost"
        converged = self.gap <= self.tol
        if scheduled and not self._on_schedule():           # an early check
            st = self.state
            st.early_checks_missed = 0 if converged else st.early_checks_missed + 1
        return "converged" if converged else status

    def stop_status(self) -> str | None:
        return None if self.lost is None else "workers lost"

    def scheduled(self) -> bool:
        """Whether the solver's schedule asks for a gap check after the state's last pass.

        Every ``gap_check_every`` passes, or with ``gap_check_growth`` g > 0 at
        the passes of ``check_schedule`` (both counted over the state's whole
        life, so a resumed run keeps the schedule), and early (``_early``).
        Only scheduled checks feed the gap sampler and the caching rule.
        """
        return self._on_schedule() or self._early()

    def _on_schedule(self) -> bool:
        return on_check_schedule(self.state.passes, self.check_every, self.check_growth)

    def _early(self) -> bool:
        """Whether the gap estimates ask for an early check: they sum to <= 0.8 tol
        (gapBCFW's heuristic exit), and at least 2 ** ``early_checks_missed`` passes
        were made since the last scheduled gap pass.

        The wait doubles with every early check in a row that finds the gap above tol:
        estimates that keep underestimating the gap (cache steps record the gaps of
        cached corners, lower bounds of the blocks' gaps) would otherwise make every
        pass a check, each an oracle call per block.  Measured on the snakes example of
        ``examples/pystruct`` (pairwise steps with a cache): 1,543 checks in 2,124
        passes, 55% of the training time.
        """
        st = self.state
        return (self.tol > 0 and st.passes - st.gap_pass_at >= 2 ** min(st.early_checks_missed, 30)
                and _estimate_below(st, HEURISTIC_EXIT * self.tol))

    def one_pass(self) -> int:
        self.gap_is_current = False
        try:
            return self._pass(should_stop=self.should_stop)
        except WorkersLostError as exc:      # the steps made so far are kept
            self.lost = exc
            return exc.oracle_calls

    def gap_check(self, refresh: bool) -> None:
        """Exact gap pass: the primal at w and the block gaps, one oracle call per block.

        ``refresh`` hands the exact gaps to gap sampling and the caching rule
        (see ``SolverState.record_gap_pass``); checks made only to report
        leave them as they were, so a resumed run samples and caches exactly
        as an uninterrupted one.
        """
        st, n = self.state, self.oracle.n_blocks
        scores = self.timed(self._max_scores, st.w)
        st.count_oracle_calls(n)
        primal, _ = st.record_gap_pass(scores, refresh)
        self._record_gap(primal)

    def _max_scores(self, w):
        """max_y H_i(y; w) of every block, on the run's executor (threads by n_jobs if none)."""
        if self.pool is not None:
            return self.pool.max_scores(self.oracle, w)
        return max_scores(self.oracle, w, self.n_jobs)

    def known_gap(self) -> None:
        """The start-of-solve gap check from the state's exact gaps, without oracle calls."""
        st = self.state
        self._record_gap(dual_objective(st) + st.certified_gap)

    def _record_gap(self, primal: float) -> None:
        """Set the run's gap from ``state.certified_gap`` (and check the average)."""
        st, n = self.state, self.oracle.n_blocks
        gap = st.certified_gap
        values = {"primal": primal, "gap": gap}
        if self.averaging:
            if st.n_steps == 0:
                primal_avg = primal
            else:
                w_avg = st.averaged_w()
                scores = self.timed(self._max_scores, w_avg)
                st.count_oracle_calls(n)
                primal_avg = 0.5 * st.lam * float(w_avg @ w_avg) + float(np.sum(scores)) / n
            dual_avg = dual_objective(st, averaged=True)
            gap_avg = primal_avg - dual_avg
            values.update(primal_avg=primal_avg, dual_avg=dual_avg, gap_avg=gap_avg)
            if self.mode == "best" and gap < gap_avg:
                self.iterate = "plain"
            else:
                self.iterate, gap = "average", gap_avg
        values["iterate"] = self.iterate
        self.checked(values)
        self.gap, self.gap_is_current = gap, True

    def record_fields(self, checked: bool) -> dict:
        st = self.state
        # the newest block gaps: the exact ones right after a gap check (which
        # need not have been handed to the sampler), else the sampler's
        estimates = st.certified_gaps if checked else st.block_gap_estimates
        rec = {"replaced_answers": st.replaced_answers,
               "fw_steps": st.fw_steps, "away_steps": st.away_steps,
               "pairwise_steps": st.pairwise_steps, "corrective_steps": st.corrective_steps,
               "drop_steps": st.drop_steps,
               "cache_hits_local": st.cache_hits_local,
               "cache_hits_global": st.cache_hits_global,
               "dual": dual_objective(st),
               "gap_estimate": None if np.isnan(estimates).any() else float(estimates.sum()),
               "primal": None, "gap": None, "iterate": None}
        if self.averaging:
            rec.update(primal_avg=None, dual_avg=None, gap_avg=None)
        if self.auto is not None:
            rec.update(self.auto.record())
        if self.lag is not None:
            rec["pipeline_lag"] = self.lag
        return rec


def _prepare_state(oracle, lam, averaging, state, box, active_sets, cache_size, psi_float32):
    if state is None:
        return SolverState.for_oracle(oracle, lam, averaging, box, active_sets, cache_size,
                                      psi_float32)
    state.check_compatible(oracle)
    if box is None and state.has_box:
        raise ValueError("the state was trained with a box; pass the same box to continue")
    if box is not None:
        lower, upper = box
        if not (state.has_box and np.array_equal(lower, state.lower)
                and np.array_equal(upper, state.upper)):
            raise ValueError("the state's box differs from box=: warm starts keep the box")
    if active_sets and state.atoms is None:
        if state.n_steps > 0 or state.ell != 0.0:
            raise ValueError("away/pairwise steps and caching need the active sets, which "
                             "this state (from plain BCFW or batch FW) does not have; "
                             "start from a fresh state")
        state.atoms = state.blocks.new_active_sets(cache_size, psi_float32)
    if state.lam != lam:
        state.rescale(lam)
    if averaging != state.averaging:
        state.averaging = averaging
        state.avg_u = np.zeros(state.n_features if averaging else 0)
        state.reset_averaging()
    return state


def on_check_schedule(passes: int, every: int, growth: float) -> bool:
    """Whether pass ``passes`` (of a state's life) ends with a scheduled gap check.

    The checks fall at c_0 = 0 and c_{j+1} = c_j + max(every, floor(growth c_j)):
    every ``every`` passes when ``growth`` is 0, geometrically sparser once
    growth c_j exceeds ``every``.
    """
    if growth == 0.0:
        return passes % every == 0
    check = 0
    while check < passes:
        check += max(every, int(growth * check))
    return check == passes


def _estimate_below(state: SolverState, threshold: float) -> bool:
    """Whether the (stale) block gap estimates sum to at most ``threshold``."""
    estimates = state.block_gap_estimates
    return not np.isnan(estimates).any() and float(estimates.sum()) <= threshold


def _block_order(rng, sampling: str, state: SolverState, n_steps: int | None = None):
    """``(order, gap_uniforms)`` of one BCFW pass of n steps (see ``bcfw_pass``), or of its
    first ``n_steps`` steps."""
    n = state.n_blocks
    k = n if n_steps is None else min(int(n_steps), n)
    if sampling == "gap":
        unvisited = rng.permutation(np.flatnonzero(np.isnan(state.block_gap_estimates)))
        uniforms = rng.random(n - unvisited.shape[0])
        return unvisited[:k].astype(np.intp), uniforms[:max(0, k - unvisited.shape[0])]
    return sampling_order(rng, sampling, n)[:k], None


class FrankWolfeSSVM(BaseSSVM):
    """Structured SVM trained by (block-coordinate) Frank-Wolfe on the dual.

    Parameters
    ----------
    model : StructuredModel
        E.g. ``ssvm_oracles.ChainModel(n_states=26)``.
    lam : float, optional
        lambda of the objective averaged over n (default 0.01).
    C : float, optional
        pystruct's convention, an alias for ``lam = 1 / (C n)``; give one of
        ``lam`` and ``C``.
    batch, line_search, sampling, step, cache, cache_size, cache_factor, cache_nu, \
    n_samples, psi_float32, averaging, tol, max_passes, max_oracle_calls, \
    time_budget, gap_check_every, gap_check_growth, initial_gap_pass, random_state, callback, \
    n_jobs, verbose, batch_blocks, parallel_steps, executor, pipeline_lag, pipeline_cache_steps :
        The solver options of ``ssvm_core.solve`` (one table,
        ``ssvm_core.options``), with the same defaults.
    box : "auto", "model", (lower, upper) or None, default "auto"
        Box constraints on w (see ``ssvm_core.solve``): by default the
        bounds the model's oracle declares (``weight_bounds()``: graph cuts,
        pose trees), else none.
    warm_start : bool
        Continue from ``state_`` of the previous fit (same training set).

    Attributes
    ----------
    w_ : ndarray
        Learned weights (the iterate ``averaging`` selects).
    gap_ : float
        Its exact duality gap.
    lam_ : float
        The lambda used.
    history_ : list of dict
        Per-pass records (see ``ssvm_core.solve``).
    state_ : SolverState
        Dual state, for warm starts and resuming.
    n_passes_ : int
        Solver passes made so far.
    status_ : str
        Why the last fit stopped.
    certified_ : bool
        Whether ``gap_`` certifies ``w_`` (False with an approximate oracle).
    iterate_ : {"plain", "average"}
        Which iterate ``w_`` is.
    """

    def __init__(self, model, lam: float | None = None, C: float | None = None, *,
                 batch: bool = False, line_search: bool = True, sampling: str = "uniform",
                 step: str = "fw", cache: bool = False, cache_size: int = 50,
                 cache_factor: float = 0.25, cache_nu: float = 0.01, n_samples: int = 1,
                 psi_float32: bool = False, box="auto", averaging: str | bool = "average",
                 tol: float = 1e-3, max_passes: int = 100,
                 max_oracle_calls: int | None = None, time_budget: float | None = None,
                 gap_check_every: int = 10, gap_check_growth: float = 0.0,
                 initial_gap_pass: bool = True, warm_start: bool = False, random_state=None,
                 callback=None, n_jobs: int | None = None, verbose: int = 0,
                 batch_blocks: int | str = 1, parallel_steps: bool = False, executor=None,
                 pipeline_lag: int | str | None = None, pipeline_cache_steps: int = 0):
        self.model = model
        self.lam = lam
        self.C = C
        self.batch = batch
        self.line_search = line_search
        self.sampling = sampling
        self.step = step
        self.cache = cache
        self.cache_size = cache_size
        self.cache_factor = cache_factor
        self.cache_nu = cache_nu
        self.n_samples = n_samples
        self.psi_float32 = psi_float32
        self.box = box
        self.averaging = averaging
        self.tol = tol
        self.max_passes = max_passes
        self.max_oracle_calls = max_oracle_calls
        self.time_budget = time_budget
        self.gap_check_every = gap_check_every
        self.gap_check_growth = gap_check_growth
        self.initial_gap_pass = initial_gap_pass
        self.warm_start = warm_start
        self.random_state = random_state
        self.callback = callback
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.batch_blocks = batch_blocks
        self.parallel_steps = parallel_steps
        self.executor = executor
        self.pipeline_lag = pipeline_lag
        self.pipeline_cache_steps = pipeline_cache_steps

    def fit(self, X, Y) -> FrankWolfeSSVM:
        """Train on examples ``X`` with ground-truth labellings ``Y``."""
        oracle, lam, state = self._prepare_fit(X, Y)
        options = {name: getattr(self, name) for name in NAMES}
        result = solve(oracle, lam, state=state, **options)
        self.lam_ = lam
        self.w_ = result.w
        self.gap_ = result.gap
        self.history_ = result.history
        self.state_ = result.state
        self.n_passes_ = result.state.passes
        self.status_ = result.status
        self.certified_ = result.certified
        self.iterate_ = result.iterate
        return self

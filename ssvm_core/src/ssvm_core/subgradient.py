"""Stochastic subgradient (SSG) baseline with Pegasos steps.

Lacoste-Julien et al. (2013), Sec. 6.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ssvm_core._interrupt import stop_on_sigint
from ssvm_core._ssg import ssg_pass
from ssvm_core.base import BaseSSVM
from ssvm_core.oracles import as_oracle
from ssvm_core.parallel import effective_n_jobs, score_pass
from ssvm_core.solvers import _budget_status
from ssvm_core.state import _check_lam


@dataclass
class SubgradientState:
    """Iterate of SSG: w, its weighted average, the step count and counters."""

    lam: float
    w: np.ndarray
    w_avg: np.ndarray                 # empty without averaging
    n_steps: int = 0
    passes: int = 0
    oracle_calls: int = 0
    elapsed: float = 0.0
    rng_state: dict | None = None

    @classmethod
    def zeros(cls, lam: float, n_features: int, averaging: bool) -> SubgradientState:
        return cls(lam, np.zeros(n_features), np.zeros(n_features if averaging else 0))


@dataclass
class SubgradientResult:
    """What ``subgradient_solve`` returns (see ``SolveResult``); SSG has no gap."""

    w: np.ndarray
    primal: float
    state: SubgradientState
    history: list[dict] = field(default_factory=list)
    status: str = ""


def subgradient_solve(oracle, lam: float, *, averaging: bool = True, sampling: str = "uniform",
                      max_passes: int = 100, max_oracle_calls: int | None = None,
                      time_budget: float | None = None, eval_every: int = 10,
                      state: SubgradientState | None = None, random_state=None,
                      callback: Callable[[dict], bool | None] | None = None,
                      n_jobs: int | None = None, verbose: int = 0) -> SubgradientResult:
    """Minimise the SSVM primal by stochastic subgradient steps (the classic baseline).

    Step k at a block i drawn uniformly (or by a permutation per pass):
    w <- (1 - 1/(k+1)) w + psi_i(y*) / (lam (k+1)), a step of size
    1 / (lam (k+1)) along the subgradient lam w - psi_i(y*) of P; with
    ``averaging`` the weighted average w_avg <- k/(k+2) w_avg + 2/(k+2) w is
    returned.  There is no dual, hence no duality gap: the history records
    the primal P(w) (and P(w_avg)) every ``eval_every`` passes, with the same
    keys as ``ssvm_core.solve`` and None for the dual quantities.

    Parameters
    ----------
    oracle, lam, averaging, max_passes, max_oracle_calls, time_budget, random_state,
    callback, n_jobs, verbose :
        As for ``ssvm_core.solve``.
    sampling : {"uniform", "perm"}
        i.i.d. uniform blocks or a fresh permutation per pass.
    eval_every : int
        Passes between primal evaluations (each costs n oracle calls, 2n with
        averaging); one is also made at the start and at the end.
    state : SubgradientState, optional
        Resume a previous run (same lam).
    """
    oracle = as_oracle(oracle)
    lam = _check_lam(lam)
    if sampling not in ("uniform", "perm"):
        raise ValueError(f"sampling must be 'uniform' or 'perm' for SSG, got {sampling!r}")
    for name, value in (("max_passes", max_passes), ("eval_every", eval_every)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    n, d = oracle.n_blocks, oracle.n_features
    n_jobs = effective_n_jobs(n_jobs)
    if state is None:
        state = SubgradientState.zeros(lam, d, averaging)
    elif state.lam != lam or state.w.shape != (d,):
        raise ValueError("the SSG state was made for another lam or feature dimension")
    elif (state.w_avg.shape[0] > 0) != averaging:
        raise ValueError("the SSG state's averaging setting differs from averaging=")
    rng = np.random.default_rng(random_state)
    if state.rng_state is not None:
        rng.bit_generator.state = state.rng_state
    start = (state.passes, state.oracle_calls, state.elapsed)
    history: list[dict] = []
    steps = np.array([state.n_steps], dtype=np.intp)

    def evaluate() -> dict:
        t0 = time.perf_counter()
        rec = {"primal": 0.5 * lam * state.w @ state.w + score_pass(oracle, state.w, None,
                                                                   n_jobs) / n}
        state.oracle_calls += n
        if averaging:
            rec["primal_avg"] = (0.5 * lam * state.w_avg @ state.w_avg
                                 + score_pass(oracle, state.w_avg, None, n_jobs) / n)
            state.oracle_calls += n
        state.elapsed += time.perf_counter() - t0
        return rec

    def record(values: dict) -> bool:
        rec = {"pass": state.passes, "effective_passes": state.oracle_calls / n,
               "oracle_calls": state.oracle_calls, "n_steps": state.n_steps,
               "time": state.elapsed, "dual": None, "gap_estimate": None, "gap": None,
               "primal": None}
        if averaging:
            rec.update(primal_avg=None, dual_avg=None, gap_avg=None)
        rec.update(values)
        history.append(rec)
        if verbose >= 2 or (verbose and rec["primal"] is not None):
            print(f"pass {rec['pass']:5d}  eff {rec['effective_passes']:8.2f}  "
                  f"primal {rec['primal']}  {rec['time']:.2f}s")
        return bool(callback(rec)) if callback is not None else False

    with stop_on_sigint() as stop:
        last = evaluate()
        status = "callback" if record(last) else None
        while status is None:
            order = (rng.permutation(n) if sampling == "perm"
                     else rng.integers(0, n, size=n)).astype(np.intp)
            t0 = time.perf_counter()
            try:
                ssg_pass(oracle, order, lam, state.w, state.w_avg, steps)
            finally:
                state.elapsed += time.perf_counter() - t0
                state.oracle_calls += int(steps[0]) - state.n_steps
                state.n_steps = int(steps[0])
            state.passes += 1
            state.rng_state = rng.bit_generator.state
            status = _budget_status(state, start, max_passes, max_oracle_calls, time_budget)
            if stop.requested:
                status = "interrupted"
            values = {}
            if status is not None or state.passes % eval_every == 0:
                values = last = evaluate()
            if record(values) and status is None:
                status = "callback"
    if status == "interrupted":
        warnings.warn("solver interrupted; the model is kept and can be resumed from its "
                      "state", RuntimeWarning, stacklevel=2)
    w = state.w_avg.copy() if averaging else state.w.copy()
    primal = last.get("primal_avg" if averaging else "primal", math.nan)
    return SubgradientResult(w=w, primal=primal, state=state, history=history, status=status)


class SubgradientSSVM(BaseSSVM):
    """Structured SVM trained by stochastic subgradient steps (the SSG baseline).

    Parameters
    ----------
    model : StructuredModel
        The structured model.
    lam, C :
        Regularisation, as for ``FrankWolfeSSVM``.
    averaging, sampling, max_passes, max_oracle_calls, time_budget, eval_every,
    random_state, callback, n_jobs, verbose :
        See ``ssvm_core.subgradient.subgradient_solve``.
    warm_start : bool
        Continue from ``state_`` of the previous fit.

    Attributes
    ----------
    w_, primal_, lam_, history_, state_, n_passes_, status_ :
        Weights (the average with ``averaging``), their primal value, and the
        run's record, as for ``FrankWolfeSSVM`` (there is no ``gap_``).
    """

    def __init__(self, model, lam: float | None = None, C: float | None = None, *,
                 averaging: bool = True, sampling: str = "uniform", max_passes: int = 100,
                 max_oracle_calls: int | None = None, time_budget: float | None = None,
                 eval_every: int = 10, warm_start: bool = False, random_state=None,
                 callback=None, n_jobs: int | None = None, verbose: int = 0):
        self.model = model
        self.lam = lam
        self.C = C
        self.averaging = averaging
        self.sampling = sampling
        self.max_passes = max_passes
        self.max_oracle_calls = max_oracle_calls
        self.time_budget = time_budget
        self.eval_every = eval_every
        self.warm_start = warm_start
        self.random_state = random_state
        self.callback = callback
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, Y) -> SubgradientSSVM:
        """Train on examples ``X`` with ground-truth labellings ``Y``."""
        oracle, lam, state = self._prepare_fit(X, Y)
        result = subgradient_solve(
            oracle, lam, averaging=self.averaging, sampling=self.sampling,
            max_passes=self.max_passes, max_oracle_calls=self.max_oracle_calls,
            time_budget=self.time_budget, eval_every=self.eval_every, state=state,
            random_state=self.random_state, callback=self.callback, n_jobs=self.n_jobs,
            verbose=self.verbose)
        self.lam_ = lam
        self.w_ = result.w
        self.primal_ = result.primal
        self.history_ = result.history
        self.state_ = result.state
        self.n_passes_ = result.state.passes
        self.status_ = result.status
        return self

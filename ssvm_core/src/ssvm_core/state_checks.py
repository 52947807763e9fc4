"""The invariants of a ``SolverState``: one consistent dual point (``check_state``)
and, with active sets, alpha on the simplex with A alpha = v (``check_atoms``)."""

from __future__ import annotations

import numpy as np


def check_state(state, atol: float = 1e-9) -> None:
    """Raise ``ValueError`` unless ``state`` is one consistent dual point (see
    ``SolverState.check``)."""
    problems = array_problems(state)
    if problems:
        raise ValueError("; ".join(problems))
    if not state.blocks.needs_basis or state._compatible_oracle is not None:
        check_block_sum(state, atol)
    if not np.array_equal(state.w, state.project(state.v)):
        raise ValueError("w is not the projection of v onto the box")
    if abs(state.ell - float(np.sum(state.block_ell))) > atol * max(
            1.0, float(np.abs(state.block_ell).sum())):
        raise ValueError(f"ell = {state.ell} differs from the sum of the block ells "
                         f"{float(np.sum(state.block_ell))}")
    if state.atoms is not None:
        why = state.blocks.atoms_problem(state.atoms)
        if why is not None:
            raise ValueError(why)
        try:
            check_atoms(state, max(atol, 1e-8))
        except AssertionError as err:
            raise ValueError(f"active sets: {err}") from None


def check_atoms(state, atol: float = 1e-9) -> None:
    """Raise ``AssertionError`` naming a violated active-set invariant (see
    ``SolverState.check_atoms``)."""
    if state.atoms is None:
        raise AssertionError("the state keeps no active sets")
    n, lam = state.n_blocks, state.lam
    for i in range(n):
        alpha = state.atoms.alphas(i)
        v_block = state.blocks.atom_vector(i, state._compatible_oracle)   # the atoms' frame
        psi = state.atoms.psi_matrix(i, v_block.shape[0])
        loss = state.atoms.losses(i)
        if alpha.min() < 0 or abs(alpha.sum() - 1.0) > atol * alpha.size:
            raise AssertionError(f"block {i}: alpha {alpha} is not on the simplex")
        if np.any(psi[0] != 0.0) or loss[0] != 0.0:
            raise AssertionError(f"block {i}: atom 0 is not the ground truth")
        scale = max(1.0, float(np.abs(psi).max()) / (lam * n))
        v_i = alpha @ psi / (lam * n)
        if np.abs(v_i - v_block).max(initial=0.0) > atol * scale:
            raise AssertionError(f"block {i}: v_i differs from sum alpha psi / (lam n) "
                                 f"by {np.abs(v_i - v_block).max():.3g}")
        if abs(alpha @ loss / n - state.block_ell[i]) > atol * max(1.0, loss.max() / n):
            raise AssertionError(f"block {i}: ell_i differs from sum alpha L / n")


def check_block_sum(state, atol: float) -> None:
    """v = sum_i v_i to ``atol`` relative to the size of the terms (``ValueError``)."""
    total = state.blocks.total(state._compatible_oracle)
    scale = max(1.0, float(np.abs(state.block_values).max(initial=0.0)))
    if np.abs(total - state.v).max(initial=0.0) > atol * scale * max(state.n_blocks, 1):
        raise ValueError(f"v differs from the sum of the block vectors by "
                         f"{np.abs(total - state.v).max():.3g}")


def array_problems(state) -> list[str]:
    """Shape, layout and finiteness problems of a state's arrays (empty if none)."""
    n, d = state.n_blocks, state.n_features
    problems = []
    expect = {"w": (d,), "v": (d,), "block_ell": (n,), "block_gap_estimates": (n,),
              "block_oracle_gaps": (n,), "avg_u": (d,) if state.averaging else (0,)}
    for name, shape in expect.items():
        if getattr(state, name).shape != shape:
            problems.append(f"{name} has shape {getattr(state, name).shape}, expected {shape}")
    if state.lower.shape != state.upper.shape or state.lower.shape not in ((0,), (d,)):
        problems.append(f"box bounds have shapes {state.lower.shape} and "
                        f"{state.upper.shape}, expected (0,) or ({d},)")
    if problems:
        return problems
    problems = state.blocks.problems()
    for name in ("w", "v", "block_ell", "avg_u"):
        if not np.all(np.isfinite(getattr(state, name))):
            problems.append(f"{name} has non-finite entries")
    if np.isnan(state.lower).any() or np.isnan(state.upper).any() or np.any(
            state.lower > state.upper):
        problems.append("the box bounds are NaN or empty")
    for name in ("ell", "ell_avg"):
        if not np.isfinite(getattr(state, name)):
            problems.append(f"{name} is not finite")
    return problems

"""Shared input handling: the oracle, the box and the options passed to ``ssvm_core.solve``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ssvm_core import as_oracle
from ssvm_core.options import NAMES, PATH_NAMES, validate
from ssvm_core.validation import resolve_box

WARM_STARTS = ("cold", "keep-duals", "keep-primal")
DEFAULT_GRID = 2.0 ** np.arange(15, -16, -1)     # 2^15, ..., 2^-15 (Osokin et al. (2016), Sec. 5.2)


@dataclass
class Problem:
    """A training problem: the bound oracle, the model (if any) and the box."""

    oracle: object
    model: object | None
    X: object | None
    box: tuple[np.ndarray, np.ndarray] | None

    @property
    def n(self) -> int:
        return self.oracle.n_blocks

    @property
    def d(self) -> int:
        return self.oracle.n_features


def resolve_problem(model_or_oracle, X, Y, box, cone: bool) -> Problem:
    """Bind ``model_or_oracle`` to ``(X, Y)`` (a model) or take it as an oracle.

    ``box`` is ``"auto"``, ``"model"``, ``None`` or ``(lower, upper)`` (see
    ``ssvm_core.validation.resolve_box``).
    With ``cone=True`` the box must be a cone (every bound 0 or infinite), which
    keeps ``clip(c v) = c clip(v)`` for c > 0: the rescaling rule of the path
    above its first breakpoint needs it.
    """
    if (X is None) != (Y is None):
        raise ValueError("give both X and Y (with a model), or neither (with a bound oracle)")
    if X is not None:
        model = model_or_oracle
        if not hasattr(model, "bind"):
            raise TypeError(f"X and Y were given, so {type(model).__name__} must be a "
                            "structured model with bind(X, Y)")
        oracle = as_oracle(model.bind(X, Y))
    else:
        model = None
        oracle = as_oracle(model_or_oracle)
    box = resolve_box(box, oracle, model)
    if box is not None:
        if cone and not all(np.all((b == 0) | np.isinf(b)) for b in box):
            raise ValueError("the regularization path supports boxes whose bounds are 0 or "
                             "infinite (sign constraints), where clip(c w) = c clip(w)")
    return Problem(oracle, model, X, box)


def solver_options(step: str, sampling: str, cache: bool, max_passes: int,
                   gap_check_every: int, random_state, n_jobs, extra: dict) -> dict:
    """Keyword arguments for ``ssvm_core.solve`` (the caller adds lam, state, tol, ...).

    ``extra`` may hold any solver option of ``ssvm_core.options`` marked for
    paths; the others (lam, state, tol, averaging, callback, batch, box, ...)
    are set by the path or the grid search itself.  Values are validated
    against the options table.
    """
    own = sorted(set(extra) & (set(NAMES) - set(PATH_NAMES)) | set(extra) & {"lam", "state"})
    if own:
        raise ValueError(f"solver option(s) {own} are set by the path / grid search itself")
    options = dict(step=step, sampling=sampling, cache=cache, max_passes=max_passes,
                   gap_check_every=gap_check_every, random_state=random_state, n_jobs=n_jobs,
                   **extra)
    validate(options)
    return options


def check_eps_kappa(eps: float, kappa: float) -> tuple[float, float]:
    eps, kappa = float(eps), float(kappa)
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a finite positive number, got {eps}")
    if not 0.0 < kappa < 1.0:
        raise ValueError(f"kappa must be in the open interval (0, 1), got {kappa}")
    return eps, kappa


def check_grid(lams, warm_start: str) -> np.ndarray:
    """The grid of lambdas (``DEFAULT_GRID`` for None), checked for ``warm_start``."""
    if warm_start not in WARM_STARTS:
        raise ValueError(f"warm_start must be one of {WARM_STARTS}, got {warm_start!r}")
    grid = DEFAULT_GRID.copy() if lams is None else np.asarray(lams, dtype=float).ravel()
    if grid.size == 0 or not (np.all(np.isfinite(grid)) and np.all(grid > 0)):
        raise ValueError("lams must be a non-empty sequence of finite positive numbers")
    if warm_start != "cold" and np.any(np.diff(grid) >= 0):
        raise ValueError(f"warm_start={warm_start!r} needs a strictly decreasing grid")
    return grid


def check_tol(tol: float | None, eps: float, kappa: float) -> float:
    """The exact-gap tolerance of every point: ``tol``, or kappa eps when it is None."""
    eps, kappa = check_eps_kappa(eps, kappa)
    tol = kappa * eps if tol is None else float(tol)
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite positive number, got {tol}")
    return tol

"""Grid search over lambda, cold or warm-started, each point solved to one gap tolerance."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ssvm_core import solve
from ssvm_paths._common import check_eps_kappa, resolve_problem, solver_options

WARM_STARTS = ("cold", "keep-duals", "keep-primal")
DEFAULT_GRID = 2.0 ** np.arange(15, -16, -1)     # 2^15, ..., 2^-15 (Osokin et al. (2016), Sec. 5.2)


@dataclass
class GridSearchResult:
    """Solutions along a grid of lambdas.

    Attributes
    ----------
    lams : ndarray (m,)
        The grid, in the order solved.
    weights : ndarray (m, d)
        Solution at each lambda.
    gaps : ndarray (m,)
        Its exact duality gap (certified when <= ``tol``).
    effective_passes, times : ndarray (m,)
        Cumulative oracle calls / n and wall-clock seconds up to each lambda.
    statuses : list of str
        Solver status at each lambda.
    warm_start : str
        ``"cold"``, ``"keep-duals"`` or ``"keep-primal"``.
    tol : float
        The gap tolerance of every point.
    model : StructuredModel or None
    """

    lams: np.ndarray
    weights: np.ndarray
    gaps: np.ndarray
    effective_passes: np.ndarray
    times: np.ndarray
    statuses: list
    warm_start: str
    tol: float
    model: object = field(default=None, repr=False)

    @property
    def certified(self) -> np.ndarray:
        """Whether each point's exact gap is <= tol."""
        return self.gaps <= self.tol

    def summary(self) -> dict:
        return {"warm_start": self.warm_start, "tol": self.tol, "statuses": list(self.statuses),
                **{name: [float(x) for x in getattr(self, name)]
                   for name in ("lams", "gaps", "effective_passes", "times")}}


def grid_search(model_or_oracle, X=None, Y=None, lams: Sequence[float] | None = None, *,
                warm_start: str = "keep-duals", eps: float = 0.1, kappa: float = 0.9,
                tol: float | None = None, step: str = "pairwise", sampling: str = "gap",
                cache: bool = True, box="auto", max_passes: int = 1000,
                gap_check_every: int = 10, random_state=0, n_jobs: int | None = None,
                callback: Callable[[dict], None] | None = None,
                **solver_kwargs) -> GridSearchResult:
    """Solve the SSVM at every lambda of a grid to the same exact gap tolerance.

    Parameters
    ----------
    model_or_oracle, X, Y :
        As for ``regularization_path``.
    lams : sequence of float, optional
        The grid (default 2^15, 2^14, ..., 2^-15 as in Osokin et al. (2016), Sec. 5.2).  Warm
        starts need it strictly decreasing.
    warm_start : {"cold", "keep-duals", "keep-primal"}
        ``"cold"``: a fresh state (alpha on the ground truth, w = 0) per lambda;
        ``"keep-duals"``: keep alpha and rescale w = A alpha to the new lambda
        (``SolverState.rescale``, what ``solve(state=...)`` does);
        ``"keep-primal"``: keep w and rescale alpha off the ground truth by
        lambda_new / lambda_old (Osokin et al. (2016), Prop. 1, ``SolverState.shrink_duals``).
    eps, kappa : float
        The tolerance is kappa eps unless ``tol`` is given (the eps-path's
        breakpoint tolerance, for a like-for-like comparison).
    tol : float, optional
        Exact-gap tolerance of every point.
    step, sampling, cache, box, max_passes, gap_check_every, random_state, n_jobs,
    **solver_kwargs :
        Passed to ``ssvm_core.solve`` (``box`` defaults to "auto", the declared
        ``weight_bounds()``);
        iterates are not averaged.  A lambda that does not converge within
        ``max_passes`` is kept with its gap and status.
    callback : callable, optional
        Called with a dict per lambda (``lam``, ``gap``, ``status``,
        ``effective_passes``, ``time``).

    Returns
    -------
    GridSearchResult
    """
    if warm_start not in WARM_STARTS:
        raise ValueError(f"warm_start must be one of {WARM_STARTS}, got {warm_start!r}")
    eps, kappa = check_eps_kappa(eps, kappa)
    tol = kappa * eps if tol is None else float(tol)
    if not (math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite positive number, got {tol}")
    grid = DEFAULT_GRID.copy() if lams is None else np.asarray(lams, dtype=float).ravel()
    if grid.size == 0 or not (np.all(np.isfinite(grid)) and np.all(grid > 0)):
        raise ValueError("lams must be a non-empty sequence of finite positive numbers")
    if warm_start != "cold" and np.any(np.diff(grid) >= 0):
        raise ValueError(f"warm_start={warm_start!r} needs a strictly decreasing grid")
    options = solver_options(step, sampling, cache, max_passes, gap_check_every,
                             random_state, n_jobs, solver_kwargs)
    problem = resolve_problem(model_or_oracle, X, Y, box, cone=False)
    n = problem.n
    state = None
    calls = 0                    # oracle calls of the finished states (cold starts)
    clock = time.perf_counter()
    weights, gaps, passes, times, statuses = [], [], [], [], []
    for lam in grid:
        if warm_start == "cold":
            state = None
        elif warm_start == "keep-primal" and state is not None:
            state.shrink_duals(lam)          # exact gaps carried over: no start pass
        result = solve(problem.oracle, lam, state=state, tol=tol, averaging=False,
                       box=problem.box, initial_gap_pass=False, **options)
        state = result.state
        weights.append(result.w)
        gaps.append(result.gap)
        statuses.append(result.status)
        passes.append((calls + state.oracle_calls) / n)
        times.append(time.perf_counter() - clock)
        if warm_start == "cold":
            calls += state.oracle_calls
        if callback is not None:
            callback({"lam": float(lam), "gap": result.gap, "status": result.status,
                      "effective_passes": passes[-1], "time": times[-1]})
    return GridSearchResult(grid, np.array(weights), np.array(gaps), np.array(passes),
                            np.array(times), statuses, warm_start, tol, problem.model)

"""Grid search over lambda, cold or warm-started, each point solved to one gap tolerance."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ssvm_core.executors import DaskExecutor
from ssvm_core.problems import map_problems, problem_executor, problem_workers
from ssvm_paths._chain import check_random_state, join_chains, solve_chain, warn_inexact
from ssvm_paths._common import (
    DEFAULT_GRID,
    WARM_STARTS,
    check_grid,
    check_tol,
    resolve_problem,
    solver_options,
)

__all__ = ["DEFAULT_GRID", "WARM_STARTS", "GridSearchResult", "grid_search"]


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
        Its exact duality gap P(w) - D(alpha) (certified when <= ``tol`` and exact).
    effective_passes, times : ndarray (m,)
        Cumulative oracle calls / n and seconds of the solves up to each lambda, in grid
        order (with parallel solves: the sum of their own seconds, not wall-clock time).
    statuses : list of str
        Solver status at each lambda.
    warm_start : str
        ``"cold"``, ``"keep-duals"`` or ``"keep-primal"``.
    tol : float
        The gap tolerance of every point.
    duals : ndarray (m,)
        The dual objective D(alpha) of each point's final state (primal = dual + gap).
    exact : ndarray of bool (m,)
        Whether each solve's oracle stayed exact (on whichever worker ran it).
    starts : ndarray of int
        Indices of the points solved from a cold start: every one for ``"cold"``, else the
        first point of each warm-started segment (``[0]`` serially).
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
    duals: np.ndarray
    exact: np.ndarray
    starts: np.ndarray
    model: object = field(default=None, repr=False)

    @property
    def certified(self) -> np.ndarray:
        """Whether each point's gap is exact (an exact oracle) and <= tol."""
        return self.exact & (self.gaps <= self.tol)

    def summary(self) -> dict:
        return {"warm_start": self.warm_start, "tol": self.tol, "statuses": list(self.statuses),
                "exact": [bool(x) for x in self.exact], "starts": [int(x) for x in self.starts],
                **{name: [float(x) for x in getattr(self, name)]
                   for name in ("lams", "gaps", "duals", "effective_passes", "times")}}


def grid_search(model_or_oracle, X=None, Y=None, lams: Sequence[float] | None = None, *,
                warm_start: str = "keep-duals", eps: float = 0.1, kappa: float = 0.9,
                tol: float | None = None, step: str = "pairwise", sampling: str = "gap",
                cache: bool = True, box="auto", max_passes: int = 1000,
                gap_check_every: int = 10, random_state=0, executor=None,
                n_jobs: int | None = None, callback: Callable[[dict], None] | None = None,
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
    step, sampling, cache, box, max_passes, gap_check_every, random_state, **solver_kwargs :
        Passed to ``ssvm_core.solve`` (``box`` defaults to "auto", the declared
        ``weight_bounds()``);
        iterates are not averaged.  A lambda that does not converge within
        ``max_passes`` is kept with its gap and status.
    executor : None, {"serial", "threads"}, distributed.Client or Executor, default None
        Where the independent solves run (``ssvm_core.problems``): None is
        threads when ``n_jobs`` > 1, else this thread; a Dask client submits
        whole solves to its cluster (the oracle must pickle).  Each solve
        makes its own oracle calls serially in its worker.
    n_jobs : int, optional
        Solves at once in threads (None: 1, -1: every core).  With one worker
        the search is the serial one, bit for bit.
    callback : callable, optional
        Called with a dict per lambda (``lam``, ``gap``, ``status``,
        ``effective_passes``, ``time``), in grid order.

    Returns
    -------
    GridSearchResult

    Notes
    -----
    With W > 1 workers, a cold search solves every lambda independently
    (the same solutions as serially).  A warm search cuts the grid into
    ``min(W, len(lams))`` contiguous segments of near-equal length
    (``numpy.array_split``), one per worker; each starts cold at its first
    lambda and is warm-started along its segment, so its points equal those
    of a serial ``grid_search`` run on that segment alone
    (``GridSearchResult.starts`` holds where segments begin).  Results
    never depend on which solve finishes first, so ``random_state`` must
    be an int or None then.  ``effective_passes`` and ``times`` add the
    solves' own counts and seconds in grid order (the work done, not the
    wall-clock time).
    """
    grid = check_grid(lams, warm_start)
    tol = check_tol(tol, eps, kappa)
    options = solver_options(step, sampling, cache, max_passes, gap_check_every,
                             random_state, None, solver_kwargs)
    pool = problem_executor(executor, n_jobs)
    problem = resolve_problem(model_or_oracle, X, Y, box, cone=False)
    workers = problem_workers(pool, problem.oracle.needs_gil)
    remote = isinstance(pool, DaskExecutor)
    check_random_state(random_state, workers > 1 or remote)
    m = grid.size
    if workers == 1:
        segments = [np.arange(m)]                # the serial search
    elif warm_start == "cold":
        segments = [np.array([i]) for i in range(m)]
    else:
        segments = np.array_split(np.arange(m), min(workers, m))
    inline = callback if len(segments) == 1 and not remote else None
    jobs = [(0, (grid[seg], warm_start, tol, options, inline)) for seg in segments]
    with pool if pool is not executor else contextlib.nullcontext():
        # the jobs read the bound oracle, not X: leave it out of what is sent to workers
        chains = map_problems(pool, solve_chain, [replace(problem, X=None)], jobs)
        points = join_chains(chains, problem.n, None if inline is not None else callback)
    if remote:
        warn_inexact(points)
    starts = np.arange(m) if warm_start == "cold" else np.array([seg[0] for seg in segments])
    return GridSearchResult(
        grid, np.array([p.w for p in points]), np.array([p.gap for p in points]),
        np.array([p.passes for p in points]), np.array([p.time for p in points]),
        [p.status for p in points], warm_start, tol, np.array([p.dual for p in points]),
        np.array([p.exact for p in points]), starts, problem.model)

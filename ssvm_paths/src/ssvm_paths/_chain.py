"""Chains of solves along a grid of lambdas: the job of a grid search or a cross-validation.

A chain solves its lambdas in order, each from a cold start or warm-started
from the previous one; ``ssvm_core.problems.map_problems`` runs chains in
parallel and ``join_chains`` adds their counts up in grid order.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ssvm_core import dual_objective, solve
from ssvm_paths._common import Problem


@dataclass
class Point:
    """One solved lambda.

    ``calls`` and ``time`` are cumulative along the chain (oracle calls and
    seconds since its start); ``join_chains`` turns them into effective
    passes and seconds since the start of the grid.
    """

    lam: float
    w: np.ndarray
    gap: float
    dual: float
    status: str
    exact: bool
    calls: int
    time: float
    passes: float = float("nan")


def solve_chain(problem: Problem, lams: np.ndarray, warm_start: str, tol: float, options: dict,
                callback: Callable[[dict], None] | None = None) -> list[Point]:
    """Solve ``lams`` in order, warm-started as ``warm_start`` says (see ``grid_search``).

    ``callback`` gets a record per lambda (``lam``, ``gap``, ``status``,
    ``effective_passes``, ``time``) counted from the chain's start.
    """
    n = problem.n
    state = None
    calls = 0                    # oracle calls of the finished states (cold starts)
    clock = time.perf_counter()
    points = []
    for lam in lams:
        if warm_start == "cold":
            state = None
        elif warm_start == "keep-primal" and state is not None:
            state.shrink_duals(lam)          # exact gaps carried over: no start pass
        result = solve(problem.oracle, lam, state=state, tol=tol, averaging=False,
                       box=problem.box, initial_gap_pass=False, **options)
        state = result.state
        points.append(Point(float(lam), result.w, result.gap, dual_objective(state),
                            result.status, bool(result.certified), calls + state.oracle_calls,
                            time.perf_counter() - clock))
        if warm_start == "cold":
            calls += state.oracle_calls
        if callback is not None:
            callback(_record(points[-1], points[-1].calls / n, points[-1].time))
    return points


def join_chains(chains: Sequence[list[Point]], n: int,
                callback: Callable[[dict], None] | None = None) -> list[Point]:
    """The points of consecutive chains, with ``passes`` and ``time`` counted from the first.

    A chain's counts are added to the totals of the chains before it, so a
    single chain keeps its own; ``callback`` gets each point's record.
    """
    out, calls, seconds = [], 0, 0.0
    for chain in chains:
        end_calls, end_time = calls + chain[-1].calls, seconds + chain[-1].time
        for point in chain:
            point.passes = (calls + point.calls) / n
            point.time = seconds + point.time
            if callback is not None:
                callback(_record(point, point.passes, point.time))
            out.append(point)
        calls, seconds = end_calls, end_time
    return out


def _record(point: Point, passes: float, seconds: float) -> dict:
    return {"lam": point.lam, "gap": point.gap, "status": point.status,
            "effective_passes": passes, "time": seconds}


def check_random_state(random_state, concurrent: bool) -> None:
    """Refuse a shared Generator when solves run at once (their draws would race)."""
    if concurrent and isinstance(random_state, np.random.Generator):
        raise ValueError("random_state must be an int or None when solves run in parallel "
                         "(a shared Generator would make the results depend on timing)")


def warn_inexact(points: Sequence[Point]) -> None:
    """Warn in this process when solves on Dask workers were approximate (their own
    warnings stay in the workers' logs)."""
    lams = [p.lam for p in points if not p.exact]
    if lams:
        warnings.warn(f"the oracle was approximate on a worker of the executor at "
                      f"{len(lams)} lambda(s) ({', '.join(f'{x:.4g}' for x in lams[:5])}"
                      f"{', ...' if len(lams) > 5 else ''}): their gaps are estimates, not "
                      "certificates", RuntimeWarning, stacklevel=3)

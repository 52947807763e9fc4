"""Timing helpers shared by the benchmark scripts (imported as a sibling module)."""

from __future__ import annotations

from ssvm_core import solve
from ssvm_oracles import CountingOracle


def mean_call_seconds_in_training(oracle, lam: float, box, passes: int) -> float:
    """Mean seconds per oracle call over ``passes`` BCFW passes from scratch (seed 0).

    Osokin et al. (2016), Table 1's measure ("the average running times of the max oracle and
    the joint feature map"), timed by ``CountingOracle(timing=True)``; gap
    passes count as calls too.
    """
    counting = CountingOracle(oracle, timing=True)
    solve(counting, lam, box=box, max_passes=passes, tol=0.0, random_state=0)
    return float(counting.solve_seconds.sum() / counting.solve_calls.sum())

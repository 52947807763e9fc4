"""Honest stopping: how far a budget stop left the certified gap from ``tol``.

Frank-Wolfe methods on the SSVM dual certify their iterate by the exact
duality gap, which decays like O(1/k) in the pass count k for BCFW and batch
FW (Lacoste-Julien et al. 2013, Thm. 2-3; faster for the away and pairwise
steps on polytopes, Osokin et al. 2016).  When a solve stops on a budget
above ``tol``, :func:`passes_to_tol` fits ``gap ~ c k^-p`` to the history's
gap checks and extrapolates to ``tol``; :func:`budget_message` says so, and
``ssvm_core.solve`` issues it as a ``ConvergenceWarning``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BUDGET_STATUSES", "RemainingEstimate", "budget_message", "certified_suffix",
           "checked_gaps", "passes_to_tol"]

#: The statuses of a stop on a budget (rather than on convergence, a callback or a signal).
BUDGET_STATUSES = ("max_passes", "max_oracle_calls", "time_budget")


@dataclass(frozen=True)
class RemainingEstimate:
    """An extrapolation of the gap checks to ``tol``.

    Attributes
    ----------
    passes : int
        Further passes estimated to bring the gap to ``tol``.
    exponent : float
        The fitted p of gap ~ c k^-p (1 assumed when fewer than two checks
        after the first pass are available or they do not decrease).
    n_checks : int
        The gap checks fitted (0 when the exponent was assumed).
    """

    passes: int
    exponent: float
    n_checks: int


def certified_suffix(record: dict) -> str | None:
    """Which iterate a history record's gap check certified: ``"_avg"`` (the averaged one,
    fields ``primal_avg``, ``dual_avg``, ``gap_avg``), ``""`` (the plain one: ``primal``,
    ``dual``, ``gap``) or None when the record has no gap check."""
    suffix = "_avg" if record.get("iterate") == "average" else ""
    return suffix if record.get("gap" + suffix) is not None else None


def checked_gaps(history: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """``(passes, gaps)`` of the history's gap checks: the gap of the iterate each check
    certified (see :func:`certified_suffix`)."""
    checks = [(rec["pass"], rec["gap" + suffix]) for rec in history
              if (suffix := certified_suffix(rec)) is not None]
    passes, gaps = zip(*checks) if checks else ((), ())
    return np.asarray(passes, dtype=float), np.asarray(gaps, dtype=float)


def passes_to_tol(history: list[dict], tol: float) -> RemainingEstimate | None:
    """Estimate the further passes that would bring the certified gap to ``tol``.

    The later half of the gap checks made after the first pass (at least the
    last three when there are, at most the last eight) are fitted by least squares as
    log gap = log c - p log k, k the pass count over the state's life; the
    line is then solved for gap = tol.  With fewer than two such checks, or a
    fit that does not decrease, the O(1/k) rate of Frank-Wolfe (p = 1) is
    assumed through the last check.  It is an extrapolation, not a bound.

    Parameters
    ----------
    history : list of dict
        Records of ``ssvm_core.solve`` (or the estimator's ``history_``).
    tol : float
        The target gap, > 0.

    Returns
    -------
    RemainingEstimate or None
        None when the history has no gap check after the first pass with a
        positive gap, or the last gap is already <= ``tol``.
    """
    passes, gaps = checked_gaps(history)
    keep = (passes >= 1) & (gaps > 0) & np.isfinite(gaps)
    passes, gaps = passes[keep], gaps[keep]
    if tol <= 0 or passes.size == 0 or gaps[-1] <= tol:
        return None
    k_last, g_last = passes[-1], gaps[-1]
    fitted = passes[-min(8, max(3, passes.size // 2)):]
    exponent, n_checks = 1.0, 0
    if fitted.size >= 2 and np.ptp(fitted) > 0:
        log_k = np.log(fitted)
        log_g = np.log(gaps[-fitted.size:])
        slope = np.polyfit(log_k, log_g, 1)[0]
        if slope < 0:
            exponent, n_checks = float(-slope), int(fitted.size)
    # through the last check: k_tol = k_last (g_last / tol)^(1/p)
    k_tol = k_last * math.exp(math.log(g_last / tol) / exponent)
    # (rounded first: 45.000000001 passes are 45)
    return RemainingEstimate(max(1, math.ceil(round(k_tol - k_last, 6))), exponent, n_checks)


def budget_message(status: str, passes: int, gap: float, tol: float,
                   history: list[dict]) -> str:
    """The sentence a budget stop above ``tol`` reports (warning and command line).

    Parameters
    ----------
    status : str
        One of ``BUDGET_STATUSES``.
    passes : int
        Passes made over the state's life.
    gap : float
        The certified gap of the returned iterate.
    tol : float
        The target.
    history : list of dict
        The records the estimate is fitted to (see :func:`passes_to_tol`).
    """
    text = (f"the solver stopped on {status} after {passes} passes with certified duality "
            f"gap {gap:.4g} > tol {tol:g}")
    estimate = passes_to_tol(history, tol)
    if estimate is None:
        return text + "; too few gap checks to estimate the passes still needed."
    how = (f"gap ~ passes^-{estimate.exponent:.2f} fitted to the last {estimate.n_checks} gap "
           "checks" if estimate.n_checks else "assuming the O(1/k) rate of Frank-Wolfe")
    return (text + f"; about {estimate.passes} more passes would reach tol (an estimate: "
            f"{how}). Resume from the state, or raise max_passes or tol.")

"""Honest stopping: how far a budget stop left the certified gap from ``tol``.

Frank-Wolfe methods on the SSVM dual certify their iterate by the exact
duality gap, which decays like O(1/k) in the pass count k for BCFW and batch
FW (Lacoste-Julien et al. 2013, Thm. 2-3; faster for the away and pairwise
steps on polytopes, Osokin et al. 2016).  When a solve stops on a budget
above ``tol``, :func:`passes_to_tol` fits ``gap ~ c / k`` to the history's
latest gap checks and extrapolates to ``tol``; :func:`budget_message` says so, and
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
    constant : float
        The fitted c of gap ~ c / k.
    n_checks : int
        The gap checks it was fitted to.
    """

    passes: int
    constant: float
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

    The O(1/k) rate of Frank-Wolfe, gap ~ c / k with k the pass count over
    the state's life, is fitted to the later half of the gap checks made
    after the first pass (at least the last three when there are that many,
    at most the last eight): log c is the mean of log(gap k) over them.  The
    estimate is then c / tol minus the passes made.  It is an extrapolation,
    not a bound: the away and pairwise steps can converge faster, and the
    first passes of a run often decay more slowly than 1/k.

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
    fitted = min(passes.size, 8, max(3, passes.size // 2))
    constant = float(np.exp(np.mean(np.log(gaps[-fitted:] * passes[-fitted:]))))
    # (rounded first: 45.000000001 passes are 45)
    remaining = math.ceil(round(constant / tol - passes[-1], 6))
    return RemainingEstimate(max(1, remaining), constant, fitted)


def budget_message(status: str, passes: int, gap: float, tol: float,
                   history: list[dict], certified: bool = True) -> str:
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
    certified : bool, default True
        Whether the gap is a certificate (False for an approximate oracle, whose
        gap is an estimate).
    """
    kind = "certified duality gap" if certified else "duality gap (an estimate: the oracle " \
        "is approximate)"
    text = f"the solver stopped on {status} after {passes} passes with {kind} {gap:.4g} > " \
        f"tol {tol:g}"
    estimate = passes_to_tol(history, tol)
    if estimate is None:
        return text + "; too few gap checks to estimate the passes still needed."
    checks = "gap check" if estimate.n_checks == 1 else f"{estimate.n_checks} gap checks"
    return (text + f"; about {estimate.passes} more passes would reach tol (an estimate: "
            f"gap ~ {estimate.constant:.3g} / passes fitted to the last {checks}). "
            "Resume from the state, or raise max_passes or tol.")

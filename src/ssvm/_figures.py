"""The figures ``ssvm train`` and ``ssvm path`` write (matplotlib, Agg backend)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ssvm_core.convergence import certified_suffix


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _series(records: list[dict], key: str, suffix: str = "") -> dict[str, np.ndarray]:
    """Passes, seconds and ``key`` of the records where ``key + suffix`` is not None."""
    rows = [(r["pass"], r["time"], r[key + suffix]) for r in records
            if r.get(key + suffix) is not None]
    passes, seconds, values = (np.asarray(c, dtype=float) for c in zip(*rows)) if rows else \
        (np.empty(0),) * 3
    return {"pass": passes, "time": seconds, "value": values}


def plot_training(history: list[dict], out: str | os.PathLike, title: str) -> None:
    """``train.png``: primal, dual and certified gap against passes and against time.

    The top row shows the primal P(w) and the dual D at every gap check (of
    the iterate the check certified: the averaged one where ``iterate`` is
    "average") and the plain iterate's dual after every pass; the bottom row
    the certified duality gap, on a log scale (positive gaps only).  Runs
    without a dual (SSG) show their primal only, in one row.  The x axes are
    the passes over the state's life and the solver's seconds; a resumed run's
    records continue both.
    """
    plt = _pyplot()
    checks = [(r, suffix) for r in history if (suffix := certified_suffix(r)) is not None]
    certified = {key: np.array([r[key + suffix] for r, suffix in checks], dtype=float)
                 for key in ("primal", "dual", "gap")}
    certified.update({key: np.array([r[key] for r, _ in checks], dtype=float)
                      for key in ("pass", "time")})
    every_dual = _series(history, "dual")
    primal_only = _series(history, "primal", "_avg" if any(
        r.get("primal_avg") is not None for r in history) else "")
    rows = 2 if checks else 1               # SSG has no gap row
    fig, axes = plt.subplots(rows, 2, figsize=(10, 3.5 + 3 * (rows - 1)), sharex="col",
                             squeeze=False, constrained_layout=True)
    for col, (x_key, x_label) in enumerate((("pass", "passes"), ("time", "solver time (s)"))):
        top, bottom = axes[0, col], axes[-1, col]
        if checks:
            top.plot(certified[x_key], certified["primal"], "o-", color="C3", ms=4,
                     label="primal P(w) at gap checks")
            top.plot(certified[x_key], certified["dual"], "s-", color="C0", ms=4,
                     label="dual D at gap checks")
            top.plot(every_dual[x_key], every_dual["value"], "-", color="C0", alpha=0.35,
                     lw=1, label="dual after each pass (plain iterate)")
        else:                                # SSG: no dual and no gap
            top.plot(primal_only[x_key], primal_only["value"], "o-", color="C3", ms=4,
                     label="primal P(w)")
        if len(checks) >= 3:
            # zoom past the first check (P = 1, D = 0 at w = 0), which would flatten the rest
            low = min(certified["dual"][1:].min(), every_dual["value"][1:].min(initial=np.inf))
            high = certified["primal"][1:].max()
            pad = 0.1 * max(high - low, 1e-12)
            top.set_ylim(low - pad, high + pad)
        top.set_ylabel("objective")
        top.grid(True, alpha=0.3)
        bottom.set_xlabel(x_label)
        if not checks:
            continue
        positive = certified["gap"] > 0
        bottom.semilogy(certified[x_key][positive], certified["gap"][positive], "o-",
                        color="C2", ms=4, label="certified duality gap")
        bottom.legend(loc="upper right", fontsize=9)
        bottom.set_ylabel("duality gap")
        bottom.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(loc="best", fontsize=9)
    fig.suptitle(title)
    fig.savefig(out, dpi=110, format="png")
    plt.close(fig)


def plot_path_scores(lams: Sequence[float], gaps: Sequence[float], eps: float,
                     scored_lams: Sequence[float], test_scores: Sequence[float],
                     out: str | os.PathLike, title: str) -> None:
    """``path.png``: the test score and the certified gap at the path's breakpoints
    against lambda (log scale, decreasing to the right as the path runs)."""
    plt = _pyplot()
    fig, (ax_score, ax_gap) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True,
                                           constrained_layout=True)
    order = np.argsort(scored_lams)[::-1]
    ax_score.plot(np.asarray(scored_lams)[order], np.asarray(test_scores)[order], "o-",
                  color="C0", ms=5)
    best = int(np.argmax(test_scores))
    ax_score.plot([scored_lams[best]], [test_scores[best]], "*", color="C3", ms=14,
                  label=f"best: {test_scores[best]:.4f} at lambda {scored_lams[best]:.3g}")
    ax_score.set_ylabel("test score (1 - mean loss)")
    ax_score.legend(loc="best", fontsize=9)
    lams, gaps = np.asarray(lams, dtype=float), np.asarray(gaps, dtype=float)
    known = np.isfinite(gaps) & (gaps > 0)
    ax_gap.semilogy(lams[known], gaps[known], ".", color="C2", ms=6,
                    label="certified gap at each breakpoint")
    ax_gap.axhline(eps, color="C3", ls="--", lw=1, label=f"eps = {eps:g}")
    ax_gap.set_ylabel("duality gap")
    ax_gap.set_xlabel("lambda")
    ax_gap.legend(loc="best", fontsize=9)
    for ax in (ax_score, ax_gap):
        ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
    ax_gap.invert_xaxis()                    # the path moves from large to small lambda
    fig.suptitle(title)
    fig.savefig(out, dpi=110, format="png")
    plt.close(fig)

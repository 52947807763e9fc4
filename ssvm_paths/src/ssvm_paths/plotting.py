"""Cumulative cost along lambda (Osokin et al. (2016), Fig. 4 / App. K), with matplotlib."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ssvm_core.files import atomic_write


def cost_curves(result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lams, times, effective_passes)`` of a path or grid search, lambda decreasing."""
    return (np.asarray(result.lams, dtype=float), np.asarray(result.times, dtype=float),
            np.asarray(result.effective_passes, dtype=float))


def plot_costs(results: Mapping[str, object], out: str | os.PathLike | None = None,
               title: str | None = None):
    """Cumulative time (left) and effective passes (right) to reach each lambda.

    Parameters
    ----------
    results : mapping name -> RegularizationPath or GridSearchResult
        Anything with ``lams``, ``times`` and ``effective_passes`` arrays.
    out : path, optional
        Where to save the figure, atomically (``ssvm_core.files.atomic_write``),
        in the format its suffix names (PNG without a suffix).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    if out is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_passes) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for name, result in results.items():
        lams, times, passes = cost_curves(result)
        ax_time.step(lams, times, where="post", marker=".", label=name)
        ax_passes.step(lams, passes, where="post", marker=".", label=name)
    for ax, what in ((ax_time, "cumulative time (s)"),
                     (ax_passes, "cumulative effective passes")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.invert_xaxis()                      # the methods move from large to small lambda
        ax.set_xlabel("lambda")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    ax_passes.legend()
    if title:
        fig.suptitle(title)
    if out is not None:
        fmt = Path(out).suffix.lstrip(".").lower() or "png"
        with atomic_write(out) as f:
            fig.savefig(f, dpi=120, format=fmt)
        plt.close(fig)
    return fig

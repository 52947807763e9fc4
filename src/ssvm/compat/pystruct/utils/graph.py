"""Grid graphs and edge-direction features, as in ``pystruct.utils`` (the grids are
``ssvm_oracles.graph.grid_edges``)."""

from __future__ import annotations

import numpy as np

from ssvm_oracles.graph import grid_edges


def make_grid_edges(x, neighborhood: int = 4, return_lists: bool = False):
    """Edges of the pixel grid of an image ``x`` of shape ``(height, width, ...)``.

    Pixel ``(r, c)`` is node ``r * width + c``.  The edges come in groups:
    right neighbours ``(r, c) -> (r, c + 1)``, then down neighbours
    ``(r, c) -> (r + 1, c)`` and, for ``neighborhood=8``, the up-right
    ``(r + 1, c) -> (r, c + 1)`` and down-right ``(r, c) -> (r + 1, c + 1)``
    diagonals, each group in row-major order of its first pixel.

    Parameters
    ----------
    x : ndarray, shape (height, width, ...)
        Only its first two dimensions are used.
    neighborhood : {4, 8}, default 4
        4- or 8-connected grid.
    return_lists : bool, default False
        Return the list of groups instead of one stacked ``(n_edges, 2)`` array.

    Returns
    -------
    edges : ndarray of int64, shape (n_edges, 2), or list of such arrays
    """
    shape = np.shape(x)
    if len(shape) < 2:
        raise ValueError(f"x must have at least two dimensions (height, width), got {shape}")
    return grid_edges(shape[0], shape[1], neighborhood, return_lists)


def edge_list_to_features(edge_list) -> np.ndarray:
    """Edge features marking the direction of grid edges.

    Parameters
    ----------
    edge_list : list of ndarray
        Edge groups as returned by ``make_grid_edges(..., return_lists=True)``.

    Returns
    -------
    ndarray, shape (n_edges, 2)
        Column 0 is 1 on the first group (horizontal edges), column 1 is 1 on
        all later groups, following pystruct.
    """
    if len(edge_list) == 0:
        raise ValueError("edge_list is empty")
    n_first = len(edge_list[0])
    n_edges = sum(len(group) for group in edge_list)
    features = np.zeros((n_edges, 2))
    features[:n_first, 0] = 1.0
    features[n_first:, 1] = 1.0
    return features

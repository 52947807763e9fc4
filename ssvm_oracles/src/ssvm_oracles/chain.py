"""Chain model (OCR, chunking): Viterbi max oracle and decoding."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ssvm_core import StructuredModel
from ssvm_core.validation import check_weights
from ssvm_oracles._chain import ChainOracle, chain_size, decode, sequence_features
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
    sparse_blocks : bool, optional
        Whether the bound oracle reports per-block supports
        (``block_support``), so that solvers store each block's w_i on the
        emission rows of its sequence's features plus the transition, bias,
        start and end entries, instead of densely.  None (default) decides at
        ``bind``: sparse when that needs less memory (sparse entries cost 12
        bytes, dense ones 8), as with sparse token features over many
        attributes.
    compact_blocks : bool, default=False
        Whether the bound oracle offers compact blocks: the solvers then keep
        each block's dual vector as T K + K K coordinates (token-label and
        transition weights) instead of a d-vector, and step in those
        coordinates.  Needs far less memory than dense or sparse blocks on
        long feature vectors (OCR: 4,082 numbers a block become about 900).
        Cannot be combined with ``sparse_blocks=True``.

    Attributes
    ----------
    n_features_in_ : int
        F of the data last bound (set by ``bind``; the constructor's
        ``n_features`` is never changed).

    Examples
    --------
    Four short sequences of 2 features and 3 labels; the Viterbi oracle agrees with
    brute force over every labelling at the trained w:

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
    >>> all(np.array_equal(oracle.solve_py(i, result.w)[0], brute.solve(i, result.w)[0])
    ...     for i in range(len(X)))
    True
    >>> [y.tolist() for y in model.predict(X[:2], result.w)]
    [[1, 2], [2, 2, 1]]
    """

    def __init__(self, n_states: int, n_features: int | None = None,
                 sparse_blocks: bool | None = None, compact_blocks: bool = False):
        if int(n_states) != n_states or n_states < 2:
            raise ValueError(f"n_states must be an integer >= 2, got {n_states}")
        if n_features is not None and (int(n_features) != n_features or n_features < 1):
            raise ValueError(f"n_features must be a positive integer, got {n_features}")
        if sparse_blocks not in (None, True, False):
            raise ValueError(f"sparse_blocks must be None, True or False, got {sparse_blocks!r}")
        self.n_states = int(n_states)
        self.n_features = None if n_features is None else int(n_features)
        if compact_blocks not in (True, False):
            raise ValueError(f"compact_blocks must be True or False, got {compact_blocks!r}")
        if compact_blocks and sparse_blocks:
            raise ValueError("choose sparse_blocks=True or compact_blocks=True, not both")
        self.sparse_blocks = sparse_blocks
        self.compact_blocks = bool(compact_blocks)

    def __repr__(self) -> str:
        extra = "" if self.sparse_blocks is None else f", sparse_blocks={self.sparse_blocks}"
        if self.compact_blocks:
            extra += ", compact_blocks=True"
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
        sparse = self.sparse_blocks
        if self.compact_blocks:
            sparse = False
        elif sparse is None:
            sparse = self._sparse_is_smaller(packed)
        oracle = ChainOracle(self.n_states, packed.n_features, packed.tok_ptr, packed.feat_idx,
                             packed.feat_val, packed.seq_ptr, labels, sparse,
                             self.compact_blocks)
        self.n_features_in_ = packed.n_features
        return oracle

    def _sparse_is_smaller(self, packed) -> bool:
        """Do per-block supports (12 bytes an entry) take less memory than dense blocks (8)?"""
        K = self.n_states
        ptr, _ = sequence_features(packed.tok_ptr, packed.feat_idx, packed.seq_ptr)
        entries = (ptr[-1] * K + np.count_nonzero(packed.lengths > 1) * K * K
                   + 3 * K * len(packed.lengths))
        d = chain_size(K, packed.n_features)
        return 12 * entries < 8 * len(packed.lengths) * d

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

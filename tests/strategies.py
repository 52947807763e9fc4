"""Hypothesis strategies for enumerable toy problems on the Cython oracles.

Strategies draw only sizes and a seed; the arrays come from NumPy generators
in ``ssvm_core.testing``.  Importable by bare name because the pytest
configuration puts ``tests/`` on ``pythonpath``.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from ssvm_core import BruteForceOracle
from ssvm_core.testing import (
    EnumeratedProblem,
    enumerate_problem,
    random_chain_data,
    random_multiclass_data,
)
from ssvm_oracles import ChainModel, MulticlassModel

KINDS = ("multiclass", "multiclass_cost", "chain")


@dataclass
class Toy:
    """A toy problem with its Cython oracle and the brute-force enumeration."""

    model: object
    X: list
    Y: list
    lam: float
    oracle: object            # the Cython oracle
    bf: BruteForceOracle      # brute force over the same model
    enum: EnumeratedProblem   # enumerated psi / loss
    rng: np.random.Generator


def _random_cost(rng, K: int) -> np.ndarray:
    cost = rng.uniform(0.1, 2.0, size=(K, K))
    np.fill_diagonal(cost, 0.0)
    return cost


def _toy(model, X, Y, lam, rng) -> Toy:
    bf = BruteForceOracle(model, X, Y)
    return Toy(model, X, Y, lam, model.bind(X, Y), bf, enumerate_problem(bf), rng)


@st.composite
def toy_problems(draw, kinds=KINDS, n_max: int = 4, binary: bool = False, lams=(-3, 1),
                 blocks: str = "dense"):
    """Multiclass (K <= 4) or chain (T <= 4, K <= 3) problems with n <= n_max.

    The models keep ``blocks`` storage (dense by default: the properties read block
    vectors and atoms' psi as d-vectors; compact storage is checked against dense in
    test_compact_models.py).
    """
    kind = draw(st.sampled_from(kinds))
    n = draw(st.integers(1, n_max))
    lam = 10.0 ** draw(st.integers(*lams))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "chain":
        K = 2 if binary else draw(st.integers(2, 3))
        T = 1 if binary else draw(st.integers(1, 4))
        F = draw(st.integers(1, 2))
        X, Y = random_chain_data(rng, n, T, K, F)
        model = ChainModel(K, F, blocks=blocks)
    else:
        K = 2 if binary else draw(st.integers(2, 4))
        F = draw(st.integers(1, 3))
        X, Y = random_multiclass_data(rng, n, F, K)
        cost = _random_cost(rng, K) if kind == "multiclass_cost" else None
        model = MulticlassModel(K, F, cost=cost, blocks=blocks)
    return _toy(model, X, Y, lam, rng)


@st.composite
def binary_problems(draw):
    """Two labellings per block (K = 2 multiclass, or K = 2 chains with T = 1).

    n <= F keeps the psi vectors of different blocks in general position: with
    collinear psi and a tiny lambda, coordinate descent crawls along a flat
    valley (linear rate, but with a terrible constant).
    """
    kind = draw(st.sampled_from(KINDS))
    F = draw(st.integers(2, 4))
    n = draw(st.integers(1, F))
    lam = 10.0 ** draw(st.integers(-2, 1))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "chain":
        X, Y = random_chain_data(rng, n, 1, 2, F)
        model = ChainModel(2, F, blocks="dense")
    else:
        X, Y = random_multiclass_data(rng, n, F, 2)
        cost = _random_cost(rng, 2) if kind == "multiclass_cost" else None
        model = MulticlassModel(2, F, cost=cost, blocks="dense")
    return _toy(model, X, Y, lam, rng)


def load_bench_script(name: str):
    """``benchmarks/scripts/<name>.py`` as a module (the scripts are no package)."""
    scripts = Path(__file__).resolve().parents[1] / "benchmarks" / "scripts"
    if str(scripts) not in sys.path:        # their sibling imports (_report, bench_ocr)
        sys.path.insert(0, str(scripts))
    path = scripts / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_smoke", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_box_fit_certified(model, X, Y, batch: bool, lam: float = 0.1) -> None:
    """Fit with ``box="model"``: w stays in the model's box and the reported primal
    of the returned w equals an independent enumeration of max_y H_i."""
    from ssvm_core import FrankWolfeSSVM
    from ssvm_core.testing import primal_by_enumeration

    svm = FrankWolfeSSVM(model, lam=lam, batch=batch, box="model", max_passes=30,
                         gap_check_every=5, tol=0.0, random_state=0).fit(X, Y)
    lower, upper = model.weight_bounds()
    assert np.all(svm.w_ >= lower) and np.all(svm.w_ <= upper)
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    primal = primal_by_enumeration(problem.psi, problem.loss, lam, svm.w_)
    last = [r for r in svm.history_ if r["gap_avg"] is not None][-1]
    suffix = "_avg" if last["iterate"] == "average" else ""       # the iterate returned
    assert last["primal" + suffix] == pytest.approx(primal, rel=1e-9, abs=1e-12)
    assert 0.0 <= svm.gap_ == pytest.approx(last["gap" + suffix])


class DelegatingOracle:
    """A Python oracle forwarding to another one; subclasses override ``solve``."""

    def __init__(self, inner):
        self.inner = inner
        self.n_blocks, self.n_features = inner.n_blocks, inner.n_features
        self.max_labels = inner.max_labels

    def solve(self, i, w):
        return self.inner.solve(i, w)

    def evaluate(self, i, labels, w):
        return self.inner.evaluate(i, labels, w)


class RecordingOracle(DelegatingOracle):
    """Records which blocks it is asked to solve, in ``calls``."""

    def __init__(self, inner):
        super().__init__(inner)
        self.calls = []

    def solve(self, i, w):
        self.calls.append(i)
        return self.inner.solve(i, w)


def atom_psi(state, oracle, i: int) -> np.ndarray:
    """The psi of block i's atoms as rows of d features: compact atoms hold block
    coordinates q, expanded here by the oracle's basis (psi = A_i q)."""
    if not state.compact_blocks:
        return state.atoms.psi_matrix(i, state.n_features)
    m = int(state.block_ptr[i + 1] - state.block_ptr[i])
    return np.array([oracle.coord_expand_py(i, q)
                     for q in state.atoms.psi_matrix(i, m)]).reshape(-1, state.n_features)


def sparse_token_chains(seed: int = 1, n: int = 10, n_features: int = 30):
    """Chains whose tokens have a few active attributes each (as in CoNLL): ``(X, Y)``,
    4 labels, 1 to 6 tokens a sequence, 3 active features a token."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(1, 7))
        x = np.zeros((T, n_features))
        for t in range(T):
            x[t, rng.choice(n_features, size=3, replace=False)] = rng.random(3) + 0.5
        X.append(x)
        Y.append(rng.integers(0, 4, size=T))
    return X, Y

"""The one-slack joint constraint of an oracle pass equals the mean of the blocks' answers."""

from __future__ import annotations

import numpy as np
import pytest

from ssvm.compat.pystruct.learners.one_slack import joint_constraint
from ssvm_core._batch import solve_blocks
from ssvm_oracles import BinaryModel, GraphModel


def _oracles():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4)) * (rng.random((30, 4)) < 0.7)
    yield BinaryModel().bind(X, rng.integers(0, 2, size=30))
    graphs = [(rng.normal(size=(4, 3)), np.array([[0, 1], [1, 2], [2, 3]])) for _ in range(8)]
    yield GraphModel(3, 3).bind(graphs, [rng.integers(0, 3, size=4) for _ in range(8)])


@pytest.mark.parametrize("case", range(2))
def test_joint_constraint_is_the_mean_answer(case):
    oracle = list(_oracles())[case]
    rng = np.random.default_rng(case)
    n, d = oracle.n_blocks, oracle.n_features
    for _ in range(3):
        w = rng.normal(size=d)
        answers = solve_blocks(oracle, w, np.arange(n))
        g, loss = joint_constraint(answers, n, d)
        psi = np.zeros(d)
        total = 0.0
        for i in range(n):
            _, psi_i, loss_i, _ = oracle.solve_py(i, w)
            psi += psi_i
            total += loss_i
        np.testing.assert_allclose(g, psi / n, rtol=1e-12, atol=1e-15)
        assert loss == pytest.approx(total / n, rel=1e-12)

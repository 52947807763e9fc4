"""Stateful property test: any sequence of fits and state operations keeps one dual point.

Hypothesis drives arbitrary sequences of warm-started fits with random
variants (step, sampling, cache, multi-sample, batch, averaging), interrupts,
saves and loads (through a file and through pickle), ``rescale`` and
``shrink_duals``.  After every operation the invariants hold: the state is
one consistent dual point (``SolverState.check``: v = sum_i v_i, w = clip(v),
ell = sum_i ell_i, and with active sets alpha on the simplex with A alpha = v)
and the certificate holds against an independent evaluation: the primal by
enumeration of every labelling minus the dual from the state's alphas is
>= -1e-12 (relative), and equals ``certified_gap`` while the state says its
gaps are exact.

Run it longer with ``SSVM_HYPOTHESIS_PROFILE=fuzz``.
"""

from __future__ import annotations

import io
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from strategies import atom_psi

from ssvm_core import SolverState, dual_objective, solve
from ssvm_core.options import SAMPLINGS, STEPS
from ssvm_core.testing import (
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    random_multiclass_data,
    scaled_examples,
)
from ssvm_oracles import ChainModel, MulticlassModel


class DualStateMachine(RuleBasedStateMachine):
    """One training problem and one evolving ``SolverState``."""

    @initialize(seed=st.integers(0, 2 ** 16), kind=st.sampled_from(["chain", "multiclass"]),
                boxed=st.booleans(), lam_exp=st.integers(-2, 0))
    def setup(self, seed, kind, boxed, lam_exp):
        rng = np.random.default_rng(seed)
        if kind == "chain":
            X, Y = random_chain_data(rng, 4, 3, 3, 2)
            model = ChainModel(3, 2)
        else:
            X, Y = random_multiclass_data(rng, 5, 3, 3)
            model = MulticlassModel(3, 3)
        self.oracle = model.bind(X, Y)
        self.enum = enumerate_problem(type(model)(*_args(model)), X, Y)
        self.lam = 10.0 ** lam_exp
        self.box = (-0.3, 0.4) if boxed else None
        self.state = None
        self.folder = Path(tempfile.mkdtemp(prefix="ssvm-state-machine-"))

    # ------------------------------------------------------------------ rules

    @rule(step=st.sampled_from(STEPS), sampling=st.sampled_from(SAMPLINGS),
          cache=st.booleans(), n_samples=st.sampled_from([1, 1, 3]), batch=st.booleans(),
          averaging=st.booleans(), passes=st.integers(1, 6), seed=st.integers(0, 99),
          stop_at=st.one_of(st.none(), st.integers(0, 5)))
    def fit(self, step, sampling, cache, n_samples, batch, averaging, passes, seed, stop_at):
        if batch:
            step, cache, n_samples = "fw", False, 1
        if self.state is not None and self.state.atoms is None and (
                step != "fw" or cache or n_samples > 1):
            step, cache, n_samples = "fw", False, 1   # no active sets to continue from
        callback = None
        if stop_at is not None:            # an interrupt between passes
            first = 0 if self.state is None else self.state.passes

            def callback(rec, k=first + stop_at):
                return rec["pass"] >= k

        result = solve(self.oracle, self.lam, state=self.state, step=step, sampling=sampling,
                       cache=cache, n_samples=n_samples, batch=batch, averaging=averaging,
                       box=self.box, max_passes=passes, gap_check_every=2, tol=0.0,
                       random_state=seed, callback=callback)
        self.state = result.state
        if result.status != "callback":
            assert result.gap >= -1e-12 * self._scale()

    @precondition(lambda self: self.state is not None)
    @rule()
    def save_and_load(self):
        path = self.folder / "state.npz"
        self.state.save(path)
        loaded = SolverState.load(path)
        assert not loaded.exact_gaps
        np.testing.assert_array_equal(loaded.w, self.state.w)
        self.state = loaded

    @precondition(lambda self: self.state is not None)
    @rule()
    def pickle_round_trip(self):
        buffer = io.BytesIO()
        pickle.dump(self.state, buffer)
        self.state = pickle.loads(buffer.getvalue())

    @precondition(lambda self: self.state is not None)
    @rule(factor=st.sampled_from([0.5, 2.0, 3.0]))
    def rescale(self, factor):
        if self.box is not None:           # a box is not a cone: rescaling moves off it
            return
        self.lam *= factor
        self.state.rescale(self.lam)

    @precondition(lambda self: self.state is not None)
    @rule(rho=st.sampled_from([0.9, 0.5, 0.1]))
    def shrink_duals(self, rho):
        if self.box is not None:
            return
        self.lam *= rho
        self.state.shrink_duals(self.lam)

    # ------------------------------------------------------------- invariants

    def _scale(self) -> float:
        return max(1.0, abs(dual_objective(self.state)))

    @invariant()
    def one_consistent_dual_point(self):
        if self.state is None:
            return
        self.state.check()
        assert self.state.lam == self.lam

    @invariant()
    def the_certificate_holds(self):
        st_ = self.state
        if st_ is None:
            return
        primal = primal_by_enumeration(self.enum.psi, self.enum.loss, st_.lam, st_.w)
        if st_.atoms is not None:             # the dual from the alphas themselves
            n = st_.n_blocks
            alphas = [st_.atoms.alphas(i) for i in range(n)]
            v = sum(a @ atom_psi(st_, self.oracle, i) for i, a in enumerate(alphas))
            v = v / (st_.lam * n)
            ell = sum(a @ st_.atoms.losses(i) for i, a in enumerate(alphas)) / n
            w = st_.project(v)
            dual = ell - st_.lam * float(w @ v) + 0.5 * st_.lam * float(w @ w)
            assert dual == pytest.approx(dual_objective(st_), abs=1e-9 * self._scale())
        else:
            dual = dual_objective(st_)
        gap = primal - dual
        assert gap >= -1e-12 * self._scale()
        if st_.exact_gaps:
            assert st_.certified_gap == pytest.approx(gap, abs=1e-9 * self._scale())
            assert float(np.sum(st_.certified_gaps)) == pytest.approx(
                gap, abs=1e-9 * self._scale())

    def teardown(self):
        for path in self.folder.glob("*"):
            path.unlink()
        self.folder.rmdir()


def _args(model):
    """Constructor arguments of a fresh copy of ``model`` for the brute-force oracle."""
    if isinstance(model, ChainModel):
        return (model.n_states, 2)
    return (model.n_classes, 3)


DualStateMachine.TestCase.settings = settings(
    max_examples=scaled_examples(12), stateful_step_count=12, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_dual_state_machine = DualStateMachine.TestCase

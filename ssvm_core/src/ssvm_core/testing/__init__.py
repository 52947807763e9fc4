"""Reference implementations and checkers for testing solvers and oracles.

Everything here is independent of the Cython kernels: objectives are
computed by enumerating every labelling of tiny problems, and the dual QP is
solved by SciPy followed by an exact active-set polish.  The helpers are
meant for tests (of this package and of packages that provide oracles), not
for production use.  One module each:

- ``enumeration``: enumerated problems, P(w), D(alpha), w(alpha) by
  enumeration, ``check_gaps`` and ``recover_alpha`` for solver states;
- ``qp``: ``solve_dual_qp``, an independent solver of the dual QP;
- ``conformance``: ``check_oracle``, the public oracle conformance checker;
- ``toy``: random toy data and pure-Python reference models;
- ``profiles``: the hypothesis profiles of the test suites.
"""

from ssvm_core.testing.conformance import check_oracle
from ssvm_core.testing.enumeration import (
    EnumeratedProblem,
    check_gaps,
    dual_by_enumeration,
    enumerate_problem,
    primal_by_enumeration,
    recover_alpha,
    weights_from_alpha,
)
from ssvm_core.testing.profiles import register_hypothesis_profiles, scaled_examples
from ssvm_core.testing.qp import QPSolution, solve_dual_qp
from ssvm_core.testing.toy import (
    ToyChainModel,
    ToyMulticlassModel,
    random_chain_data,
    random_multiclass_data,
)

__all__ = [
    "EnumeratedProblem", "QPSolution", "ToyChainModel", "ToyMulticlassModel", "check_gaps",
    "check_oracle", "dual_by_enumeration", "enumerate_problem", "primal_by_enumeration",
    "random_chain_data", "random_multiclass_data", "recover_alpha",
    "register_hypothesis_profiles", "scaled_examples", "solve_dual_qp", "weights_from_alpha",
]

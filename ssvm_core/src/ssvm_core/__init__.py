"""ssvm-core: Frank-Wolfe solvers for the l2-regularised n-slack structured SVM."""

from importlib.metadata import version as _version

from ssvm_core._oracle import MaxOracle, PythonOracle, labelling_key
from ssvm_core.exceptions import NotFittedError
from ssvm_core.models import StructuredModel
from ssvm_core.objectives import dual_objective, duality_gap, primal_objective
from ssvm_core.oracles import BruteForceOracle, as_oracle
from ssvm_core.solvers import FrankWolfeSSVM, SolveResult, solve
from ssvm_core.state import SolverState
from ssvm_core.subgradient import SubgradientSSVM, subgradient_solve

__version__ = _version("ssvm-core")

__all__ = [
    "BruteForceOracle",
    "FrankWolfeSSVM",
    "MaxOracle",
    "NotFittedError",
    "PythonOracle",
    "SolveResult",
    "SolverState",
    "StructuredModel",
    "SubgradientSSVM",
    "__version__",
    "as_oracle",
    "dual_objective",
    "duality_gap",
    "labelling_key",
    "primal_objective",
    "solve",
    "subgradient_solve",
]

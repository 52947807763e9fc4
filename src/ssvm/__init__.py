"""ssvm: structured SVMs with the Frank-Wolfe family (umbrella package and CLI).

The libraries are the subpackages ``ssvm_core`` (solvers), ``ssvm_oracles``
(models and max oracles) and ``ssvm_data`` (datasets).
"""

from importlib.metadata import version as _version

__version__ = _version("ssvm")

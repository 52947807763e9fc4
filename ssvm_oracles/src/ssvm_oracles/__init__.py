"""ssvm-oracles: structured models and their max oracles for ssvm-core."""

from importlib.metadata import version as _version

from ssvm_oracles._chain import ChainOracle
from ssvm_oracles._matching import MatchingOracle
from ssvm_oracles._multiclass import MulticlassOracle
from ssvm_oracles.chain import ChainModel
from ssvm_oracles.graphcut import GraphCutModel, GraphCutOracle, NonSubmodularError
from ssvm_oracles.matching import MatchingInput, MatchingModel
from ssvm_oracles.multiclass import MulticlassModel

__version__ = _version("ssvm-oracles")

__all__ = [
    "ChainModel", "ChainOracle", "GraphCutModel", "GraphCutOracle", "MatchingInput",
    "MatchingModel", "MatchingOracle", "MulticlassModel", "MulticlassOracle",
    "NonSubmodularError", "__version__",
]

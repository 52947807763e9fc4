"""ssvm-oracles: structured models and their max oracles for ssvm-core."""

from importlib.metadata import version as _version

from ssvm_oracles._chain import ChainOracle
from ssvm_oracles._multiclass import MulticlassOracle
from ssvm_oracles.chain import ChainModel
from ssvm_oracles.multiclass import MulticlassModel

__version__ = _version("ssvm-oracles")

__all__ = ["ChainModel", "ChainOracle", "MulticlassModel", "MulticlassOracle", "__version__"]

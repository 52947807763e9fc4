"""Data sets for structured SVMs: Taskar's OCR words and seeded synthetic problems."""

from importlib.metadata import version as _version

from ssvm_data import synthetic
from ssvm_data._io import data_home
from ssvm_data.horseseg import SuperpixelImage, load_horseseg
from ssvm_data.ocr import load_ocr
from ssvm_data.registry import available_datasets, load_dataset
from ssvm_data.synthetic import chain, horseseg_like, multiclass, ocr_like

__version__ = _version("ssvm-data")

__all__ = [
    "SuperpixelImage",
    "__version__",
    "available_datasets",
    "chain",
    "data_home",
    "horseseg_like",
    "load_dataset",
    "load_horseseg",
    "load_ocr",
    "multiclass",
    "ocr_like",
    "synthetic",
]

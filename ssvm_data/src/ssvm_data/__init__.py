"""Data sets for structured SVMs: OCR words, CoNLL-2000 chunking, seeded synthetic problems."""

from importlib.metadata import version as _version

from ssvm_data import synthetic
from ssvm_data._io import data_home, download_enabled
from ssvm_data.conll import ConllVocabulary, load_conll2000
from ssvm_data.horseseg import SuperpixelImage, load_horseseg
from ssvm_data.lsp import load_lsp_joints
from ssvm_data.ocr import load_ocr, load_ocr_folds
from ssvm_data.registry import (
    DatasetTask,
    ModelSpec,
    available_datasets,
    dataset_task,
    load_dataset,
    model_for,
    model_spec,
)
from ssvm_data.synthetic import (
    chain,
    conll_like,
    horseseg_like,
    lsp_like,
    matching,
    multiclass,
    ocr_like,
)

__version__ = _version("ssvm-data")

__all__ = [
    "ConllVocabulary",
    "DatasetTask",
    "ModelSpec",
    "SuperpixelImage",
    "__version__",
    "available_datasets",
    "chain",
    "conll_like",
    "data_home",
    "download_enabled",
    "dataset_task",
    "horseseg_like",
    "load_conll2000",
    "load_dataset",
    "load_horseseg",
    "load_lsp_joints",
    "load_ocr",
    "load_ocr_folds",
    "lsp_like",
    "matching",
    "model_for",
    "model_spec",
    "multiclass",
    "ocr_like",
    "synthetic",
]

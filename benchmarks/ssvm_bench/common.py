"""Base class, mixins, profiles and data helpers shared by the asv suites.

Data
----
``SSVM_DATA_HOME`` set
    The real OCR-large training split (folds 1-9, 6,251 words) read from
    ``$SSVM_DATA_HOME/ocr/``; never downloaded.  Dataset name ``"ocr-large"``.
``SSVM_DATA_HOME`` unset
    ``ssvm_data.synthetic.ocr_like`` words of the same number and shape, with a
    fixed seed.  Dataset name ``"ocr-like"``.

The dataset name is the first asv parameter of every suite, so a result always
says which data it was measured on; the parameter value alone fixes the data
(``"ocr-like-fast"`` is 40 synthetic words whatever the environment).

Profiles (``SSVM_BENCH_PROFILE``)
---------------------------------
``regular`` (default)
    OCR-large size: 6,251 words, d = 4,082.
``fast``
    The first 40 words (real or synthetic), dataset names ending in
    ``"-fast"``: a check that the suites run, used by
    ``tests/test_benchmarks_smoke.py``.  Its numbers mean nothing.

Everything expensive (loading, ``ChainModel.bind``, solver states) is cached
per process.  asv runs each benchmark in a fresh process, and the asv_runner
we use re-runs ``setup`` before every sample, so ``setup`` must stay cheap
after its first call.
"""

from __future__ import annotations

import functools
import os
import time
from typing import ClassVar

import numpy as np

PROFILE_ENV = "SSVM_BENCH_PROFILE"
DATA_HOME_ENV = "SSVM_DATA_HOME"
PROFILES = ("regular", "fast")

#: Training words of OCR-large (folds 1-9 of Taskar's OCR data).
OCR_LARGE_WORDS = 6251
#: Words used by the fast profile.
FAST_WORDS = 40
N_STATES = 26
#: lambda of the benchmarks (the BCFW paper's OCR setting).
LAM = 0.01
DATA_SEED = 0
ORDER_SEED = 0

#: Data sources; a dataset parameter is one of them, "-fast" appended in the fast profile.
DATASETS = ("ocr-large", "ocr-like")
FAST_SUFFIX = "-fast"


def profile() -> str:
    """The active profile, read from ``SSVM_BENCH_PROFILE`` at each call."""
    value = os.environ.get(PROFILE_ENV, "").strip().lower() or "regular"
    if value not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={value!r}: expected one of {PROFILES}")
    return value


def n_words() -> int:
    """Training words used by the active profile."""
    return FAST_WORDS if profile() == "fast" else OCR_LARGE_WORDS


def data_home() -> str | None:
    return os.environ.get(DATA_HOME_ENV) or None


def default_dataset() -> str:
    """The dataset parameter for this environment and profile.

    ``"ocr-large"`` when ``SSVM_DATA_HOME`` is set, else ``"ocr-like"``; the
    fast profile appends ``"-fast"``, so that its results can never be
    mistaken for full-size ones.
    """
    name = "ocr-large" if data_home() else "ocr-like"
    return name + FAST_SUFFIX if profile() == "fast" else name


def parse_dataset(dataset: str) -> tuple[str, int]:
    """``(source, n_words)`` of a dataset parameter such as ``"ocr-like-fast"``."""
    source, fast = dataset, dataset.endswith(FAST_SUFFIX)
    if fast:
        source = dataset[: -len(FAST_SUFFIX)]
    if source not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {DATASETS}, "
                         f"optionally with the suffix {FAST_SUFFIX!r}")
    return source, FAST_WORDS if fast else OCR_LARGE_WORDS


def load_words(dataset: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Training words ``X, Y`` of a dataset parameter (cached per process).

    Raises ``NotImplementedError`` (asv's "skip") for ``"ocr-large"`` when
    ``SSVM_DATA_HOME`` is unset.
    """
    X, Y = _load_words(dataset, data_home())
    return list(X), list(Y)


@functools.lru_cache(maxsize=2)
def _load_words(dataset: str, home: str | None):
    import ssvm_data

    source, n = parse_dataset(dataset)
    if source == "ocr-large":
        if home is None:
            raise NotImplementedError(f"ocr-large needs {DATA_HOME_ENV} (the real OCR file)")
        X, Y, _, _ = ssvm_data.load_ocr(split="large", data_home=home, download=False)
        X, Y = X[:n], Y[:n]
    else:
        X, Y = ssvm_data.synthetic.ocr_like(n, random_state=DATA_SEED)
    return tuple(X), tuple(Y)


def bound_oracle(dataset: str):
    """``ChainModel(n_states=26).bind(X, Y)`` on ``dataset``, cached per process."""
    return _bound_oracle(dataset, data_home())


@functools.lru_cache(maxsize=2)
def _bound_oracle(dataset: str, home: str | None):
    from ssvm_oracles import ChainModel

    X, Y = load_words(dataset)
    return ChainModel(n_states=N_STATES).bind(X, Y)


#: Images of the graph-cut suite (HorseSeg-like: 147 superpixels, d = 1,969 + 100).
HORSESEG_IMAGES = 50
FAST_IMAGES = 4


def horseseg_dataset() -> str:
    """The graph-cut dataset parameter: ``"horseseg-like"``, ``-fast`` in the fast profile."""
    return "horseseg-like" + (FAST_SUFFIX if profile() == "fast" else "")


@functools.lru_cache(maxsize=4)
def graphcut_problem(dataset: str, feature_dtype: str):
    """``(model, oracle)`` of ``GraphCutModel(feature_dtype=...)`` on HorseSeg-like images."""
    from ssvm_data import horseseg_like
    from ssvm_oracles import GraphCutModel

    if dataset not in ("horseseg-like", "horseseg-like" + FAST_SUFFIX):
        raise ValueError(f"unknown graph-cut dataset {dataset!r}")
    n = FAST_IMAGES if dataset.endswith(FAST_SUFFIX) else HORSESEG_IMAGES
    X, Y = horseseg_like(n, random_state=DATA_SEED)
    model = GraphCutModel(feature_dtype=feature_dtype)
    return model, model.bind(X, Y)


def block_order(n_blocks: int, seed: int = ORDER_SEED) -> np.ndarray:
    """One pass of uniform block sampling, drawn as ``ssvm_core.solve`` draws it."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_blocks, size=n_blocks).astype(np.intp)


class PerCallTimer:
    """An asv ``timer`` that reports seconds per call for a batch of ``calls``.

    asv accepts any monotonic clock as a benchmark's ``timer``; dividing
    ``perf_counter`` by the number of oracle calls that the timed function
    makes turns its result into seconds per call.  Use it only with an
    explicit ``number`` (asv calibrates ``number`` with this clock otherwise).
    """

    def __init__(self, calls: int):
        self.calls = max(1, int(calls))

    def __call__(self) -> float:
        return time.perf_counter() / self.calls


class SSVMBenchmark:
    """Base class of the suites: shared asv attributes and the dataset parameter."""

    #: Seconds before asv kills a benchmark (setup_cache included).
    timeout = 600.0
    #: The dataset follows the environment (see the module docstring).
    params: ClassVar[list] = [[default_dataset()]]
    param_names: ClassVar[list] = ["dataset"]
    lam = LAM


class OracleMixin:
    """Binds the chain oracle of a dataset in ``setup`` (cached per process)."""

    def setup_oracle(self, dataset: str) -> None:
        self.dataset = dataset
        self.oracle = bound_oracle(dataset)
        self.n_blocks = self.oracle.n_blocks
        self.n_features = self.oracle.n_features


class DataMixin:
    """Loads the raw words of a dataset in ``setup`` (cached per process)."""

    def setup_data(self, dataset: str) -> None:
        self.dataset = dataset
        self.X, self.Y = load_words(dataset)

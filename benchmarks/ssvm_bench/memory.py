"""Memory of a solver state: dense against compact dual blocks, on OCR and for every model.

A state keeps one dual vector w_i per word: ``d = 4,082`` float64 with dense
blocks, or ``T K + K K`` block coordinates with compact ones
(``ChainModel(blocks="compact")``, see ``MaxOracle.coord_*``).  These
numbers depend only on the data and the storage, not on the machine, so a
change in them is a change of the code.  ``scripts/bench_blocks.py`` measures
the time side (pass / oracle pass) and the process's peak RSS.

``BlockStorageMemorySuite`` measures the same for every built-in model on its small
synthetic problem of ``problems.PROBLEMS``, for each storage the model offers and for
the one ``blocks="auto"`` picks.
"""

from __future__ import annotations

import functools
import io
from typing import ClassVar

from ssvm_core import SolverState

from .common import LAM, N_STATES, SSVMBenchmark, data_home, load_words
from .problems import PROBLEMS, SUITE_STORAGES, bound_problem, solver_state, storage_dataset

#: Block storages compared (``SolverState.block_storage``).
STORAGES = ("dense", "compact")


@functools.lru_cache(maxsize=2)
def _state(dataset: str, storage: str, home: str | None) -> SolverState:
    """A fresh ``SolverState`` of the chain oracle with ``storage`` blocks."""
    from ssvm_oracles import ChainModel

    X, Y = load_words(dataset)
    model = ChainModel(N_STATES, blocks=storage)
    state = SolverState.for_oracle(model.bind(X, Y), LAM, averaging=True)
    if state.block_storage != storage:
        raise RuntimeError(f"asked for {storage} blocks, got {state.block_storage}")
    return state


def fresh_state(dataset: str, storage: str) -> SolverState:
    """The state the benchmarks measure (cached per process)."""
    return _state(dataset, storage, data_home())


class StateMemorySuite(SSVMBenchmark):
    """Bytes of a solver state, dense against compact blocks (OCR words, K = 26).

    - ``track_block_bytes``: ``block_values.nbytes + block_support.nbytes``, the
      dual blocks, most of a state's memory (about 204 MB dense on OCR-large).
    - ``track_state_file_bytes``: the ``.npz`` that ``SolverState.save`` writes
      (blocks, primal and averaged vectors, counters), in memory.
    """

    params: ClassVar[list] = [SSVMBenchmark.params[0], list(STORAGES)]
    param_names: ClassVar[list] = ["dataset", "storage"]

    def setup(self, dataset, storage):
        self.state = fresh_state(dataset, storage)

    def track_block_bytes(self, dataset, storage):
        return int(self.state.block_values.nbytes + self.state.block_support.nbytes)

    track_block_bytes.unit = "bytes"

    def track_state_file_bytes(self, dataset, storage):
        buffer = io.BytesIO()
        self.state.save(buffer)
        return buffer.getbuffer().nbytes

    track_state_file_bytes.unit = "bytes"


@functools.lru_cache(maxsize=2)
def fresh_problem_state(dataset: str, name: str, storage: str) -> SolverState:
    """A fresh ``SolverState`` of problem ``name`` with ``storage`` blocks (cached)."""
    model, oracle = bound_problem(dataset, name, storage)
    return solver_state(model, oracle, LAM, averaging=True)


class BlockStorageMemorySuite(SSVMBenchmark):
    """Bytes of a solver state by model and block storage (``problems.PROBLEMS``).

    Storages a model does not offer are skipped (``sparse`` but for chains and
    multiclass; the pose model keeps dense blocks only: its oracle has no compact basis);
    ``auto`` is the storage ``blocks="auto"`` picks.

    - ``track_block_bytes``: ``block_values.nbytes + block_support.nbytes``.
    - ``track_state_file_bytes``: the ``.npz`` that ``SolverState.save`` writes.
    """

    params: ClassVar[list] = [[storage_dataset()], list(PROBLEMS), list(SUITE_STORAGES)]
    param_names: ClassVar[list] = ["dataset", "model", "storage"]

    def setup(self, dataset, model, storage):
        self.state = fresh_problem_state(dataset, model, storage)

    def track_block_bytes(self, dataset, model, storage):
        return int(self.state.block_values.nbytes + self.state.block_support.nbytes)

    track_block_bytes.unit = "bytes"

    def track_state_file_bytes(self, dataset, model, storage):
        buffer = io.BytesIO()
        self.state.save(buffer)
        return buffer.getbuffer().nbytes

    track_state_file_bytes.unit = "bytes"

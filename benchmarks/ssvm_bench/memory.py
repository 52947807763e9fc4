"""Memory of a solver state on OCR-large: dense against compact dual blocks.

A state keeps one dual vector w_i per word: ``d = 4,082`` float64 with dense
blocks, or ``T K + K K`` block coordinates with compact ones
(``ChainModel(blocks="compact")``, see ``MaxOracle.coord_*``).  These
numbers depend only on the data and the storage, not on the machine, so a
change in them is a change of the code.  ``scripts/bench_blocks.py`` measures
the time side (pass / oracle pass) and the process's peak RSS.
"""

from __future__ import annotations

import functools
import io
from typing import ClassVar

from ssvm_core import SolverState

from .common import LAM, N_STATES, SSVMBenchmark, data_home, load_words

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

"""How a benchmark picks a model's block storage, and what it reports of memory.

``--blocks`` of the chain scripts is ``ChainModel(blocks=...)``; ``PROBLEMS`` are the
small synthetic problems of every model with a choice of storage (``ssvm_bench.problems``,
shared with the asv suites).  The scripts report the bytes of a solver state's block
storage, of the Grams a compact oracle keeps, and the process's peak resident set size.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

from ssvm_core.validation import BLOCK_STORAGES

_BENCHMARKS = str(Path(__file__).resolve().parents[1])   # holds the asv suite, ssvm_bench
if _BENCHMARKS not in sys.path:
    sys.path.insert(0, _BENCHMARKS)
from ssvm_bench.problems import PROBLEMS, solver_state  # noqa: E402

__all__ = ["BLOCKS", "PROBLEMS", "block_bytes", "chain_model", "gram_bytes",
           "peak_rss_bytes", "solver_state"]

#: ``--blocks`` choices (``ssvm_core.validation.BLOCK_STORAGES``; ``auto`` is the model's
#: default, compact).
BLOCKS = BLOCK_STORAGES


def chain_model(n_states: int, blocks: str = "auto"):
    """``ChainModel(n_states)`` with the block storage ``blocks`` (one of ``BLOCKS``)."""
    from ssvm_oracles import ChainModel

    return ChainModel(n_states, blocks=blocks)


def block_bytes(state) -> int:
    """Bytes of a ``SolverState``'s block storage (values and supports)."""
    return int(state.block_values.nbytes + state.block_support.nbytes)


def gram_bytes(oracle) -> int | None:
    """Bytes of the Gram matrices a compact oracle keeps (its ``gram_nbytes``: graph,
    graph-cut and matching oracles; 0 with dense blocks), None if it does not say."""
    nbytes = getattr(oracle, "gram_nbytes", None)
    return None if nbytes is None else int(nbytes)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (``getrusage``), in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)   # KiB on Linux

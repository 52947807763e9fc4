"""How a benchmark picks the chain's block storage, and what it reports of memory.

``--blocks`` of the chain scripts is ``ChainModel(blocks=...)``; the scripts report the
bytes of a solver state's block storage and the process's peak resident set size.
"""

from __future__ import annotations

import resource
import sys

from ssvm_core.validation import BLOCK_STORAGES

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


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (``getrusage``), in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)   # KiB on Linux

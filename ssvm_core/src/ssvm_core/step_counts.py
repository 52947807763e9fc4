"""``StepCounts``: what one call of a step kernel did, for ``SolverState.record_steps``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StepCounts"]


@dataclass(frozen=True)
class StepCounts:
    """What a step kernel (``_fw.bcfw_pass``, ``_fw.fw_step``, ``_active.active_pass``) did.

    The kernels move the dual point in place (the block arrays, v, w and the
    lazy average) and report the rest here; ``SolverState.record_steps`` is
    the one place that books it into the state.

    Attributes
    ----------
    ell, ell_avg : float or None, default None
        The new sum of the block ells and its weighted average; None leaves
        the state's values as they are (no step moved them).
    steps : int, default 0
        Steps taken (the iterate index k grows by as many).
    oracle_calls : int, default 0
        Calls the kernel made to the oracle it was given.  Not booked by
        ``record_steps``: the solver counts the calls it paid for (with
        mini-batches the kernel replays answers an executor already counted).
    replaced : int, default 0
        Oracle answers that scored below the ground truth and were replaced by it.
    fw, away, pairwise, corrective, drop : int, default 0
        Block steps by kind (``drop``: atoms a step set to zero).
    hits_local, hits_global : int, default 0
        Steps served by the cache, by the larger threshold of the rule.
    """

    ell: float | None = None
    ell_avg: float | None = None
    steps: int = 0
    oracle_calls: int = 0
    replaced: int = 0
    fw: int = 0
    away: int = 0
    pairwise: int = 0
    corrective: int = 0
    drop: int = 0
    hits_local: int = 0
    hits_global: int = 0

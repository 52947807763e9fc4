"""``StepCounts``: what one call of a step kernel did, for ``SolverState.record_steps``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StepCounters", "StepCounts"]


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


class StepCounters:
    """The step counters of a Frank-Wolfe state, and their only writer (``count_steps``).

    Attributes
    ----------
    replaced_answers : int
        Oracle answers that scored below the ground truth (an inexact oracle)
        and were replaced by the ground-truth corner in a step.
    fw_steps, away_steps, pairwise_steps, corrective_steps, drop_steps : int
        Block steps by kind; ``drop_steps`` counts atoms whose alpha an away,
        pairwise or corrective step set to zero (the step is also counted in
        its kind).
    cache_hits_local, cache_hits_global : int
        Steps that used a cached corner instead of the oracle, by which
        threshold of Osokin et al. (2016), Alg. 5 was the larger one.
    """

    def start_step_counters(self) -> None:
        """Set every counter to zero."""
        self.replaced_answers = 0
        self.fw_steps = self.away_steps = self.pairwise_steps = self.drop_steps = 0
        self.corrective_steps = 0
        self.cache_hits_local = self.cache_hits_global = 0

    def count_steps(self, counts: StepCounts) -> None:
        """Add what a step kernel did (its ``StepCounts``) to the counters."""
        self.replaced_answers += counts.replaced
        self.fw_steps += counts.fw
        self.away_steps += counts.away
        self.pairwise_steps += counts.pairwise
        self.corrective_steps += counts.corrective
        self.drop_steps += counts.drop
        self.cache_hits_local += counts.hits_local
        self.cache_hits_global += counts.hits_global

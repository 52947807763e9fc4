"""tau of mini-batch BCFW chosen during the run from measured staleness (``batch_blocks="auto"``).

A mini-batch round of tau blocks (``ssvm_core.minibatch``) makes its calls at
the round's w, so the answer of the step at position t of a round is t steps
stale.  Its exact line search keeps the dual monotone, but a stale corner
captures only part of the block gap a fresh one would (``docs/scaling.md``:
about 0.87 of it at tau = 16 on OCR-large, 0.13-0.18 on the synthetic
HorseSeg with 50 images).  What the threads give back is the pass's wall time.

**The measured quantity.**  Every step leaves its block gap in
``state.block_gap_estimates``: the gap of the corner it used at the iterate
it stepped from (the stale answer rescored there, or the ground truth when
the stale answer fell below it).  The step at position 0 of a round uses a
fresh answer.  The blocks of a round are drawn alike, so the mean gap at a
later position t, over the rounds of a pass, divided by the mean gap at
position 0 is e(t), the fraction of the fresh gap a t-steps stale corner keeps
(``staleness_curve``); averaged over the positions 0 .. tau - 1 it is the
**staleness efficiency** E(tau) of the pass (``staleness_efficiency``; 1 for
serial BCFW).  It costs no
oracle call: the rounds and the steps are the run's own.  It is an unpaired
estimate (different blocks at different positions), so its noise shrinks
like one over the square root of the rounds of a pass.

**The rule** (``AutoTau``).  A pass at tau makes about E(tau) passes' worth of
serial BCFW progress in its wall time s(tau) per step, so its rate is
r(tau) = E(tau) / s(tau), and r(1) = 1 / s(1) from a pass of serial BCFW.
The run starts with one pass of serial BCFW, then tries tau = 2, 4, 8, ...
(one pass each, up to ``max_tau``; a try makes n / ``PROBE_SHARE`` of its
pass's steps, at least ``PROBE_ROUNDS`` rounds, in rounds of tau and the rest
as serial BCFW, both parts timed, so a try costs a share of a pass and s(tau)
and s(1) are measured side by side): a tau whose rate beats the best so far by
``RATE_MARGIN`` becomes the best; the walk goes on while an upper bound of
r(2 tau) does, (E(tau) + tail) / s(tau) with tail the mean of e(t) over the
later half of the positions (doubling tau at most halves the time per step,
and e(t) at the new lags is at most the tail when staleness grows with the
lag), and ends at the best tau.  The tau after it is tried again after
``FIRST_RETRY`` passes, then after twice as many each time (staleness falls as
the steps shrink, and the times change with the machine's load); such a try
costs one pass unless it pays, when the walk goes on from it.
While the chosen tau > 1 runs, its E and s are measured again every pass, and
it steps down to tau / 2 when its rate falls below that of tau / 2.  tau = 1
is the answer with one worker (nothing runs at once), with fewer than
``2 * MIN_ROUND_BLOCKS`` blocks, and whenever the passes measured say the
threads do not give back what staleness costs.  Every pass's tau, its E and
the reason for the next choice go into the history.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["AutoTau", "staleness_curve", "staleness_efficiency"]

#: a try at 2 tau must raise the rate of progress of the best tau by this fraction
RATE_MARGIN = 0.1
#: passes before a failed try is made again (doubling after each failure)
FIRST_RETRY = 10
#: the largest tau tried
MAX_TAU = 64
#: at most n / MIN_ROUND_BLOCKS blocks per round (a pass keeps >= that many rounds)
MIN_ROUND_BLOCKS = 4
#: a try of tau makes n / PROBE_SHARE of its pass's steps in rounds (the rest serial BCFW) ...
PROBE_SHARE = 4
#: ... and at least PROBE_ROUNDS rounds
PROBE_ROUNDS = 8


def staleness_curve(rounds: Sequence[np.ndarray], gaps: np.ndarray) -> np.ndarray | None:
    """e(t) of one pass of rounds: the mean block gap at position t / the mean at position 0.

    Parameters
    ----------
    rounds : sequence of int arrays
        The pass's rounds in the order made (each of distinct blocks).
    gaps : ndarray (n_blocks,)
        ``state.block_gap_estimates`` after the pass: each block's gap at its
        last step of the pass.

    Returns
    -------
    ndarray (tau,) or None
        m_t / m_0 for the positions t < tau of the longest round, with m_t the
        mean of max(gap, 0) over the steps at position t that are their
        block's last step of the pass (negative gaps make no step, so count as
        0); NaN where no such step is at position t.  None when position 0 has
        no positive gap (nothing to compare with) or no round has two blocks.
    """
    tau = max((len(r) for r in rounds), default=0)
    if tau < 2:
        return None
    sums, counts = np.zeros(tau), np.zeros(tau)
    seen = np.zeros(gaps.shape[0], dtype=bool)
    for blocks in reversed(rounds):             # a block's last step holds its estimate
        blocks = np.asarray(blocks, dtype=np.intp)
        last = ~seen[blocks]
        seen[blocks] = True
        pos = np.flatnonzero(last)
        np.add.at(sums, pos, np.nan_to_num(np.maximum(gaps[blocks[pos]], 0.0)))
        np.add.at(counts, pos, 1)
    if counts[0] == 0 or sums[0] <= 0.0:
        return None
    means = np.divide(sums, counts, out=np.full(tau, np.nan), where=counts > 0)
    return means / means[0]


def staleness_efficiency(curve: np.ndarray | None) -> tuple[float, float] | tuple[None, None]:
    """E(tau), the mean of ``staleness_curve`` over the positions, and its tail: the
    mean over the later half of the positions, an upper bound of e(t) at every lag
    t >= tau when staleness grows with the lag.  Both at most 1: a stale corner's gap
    is at most the fresh one's at the same iterate, so a larger value is sampling
    noise (different blocks at different positions).  (None, None) for no curve."""
    if curve is None:
        return None, None
    return (min(1.0, float(np.nanmean(curve))),
            min(1.0, float(np.nanmean(curve[curve.shape[0] // 2:]))))


class AutoTau:
    """The choice of tau between passes (``batch_blocks="auto"``; rule in the module docstring).

    Parameters
    ----------
    n_blocks : int
        Blocks of the problem.
    workers : int
        Oracle calls the executor runs at once (1: tau stays 1).
    max_tau : int or None, default None
        The largest tau tried; None: min(``MAX_TAU``, n_blocks // ``MIN_ROUND_BLOCKS``).
    verbose : int, default 0
        >= 1 prints a line whenever the choice changes.

    Attributes
    ----------
    tau : int
        tau of the next pass.
    reason : str
        Why (with the measurements it was chosen from).
    efficiency, seconds : dict
        The last measured E(tau) and wall seconds per block step, by tau.
    """

    def __init__(self, n_blocks: int, workers: int, max_tau: int | None = None,
                 verbose: int = 0):
        if max_tau is None:
            max_tau = min(MAX_TAU, n_blocks // MIN_ROUND_BLOCKS)
        self.n_blocks, self.max_tau, self.verbose = n_blocks, int(max_tau), verbose
        self.tau = self.best = 1
        self.efficiency: dict[int, float] = {1: 1.0}
        self.tail: dict[int, float] = {1: 1.0}
        self.seconds: dict[int, float] = {}
        self.probe: int | None = None            # the tau being tried, when trying
        self.failed: int | None = None           # the last tau whose try failed
        self.retry_in = self.backoff = FIRST_RETRY
        self.retrying = False                     # a later try: one pass unless it pays
        self.last_tau: int | None = None          # tau of the pass just made
        self.last_efficiency: float | None = None
        if workers < 2:
            self.max_tau, self.reason = 1, "one worker: no calls run at once"
        elif self.max_tau < 2:
            self.max_tau, self.reason = 1, (f"{n_blocks} blocks: too few for rounds of "
                                             f">= 2 with {MIN_ROUND_BLOCKS} rounds a pass")
        else:
            self.reason = "first pass: serial BCFW, timed"

    def bound(self, tau: int) -> float:
        """An upper bound of r(2 tau): (E(tau) + tail(tau)) / s(tau).

        Doubling tau at most halves the time per step (every term of the cost
        model at most halves), and E(2 tau) <= (E(tau) + tail(tau)) / 2 when
        staleness grows with the lag.
        """
        if tau not in self.seconds or tau not in self.efficiency:
            return 0.0
        return (self.efficiency[tau] + self.tail[tau]) / max(self.seconds[tau], 1e-12)

    def rate(self, tau: int) -> float:
        """E(tau) / seconds per step: serial-BCFW progress per second (0 if unmeasured)."""
        if tau not in self.seconds or tau not in self.efficiency:
            return 0.0
        return self.efficiency[tau] / max(self.seconds[tau], 1e-12)

    def update(self, tau: int, seconds_per_step: float, efficiency: float | None,
               tail: float | None = None) -> int:
        """Book a pass made at ``tau`` and choose the next tau (returned and kept in ``tau``).

        Parameters
        ----------
        tau : int
            tau of the pass.
        seconds_per_step : float
            Its wall time per block step.
        efficiency, tail : float or None
            Its ``staleness_efficiency`` (None for tau = 1 or when not measurable;
            a missing tail is taken to be the efficiency).
        """
        self.last_tau, self.last_efficiency = tau, efficiency if tau > 1 else None
        if self.max_tau < 2:
            return self.tau
        if math.isfinite(seconds_per_step) and seconds_per_step > 0.0:
            self.seconds[tau] = seconds_per_step
        if tau > 1 and efficiency is not None:
            self.efficiency[tau] = efficiency
            self.tail[tau] = efficiency if tail is None else tail
        before = self.tau
        if tau == self.probe:
            self._after_try(tau)
        elif tau == self.best:
            self._after_chosen(tau)
        if self.verbose and self.tau != before:
            print(f"batch_blocks auto: tau {before} -> {self.tau} ({self.reason})")
        return self.tau

    def _measured(self, tau: int) -> str:
        s = self.seconds.get(tau, math.nan)
        return f"tau = {tau}: E {self.efficiency.get(tau, math.nan):.3f}, {s * 1e6:.3g} us/step"

    def _after_try(self, tau: int) -> None:
        best = self.best
        if self.rate(tau) >= (1.0 + RATE_MARGIN) * self.rate(best):
            self.reason = (f"{self._measured(tau)} beats {self._measured(best)} by "
                           f">= {RATE_MARGIN:.0%}")
            self.best, self.retrying = tau, False
        elif not self.retrying and self.bound(tau) >= (1.0 + RATE_MARGIN) * self.rate(best):
            self.reason = (f"{self._measured(tau)} does not beat {self._measured(best)} by "
                           f"{RATE_MARGIN:.0%}, but {2 * tau} could")
        else:
            self.reason = (f"{self._measured(tau)} does not beat {self._measured(best)} by "
                           f"{RATE_MARGIN:.0%}" + ("" if self.retrying else
                                                   f", nor could {2 * tau}"))
            self._settle()
            return
        if 2 * tau <= self.max_tau:
            self.probe = self.tau = 2 * tau
            self.reason += f"; trying tau = {2 * tau}"
        else:
            self.reason += f"; the largest tau tried is {self.max_tau}"
            self._settle()

    def _settle(self) -> None:
        """End a walk at the best tau; the next larger one is tried again later."""
        self.probe, self.tau, self.retrying = None, self.best, False
        self.failed = 2 * self.best if 2 * self.best <= self.max_tau else None
        if self.failed is not None:
            self.retry_in = self.backoff
            self.reason += (f"; tau = {self.best}, {self.failed} tried again in "
                            f"{self.backoff} passes")
            self.backoff *= 2
        else:
            self.reason += f"; tau = {self.best}"

    def _after_chosen(self, tau: int) -> None:
        if self.failed is None and self.probe is None and tau == 1 and not self._started():
            self.probe = self.tau = 2                # the serial pass is timed: try 2
            self.reason = f"{self._measured(1)}; trying tau = 2"
            return
        lower = tau // 2
        if tau > 1 and lower in self.seconds and self.rate(tau) < self.rate(lower):
            self.best = lower
            self.reason = f"{self._measured(tau)} fell below {self._measured(lower)}"
            self._settle()
            return
        if self.failed is not None:
            self.retry_in -= 1
            if self.retry_in <= 0:
                self.probe = self.tau = self.failed
                self.retrying = True
                self.reason = f"trying tau = {self.failed} again"

    def _started(self) -> bool:
        """Whether a tau > 1 was ever tried."""
        return any(t > 1 for t in self.seconds)

    def one_pass(self, state, pass_at: Callable[..., int],
                 should_stop: Callable[[], bool] | None = None) -> int:
        """One pass at the chosen tau, timed and measured; returns its oracle calls.

        ``pass_at(batch_blocks=tau, rounds=tau > 1, rounds_out=list, n_steps=k,
        should_stop=...)`` makes the first k steps of a pass (serial BCFW at tau = 1,
        else mini-batch rounds, which it appends to ``rounds_out``); ``state`` is the
        solver state it updates.  A pass that tries a tau makes ``probe_steps(tau)``
        steps in rounds and the rest as serial BCFW, each part timed: the try costs
        a share of a pass, and the two times are measured side by side.
        """
        tau, n = self.tau, state.n_blocks
        k = self.probe_steps(tau) if tau == self.probe else n
        rounds: list = []
        seconds, made, calls = self._timed(state, pass_at, batch_blocks=tau, rounds=tau > 1,
                                           rounds_out=rounds, n_steps=k,
                                           should_stop=should_stop)
        if k < n and made == k and not (should_stop is not None and should_stop()):
            rest, rest_made, rest_calls = self._timed(state, pass_at, batch_blocks=1,
                                                      rounds=False, rounds_out=None,
                                                      n_steps=n - k, should_stop=should_stop)
            calls += rest_calls
            if rest_made and self.max_tau > 1:
                self.seconds[1] = rest / rest_made
        curve = staleness_curve(rounds, state.block_gap_estimates) if tau > 1 else None
        self.update(tau, seconds / made if made else math.nan, *staleness_efficiency(curve))
        return calls

    def probe_steps(self, tau: int) -> int:
        """Steps a try of ``tau`` makes in rounds: n / ``PROBE_SHARE``, at least
        ``PROBE_ROUNDS`` rounds, at most n."""
        return min(self.n_blocks, max(self.n_blocks // PROBE_SHARE, PROBE_ROUNDS * tau))

    @staticmethod
    def _timed(state, pass_at, **kwargs) -> tuple[float, int, int]:
        """(wall seconds, block steps made, oracle calls) of ``pass_at(**kwargs)``."""
        steps = state.n_steps
        start = time.perf_counter()
        calls = pass_at(**kwargs)
        return time.perf_counter() - start, state.n_steps - steps, calls

    def record(self) -> dict:
        """The history fields of the pass just made: ``batch_blocks`` (its tau),
        ``staleness_efficiency`` (its E, None at tau = 1) and ``batch_blocks_next`` /
        ``batch_blocks_reason`` (the next pass's tau and why)."""
        return {"batch_blocks": self.last_tau, "staleness_efficiency": self.last_efficiency,
                "batch_blocks_next": self.tau, "batch_blocks_reason": self.reason}

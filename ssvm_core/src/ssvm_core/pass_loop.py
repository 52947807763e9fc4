"""The pass loop every solver runs: budgets, stop statuses, stop signals, callbacks, history.

``solve`` (the Frank-Wolfe family) and ``subgradient_solve`` (SSG) subclass
``PassLoop`` and supply only what differs: one pass of steps, the check made
before the first pass and after a pass (exact gaps for Frank-Wolfe, primal
values for SSG) and their fields of the history records.  The loop owns the
rest, so both solvers stop for the same reasons at the same points:

1. the check before the first pass, then a record;
2. a pass (timed), then the budgets of this call, Ctrl-C or SIGTERM, the scheduled (or
   final) check and a record, whose callback may ask to stop; repeat.

The states (``SolverState``, ``SubgradientState``) keep the loop's counters
through the ``PassCounters`` methods.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ssvm_core._interrupt import stop_on_signals

__all__ = ["Budgets", "PassCounters", "PassLoop"]


class PassCounters:
    """The counters a solver state keeps for the pass loop, and their only writers.

    A state using it has ``passes``, ``oracle_calls``, ``elapsed`` (seconds)
    and ``rng_state`` attributes.
    """

    passes: int
    oracle_calls: int
    elapsed: float
    rng_state: dict | None

    def add_time(self, seconds: float) -> None:
        """Count ``seconds`` of solver time."""
        self.elapsed += seconds

    def count_oracle_calls(self, calls: int) -> None:
        """Count ``calls`` oracle calls."""
        self.oracle_calls += calls

    def end_pass(self, calls: int, rng: np.random.Generator) -> None:
        """Count a finished pass and its ``calls``; keep ``rng``'s state for resuming."""
        self.passes += 1
        self.count_oracle_calls(calls)
        self.rng_state = rng.bit_generator.state


@dataclass(frozen=True)
class Budgets:
    """The budgets of one solver call, counted from the state's counters at its start.

    Parameters
    ----------
    max_passes : int, default 100
        Passes of this call.
    max_oracle_calls : int or None, default None
        Oracle calls of this call (steps and checks); None: no limit.
    time_budget : float or None, default None
        Seconds of this call; None: no limit.
    """

    max_passes: int = 100
    max_oracle_calls: int | None = None
    time_budget: float | None = None

    def status(self, state: PassCounters, start: tuple[int, int, float]) -> str | None:
        """Which budget is spent since ``start = (passes, oracle_calls, elapsed)``, if any."""
        passes, calls, elapsed = start
        if state.passes - passes >= self.max_passes:
            return "max_passes"
        if (self.max_oracle_calls is not None
                and state.oracle_calls - calls >= self.max_oracle_calls):
            return "max_oracle_calls"
        if self.time_budget is not None and state.elapsed - elapsed >= self.time_budget:
            return "time_budget"
        return None

    def deadline(self, state: PassCounters, start: tuple[int, int, float]) -> float | None:
        """The ``time.perf_counter()`` at which the time budget runs out, if there is one."""
        if self.time_budget is None:
            return None
        return time.perf_counter() + self.time_budget - (state.elapsed - start[2])


class PassLoop:
    """One solver call: run passes until a budget, a check, Ctrl-C or the callback stops.

    Subclasses implement ``first_check``, ``one_pass``, ``check`` and
    ``record_fields`` (and may refine ``scheduled``); ``run`` drives them.

    Parameters
    ----------
    state : PassCounters
        The solver state, updated in place (with ``n_steps``).
    rng : numpy Generator
        The run's randomness; its state is kept in ``state.rng_state`` after
        every pass, so a resumed run draws what an uninterrupted one would.
    n_blocks : int
        Training examples (``effective_passes`` = oracle calls / n_blocks).
    budgets : Budgets
        When to stop.
    check_every : int
        Passes between scheduled checks, counted over the state's whole life.
    callback : callable or None, default None
        Called with every history record; a true return value stops the run.
    verbose : int, default 0
        1 prints the records with a check, 2 every record.

    Attributes
    ----------
    history : list of dict
        One record per pass (and one before the first): ``pass``,
        ``effective_passes``, ``oracle_calls``, ``n_steps``, ``time``, then
        the solver's fields (None where a check did not run).
    """

    #: (key, format) of the fields a verbose line shows, when not None
    VERBOSE_FIELDS: tuple[tuple[str, str], ...] = ()

    def __init__(self, state: PassCounters, rng: np.random.Generator, n_blocks: int,
                 budgets: Budgets, check_every: int,
                 callback: Callable[[dict], bool | None] | None = None, verbose: int = 0):
        self.state, self.rng, self.n_blocks = state, rng, n_blocks
        self.budgets, self.check_every = budgets, check_every
        self.callback, self.verbose = callback, verbose
        self.history: list[dict] = []
        self._checked: dict = {}
        self._start = (state.passes, state.oracle_calls, state.elapsed)
        self._stop = None                   # the run's Ctrl-C flag, while it runs
        self._deadline: float | None = None  # the time budget's end, during a pass

    # -- what a solver supplies ------------------------------------------------
    def first_check(self) -> str | None:
        """The check before the first pass; returns a status to stop at once, or None."""
        raise NotImplementedError

    def one_pass(self) -> int:
        """One pass of steps; returns the oracle calls it made that are not counted yet."""
        raise NotImplementedError

    def check(self, status: str | None, scheduled: bool) -> str | None:
        """The check after a pass, scheduled or because the run stops (``status``).

        Returns the status, which a check may set (e.g. to "converged").
        """
        raise NotImplementedError

    def record_fields(self, checked: bool) -> dict:
        """The solver's fields of a history record (before the check's values)."""
        raise NotImplementedError

    def scheduled(self) -> bool:
        """Whether the schedule asks for a check after the state's last pass."""
        return self.state.passes % self.check_every == 0

    def stop_status(self) -> str | None:
        """A status that ends the run after the pass just made (e.g. ``"workers lost"``,
        when the solver's executor lost its cluster), or None (the default)."""
        return None

    # -- the loop ----------------------------------------------------------------
    def timed(self, func: Callable, *args, **kwargs):
        """``func(*args, **kwargs)``, its wall time counted as solver time."""
        start = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            self.state.add_time(time.perf_counter() - start)

    def should_stop(self) -> bool:
        """Whether the running pass should end early, between its rounds of steps:
        Ctrl-C was pressed or the time budget is spent (a pass of mini-batch rounds
        on a cluster can take minutes)."""
        if self._stop is not None and self._stop.requested:
            return True
        return self._deadline is not None and time.perf_counter() >= self._deadline

    def checked(self, values: dict) -> None:
        """Put a check's values into the next history record."""
        self._checked = values

    def run(self) -> str:
        """Run the passes; returns why they stopped: "converged" (set by a check),
        "max_passes", "max_oracle_calls", "time_budget", "callback", "interrupted" or
        a solver's own ``stop_status`` (``solve``: "workers lost").

        Ctrl-C (SIGINT) or SIGTERM (sent by ``timeout``, SLURM, ``docker
        stop``) stops after the current pass, keeping the model, with a
        ``RuntimeWarning``; a second signal raises ``KeyboardInterrupt``.
        """
        with stop_on_signals() as stop:
            self._stop = stop
            status = self.first_check()
            if self.record() and status is None:
                status = "callback"
            while status is None:
                self._deadline = self.budgets.deadline(self.state, self._start)
                calls = self.timed(self.one_pass)
                self.state.end_pass(calls, self.rng)
                status = self.stop_status() or self.budgets.status(self.state, self._start)
                if stop.requested:
                    status = "interrupted"
                scheduled = self.scheduled()
                if scheduled or status is not None:
                    status = self.check(status, scheduled)
                if self.record() and status is None:
                    status = "callback"
        if status == "interrupted":
            warnings.warn(f"solver interrupted by {stop.signal_name}; the model is kept and "
                          "can be resumed from its state", RuntimeWarning, stacklevel=3)
        return status

    def record(self) -> bool:
        """Append a history record; True if the callback asks to stop."""
        st = self.state
        rec = {"pass": st.passes, "effective_passes": st.oracle_calls / self.n_blocks,
               "oracle_calls": st.oracle_calls, "n_steps": st.n_steps, "time": st.elapsed}
        rec.update(self.record_fields(bool(self._checked)))
        rec.update(self._checked)
        checked, self._checked = bool(self._checked), {}
        self.history.append(rec)
        if self.verbose >= 2 or (self.verbose and checked):
            print(self.format_record(rec))
        return bool(self.callback(rec)) if self.callback is not None else False

    def format_record(self, rec: dict) -> str:
        """The verbose line of a record."""
        text = f"pass {rec['pass']:5d}  eff {rec['effective_passes']:8.2f}"
        for key, spec in self.VERBOSE_FIELDS:
            if rec.get(key) is not None:
                text += f"  {key} {rec[key]:{spec}}"
        return text + f"  {rec['time']:.2f}s"

"""Stopping between passes: Ctrl-C (SIGINT) and SIGTERM ask the solver to stop cleanly.

SIGTERM is what ``timeout``, batch schedulers (SLURM) and ``docker stop`` send
before they kill a job: handling it like Ctrl-C lets a solver called under
them finish its current pass and return (or save) the model.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The signals that stop a solver after its current pass.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopFlag:
    """Set by the first stop signal while a solver runs; a second one aborts at once.

    Attributes
    ----------
    requested : bool
        Whether a stop signal arrived.
    signal_name : str or None
        The name of the first one (``"SIGINT"`` or ``"SIGTERM"``).
    """

    def __init__(self) -> None:
        self.requested = False
        self.signal_name: str | None = None

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.signal_name = signal.Signals(signum).name


@contextmanager
def stop_on_signals() -> Iterator[StopFlag]:
    """Install the handler of ``STOP_SIGNALS`` for the duration of a solve (main thread
    only; other threads get a flag that is never set)."""
    flag = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = {signum: signal.signal(signum, flag._handle) for signum in STOP_SIGNALS}
    try:
        yield flag
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

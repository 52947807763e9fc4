"""Ctrl-C between passes: the first SIGINT asks the solver to stop cleanly."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class StopFlag:
    """Set by the first SIGINT while a solver runs; a second one aborts at once."""

    def __init__(self) -> None:
        self.requested = False

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


@contextmanager
def stop_on_sigint() -> Iterator[StopFlag]:
    """Install the handler for the duration of a solve (main thread only)."""
    flag = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    previous = signal.signal(signal.SIGINT, flag._handle)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)

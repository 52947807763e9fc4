"""A local Dask cluster whose worker processes ignore Ctrl-C.

Ctrl-C in a terminal sends SIGINT to every process of the foreground process
group: to the solver, and to the worker processes of a ``LocalCluster`` it
started, which die of it.  The solver would then stop after the current round
(``ssvm_core.solve``) but find no worker to finish it with.  The clusters the
project starts (``ssvm train --dask-local``, :func:`local_cluster`) load this
module in every worker process through Dask's worker ``preload`` (also in a
worker the nanny restarts): :func:`dask_setup` makes the process ignore SIGINT,
so Ctrl-C reaches only the solver, which stops after its round with the
workers still there.  The nanny still stops the workers when the cluster
closes (it does not use SIGINT).
"""

from __future__ import annotations

import signal
import threading

__all__ = ["dask_setup", "local_cluster"]


def dask_setup(worker) -> None:
    """Dask's preload hook, run in each worker as it starts: ignore SIGINT there.

    Only in a worker process's main thread (where signal handlers live); a worker
    running in a thread of the caller's process (``processes=False``) is left
    alone, so the caller keeps its own Ctrl-C.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_cluster(n_workers: int, **kwargs):
    """A ``distributed.LocalCluster`` of ``n_workers`` processes that ignore Ctrl-C.

    Parameters
    ----------
    n_workers : int
        Worker processes (one thread each unless ``threads_per_worker`` says otherwise).
    **kwargs
        More ``LocalCluster`` arguments (``dashboard_address`` defaults to ":0", a free
        port; ``preload`` entries are kept, this module's hook is added).

    Returns
    -------
    distributed.LocalCluster
        Use it as a context manager, or ``close`` it.
    """
    import distributed

    preload = list(kwargs.pop("preload", None) or [])
    kwargs.setdefault("threads_per_worker", 1)
    kwargs.setdefault("dashboard_address", ":0")
    return distributed.LocalCluster(n_workers=n_workers, processes=True,
                                    preload=[*preload, __name__], **kwargs)

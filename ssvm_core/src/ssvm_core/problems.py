"""Whole problems in parallel: independent solves on the executors of ``ssvm_core.executors``.

An ``Executor`` runs the oracle calls of one round of one solve.  A grid
search or a cross-validation has another kind of job: whole solves, each
independent of the others.  ``map_problems`` runs such jobs on the same
executors and yields their results in the order of the jobs, whatever
finishes first:

- ``SerialExecutor``: one after the other in the calling thread.
- ``ThreadExecutor(n_jobs)``: ``n_jobs`` threads of this process (the
  solvers' kernels and Cython oracles release the GIL).  Problems of a Python
  oracle (``needs_gil``) run one at a time, with a ``RuntimeWarning``.
- ``DaskExecutor(client)``: the shared data (bound oracles and what the jobs
  read with them) are sent to every worker once (``scatter(broadcast=True)``);
  each job is one ``client.submit`` of a whole solve.  Data, job function and
  job arguments must pickle; an oracle that does not is named in the error.
  A job lost with its worker runs again elsewhere (the data are sent anew if
  no worker holds them any more, up to the executor's ``max_retries``).

Jobs are not nested: a solve inside a job makes its own oracle calls in its
worker (the serial executor), so the job function must not pass an
executor or ``n_jobs`` on to ``ssvm_core.solve``.  Jobs in threads share
one oracle object, jobs on a Dask worker share that worker's copy: an
oracle whose answers depend on earlier calls (an ``ApproximateOracle``'s
memory) answers differently than in a serial loop; counters count every
job's calls.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ssvm_core.executors import (
    DaskExecutor,
    Executor,
    SerialExecutor,
    ThreadExecutor,
    lost_worker_errors,
    pickling_error,
    resolve_executor,
)
from ssvm_core.parallel import effective_n_jobs

__all__ = ["map_problems", "problem_executor", "problem_workers"]


def problem_executor(executor=None, n_jobs: int | None = None) -> Executor:
    """The executor of independent problems, scikit-learn's way.

    Parameters
    ----------
    executor : None, {"serial", "threads"}, distributed.Client or Executor, default None
        As for ``ssvm_core.executors.resolve_executor``; None means threads
        when ``n_jobs`` asks for more than one, else serial (``n_jobs`` of
        ``GridSearchCV``).
    n_jobs : int or None, default None
        Problems solved at once in threads (None: 1, -1: every core); only
        alone or with ``executor="threads"`` (other executors have their own
        workers).

    Returns
    -------
    Executor
    """
    jobs = effective_n_jobs(n_jobs)            # n_jobs=0 and non-integers fail here
    if executor is None:
        executor = "threads" if jobs > 1 else "serial"
    elif n_jobs not in (None, 1) and not (isinstance(executor, str) and executor == "threads"):
        raise ValueError(f"n_jobs={n_jobs} counts threads: give it alone or with "
                         f"executor='threads', not with executor={executor!r}")
    pool = resolve_executor(executor, n_jobs)
    if not isinstance(pool, (SerialExecutor, ThreadExecutor, DaskExecutor)):
        raise TypeError(f"{type(pool).__name__} runs oracle calls only; independent problems "
                        "run on the serial, threads or Dask executor")
    return pool


def problem_workers(executor: Executor, needs_gil: bool = False) -> int:
    """Problems ``executor`` solves at once (1 for problems of a Python oracle on threads)."""
    if isinstance(executor, ThreadExecutor):
        return 1 if needs_gil else executor.n_jobs
    return executor.n_workers


def map_problems(executor: Executor, func: Callable[..., Any], shared: Sequence,
                 jobs: Sequence[tuple[int, tuple]]) -> Iterator:
    """Yield ``func(shared[k], *args)`` for each ``(k, args)`` of ``jobs``, in that order.

    Parameters
    ----------
    executor : Executor
        From ``problem_executor``.
    func : callable
        A job: a whole solve (and whatever it computes from it).  On Dask it
        runs on a worker, so it must be a module-level function.
    shared : sequence
        The data the jobs share, each item a bound oracle or an object with an
        ``oracle`` attribute (for the GIL rule and error messages); on Dask
        every item is sent to every worker once.
    jobs : sequence of (int, tuple)
        The index of the shared item and the further arguments of each job.

    Yields
    ------
    The jobs' results in the order of ``jobs``.  The first job (in that
    order) that raised raises here.
    """
    jobs = [(int(k), tuple(args)) for k, args in jobs]
    oracles = [getattr(item, "oracle", item) for item in shared]
    if isinstance(executor, DaskExecutor):
        yield from _on_dask(executor, func, shared, oracles, jobs)
        return
    gil = any(getattr(oracle, "needs_gil", False) for oracle in oracles)
    workers = min(problem_workers(executor, gil), len(jobs))
    if isinstance(executor, ThreadExecutor) and gil and executor.n_jobs > 1:
        names = sorted({type(o).__name__ for o in oracles if getattr(o, "needs_gil", False)})
        warnings.warn(f"{', '.join(names)} needs the GIL (a Python oracle): the problems are "
                      "solved one at a time", RuntimeWarning, stacklevel=3)
    if workers <= 1:
        for k, args in jobs:
            yield func(shared[k], *args)
        return
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(func, shared[k], *args) for k, args in jobs]
        for fut in futures:
            yield fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _on_dask(executor: DaskExecutor, func, shared, oracles, jobs) -> Iterator:
    """``map_problems`` on Dask: every shared item is sent to every worker once; a job
    whose data were lost with their workers is submitted again after sending them anew."""
    client = executor.client
    lost_errors = lost_worker_errors()
    scattered: list = [None] * len(shared)

    def place(k: int) -> None:
        try:
            scattered[k] = client.scatter(shared[k], broadcast=True, hash=False)
        except Exception as exc:
            _raise_unpicklable(exc, oracles[k])

    def submit(j: int):
        k, args = jobs[j]
        return scattered[k], client.submit(func, scattered[k], *args, pure=False)

    try:
        for k in range(len(shared)):
            place(k)
        submitted = [submit(j) for j in range(len(jobs))]
        for j, (k, _) in enumerate(jobs):
            for attempt in range(executor.max_retries + 1):
                data, fut = submitted[j]
                try:
                    result = fut.result()
                    break
                except lost_errors:
                    if attempt == executor.max_retries:
                        raise RuntimeError(f"Dask workers were lost {attempt + 1} times in a "
                                           "row; giving up") from None
                    if data is scattered[k]:        # not sent again by an earlier job
                        data.release()
                        place(k)
                    submitted[j] = submit(j)
                    executor.resubmitted += 1
                except Exception as exc:
                    _raise_unpicklable(exc, oracles[k])
            yield result
    finally:
        for fut in scattered:
            if fut is not None:
                fut.release()


def _raise_unpicklable(exc: BaseException, oracle) -> None:
    """Raise ``exc``, or the error naming ``oracle`` when it failed to serialise it."""
    error = pickling_error(oracle, exc)
    if error is None:
        raise exc
    raise error from exc

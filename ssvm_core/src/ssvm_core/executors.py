"""Where the oracle calls of a mini-batch round run: here, in threads, or on Dask.

An executor answers two questions about a bound oracle at a fixed w:
``solve_blocks`` (the answers of some blocks: labellings, losses, sparse psi,
see ``ssvm_core._batch.Answers``) and ``max_scores`` (max_y H_i(y; w) of every
block, for exact gap passes).  Results never depend on which thread or
worker answered first: answers are assembled in a fixed order.

- ``SerialExecutor``: the calling thread.
- ``ThreadExecutor(n_jobs)``: chunks of blocks to a thread pool; Cython
  oracles release the GIL.  Python oracles (``needs_gil``) run in one thread,
  with a ``RuntimeWarning``.
- ``DaskExecutor(client)``: a ``dask.distributed`` cluster.  The bound oracle
  is cut into one shard of consecutive blocks per worker and each shard is
  scattered to its worker once; a round sends only w and block indices to
  the shards holding them and gets answers back.  Oracles with a
  ``take_blocks(indices)`` method (returning the oracle of those blocks) are
  sliced, so a worker holds only its shard's data; other oracles cannot be
  sliced generically (a compiled oracle's data layout is private to it), so
  their shard carries the whole oracle and uses only its own blocks.  When a
  worker is lost, its shards are scattered again from the client's copy and
  the lost tasks are submitted again: the round's answers are the same.
  Every answer comes back with the exactness of the worker's copy of the
  oracle (``exact``, e.g. False once a graph-cut oracle fell back to loopy
  max-product there), so a fallback on any worker makes the run approximate,
  as it would serially.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from concurrent.futures import CancelledError, ThreadPoolExecutor

import numpy as np

from ssvm_core._batch import Answers, max_scores, solve_blocks
from ssvm_core._oracle import MaxOracle
from ssvm_core.parallel import effective_n_jobs

__all__ = ["DaskExecutor", "Executor", "SerialExecutor", "ThreadExecutor", "resolve_executor"]


class Executor(ABC):
    """Runs the oracle calls of a round (see the module docstring)."""

    @property
    def n_workers(self) -> int:
        """Oracle calls that can run at once."""
        return 1

    @property
    def exact(self) -> bool:
        """False once an answer came from a copy of the oracle that was no longer exact
        (``MaxOracle.exact``); executors that call the caller's oracle itself say True,
        the caller's oracle then tells."""
        return True

    @abstractmethod
    def solve_blocks(self, oracle: MaxOracle, w: np.ndarray, blocks: np.ndarray,
                     n_samples: int = 1) -> Answers:
        """Answers of ``blocks`` (distinct indices) at ``w``, ``n_samples`` per block."""

    @abstractmethod
    def max_scores(self, oracle: MaxOracle, w: np.ndarray) -> np.ndarray:
        """max_y H_i(y; w) of every block (n,), in block order."""

    def local_threads(self, oracle: MaxOracle) -> int | None:
        """Threads of this process that make the calls of ``oracle``, or None.

        An executor that answers with threads of this process (serial: 1)
        says how many, so that whole passes of rounds can run in compiled
        code (``_batch.fw_rounds``) with the same split of the calls; None
        (the default, e.g. Dask) sends every round through ``solve_blocks``.
        """
        return None

    def close(self) -> None:  # noqa: B027  (optional hook: a no-op unless overridden)
        """Release threads or cluster data (the executor stays usable)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SerialExecutor(Executor):
    """Every oracle call in the calling thread."""

    def local_threads(self, oracle):
        return 1

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        return solve_blocks(oracle, _weights(w), blocks, n_samples)

    def max_scores(self, oracle, w):
        return max_scores(oracle, _weights(w), np.arange(oracle.n_blocks))


class ThreadExecutor(Executor):
    """Oracle calls in ``n_jobs`` threads (Cython oracles run without the GIL).

    Parameters
    ----------
    n_jobs : int or None, default None
        Threads (scikit-learn's rule: None is 1, -1 every core).
    """

    def __init__(self, n_jobs: int | None = None):
        self.n_jobs = effective_n_jobs(n_jobs)
        self._pool: ThreadPoolExecutor | None = None
        self._warned = False

    @property
    def n_workers(self) -> int:
        return self.n_jobs

    def _jobs_for(self, oracle: MaxOracle) -> int:
        if oracle.needs_gil and self.n_jobs > 1:
            if not self._warned:
                warnings.warn(f"{type(oracle).__name__} needs the GIL (a Python oracle): its "
                              "calls run in one thread", RuntimeWarning, stacklevel=3)
                self._warned = True
            return 1
        return self.n_jobs

    def local_threads(self, oracle):
        return self._jobs_for(oracle)

    def _map(self, func, chunks):
        if len(chunks) == 1:
            return [func(chunks[0])]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.n_jobs)
        return list(self._pool.map(func, chunks))

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        w = _weights(w)
        blocks = np.asarray(blocks, dtype=np.intp)
        chunks = _chunks(blocks, self._jobs_for(oracle))
        return Answers.concat(self._map(lambda b: solve_blocks(oracle, w, b, n_samples),
                                        chunks))

    def max_scores(self, oracle, w):
        w = _weights(w)
        chunks = _chunks(np.arange(oracle.n_blocks), self._jobs_for(oracle))
        return np.concatenate(self._map(lambda b: max_scores(oracle, w, b), chunks))

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


class _Shard:
    """Blocks [start, stop) of a bound oracle, kept on one Dask worker."""

    def __init__(self, oracle: MaxOracle, start: int, stop: int):
        self.start, self.stop = int(start), int(stop)
        take = getattr(oracle, "take_blocks", None)
        if take is not None:
            self.oracle, self.offset = take(np.arange(start, stop)), self.start
        else:
            self.oracle, self.offset = oracle, 0
        self._nbytes = _payload_bytes(self.oracle)

    def __sizeof__(self) -> int:
        # Dask's cost model reads sys.getsizeof: a shard is as big as its arrays,
        # so the scheduler runs tasks where their shard is instead of copying it.
        return self._nbytes

    def solve(self, w: np.ndarray, blocks: np.ndarray, n_samples: int) -> Answers:
        answers = solve_blocks(self.oracle, w, blocks - self.offset, n_samples)
        answers.blocks = blocks
        return answers

    def max_scores(self, w: np.ndarray) -> np.ndarray:
        return max_scores(self.oracle, w, np.arange(self.start, self.stop) - self.offset)

    @property
    def exact(self) -> bool:
        """Whether this worker's copy of the oracle is still exact."""
        return bool(getattr(self.oracle, "exact", True))


def _shard_solve(shard: _Shard, w, blocks, n_samples) -> tuple[Answers, bool]:
    answers = shard.solve(w, blocks, n_samples)
    return answers, shard.exact


def _shard_scores(shard: _Shard, w) -> tuple[np.ndarray, bool]:
    scores = shard.max_scores(w)
    return scores, shard.exact


class DaskExecutor(Executor):
    """Oracle calls on a ``dask.distributed`` cluster, on shards of blocks.

    Parameters
    ----------
    client : distributed.Client
        A connected client (``dask[distributed]``, the ``ssvm-core[dask]`` extra).
    n_shards : int or None, default None
        Shards of consecutive blocks (None: one per worker at the first call).
    max_retries : int, default 3
        Times the tasks of a round are submitted again after losing workers.

    Notes
    -----
    The shards of the last oracle seen stay scattered until ``close`` or until
    another oracle is used.  Only lost workers are retried; an error raised by
    the oracle itself propagates.
    """

    def __init__(self, client, n_shards: int | None = None, max_retries: int = 3):
        if n_shards is not None and (int(n_shards) != n_shards or n_shards < 1):
            raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
        if int(max_retries) != max_retries or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.client = client
        self.n_shards = n_shards
        self.max_retries = int(max_retries)
        self._oracle: MaxOracle | None = None
        self._bounds = np.zeros(1, dtype=np.intp)
        self._shards: list = []
        self._homes: list = []
        self.resubmitted = 0          # tasks submitted again after a lost worker
        self._exact = True

    @property
    def n_workers(self) -> int:
        return max(1, len(self._workers()))

    @property
    def exact(self) -> bool:
        """False once a worker's copy of the oracle answered without being exact."""
        return self._exact

    def _collect(self, results: dict) -> dict:
        """The payloads of ``{k: (payload, exact)}``, noting any inexact worker."""
        if not all(exact for _, exact in results.values()):
            self._exact = False
        return {k: payload for k, (payload, _) in results.items()}

    def _workers(self) -> list[str]:
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def _scatter(self, k: int, workers: list[str]) -> None:
        """Send shard k to a worker (round robin over ``workers``)."""
        shard = _Shard(self._oracle, self._bounds[k], self._bounds[k + 1])
        home = [workers[k % len(workers)]] if workers else None
        try:
            self._shards[k] = self.client.scatter(shard, workers=home, hash=False)
        except Exception as exc:
            if not _is_serialisation_error(exc):
                raise
            root = exc
            while root.__cause__ is not None:
                root = root.__cause__
            raise TypeError(f"{_oracle_name(self._oracle)} cannot be sent to the Dask "
                            f"workers (an oracle must pickle): {root}") from exc
        self._homes[k] = home

    def _submit(self, func, k: int, *args):
        """Run ``func(shard k, *args)`` on the shard's worker (elsewhere if it is gone)."""
        return self.client.submit(func, self._shards[k], *args, workers=self._homes[k],
                                  allow_other_workers=True, pure=False)

    def _place(self, oracle: MaxOracle) -> None:
        """Scatter the shards of ``oracle`` (once per oracle)."""
        if oracle is self._oracle and self._shards:
            return
        self.close()
        self._exact = True                      # a new oracle: its own exactness
        workers = self._workers()
        n = oracle.n_blocks
        n_shards = min(self.n_shards or max(len(workers), 1), n)
        self._oracle = oracle
        self._bounds = np.linspace(0, n, n_shards + 1).round().astype(np.intp)
        self._shards, self._homes = [None] * n_shards, [None] * n_shards
        for k in range(n_shards):
            self._scatter(k, workers)

    def _run(self, keys, submit) -> dict:
        """``{k: submit(k).result()}``, re-scattering the shards of lost tasks."""
        lost_errors = _lost_errors()
        futures = {k: submit(k) for k in keys}
        results = {}
        for attempt in range(self.max_retries + 1):
            lost = []
            for k, fut in futures.items():
                try:
                    results[k] = fut.result()
                except lost_errors:
                    lost.append(k)
            if not lost:
                return results
            if attempt == self.max_retries:
                break
            workers = self._workers()
            for k in lost:
                self._shards[k].release()
                self._scatter(k, workers)
            self.resubmitted += len(lost)
            futures = {k: submit(k) for k in lost}
        raise RuntimeError(f"Dask workers were lost {self.max_retries + 1} times in a row; "
                           "giving up")

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        self._place(oracle)
        w = _weights(w)
        blocks = np.asarray(blocks, dtype=np.intp)
        if blocks.size == 0:
            return solve_blocks(oracle, w, blocks, n_samples)
        if blocks.min() < 0 or blocks.max() >= oracle.n_blocks:
            raise IndexError(f"block indices must lie in [0, {oracle.n_blocks})")
        owner = np.searchsorted(self._bounds, blocks, side="right") - 1
        groups = {int(k): blocks[owner == k] for k in np.unique(owner)}
        results = self._collect(self._run(
            groups, lambda k: self._submit(_shard_solve, k, w, groups[k], n_samples)))
        return Answers.concat([results[k] for k in sorted(results)])

    def max_scores(self, oracle, w):
        self._place(oracle)
        w = _weights(w)
        keys = range(len(self._shards))
        results = self._collect(self._run(keys, lambda k: self._submit(_shard_scores, k, w)))
        return np.concatenate([results[k] for k in keys])

    def close(self):
        # shards not scattered (a scatter that failed, e.g. an oracle that does not
        # pickle) are None: the error that stopped the scatter is the one to see
        for fut in self._shards:
            if fut is not None:
                fut.release()
        self._shards, self._homes = [], []
        self._oracle = None


def _payload_bytes(obj, depth: int = 0) -> int:
    """Bytes of the NumPy arrays an object pickles (through ``__reduce__``), roughly."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if depth > 4:
        return 0
    if isinstance(obj, (list, tuple)):
        return sum(_payload_bytes(x, depth + 1) for x in obj)
    if isinstance(obj, dict):
        return sum(_payload_bytes(x, depth + 1) for x in obj.values())
    if isinstance(obj, MaxOracle):
        try:
            return _payload_bytes(obj.__reduce__()[1], depth + 1)
        except TypeError:
            return 0
    if hasattr(obj, "__dict__"):
        return _payload_bytes(vars(obj), depth + 1)
    return 0


def _is_serialisation_error(exc: BaseException) -> bool:
    """Whether Dask failed to serialise what it was to send (its TypeError, or pickle's)."""
    import pickle

    return isinstance(exc, (TypeError, pickle.PicklingError)) and "serializ" in str(exc).lower()


def _oracle_name(oracle) -> str:
    """The class of an oracle, or of the Python object a ``PythonOracle`` adapts."""
    inner = getattr(oracle, "obj", None)
    return type(inner if inner is not None else oracle).__name__


def _lost_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning a task or its shard was lost with a worker."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError
    from distributed.comm.core import CommClosedError
    return (KilledWorker, FutureCancelledError, CancelledError, CommClosedError)


def _chunks(blocks: np.ndarray, jobs: int) -> list[np.ndarray]:
    """At most ``jobs`` nonempty consecutive chunks of ``blocks`` (one, maybe empty)."""
    jobs = max(1, min(jobs, blocks.shape[0]))
    return np.array_split(blocks, jobs)


def _weights(w) -> np.ndarray:
    return np.ascontiguousarray(w, dtype=np.float64)


def resolve_executor(executor=None, n_jobs: int | None = None) -> Executor:
    """The executor for ``executor``: None or "serial", "threads", a Client, an Executor.

    Parameters
    ----------
    executor : None, {"serial", "threads"}, distributed.Client or Executor
        None and "serial": ``SerialExecutor``; "threads": ``ThreadExecutor(n_jobs)``;
        a ``distributed.Client``: ``DaskExecutor(client)``; an ``Executor`` as is.
    n_jobs : int or None, default None
        Threads for "threads".

    Returns
    -------
    Executor
    """
    if executor is None or (isinstance(executor, str) and executor == "serial"):
        return SerialExecutor()
    if isinstance(executor, str):
        if executor == "threads":
            return ThreadExecutor(n_jobs)
        raise ValueError(f"executor must be None, 'serial', 'threads', a dask Client or an "
                         f"Executor, got {executor!r}")
    if isinstance(executor, Executor):
        return executor
    if type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "scatter"):
        return DaskExecutor(executor)
    raise TypeError(f"executor must be None, 'serial', 'threads', a dask Client or an "
                    f"Executor, got {type(executor).__name__}")


# -- shared with whole problems on Dask (ssvm_core.problems) ------------------------------

def pickling_error(oracle, exc: BaseException) -> TypeError | None:
    """The error to show when ``exc`` is a failure to send ``oracle`` to Dask, else None.

    A TypeError naming the oracle (``PythonOracle``: the object it adapts) and the
    first cause of the failure (e.g. "cannot pickle '_thread.lock' object").
    """
    if not _is_serialisation_error(exc):
        return None
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    return TypeError(f"{_oracle_name(oracle)} cannot be sent to the Dask workers (an oracle "
                     f"must pickle): {root}")


def lost_worker_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning a Dask task or its data were lost with a worker."""
    return _lost_errors()

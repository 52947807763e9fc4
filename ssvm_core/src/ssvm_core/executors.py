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
  scattered to its worker once, where it keeps a copy of w; a round sends
  the shards holding its blocks the block indices and the entries of w that
  changed since their copy (new values, versioned: the copy equals w bit for
  bit; w whole when that is smaller) and gets answers back.  Oracles with a
  ``take_blocks(indices)`` method (returning the oracle of those blocks) are
  sliced, so a worker holds only its shard's data; other oracles cannot be
  sliced generically (a compiled oracle's data layout is private to it), so
  their shard carries the whole oracle and uses only its own blocks.  When a
  worker is lost, its shards are scattered again from the client's copy (to
  a worker the nanny restarts, when it was the last one) and the lost tasks
  are submitted again: the round's answers are the same.  When no worker is
  left, ``WorkersLostError`` ends the run with its model kept (``solve``'s
  status ``"workers lost"``).
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
from ssvm_core.exceptions import WorkersLostError
from ssvm_core.parallel import effective_n_jobs

__all__ = ["Answers", "DaskExecutor", "Executor", "SerialExecutor", "ThreadExecutor",
           "resolve_executor"]


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
    """Blocks [start, stop) of a bound oracle, kept on one Dask worker, with that
    worker's copy of w (``w``, at the master's version ``version``; see ``update_w``)."""

    def __init__(self, oracle: MaxOracle, start: int, stop: int):
        self.start, self.stop = int(start), int(stop)
        take = getattr(oracle, "take_blocks", None)
        if take is not None:
            self.oracle, self.offset = take(np.arange(start, stop)), self.start
        else:
            self.oracle, self.offset = oracle, 0
        self._nbytes = _payload_bytes(self.oracle)
        self.w: np.ndarray | None = None
        self.version = -1

    def __getstate__(self) -> dict:
        # a copy made by pickling (a scatter, Dask moving the data) has no w: the
        # master's next message to it finds the version unknown and sends w whole
        return {**self.__dict__, "w": None, "version": -1}

    def __sizeof__(self) -> int:
        # Dask's cost model reads sys.getsizeof: a shard is as big as its arrays,
        # so the scheduler runs tasks where their shard is instead of copying it.
        return self._nbytes + (0 if self.w is None else self.w.nbytes)

    def update_w(self, update: tuple) -> bool:
        """Apply a message of ``DaskExecutor._w_message``; False if it does not apply.

        ``update`` is ``(base, version, index, values)``: ``index`` None means
        ``values`` is the whole w; otherwise the entries ``index`` of w take the
        ``values`` (new values, not differences: the copy equals the master's w bit
        for bit), which applies only to the copy at version ``base``.
        """
        base, version, index, values = update
        if index is None:
            self.w = np.array(values, dtype=np.float64)          # an owned, writable copy
        elif self.w is None or base != self.version:
            return False
        else:
            self.w[index] = values
        self.version = version
        return True

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


def _shard_solve(shard: _Shard, update, blocks, n_samples) -> tuple[Answers | None, bool]:
    if not shard.update_w(update):
        return None, shard.exact                # its copy of w is not the one assumed
    return shard.solve(shard.w, blocks, n_samples), shard.exact


def _shard_scores(shard: _Shard, update) -> tuple[np.ndarray | None, bool]:
    if not shard.update_w(update):
        return None, shard.exact
    return shard.max_scores(shard.w), shard.exact


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
    worker_timeout : float, default 60.0
        Seconds to wait for a worker when none is left (a nanny restarting a
        killed worker takes a few); then ``WorkersLostError``.
    sparse_w : bool, default True
        Each shard keeps a copy of w; a round sends it only the entries of w
        that changed since that copy (indices and new values, or w whole when
        that is smaller).  False sends w whole every round.  Either way the
        workers compute with the master's w bit for bit.

    Attributes
    ----------
    bytes_sent : int
        Bytes of w (whole or its changed entries) sent to the shards so far.
    w_messages : int
        Messages of w sent (one per shard per round), ``dense_messages`` of them whole.
    resubmitted : int
        Tasks submitted again after a lost worker.

    Notes
    -----
    The shards of the last oracle seen stay scattered until ``close`` or until
    another oracle is used.  Only lost workers are retried; an error raised by
    the oracle itself propagates.  When no worker comes back, or the tasks of a
    round are lost ``max_retries + 1`` times in a row, ``WorkersLostError``
    (``ssvm_core.exceptions``) is raised, which ``solve`` turns into the status
    ``"workers lost"``, keeping the model.  Each message of w carries a version:
    a shard scattered again, or copied by Dask to another worker, holds no w and
    gets it whole once.
    """

    def __init__(self, client, n_shards: int | None = None, max_retries: int = 3,
                 worker_timeout: float = 60.0, sparse_w: bool = True):
        if n_shards is not None and (int(n_shards) != n_shards or n_shards < 1):
            raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
        if int(max_retries) != max_retries or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if not worker_timeout >= 0:
            raise ValueError(f"worker_timeout must be a number >= 0, got {worker_timeout!r}")
        self.client = client
        self.n_shards = n_shards
        self.max_retries = int(max_retries)
        self.worker_timeout = float(worker_timeout)
        self.sparse_w = bool(sparse_w)
        self._oracle: MaxOracle | None = None
        self._bounds = np.zeros(1, dtype=np.intp)
        self._shards: list = []
        self._homes: list = []
        self._w_versions = _WVersions()
        self._held: list[int | None] = []     # the version of w each shard holds, if known
        self.resubmitted = 0
        self.bytes_sent = 0
        self.w_messages = 0
        self.dense_messages = 0
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

    def _live_workers(self) -> list[str]:
        """The workers, waiting up to ``worker_timeout`` s for one when there is none."""
        workers = self._workers()
        if workers:
            return workers
        try:
            self.client.wait_for_workers(1, timeout=self.worker_timeout)
        except TimeoutError as exc:
            raise WorkersLostError(f"the Dask cluster has no worker left (none came back "
                                   f"within {self.worker_timeout:g} s)") from exc
        return self._workers()

    def _scatter(self, k: int, workers: list[str]) -> None:
        """Send shard k to a worker (round robin over ``workers``)."""
        shard = _Shard(self._oracle, self._bounds[k], self._bounds[k + 1])
        home = [workers[k % len(workers)]] if workers else None
        try:
            self._shards[k] = self.client.scatter(shard, workers=home, hash=False)
        except Exception as exc:
            error = pickling_error(self._oracle, exc)
            if error is None:
                raise
            raise error from exc
        self._homes[k], self._held[k] = home, None

    def _restore(self, keys) -> None:
        """Scatter the shards ``keys`` (again: a lost one is released first) to the workers
        there are, once there are."""
        for attempt in range(self.max_retries + 1):
            workers = self._live_workers()
            try:
                for k in keys:
                    if self._shards[k] is not None:
                        self._shards[k].release()
                        self._shards[k] = None
                    self._scatter(k, workers)
                return
            except (TimeoutError, OSError):       # that worker went too: ask again
                if attempt == self.max_retries:
                    raise WorkersLostError("Dask workers kept disappearing while the shards "
                                           "were scattered again; giving up") from None

    def _submit(self, func, k: int, *args):
        """Run ``func(shard k, w message, *args)`` on the shard's worker (elsewhere if it
        is gone)."""
        return self.client.submit(func, self._shards[k], self._w_message(k), *args,
                                  workers=self._homes[k], allow_other_workers=True, pure=False)

    def _w_message(self, k: int) -> tuple:
        """What brings shard k's copy of w to the current w: its changed entries since
        the version the shard holds, or w whole (see ``_Shard.update_w``)."""
        versions = self._w_versions
        index = versions.changes_since(self._held[k]) if self.sparse_w else None
        w = versions.w
        if index is None or index.nbytes + 8 * index.shape[0] >= w.nbytes:
            message = (None, versions.version, None, w)
            self.dense_messages += 1
            self.bytes_sent += w.nbytes
        else:
            values = w[index]
            message = (self._held[k], versions.version, index, values)
            self.bytes_sent += index.nbytes + values.nbytes
        self.w_messages += 1
        return message

    def _place(self, oracle: MaxOracle) -> None:
        """Scatter the shards of ``oracle`` (once per oracle)."""
        if oracle is self._oracle and self._shards:
            return
        self.close()
        self._exact = True                      # a new oracle: its own exactness
        workers = self._live_workers()
        n = oracle.n_blocks
        n_shards = min(self.n_shards or max(len(workers), 1), n)
        self._oracle = oracle
        self._bounds = np.linspace(0, n, n_shards + 1).round().astype(np.intp)
        self._shards, self._homes = [None] * n_shards, [None] * n_shards
        self._held = [None] * n_shards
        self._restore(range(n_shards))

    def _run(self, keys, submit) -> dict:
        """``{k: submit(k).result()}``: shards of lost tasks are scattered again, shards
        whose copy of w was not the one assumed get w whole, and both are resubmitted."""
        lost_errors = lost_worker_errors()
        results, pending, losses = {}, list(keys), 0
        while pending:
            futures = {k: submit(k) for k in pending}
            pending, lost = [], []
            for k, fut in futures.items():
                try:
                    payload, exact = fut.result()
                except lost_errors:
                    lost.append(k)
                    continue
                if payload is None:             # a copy of w from another version
                    self._held[k] = None
                    pending.append(k)
                else:
                    self._held[k] = self._w_versions.version
                    results[k] = (payload, exact)
            if lost:
                losses += 1
                if losses > self.max_retries:
                    raise WorkersLostError(f"Dask workers were lost {losses} times in a row "
                                           "within one round; giving up")
                self._restore(lost)
                self.resubmitted += len(lost)
                pending += lost
        self._w_versions.forget_before(min((v for v in self._held if v is not None),
                                           default=self._w_versions.version))
        return results

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        self._place(oracle)
        w = _weights(w)
        blocks = np.asarray(blocks, dtype=np.intp)
        if blocks.size == 0:
            return solve_blocks(oracle, w, blocks, n_samples)
        if blocks.min() < 0 or blocks.max() >= oracle.n_blocks:
            raise IndexError(f"block indices must lie in [0, {oracle.n_blocks})")
        self._w_versions.advance(w)
        owner = np.searchsorted(self._bounds, blocks, side="right") - 1
        groups = {int(k): blocks[owner == k] for k in np.unique(owner)}
        results = self._collect(self._run(
            groups, lambda k: self._submit(_shard_solve, k, groups[k], n_samples)))
        return Answers.concat([results[k] for k in sorted(results)])

    def max_scores(self, oracle, w):
        self._place(oracle)
        self._w_versions.advance(_weights(w))
        keys = range(len(self._shards))
        results = self._collect(self._run(keys, lambda k: self._submit(_shard_scores, k)))
        return np.concatenate([results[k] for k in keys])

    def close(self):
        # shards not scattered (a scatter that failed, e.g. an oracle that does not
        # pickle) are None: the error that stopped the scatter is the one to see
        for fut in self._shards:
            if fut is not None:
                fut.release()
        self._shards, self._homes, self._held = [], [], []
        self._oracle = None


class _WVersions:
    """The master's record of w for ``DaskExecutor``: a version number that grows
    whenever w changes, and the entries each change touched, as long as a shard
    may still need them.

    Attributes
    ----------
    w : ndarray or None
        A copy of the latest w.
    version : int
        Its version (0 before the first).
    """

    def __init__(self) -> None:
        self.w: np.ndarray | None = None
        self.version = 0
        self._changes: list[tuple[int, np.ndarray]] = []   # (version, entries changed)

    def advance(self, w: np.ndarray) -> None:
        """Make ``w`` the latest version (a new version only if some entry changed, bit
        for bit)."""
        if self.w is None or self.w.shape != w.shape:
            self.w, self._changes = w.copy(), []
            self.version += 1
            return
        changed = np.flatnonzero(w.view(np.int64) != self.w.view(np.int64))
        if changed.shape[0] == 0:
            return
        self.version += 1
        index_type = np.int32 if w.shape[0] < 2 ** 31 else np.int64
        self.w[changed] = w[changed]
        self._changes.append((self.version, changed.astype(index_type)))
        # a union as large as w is sent whole anyway: keep fewer than d entries
        total = sum(index.shape[0] for _, index in self._changes)
        while self._changes and total >= w.shape[0]:
            total -= self._changes.pop(0)[1].shape[0]

    def changes_since(self, version: int | None) -> np.ndarray | None:
        """The entries that changed after ``version`` (sorted), or None when not known
        (``version`` None, or older than the changes kept)."""
        if version is None:
            return None
        if version == self.version:
            return np.zeros(0, dtype=np.int32)
        first = self._changes[0][0] if self._changes else self.version + 1
        if version + 1 < first:
            return None
        parts = [index for v, index in self._changes if v > version]
        return parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))

    def forget_before(self, version: int) -> None:
        """Drop the changes every shard already has (those up to ``version``)."""
        self._changes = [(v, index) for v, index in self._changes if v > version]


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


def lost_worker_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning a Dask task or its data (a shard) were lost with a worker."""
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


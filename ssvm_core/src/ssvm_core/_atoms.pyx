"""Per-block atoms: explicit sparse dual variables and the labelling cache.

Block-coordinate pairwise and away steps (Osokin et al. (2016), Alg. 3-4) need the dual
variables alpha_i explicitly over an active set S_i; caching (Osokin et al. (2016), Alg. 5)
needs a working set C_i of labellings with their psi and loss.  Both live in
one store per block (``ActiveSets``): the cache is every stored atom, the
active set the atoms with alpha > 0.  Storage is C memory grown on demand
without the GIL; ``to_arrays`` / ``from_arrays`` convert it for saving.
"""

import numpy as np

from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner
from ssvm_core._vector cimport dot_gather


cdef int _grow(void** ptr, intp_t n_items, size_t item_size) except -1 nogil:
    cdef void* new = realloc(ptr[0], (n_items if n_items > 0 else 1) * item_size)
    if new == NULL:
        with gil:
            raise MemoryError("cannot grow the active-set store")
    ptr[0] = new
    return 0


cdef int _reserve(BlockAtoms* blk, intp_t atoms, intp_t labels, intp_t nnz) except -1 nogil:
    """Room for ``atoms`` atoms, ``labels`` labels and ``nnz`` psi entries in total."""
    cdef intp_t cap
    if atoms > blk.cap:
        cap = max(atoms, 2 * blk.cap, 4)
        _grow(<void**> &blk.alpha, cap, sizeof(float64_t))
        _grow(<void**> &blk.loss, cap, sizeof(float64_t))
        _grow(<void**> &blk.score, cap, sizeof(float64_t))
        _grow(<void**> &blk.last_used, cap, sizeof(intp_t))
        _grow(<void**> &blk.lab_off, cap + 1, sizeof(intp_t))
        _grow(<void**> &blk.psi_off, cap + 1, sizeof(intp_t))
        blk.cap = cap
    if labels > blk.lab_cap:
        cap = max(labels, 2 * blk.lab_cap)
        _grow(<void**> &blk.labels, cap, sizeof(int32_t))
        blk.lab_cap = cap
    if nnz > blk.psi_cap:
        cap = max(nnz, 2 * blk.psi_cap)
        _grow(<void**> &blk.psi_idx, cap, sizeof(int32_t))
        _grow(&blk.psi_val, cap, sizeof(float) if blk.single else sizeof(float64_t))
        blk.psi_cap = cap
    return 0


cdef float64_t atom_dot(const BlockAtoms* blk, intp_t k, const float64_t* w) noexcept nogil:
    """<psi_k, w> (``_vector.dot_gather``: four partial sums, not one chain of adds)."""
    cdef intp_t p0 = blk.psi_off[k], nnz = blk.psi_off[k + 1] - p0
    if blk.single:
        return dot_gather(w, blk.psi_idx + p0, (<const float*> blk.psi_val) + p0, nnz)
    return dot_gather(w, blk.psi_idx + p0, (<const float64_t*> blk.psi_val) + p0, nnz)


cdef void atom_scatter(const BlockAtoms* blk, intp_t k, float64_t coef,
                       float64_t* s) noexcept nogil:
    """s += coef * psi_k."""
    cdef intp_t p
    cdef const float* v32 = <const float*> blk.psi_val
    cdef const float64_t* v64 = <const float64_t*> blk.psi_val
    if blk.single:
        for p in range(blk.psi_off[k], blk.psi_off[k + 1]):
            s[blk.psi_idx[p]] += coef * v32[p]
    else:
        for p in range(blk.psi_off[k], blk.psi_off[k + 1]):
            s[blk.psi_idx[p]] += coef * v64[p]


cdef void atom_clear(const BlockAtoms* blk, intp_t k, float64_t* s) noexcept nogil:
    """s = 0 on the support of psi_k."""
    cdef intp_t p
    for p in range(blk.psi_off[k], blk.psi_off[k + 1]):
        s[blk.psi_idx[p]] = 0.0


cdef inline void _set_psi(BlockAtoms* blk, intp_t p, float64_t value) noexcept nogil:
    if blk.single:
        (<float*> blk.psi_val)[p] = <float> value
    else:
        (<float64_t*> blk.psi_val)[p] = value


cdef bint _is_ground_truth(const Corner* c) noexcept nogil:
    """psi = 0 and loss 0: the corner of the ground truth (or one equal to it)."""
    cdef intp_t k
    if c.loss != 0.0:
        return False
    for k in range(c.psi_nnz):
        if c.psi_val[k] != 0.0:
            return False
    return True


cdef class ActiveSets:
    """Atoms of every block: labelling, sparse psi_i(y), L_i(y) and alpha_i(y).

    Parameters
    ----------
    n_blocks : int
        Number of blocks.
    cache_size : int
        Atoms a block keeps before inactive ones (alpha = 0) are evicted,
        least recently used first.  Active atoms are never evicted: the block
        grows instead.
    compact : bool, default=False
        Keep each atom's psi in its block's coordinates (the corner's
        ``coord_*`` buffers) instead of features: for states with compact
        blocks.
    single : bool
        Store psi values as float32 (labellings, losses and alpha stay exact):
        about a third less memory for the atoms; each stored psi is rounded
        to single precision, so the solver works with those rounded corners.

    Notes
    -----
    Atom 0 of every block is the ground truth y_i (psi = 0, loss 0); a new
    block holds only it, with alpha = 1 (the initial dual point w = 0).
    """

    def __cinit__(self, intp_t n_blocks, intp_t cache_size=50, bint single=False,
                  bint compact=False):
        if n_blocks < 1:
            raise ValueError(f"n_blocks must be >= 1, got {n_blocks}")
        if cache_size < 2:
            raise ValueError(f"cache_size must be >= 2, got {cache_size}")
        self.n_blocks = n_blocks
        self.cache_size = cache_size
        self.single = single
        self.compact = compact
        self.blocks = <BlockAtoms*> malloc(n_blocks * sizeof(BlockAtoms))
        if self.blocks == NULL:
            raise MemoryError()
        cdef intp_t i
        cdef BlockAtoms* blk
        for i in range(n_blocks):
            blk = &self.blocks[i]
            blk.n = 0
            blk.cap = blk.lab_cap = blk.psi_cap = 0
            blk.alpha = blk.loss = blk.score = NULL
            blk.psi_val = NULL
            blk.single = single
            blk.last_used = blk.lab_off = blk.psi_off = NULL
            blk.labels = blk.psi_idx = NULL
        for i in range(n_blocks):
            blk = &self.blocks[i]
            _reserve(blk, 2, 0, 0)
            blk.n = 1
            blk.alpha[0] = 1.0
            blk.loss[0] = 0.0
            blk.score[0] = 0.0
            blk.last_used[0] = 0
            blk.lab_off[0] = blk.lab_off[1] = 0
            blk.psi_off[0] = blk.psi_off[1] = 0

    def __dealloc__(self):
        cdef intp_t i
        cdef BlockAtoms* blk
        if self.blocks == NULL:
            return
        for i in range(self.n_blocks):
            blk = &self.blocks[i]
            free(blk.alpha)
            free(blk.loss)
            free(blk.score)
            free(blk.last_used)
            free(blk.lab_off)
            free(blk.labels)
            free(blk.psi_off)
            free(blk.psi_idx)
            free(blk.psi_val)
        free(self.blocks)

    cdef intp_t _find(self, intp_t i, const Corner* c) noexcept nogil:
        """Index of the atom with the corner's labelling, or -1."""
        cdef const BlockAtoms* blk = &self.blocks[i]
        cdef intp_t k, t, start
        if c.n_labels < 0 or _is_ground_truth(c):
            return 0
        for k in range(1, blk.n):
            start = blk.lab_off[k]
            if blk.lab_off[k + 1] - start != c.n_labels:
                continue
            for t in range(c.n_labels):
                if blk.labels[start + t] != c.labels[t]:
                    break
            else:
                return k
        return -1

    cdef intp_t _add(self, intp_t i, const Corner* c, Entries x,
                     intp_t step) except -1 nogil:
        """Index of the corner's atom (its labelling ``c.labels``), stored (alpha = 0,
        psi the entries ``x`` of the corner in the block's frame) if new.

        At ``cache_size`` atoms, the least recently used inactive atom (not
        the ground truth) is evicted first; if every atom is active the block
        grows instead.
        """
        cdef BlockAtoms* blk = &self.blocks[i]
        cdef intp_t k = self._find(i, c), t, p, nnz, victim
        if k >= 0:
            blk.last_used[k] = step
            return k
        if blk.n >= self.cache_size:
            victim = -1
            for t in range(1, blk.n):
                if blk.alpha[t] == 0.0 and (victim < 0
                                            or blk.last_used[t] < blk.last_used[victim]):
                    victim = t
            if victim > 0:
                self._remove(i, victim)
        if x.idx != NULL:
            nnz = x.nnz
        else:                                 # dense values: their nonzeros are stored
            nnz = 0
            for t in range(x.nnz):
                nnz += x.val[t] != 0.0
        k = blk.n
        _reserve(blk, k + 1, blk.lab_off[k] + c.n_labels, blk.psi_off[k] + nnz)
        memcpy(blk.labels + blk.lab_off[k], c.labels, c.n_labels * sizeof(int32_t))
        blk.lab_off[k + 1] = blk.lab_off[k] + c.n_labels
        p = blk.psi_off[k]
        if x.idx != NULL:
            memcpy(blk.psi_idx + p, x.idx, nnz * sizeof(int32_t))
            for t in range(nnz):
                _set_psi(blk, p + t, x.val[t])
        else:
            for t in range(x.nnz):
                if x.val[t] != 0.0:
                    blk.psi_idx[p] = <int32_t> t
                    _set_psi(blk, p, x.val[t])
                    p += 1
        blk.psi_off[k + 1] = blk.psi_off[k] + nnz
        blk.alpha[k] = 0.0
        blk.loss[k] = c.loss
        blk.score[k] = c.score
        blk.last_used[k] = step
        blk.n = k + 1
        return k

    cdef int _remove(self, intp_t i, intp_t k) except -1 nogil:
        """Delete atom k >= 1 (its alpha must be zero), keeping the order of the rest."""
        cdef BlockAtoms* blk = &self.blocks[i]
        cdef intp_t t, nl, np_, tail_l, tail_p
        if k < 1 or k >= blk.n:
            with gil:
                raise IndexError(f"cannot remove atom {k} of block {i} ({blk.n} atoms)")
        nl = blk.lab_off[k + 1] - blk.lab_off[k]
        np_ = blk.psi_off[k + 1] - blk.psi_off[k]
        tail_l = blk.lab_off[blk.n] - blk.lab_off[k + 1]
        tail_p = blk.psi_off[blk.n] - blk.psi_off[k + 1]
        memmove(blk.labels + blk.lab_off[k], blk.labels + blk.lab_off[k + 1],
                tail_l * sizeof(int32_t))
        memmove(blk.psi_idx + blk.psi_off[k], blk.psi_idx + blk.psi_off[k + 1],
                tail_p * sizeof(int32_t))
        cdef size_t width = sizeof(float) if blk.single else sizeof(float64_t)
        memmove(<char*> blk.psi_val + blk.psi_off[k] * width,
                <char*> blk.psi_val + blk.psi_off[k + 1] * width, tail_p * width)
        for t in range(k, blk.n - 1):
            blk.alpha[t] = blk.alpha[t + 1]
            blk.loss[t] = blk.loss[t + 1]
            blk.score[t] = blk.score[t + 1]
            blk.last_used[t] = blk.last_used[t + 1]
            blk.lab_off[t + 1] = blk.lab_off[t + 2] - nl
            blk.psi_off[t + 1] = blk.psi_off[t + 2] - np_
        blk.n -= 1
        return 0

    # ----------------------------------------------------------------- Python

    def _check(self, i):
        if not 0 <= i < self.n_blocks:
            raise IndexError(f"block {i} outside [0, {self.n_blocks})")
        return i

    def n_atoms(self, intp_t i) -> int:
        """Atoms stored for block i (the cache C_i, ground truth included)."""
        return self.blocks[self._check(i)].n

    def alphas(self, intp_t i):
        """alpha_i over the stored atoms (a copy)."""
        cdef BlockAtoms* blk = &self.blocks[self._check(i)]
        return np.array(<float64_t[:blk.n]> blk.alpha)

    def losses(self, intp_t i):
        cdef BlockAtoms* blk = &self.blocks[self._check(i)]
        return np.array(<float64_t[:blk.n]> blk.loss)

    def labellings(self, intp_t i) -> list:
        """The stored labellings; ``None`` for atom 0, the ground truth."""
        cdef BlockAtoms* blk = &self.blocks[self._check(i)]
        cdef intp_t k
        out = [None]
        for k in range(1, blk.n):
            n = blk.lab_off[k + 1] - blk.lab_off[k]
            out.append(np.array(<int32_t[:n]> (blk.labels + blk.lab_off[k])) if n
                       else np.zeros(0, np.int32))
        return out

    def psi_matrix(self, intp_t i, intp_t n_features):
        """Dense (n_atoms, n_features) matrix of the atoms' psi_i(y) (with ``compact``,
        of their block coordinates: pass the block's size as ``n_features``)."""
        cdef BlockAtoms* blk = &self.blocks[self._check(i)]
        cdef intp_t k, p
        out = np.zeros((blk.n, n_features))
        cdef float64_t[:, ::1] o = out
        for k in range(blk.n):
            for p in range(blk.psi_off[k], blk.psi_off[k + 1]):
                o[k, blk.psi_idx[p]] += psi_at(blk, p)
        return out

    def total_atoms(self) -> int:
        cdef intp_t i, total = 0
        for i in range(self.n_blocks):
            total += self.blocks[i].n
        return total

    def to_arrays(self) -> dict:
        """Flat arrays holding every atom (see ``from_arrays``)."""
        cdef intp_t i, k, a = 0
        cdef BlockAtoms* blk
        n_atoms = np.array([self.blocks[i].n for i in range(self.n_blocks)], dtype=np.intp)
        atom_ptr = np.concatenate([[0], np.cumsum(n_atoms)]).astype(np.intp)
        total = int(atom_ptr[-1])
        lab_len = np.zeros(total, dtype=np.intp)
        psi_len = np.zeros(total, dtype=np.intp)
        alpha = np.zeros(total)
        loss = np.zeros(total)
        last = np.zeros(total, dtype=np.intp)
        labels, idx, val = [], [], []
        for i in range(self.n_blocks):
            blk = &self.blocks[i]
            for k in range(blk.n):
                lab_len[a] = blk.lab_off[k + 1] - blk.lab_off[k]
                psi_len[a] = blk.psi_off[k + 1] - blk.psi_off[k]
                alpha[a], loss[a], last[a] = blk.alpha[k], blk.loss[k], blk.last_used[k]
                if lab_len[a]:
                    labels.append(np.array(<int32_t[:lab_len[a]]> (blk.labels + blk.lab_off[k])))
                if psi_len[a]:
                    idx.append(np.array(<int32_t[:psi_len[a]]> (blk.psi_idx + blk.psi_off[k])))
                    if blk.single:
                        val.append(np.array(<float[:psi_len[a]]> (
                            <float*> blk.psi_val + blk.psi_off[k])))
                    else:
                        val.append(np.array(<float64_t[:psi_len[a]]> (
                            <float64_t*> blk.psi_val + blk.psi_off[k])))
                a += 1

        def cat_i(parts):
            return (np.concatenate(parts).astype(np.int32) if parts
                    else np.zeros(0, np.int32))

        return {"atom_ptr": atom_ptr, "atom_lab_len": lab_len, "atom_psi_len": psi_len,
                "atom_alpha": alpha, "atom_loss": loss, "atom_last_used": last,
                "atom_labels": cat_i(labels), "atom_psi_idx": cat_i(idx),
                "atom_psi_val": (np.concatenate(val) if val else np.zeros(0)).astype(
                    np.float32 if self.single else np.float64),
                "atom_cache_size": np.array(self.cache_size),
                "atom_compact": np.array(self.compact)}

    @staticmethod
    def from_arrays(arrays: dict) -> ActiveSets:
        """Rebuild the store written by ``to_arrays`` (checked for consistency)."""
        ptr = np.asarray(arrays["atom_ptr"], dtype=np.intp)
        lab_len = np.asarray(arrays["atom_lab_len"], dtype=np.intp)
        psi_len = np.asarray(arrays["atom_psi_len"], dtype=np.intp)
        alpha = np.asarray(arrays["atom_alpha"], dtype=np.float64)
        loss = np.asarray(arrays["atom_loss"], dtype=np.float64)
        last = np.asarray(arrays["atom_last_used"], dtype=np.intp)
        labels = np.ascontiguousarray(arrays["atom_labels"], dtype=np.int32)
        idx = np.ascontiguousarray(arrays["atom_psi_idx"], dtype=np.int32)
        single = np.asarray(arrays["atom_psi_val"]).dtype == np.float32
        val = np.ascontiguousarray(arrays["atom_psi_val"], dtype=np.float64)
        total = int(ptr[-1]) if ptr.size else 0
        if (ptr.ndim != 1 or ptr.size < 2 or ptr[0] != 0 or np.any(np.diff(ptr) < 1)
                or any(a.shape != (total,) for a in (lab_len, psi_len, alpha, loss, last))
                or labels.shape != (int(lab_len.sum()),)
                or idx.shape != (int(psi_len.sum()),) or val.shape != idx.shape
                or np.any(lab_len[ptr[:-1]] != 0) or np.any(psi_len[ptr[:-1]] != 0)):
            raise ValueError("inconsistent active-set arrays")
        if not (np.all(np.isfinite(alpha)) and np.all(alpha >= 0)
                and np.all(np.isfinite(val)) and np.all(loss >= 0)):
            raise ValueError("active-set arrays hold negative or non-finite values")
        compact = bool(arrays.get("atom_compact", False))
        cdef ActiveSets sets = ActiveSets(ptr.size - 1, int(arrays["atom_cache_size"]), single,
                                          compact)
        cdef intp_t i, k, a, lo = 0, po = 0, nl, nnz
        cdef BlockAtoms* blk
        cdef int32_t[::1] lv = labels if labels.size else np.zeros(1, np.int32)
        cdef int32_t[::1] iv = idx if idx.size else np.zeros(1, np.int32)
        cdef float64_t[::1] vv = val if val.size else np.zeros(1)
        for i in range(sets.n_blocks):
            blk = &sets.blocks[i]
            a = ptr[i]
            nl = int(lab_len[a:ptr[i + 1]].sum())
            nnz = int(psi_len[a:ptr[i + 1]].sum())
            _reserve(blk, ptr[i + 1] - a, nl, nnz)
            blk.n = ptr[i + 1] - a
            for k in range(blk.n):
                blk.alpha[k], blk.loss[k] = alpha[a + k], loss[a + k]
                blk.last_used[k], blk.score[k] = last[a + k], 0.0
                blk.lab_off[k + 1] = blk.lab_off[k] + lab_len[a + k]
                blk.psi_off[k + 1] = blk.psi_off[k] + psi_len[a + k]
            if nl:
                memcpy(blk.labels, &lv[lo], nl * sizeof(int32_t))
            if nnz:
                memcpy(blk.psi_idx, &iv[po], nnz * sizeof(int32_t))
                for k in range(nnz):
                    _set_psi(blk, k, vv[po + k])
            lo += nl
            po += nnz
        return sets

    def shrink(self, double rho) -> None:
        """alpha_i(y) <- rho alpha_i(y) off the ground truth, and the ground truth
        takes the rest (Osokin et al. (2016), Prop. 1); 0 <= rho <= 1."""
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"rho must be in [0, 1], got {rho}")
        cdef intp_t i, k
        cdef BlockAtoms* blk
        cdef double rest
        for i in range(self.n_blocks):
            blk = &self.blocks[i]
            rest = 1.0
            for k in range(1, blk.n):
                blk.alpha[k] *= rho
                rest -= blk.alpha[k]
            blk.alpha[0] = max(rest, 0.0)

    def copy(self) -> ActiveSets:
        return ActiveSets.from_arrays(self.to_arrays())

    def __reduce__(self):
        return (ActiveSets.from_arrays, (self.to_arrays(),))

"""Pipelined BCFW in compiled code, for cheap compiled oracles on compact blocks.

``ssvm_core.pipeline.Pipeline`` defines the semantics: the blocks of a pass are
drawn as serial BCFW draws them, the oracle call for step j is made at the
iterate after step j - L of the pass (at its start for j <= L), and the master
applies the answers in draw order, each with the exact line search at the
current iterate, an answer below the ground truth there replaced by the truth
(as ``_batch.AnswerOracle`` does).  Its per-call Python dispatch costs more than
a call of a few microseconds; this module runs the same pass in C, with no
Python object per step:

- the caller's thread (the master) makes the steps; one helper thread makes the
  calls (``n_threads=2``), or the master makes each call itself when it is due
  (``n_threads=1``, the same iterates bit for bit);
- the helper keeps its own copy of w and brings it to "w after step j - L"
  before it calls block j by adding the changes the master published for those
  steps, in order (``coord_add`` on the block coordinates, the master's own
  arithmetic for v): the master never writes what the helper reads, and the
  answers do not depend on timing.  The copy ends a whole pass equal to w and
  is kept for the next pass unless something else moved the state (a new copy
  of w would cost 62 MB of writes a pass on CoNLL);
- the master also makes a share of the calls, each when it is due (at the
  current w, with no copy), never a block still in flight on the helper; the
  share is balanced after every pass from the two threads' measured work and
  never changes the iterates;
- the two threads hand over through single-producer/single-consumer rings of
  L + 2 slots (answers one way, block changes the other), with atomic
  counters; a wait spins, then yields the core, then sleeps on a condition
  variable that the publisher signals only when the peer sleeps.  The helper
  is at most L + 1 calls ahead of the steps, and the master reuses a change
  slot only once the helper has added the change it held.

Per step the master reads the answer's block coordinates q (the helper's call
does not form theta = A_i^T w: the master never needs all of it), takes the
re-scored answer's <A_i q, w> and the direction's <A_i e, w> at the current w
(``coord_dot``: a chain reads them from w without forming A_i q) and the step
size from ``coord_sqnorm``, and moves the block, v and the weighted average
(``BlockStore.move``); the block's change is what the helper adds to its copy.
The iterates equal ``Pipeline``'s with the same L up to rounding.
"""

import threading

import numpy as np

from libc.string cimport memcpy

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, CornerBuffer, MaxOracle
from ssvm_core._blocks cimport Ledger, Primal, below_ground_truth, step_size
from ssvm_core._sampling cimport Sampler, init_sampler, prefetch_steps
from ssvm_core._storage cimport BlockStore, CompactStore, Direction
from ssvm_core._view cimport StateView
from ssvm_core._pthread cimport (
    pthread_cond_destroy,
    pthread_cond_init,
    pthread_cond_signal,
    pthread_cond_t,
    pthread_cond_wait,
    pthread_mutex_destroy,
    pthread_mutex_init,
    pthread_mutex_lock,
    pthread_mutex_t,
    pthread_mutex_unlock,
)

from ssvm_core.step_counts import StepCounts
from ssvm_core.validation import check_order


cdef extern from *:
    """
    #include <sched.h>
    #include <time.h>
    /* The counters of the hand-offs (GCC and Clang builtins). */
    static inline Py_ssize_t ssvm_load_acquire(const Py_ssize_t* p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    /* Sequentially consistent ones, for the sleeping flags of ``_Gate``. */
    static inline Py_ssize_t ssvm_load_seq(const Py_ssize_t* p) {
        return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    }
    static inline void ssvm_store_seq(Py_ssize_t* p, Py_ssize_t v) {
        __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
    }
    static inline void ssvm_spin_pause(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    /* CPU seconds of the calling thread. */
    static inline double ssvm_thread_cpu(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
    }
    """
    intp_t ssvm_load_acquire(const intp_t* p) noexcept nogil
    intp_t ssvm_load_seq(const intp_t* p) noexcept nogil
    void ssvm_store_seq(intp_t* p, intp_t v) noexcept nogil
    void ssvm_spin_pause() noexcept nogil
    double ssvm_thread_cpu() noexcept nogil
    int sched_yield() noexcept nogil


cdef enum:
    SPINS = 4000            # busy polls (tens of us) before a wait yields the core
    YIELDS = 20             # yields before it sleeps
    STOP_EVERY = 64         # steps between two questions to ``should_stop``
    SHARE_ONE = 1024        # the master's share of the calls is share / SHARE_ONE
    # the counters, each on its own cache line (intp_t offsets)
    CALLS = 0               # calls made (helper -> master)
    STEPS = 8               # steps made (master -> helper)
    ABORT = 16              # the master ends the pass early
    FAILED = 24             # the helper's call raised
    APPLIED = 32            # changes the helper added to its copy of w
    N_COUNTERS = 40


cdef struct _Gate:
    # Where one thread sleeps when a wait outlasts its spinning and yielding (a
    # loaded machine: a yield can then cost a time slice).  ``sleeping`` is set
    # and read sequentially consistently against the counters, so a publisher
    # either is seen by the sleeper's last check or sees it sleeping and signals.
    pthread_mutex_t lock
    pthread_cond_t cond
    intp_t sleeping


cdef inline void _publish(intp_t* counter, intp_t value, _Gate* peer) noexcept nogil:
    """Store ``value`` in ``counter`` and wake the thread that waits for it, if asleep."""
    ssvm_store_seq(counter, value)
    if ssvm_load_seq(&peer.sleeping):
        pthread_mutex_lock(&peer.lock)
        pthread_cond_signal(&peer.cond)
        pthread_mutex_unlock(&peer.lock)


cdef inline bint _wait(const intp_t* counter, intp_t target, const intp_t* cancel,
                       double* idle, _Gate* gate) noexcept nogil:
    """Wait until ``counter`` reaches ``target`` (True) or ``cancel`` is set (False):
    SPINS polls, then YIELDS yields of the core, then asleep on ``gate``.

    A wait that does not succeed at once adds the CPU seconds it spins to ``idle``
    (read in the idle time itself, so the accounting costs no work time).
    """
    cdef intp_t polls = 0
    cdef double start
    if ssvm_load_acquire(counter) >= target:
        return True
    start = ssvm_thread_cpu()
    while ssvm_load_acquire(counter) < target and not ssvm_load_acquire(cancel):
        polls += 1
        if polls < SPINS:
            ssvm_spin_pause()
        elif polls < SPINS + YIELDS:
            sched_yield()
        else:
            pthread_mutex_lock(&gate.lock)
            ssvm_store_seq(&gate.sleeping, 1)
            while ssvm_load_seq(counter) < target and not ssvm_load_seq(cancel):
                pthread_cond_wait(&gate.cond, &gate.lock)
            ssvm_store_seq(&gate.sleeping, 0)
            pthread_mutex_unlock(&gate.lock)
    idle[0] += ssvm_thread_cpu() - start
    return ssvm_load_acquire(counter) >= target


def compiled_problem(MaxOracle oracle, state, intp_t n_threads):
    """Why ``CompiledPipeline`` does not run ``oracle`` on ``state`` (None: it does).

    The compiled pass covers plain FW steps with the exact line search on compact
    blocks (``CompactStore``) without a box, for compiled oracles, on 1 or 2 threads;
    ``Pipeline`` runs the other cases in Python and states this reason.
    """
    if oracle.needs_gil:
        return "a Python oracle (its calls need the GIL)"
    if state.atoms is not None:
        return ("active sets (step other than 'fw', cache, n_samples > 1): their steps "
                "run in Python")
    if state.has_box:
        return "a box: the exact step is a search over clipped features"
    if not isinstance(state.blocks, CompactStore):
        return (f"{state.block_storage} blocks: the compiled pass hands over changes of "
                "compact blocks")
    if n_threads > 2:
        return f"{n_threads} threads: the compiled pass runs one helper thread"
    return None


cdef class CompiledPipeline:
    """Passes of pipelined BCFW with lag ``lag`` in C (see the module's docstring).

    Parameters
    ----------
    oracle : MaxOracle
        A compiled oracle with compact blocks.
    state : SolverState
        Compact blocks, no box, no active sets (``compiled_problem``); moved in place.
    lag : int
        L >= 0: the call for step j is made at the iterate after step j - L.
    n_threads : {1, 2}
        2: a helper thread makes the calls, the master a share of them when they
        are due; 1: the master makes them all.  The iterates do not depend on it.
    master_share : float in [0, 1], optional
        With 2 threads, the share of the calls the master makes (evenly spread),
        fixed; None (the default) starts at 1/8 and balances the two threads'
        measured work after every pass.  It never changes the iterates.

    Attributes
    ----------
    cpu_seconds : tuple of float
        CPU seconds of the master and of the helper thread in the last pass
        (the helper's is 0 on one thread).
    idle_seconds : tuple of float
        The part of ``cpu_seconds`` each thread spent waiting for the other.
    master_share : float
        The master's share of the next pass's calls.
    """
    cdef MaxOracle oracle
    cdef object state
    cdef readonly intp_t lag, n_threads
    cdef intp_t R, mq, mc, n
    cdef intp_t share              # the master's share of the calls, in SHARE_ONE-ths
    cdef bint adapt                 # rebalance the share after every whole pass
    # the helper's copy of w equals the state's w after a whole pass (synced), and
    # is then kept for the next pass if nothing else moved the state in between
    cdef bint synced, copy_fresh
    cdef object synced_key
    cdef object _arrays
    # answers (helper -> master), slot j % R: q of the call's labelling, its loss,
    # whether it scored below the ground truth at the call's w
    cdef int32_t* a_idx
    cdef float64_t* a_val
    cdef intp_t* a_nnz
    cdef float64_t* a_loss
    cdef intp_t* a_ground
    # changes of w (master -> helper), slot j % R: step j's change of its block's
    # coordinates (A_i times it is the change of w)
    cdef int32_t* c_idx
    cdef float64_t* c_val
    cdef intp_t* c_nnz
    cdef intp_t* c_block
    cdef intp_t* counters
    cdef _Gate gates[2]             # the master's and the helper's
    cdef float64_t* wcopy           # the helper's w
    cdef Corner corners[2]          # the corners of the calls: master's, helper's
    cdef object _corner_buffers
    cdef const intp_t* order
    cdef const float64_t* w_start
    cdef intp_t replaced            # steps on answers below the truth at their call
    cdef intp_t master_made         # calls the master made
    cdef intp_t booked_steps, booked  # steps and replaced answers booked into the state
    cdef double master_cpu, helper_cpu, master_idle, helper_idle
    cdef object error, should_stop

    def __cinit__(self, MaxOracle oracle, state, intp_t lag, intp_t n_threads,
                  master_share=None):
        cdef intp_t k
        for k in range(2):                      # first: __dealloc__ destroys them
            pthread_mutex_init(&self.gates[k].lock, NULL)
            pthread_cond_init(&self.gates[k].cond, NULL)
            self.gates[k].sleeping = 0
        reason = compiled_problem(oracle, state, n_threads)
        if reason is not None:
            raise ValueError(f"the compiled pipeline does not run this problem: {reason}")
        if lag < 0 or n_threads < 1:
            raise ValueError(f"lag must be >= 0 and n_threads >= 1, got {lag}, {n_threads}")
        self.oracle, self.state, self.lag, self.n_threads = oracle, state, lag, n_threads
        self.R = lag + 2
        self.mq = max(oracle.max_coord_nnz, 1)
        self.mc = max(oracle.max_coords, 1)
        a_idx = np.zeros(self.R * self.mq, dtype=np.int32)
        a_val = np.zeros(self.R * self.mq)
        c_idx = np.zeros(self.R * self.mc, dtype=np.int32)
        c_val = np.zeros(self.R * self.mc)
        ints = np.zeros(4 * self.R + N_COUNTERS + 8, dtype=np.intp)
        wcopy = np.zeros(max(oracle.n_features, 1))
        a_loss = np.zeros(self.R)
        self._arrays = (a_idx, a_val, c_idx, c_val, ints, wcopy, a_loss)
        cdef int32_t[::1] ai = a_idx, ci = c_idx
        cdef float64_t[::1] av = a_val, cv = c_val, wv = wcopy, lv = a_loss
        cdef intp_t[::1] iv = ints
        self.a_idx, self.a_val, self.c_idx, self.c_val = &ai[0], &av[0], &ci[0], &cv[0]
        self.a_nnz, self.a_loss = &iv[0], &lv[0]
        self.a_ground, self.c_nnz, self.c_block = &iv[self.R], &iv[2 * self.R], &iv[3 * self.R]
        # the counters start on a cache line of their own
        self.counters = &iv[4 * self.R + 8 - <intp_t> ((<size_t> &iv[4 * self.R]) % 64) // 8]
        self.wcopy = &wv[0]
        self._corner_buffers = [CornerBuffer(oracle, True, False) for _ in range(2)]
        for k in range(2):
            self.corners[k] = (<CornerBuffer> self._corner_buffers[k]).corner
            self.corners[k].theta = NULL        # the master re-scores at its own w
        self.master_cpu = self.helper_cpu = self.master_idle = self.helper_idle = 0.0
        self.error, self.synced, self.synced_key = None, False, None
        self.adapt = n_threads > 1 and master_share is None
        if n_threads == 1:
            self.share = SHARE_ONE
        elif master_share is None:
            self.share = SHARE_ONE // 8
        elif not 0.0 <= master_share <= 1.0:
            raise ValueError(f"master_share must be in [0, 1], got {master_share!r}")
        else:
            self.share = int(SHARE_ONE * master_share + 0.5)

    def __dealloc__(self):
        cdef intp_t k
        for k in range(2):
            pthread_mutex_destroy(&self.gates[k].lock)
            pthread_cond_destroy(&self.gates[k].cond)

    @property
    def cpu_seconds(self) -> tuple:
        return (self.master_cpu, self.helper_cpu)

    @property
    def master_share(self) -> float:
        return self.share / <double> SHARE_ONE

    @property
    def idle_seconds(self) -> tuple:
        return (self.master_idle, self.helper_idle)

    cdef int _call(self, intp_t m, const float64_t* w, intp_t thread) except -1 nogil:
        """The call of step m at w, into answer slot m % R, by ``thread`` (0: the
        master, 1: the helper)."""
        cdef intp_t slot = m % self.R
        cdef Corner* c = &self.corners[thread]
        c.coord_idx = self.a_idx + slot * self.mq
        c.coord_val = self.a_val + slot * self.mq
        self.oracle.solve(self.order[m], w, c)
        self.a_nnz[slot] = c.coord_nnz
        self.a_loss[slot] = c.loss
        self.a_ground[slot] = below_ground_truth(c)
        return 0

    cdef bint _master_calls(self, intp_t m) noexcept nogil:
        """Whether the master makes call m: a share of ``share`` / SHARE_ONE of the
        calls, spread evenly (all of them on one thread), but never the call of a
        block among the calls m - L .. m - 1, which may still be running on the
        helper when call m is due: no two calls of one block overlap, and each
        block's calls are made in draw order (an oracle may keep per-block state).
        The rule reads only the draw order, never the timing."""
        cdef intp_t k
        if self.share >= SHARE_ONE:
            return True
        if (m + 1) * self.share // SHARE_ONE == m * self.share // SHARE_ONE:
            return False
        for k in range(max(m - self.lag, 0), m):
            if self.order[k] == self.order[m]:
                return False
        return True

    cdef int _helper_calls(self) except -1 nogil:
        """The helper: every call of the pass, each after bringing its copy of w to
        the iterate after step m - L; returns early when the master aborts."""
        cdef intp_t m, applied = 0
        if self.copy_fresh:
            memcpy(self.wcopy, self.w_start, self.oracle.n_features * sizeof(float64_t))
        for m in range(self.n):
            while applied < m - self.lag:
                if not self._apply(applied):
                    return 0
                applied += 1
            if ssvm_load_acquire(&self.counters[ABORT]):
                return 0
            if not self._master_calls(m):
                if m + 1 < self.n:
                    self.oracle.prefetch(self.order[m + 1])
                self._call(m, self.wcopy, 1)
            _publish(&self.counters[CALLS], m + 1, &self.gates[0])   # made, or the master's
        while applied < self.n:                 # the copy ends the pass equal to w
            if not self._apply(applied):
                return 0
            applied += 1
        self.synced = True
        return 0

    cdef bint _apply(self, intp_t k) noexcept nogil:
        """Add step k's change to the helper's copy of w once the master has published
        it (False: the master aborted the pass)."""
        cdef intp_t slot = k % self.R
        if not _wait(&self.counters[STEPS], k + 1, &self.counters[ABORT], &self.helper_idle,
                     &self.gates[1]):
            return False
        # the master's ``move`` of v, bit for bit (coord_add is exact code, no error)
        self.oracle.coord_add(self.c_block[slot], self.c_idx + slot * self.mc,
                              self.c_val + slot * self.mc, self.c_nnz[slot], self.wcopy,
                              NULL, 0.0)
        _publish(&self.counters[APPLIED], k + 1, &self.gates[0])
        return True

    def _serve(self):
        """The helper thread's body: its calls, an error kept for the master."""
        cdef double cpu = ssvm_thread_cpu()
        try:
            with nogil:
                self._helper_calls()
        except BaseException as exc:            # re-raised in the master's thread
            self.error = exc
            _publish(&self.counters[FAILED], 1, &self.gates[0])
        finally:
            self.helper_cpu = ssvm_thread_cpu() - cpu

    cdef int _step(self, intp_t j, BlockStore st, Ledger* b, Primal* p, float64_t* s,
                   Direction* e, float64_t lam, float64_t* ell, float64_t* ell_avg,
                   intp_t* n_steps) except -1 nogil:
        """Step j on its answer (slot j % R) at the current iterate, the change of w
        published in change slot j % R."""
        cdef intp_t slot = j % self.R, i = self.order[j], n = self.n_blocks(), it
        cdef float64_t scale = 1.0 / (lam * n), loss, ell_s, gap, gamma, dot
        cdef const float64_t* vs
        cdef Corner c                           # the answer as ``frame`` reads it
        c.labels, c.psi_idx, c.psi_val, c.theta = NULL, NULL, NULL, NULL
        c.n_labels, c.psi_nnz, c.coords_only = 0, 0, True
        c.coord_idx = self.a_idx + slot * self.mq
        c.coord_val = self.a_val + slot * self.mq
        c.coord_nnz = self.a_nnz[slot]
        c.loss = loss = self.a_loss[slot]
        if self.a_ground[slot]:
            self.replaced += 1
            c.coord_nnz, c.loss, c.score = 0, 0.0, 0.0
        else:
            # re-scored at the current w, as AnswerOracle does: H = L - <A_i q, w>
            c.score = loss - self.oracle.coord_dot(i, c.coord_idx, c.coord_val,
                                                   c.coord_nnz, p.w, e.ex_idx, e.ex_val)
            if below_ground_truth(&c):
                c.coord_nnz, c.loss, c.score = 0, 0.0, 0.0
        vs = st.frame(&c, i, s)
        st.stats(self.oracle, i, 1.0, vs, -scale, p.w, NULL, e)   # e = b_i - scale q
        dot = self.oracle.coord_dot(i, e.idx, e.val, e.nnz, p.w, e.ex_idx, e.ex_val)
        ell_s = c.loss / n
        gap = lam * dot - b.ell[i] + ell_s
        b.gap_estimates[i] = gap
        gamma = step_size(gap, lam * e.sqnorm)
        it = n_steps[0] + 1                     # this step creates iterate it
        st.move(self.oracle, e, -gamma, p, 0.5 * (it - 1) * it)   # e.val: the change
        memcpy(self.c_idx + slot * self.mc, e.idx, e.nnz * sizeof(int32_t))
        memcpy(self.c_val + slot * self.mc, e.val, e.nnz * sizeof(float64_t))
        self.c_nnz[slot] = e.nnz
        self.c_block[slot] = i
        gap = gamma * (ell_s - b.ell[i])        # the step of ell
        b.ell[i] += gap
        ell[0] += gap
        ell_avg[0] = ((it - 1.0) * ell_avg[0] + 2.0 * ell[0]) / (it + 1.0)
        n_steps[0] = it
        st.clear_frame(&c, s)
        return 0

    cdef intp_t n_blocks(self) noexcept nogil:
        return self.oracle.n_blocks

    cdef int _steps(self, StateView view, float64_t* s, float64_t lam, float64_t* ell,
                    float64_t* ell_avg, intp_t* n_steps, intp_t* made,
                    bint* stopped) except -1 nogil:
        """The master: steps 0 .. n - 1 (and, on one thread, the calls when they are
        due); ``made`` counts the steps made."""
        cdef intp_t j, m, n = self.n
        cdef Primal* p = &view.primal
        cdef Sampler smp                        # the steps' order, for the cache hints
        init_sampler(&smp, self.order, n, NULL, 0, NULL, 0)
        for m in range(min(self.lag + 1, n)):
            if self._master_calls(m):
                self._call(m, p.w, 0)
                self.master_made += 1
        for j in range(n):
            if not self._master_calls(j) and not _wait(
                    &self.counters[CALLS], j + 1, &self.counters[FAILED], &self.master_idle,
                    &self.gates[0]):
                return 0
            # change slot j % R is free once the helper has added step j - R's change
            if self.n_threads > 1 and j >= self.R and not _wait(
                    &self.counters[APPLIED], j - self.R + 1, &self.counters[FAILED],
                    &self.master_idle, &self.gates[0]):
                return 0
            # the next steps' block data; on two threads the helper read their token
            # rows for its calls, into the other core's cache
            prefetch_steps(self.oracle, view.store, NULL, &smp, j, n)
            self._step(j, view.store, &view.ledger, p, s, &view.direction.d, lam, ell,
                       ell_avg, n_steps)
            made[0] = j + 1
            _publish(&self.counters[STEPS], j + 1, &self.gates[1])
            m = j + 1 + self.lag                # due now: at the iterate after step j
            if m < n and self._master_calls(m):
                self._call(m, p.w, 0)
                self.master_made += 1
            if (j + 1) % STOP_EVERY == 0 and j + 1 < n and self.should_stop is not None:
                with gil:                       # the state is one dual point when asked
                    self._book(ell[0], ell_avg[0], made[0])
                    stopped[0] = bool(self.should_stop())
                if stopped[0]:
                    return 0
        return 0

    def one_pass(self, const intp_t[::1] order, should_stop=None) -> int:
        """The pipelined steps of the blocks ``order`` (one pass); returns the calls made.

        ``should_stop`` is asked every 64 steps: True ends the pass there, the
        steps made are kept (the calls already made are counted, their answers
        dropped).  Books the steps' ``StepCounts`` into the state.
        """
        cdef intp_t n = order.shape[0], k
        if n == 0:
            return 0
        state = self.state
        check_order(order, self.oracle.n_blocks)
        reason = compiled_problem(self.oracle, state, self.n_threads)
        if reason is not None:
            raise ValueError(f"the compiled pipeline does not run this problem: {reason}")
        state.invalidate_gaps()                 # the iterate moves
        cdef StateView view = StateView(state, None, None, self.oracle)
        cdef float64_t[::1] s = view.store.frame_scratch(self.oracle)
        cdef float64_t ell = state.ell, ell_avg = state.ell_avg, lam = state.lam
        cdef intp_t n_steps = state.n_steps, made = 0
        cdef bint stopped = False
        cdef double cpu
        self.order, self.n, self.w_start = &order[0], n, view.primal.w
        self.copy_fresh = not (self.synced and self.synced_key[0] is state.w
                               and self.synced_key[1:] == (state.n_steps, state.lam, state.ell))
        self.synced, self.synced_key = False, None
        for k in range(N_COUNTERS):
            self.counters[k] = 0
        self.error, self.should_stop = None, should_stop
        self.helper_cpu = self.master_idle = self.helper_idle = 0.0
        self.replaced = self.master_made = self.booked_steps = self.booked = 0
        helper = None
        if self.n_threads > 1:
            helper = threading.Thread(target=self._serve, daemon=True, name="ssvm-pipeline")
            helper.start()
        cpu = ssvm_thread_cpu()
        try:
            with nogil:
                self._steps(view, &s[0], lam, &ell, &ell_avg, &n_steps, &made, &stopped)
        finally:
            self.master_cpu = ssvm_thread_cpu() - cpu
            if made < n:                        # stopped or failed: the helper stops too
                _publish(&self.counters[ABORT], 1, &self.gates[1])
            if helper is not None:
                helper.join()
            self.should_stop = None
            self._book(ell, ell_avg, made)
            calls = self.master_made
            if helper is not None:                  # the helper's calls
                for k in range(self.counters[CALLS]):
                    calls += not self._master_calls(k)
        if self.error is not None:
            raise self.error
        if self.synced:
            self.synced_key = (state.w, state.n_steps, state.lam, state.ell)
        if helper is not None and self.adapt and made == n:
            self._balance(calls - self.master_made)
        return calls

    cdef int _book(self, float64_t ell, float64_t ell_avg, intp_t made) except -1:
        """Book the steps made since the last booking into the state."""
        cdef intp_t steps = made - self.booked_steps, replaced = self.replaced - self.booked
        self.booked_steps, self.booked = made, self.replaced
        self.state.record_steps(StepCounts(ell=ell, ell_avg=ell_avg, steps=steps,
                                           oracle_calls=steps, replaced=replaced, fw=steps))
        return 0

    cdef void _balance(self, intp_t helper_calls):
        """The master's share of the next pass's calls, from this pass's work (CPU less
        idle spinning) of the two threads: half their difference moves, at the cost of
        a call measured in the helper (an upper bound: it includes its copy's updates).
        The share does not change the iterates, only which thread makes a call."""
        cdef double busy_m = self.master_cpu - self.master_idle
        cdef double busy_h = self.helper_cpu - self.helper_idle
        cdef double f = self.share / <double> SHARE_ONE
        if helper_calls <= 0 or busy_h <= 0.0:
            return
        f += (busy_h - busy_m) / (2.0 * (busy_h / helper_calls) * self.n)
        self.share = <intp_t> (SHARE_ONE * min(max(f, 0.0), 0.5) + 0.5)

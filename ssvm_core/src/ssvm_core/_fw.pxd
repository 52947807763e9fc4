# The block-step loop of BCFW, shared with the compiled round loop of mini-batch
# BCFW (_batch.pyx), which runs it on each round's replayed answers.
from ssvm_core._typedefs cimport float64_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._blocks cimport Ledger, Primal
from ssvm_core._sampling cimport Sampler
from ssvm_core._storage cimport BlockStore, Direction


cdef int bcfw_steps(MaxOracle oracle, BlockStore st, Ledger* b, Primal* p, float64_t* s,
                    Sampler* smp, float64_t lam, bint line_search,
                    float64_t* ell, float64_t* ell_avg, intp_t* n_steps,
                    intp_t* n_replaced, Corner* c, Direction* e,
                    float64_t* line_work) except -1 nogil

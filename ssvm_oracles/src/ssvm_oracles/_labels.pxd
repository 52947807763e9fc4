# Checks of the labellings the oracles' ``evaluate`` receives.
#
# Inline: cimporting this file compiles the check into the cimporting module.
from ssvm_core._typedefs cimport int32_t, intp_t


cdef inline int check_labelling(intp_t i, const int32_t* labels, intp_t n_labels, intp_t n,
                                intp_t n_states) except -1 nogil:
    """ValueError unless ``labels`` holds the n labels in [0, n_states) of block i's nodes."""
    cdef intp_t v
    if n_labels != n:
        with gil:
            raise ValueError(f"block {i} needs a labelling of its {n} nodes, "
                             f"got {n_labels} labels")
    for v in range(n):
        if labels[v] < 0 or labels[v] >= n_states:
            with gil:
                raise ValueError(f"block {i} needs a labelling of its {n} nodes: label "
                                 f"{labels[v]} of node {v} outside [0, {n_states})")
    return 0

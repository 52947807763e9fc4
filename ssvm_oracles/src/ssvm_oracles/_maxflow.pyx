"""Exact s-t minimum cuts of binary submodular energies: a Boykov-Kolmogorov max-flow.

``min_cut_arcs`` (declared in ``_maxflow.pxd`` for the Cython oracles: the
graph-cut oracle of ``GraphCutModel`` and the binary and alpha-expansion
oracles of ``GraphModel``) minimises
sum_p D_p [y_p = 1] + sum_e c_e [y_head != y_tail] with c >= 0 by the
Boykov-Kolmogorov max-flow algorithm (two search trees, augmentation,
adoption of orphans; Boykov & Kolmogorov, IEEE TPAMI 2004), after pushing
flow along every path source -> p -> q -> sink.  Node p has one terminal arc:
source -> p of capacity D_p when D_p > 0 (cut when y_p = 1, the sink side),
else p -> sink of capacity -D_p (cut when y_p = 0).  Each undirected edge is
one pair of opposite arcs of capacity c_e.  At the end the nodes reachable from
the source in the residual graph take label 0, the others label 1; by max-flow =
min-cut that labelling has the minimum energy.

The max-flow works in floating point without tolerances: an augmentation
subtracts the bottleneck from the arcs of the path, so the bottleneck arc drops
to exactly 0; the final cut is optimal up to rounding of the capacities.
Workspaces are allocated per call, so concurrent calls from several threads
are safe.  ``arc_lists`` builds the arc arrays of packed graphs, ``min_cut`` is
the Python entry point.
"""

from libc.stdlib cimport free, malloc

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


cdef enum:
    _FREE = 0
    _SOURCE_TREE = 1
    _SINK_TREE = 2
    _TERMINAL = -1       # parent "arc" of a tree root: its terminal arc
    _ORPHAN = -2         # parent of a node that lost its path to the terminal


cdef inline intp_t _wrap(intp_t k, intp_t n) noexcept nogil:
    """k mod n for 0 <= k < 2 n (the circular queue; avoids a division)."""
    return k - n if k >= n else k


cdef inline bint _rooted(intp_t v, const intp_t* parent, const intp_t* pnode) noexcept nogil:
    """Whether the tree path from v reaches its terminal (no orphan on the way)."""
    while parent[v] != _TERMINAL:
        if parent[v] == _ORPHAN:
            return False
        v = pnode[v]
    return True


cdef inline float64_t _path_bottleneck(intp_t v, float64_t b, const intp_t* parent,
                                       const intp_t* pnode, const float64_t* cap,
                                       const float64_t* term) noexcept nogil:
    """min(b, residuals on v's tree path, its terminal residual)."""
    while parent[v] != _TERMINAL:
        b = min(b, cap[parent[v]])
        v = pnode[v]
    return min(b, term[v])


cdef inline void _push_to_terminal(intp_t v, float64_t b, intp_t* parent, const intp_t* pnode,
                                   const int32_t* rev, float64_t* cap, float64_t* term,
                                   intp_t* orphans, intp_t* n_orphans) noexcept nogil:
    """Push b along v's tree path and terminal arc; a saturated arc orphans its child."""
    cdef intp_t a, v_next
    while parent[v] != _TERMINAL:
        a = parent[v]
        cap[a] -= b
        cap[rev[a]] += b
        v_next = pnode[v]
        if cap[a] == 0.0:
            parent[v] = _ORPHAN
            orphans[n_orphans[0]] = v
            n_orphans[0] += 1
        v = v_next
    term[v] -= b
    if term[v] == 0.0:
        parent[v] = _ORPHAN
        orphans[n_orphans[0]] = v
        n_orphans[0] += 1


cdef int min_cut_arcs(intp_t n, intp_t m, const float64_t* D, const float64_t* c,
                      const int32_t* to, const int32_t* rev, const int32_t* edge,
                      const intp_t* arc_ptr, intp_t base, int32_t* labels) except -1 nogil:
    """labels = argmin_y sum_p D_p [y_p = 1] + sum_e c_e [y_head != y_tail], c >= 0.

    Boykov-Kolmogorov max-flow.  Each edge gives two opposite arcs of capacity
    c_e; node p has the terminal residuals rs[p] = max(D_p, 0) (source -> p)
    and rt[p] = max(-D_p, 0) (p -> sink).  Two search trees grow from the
    terminals over residual arcs.  ``parent[v]`` is v's tree arc in the
    direction of the flow (into v in the source tree, out of v in the sink
    tree), ``pnode[v]`` the node at its other end.  A source-tree node meeting a
    sink-tree node gives an augmenting path, whose saturated arcs orphan their
    subtrees; orphans are re-attached to a rooted neighbour or freed.  At the end
    the source tree is the set of nodes reachable from the source in the
    residual graph: label 0, the others 1.

    The graph comes from :func:`arc_lists`, arcs grouped by their tail: the arcs
    leaving node p are the positions a in [arc_ptr[p] - base, arc_ptr[p + 1] - base),
    ``to[a]`` is the node arc a points to, ``rev[a]`` the position of the
    opposite arc and ``edge[a]`` its edge.
    """
    cdef intp_t A = 2 * m, p, q, a, r, t, mid, mid_tail = 0, mid_head = 0
    cdef intp_t q_head = 0, q_len = 0, n_orphans = 0
    cdef float64_t b
    cdef bint found
    cdef float64_t* mem = <float64_t*> malloc((A + 2 * n) * sizeof(float64_t))
    cdef intp_t* imem = <intp_t*> malloc(6 * n * sizeof(intp_t))
    if mem == NULL or imem == NULL:
        free(mem)
        free(imem)
        with gil:
            raise MemoryError("max-flow workspace")
    cdef float64_t* cap = mem
    cdef float64_t* rs = cap + A
    cdef float64_t* rt = rs + n
    cdef intp_t* tree = imem
    cdef intp_t* parent = tree + n
    cdef intp_t* pnode = parent + n
    cdef intp_t* queue = pnode + n     # active nodes, circular FIFO
    cdef intp_t* queued = queue + n
    cdef intp_t* orphans = queued + n
    for a in range(A):
        cap[a] = c[edge[a]]
    for p in range(n):
        rs[p] = D[p] if D[p] > 0.0 else 0.0
        rt[p] = -D[p] if D[p] < 0.0 else 0.0
    # Push along every path source -> p -> q -> sink first, without branches (the
    # branches of graph searches are unpredictable): b = 0 leaves everything unchanged.
    for p in range(n):
        for a in range(arc_ptr[p] - base, arc_ptr[p + 1] - base):
            q = to[a]
            b = min(rs[p], cap[a], rt[q])
            rs[p] -= b
            rt[q] -= b
            cap[a] -= b
            cap[rev[a]] += b
    for p in range(n):                  # rs[p] > 0 and rt[p] > 0 exclude each other
        tree[p] = (rs[p] > 0.0) * _SOURCE_TREE + (rt[p] > 0.0) * _SINK_TREE
        parent[p] = _TERMINAL
        queued[p] = tree[p] != _FREE
        queue[q_len] = p
        q_len += queued[p]
    while True:
        # Growth: scan active nodes until a source-tree node touches a sink-tree node.
        found = False
        while q_len > 0:
            p = queue[q_head]
            t = tree[p]
            if t != _FREE:
                for a in range(arc_ptr[p] - base, arc_ptr[p + 1] - base):
                    r = a if t == _SOURCE_TREE else rev[a]    # the arc in the flow direction
                    if cap[r] <= 0.0:
                        continue
                    q = to[a]
                    if tree[q] == _FREE:
                        tree[q] = t
                        parent[q] = r
                        pnode[q] = p
                        if not queued[q]:
                            queued[q] = True
                            queue[_wrap(q_head + q_len, n)] = q
                            q_len += 1
                    elif tree[q] != t:
                        mid = r
                        mid_tail, mid_head = (p, q) if t == _SOURCE_TREE else (q, p)
                        found = True
                        break
            if found:
                break                       # p stays active: it may have more paths
            queued[p] = False
            q_head = _wrap(q_head + 1, n)
            q_len -= 1
        if not found:
            break
        # Augmentation: bottleneck of source -> ... -> mid -> ... -> sink, then push.
        b = _path_bottleneck(mid_tail, cap[mid], parent, pnode, cap, rs)
        b = _path_bottleneck(mid_head, b, parent, pnode, cap, rt)
        cap[mid] -= b
        cap[rev[mid]] += b
        _push_to_terminal(mid_tail, b, parent, pnode, rev, cap, rs, orphans, &n_orphans)
        _push_to_terminal(mid_head, b, parent, pnode, rev, cap, rt, orphans, &n_orphans)
        # Adoption: re-attach each orphan to a rooted neighbour of its tree, or free it.
        while n_orphans > 0:
            n_orphans -= 1
            p = orphans[n_orphans]
            t = tree[p]
            for a in range(arc_ptr[p] - base, arc_ptr[p + 1] - base):
                q = to[a]
                r = rev[a] if t == _SOURCE_TREE else a      # q -> p (source) or p -> q (sink)
                if tree[q] == t and cap[r] > 0.0 and _rooted(q, parent, pnode):
                    parent[p] = r
                    pnode[p] = q
                    break
            if parent[p] != _ORPHAN:
                continue
            for a in range(arc_ptr[p] - base, arc_ptr[p + 1] - base):
                q = to[a]
                if tree[q] != t:
                    continue
                r = rev[a] if t == _SOURCE_TREE else a
                if cap[r] > 0.0 and not queued[q]:
                    queued[q] = True        # q may grow into p again
                    queue[_wrap(q_head + q_len, n)] = q
                    q_len += 1
                if parent[q] >= 0 and pnode[q] == p:
                    parent[q] = _ORPHAN
                    orphans[n_orphans] = q
                    n_orphans += 1
            tree[p] = _FREE
    for p in range(n):
        labels[p] = 0 if tree[p] == _SOURCE_TREE else 1
    free(mem)
    free(imem)
    return 0


def arc_lists(head, tail, node_ptr, edge_ptr):
    """The directed arcs of graphs packed one after the other, grouped by their tail.

    Edge e of image i (local endpoints ``head[e]``, ``tail[e]``) gives two
    opposite arcs.  Arcs are sorted by global tail node, so those of image i
    take the positions [2 edge_ptr[i], 2 edge_ptr[i + 1]).  Returns, per arc
    position, ``arc_to`` (2 edges,) int32 the local node it points to,
    ``arc_rev`` the position of the opposite arc and ``arc_edge`` the edge's
    index inside its image (both local to the image's positions), and
    ``arc_ptr`` (nodes + 1,) intp: the arcs leaving global node p are at
    positions ``arc_ptr[p]:arc_ptr[p + 1]``.
    """
    head, tail = np.asarray(head, np.int64), np.asarray(tail, np.int64)
    node_ptr, edge_ptr = np.asarray(node_ptr, np.int64), np.asarray(edge_ptr, np.int64)
    image = np.repeat(np.arange(len(edge_ptr) - 1), np.diff(edge_ptr))
    local_edge = np.arange(len(head)) - edge_ptr[image]
    # arc 2 e: head -> tail, arc 2 e + 1: tail -> head (before sorting)
    arc_from = np.empty(2 * len(head), np.int64)
    arc_from[0::2], arc_from[1::2] = head, tail
    arc_dest = np.empty(2 * len(head), np.int64)
    arc_dest[0::2], arc_dest[1::2] = tail, head
    offset = np.repeat(node_ptr[image], 2)
    order = np.argsort(arc_from + offset, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    first = np.repeat(2 * edge_ptr[image], 2)           # the image's first position
    arc_rev = (position[order ^ 1] - first[order]).astype(np.int32)
    arc_edge = np.repeat(local_edge, 2)[order].astype(np.int32)
    arc_ptr = np.searchsorted((arc_from + offset)[order],
                              np.arange(node_ptr[-1] + 1)).astype(np.intp)
    return arc_dest[order].astype(np.int32), arc_rev, arc_edge, arc_ptr


def min_cut(const float64_t[::1] unary_cost, const float64_t[::1] capacity, head, tail):
    """argmin_y sum_p unary_cost[p] [y_p = 1] + sum_e capacity[e] [y_head != y_tail].

    ``capacity`` must be >= 0 (not checked here; the oracle checks its weights).
    Returns the int32 0/1 labelling; ties go to label 1.
    """
    cdef intp_t n = unary_cost.shape[0], m = capacity.shape[0]
    if len(head) != m or len(tail) != m:
        raise ValueError(f"{m} capacities but {len(head)} heads and {len(tail)} tails")
    out = np.zeros(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    if n == 0:
        return out
    arcs = arc_lists(head, tail, [0, n], [0, m])
    cdef const intp_t[::1] arc_ptr = arcs[3]
    arcs = [a if m else np.zeros(1, np.int32) for a in arcs[:3]]
    cdef const int32_t[::1] to = arcs[0], rev = arcs[1], edge = arcs[2]
    with nogil:
        min_cut_arcs(n, m, &unary_cost[0], &capacity[0] if m else NULL, &to[0], &rev[0],
                     &edge[0], &arc_ptr[0], 0, &o[0])
    return out

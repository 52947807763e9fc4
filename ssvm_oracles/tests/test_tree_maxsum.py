"""PoseModel / PoseOracle: distance transforms and tree max-sum against brute force."""

from __future__ import annotations

import itertools
import pickle
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssvm_core import BruteForceOracle
from ssvm_core.testing import check_oracle, enumerate_problem, scaled_examples
from ssvm_oracles import PoseModel, PoseOracle
from ssvm_oracles._distance_transform import distance_transform_1d, distance_transform_2d

# ---------------------------------------------------------------------------
# Distance transforms
# ---------------------------------------------------------------------------


@st.composite
def quadratics(draw):
    """A quadratic weight a >= 0 (exact zeros included) and a linear weight b."""
    a = draw(st.sampled_from([0.0, 1e-9, 0.05, 0.7, 3.0, 40.0]))
    b = draw(st.sampled_from([0.0, -2.5, -0.3, 0.4, 1.7]))
    return a, b


@settings(max_examples=scaled_examples(100))
@given(st.integers(1, 14), quadratics(), st.integers(0, 2 ** 32 - 1))
def test_distance_transform_1d_is_the_max_over_all_positions(n, ab, seed):
    rng = np.random.default_rng(seed)
    a, b = ab
    f = rng.normal(size=n) * rng.choice([0.1, 1.0, 30.0])
    if rng.random() < 0.3:
        f = np.round(f)                                  # ties
    d, arg = distance_transform_1d(f, a, b)
    q = np.arange(n)
    for x in range(n):
        values = f - a * (q - x) ** 2 - b * (q - x)
        assert d[x] == pytest.approx(values.max(), abs=1e-9 * max(1.0, np.abs(values).max()))
        assert values[arg[x]] == pytest.approx(d[x], abs=1e-9 * max(1.0, np.abs(values).max()))


@settings(max_examples=scaled_examples(60))
@given(st.integers(1, 6), st.integers(1, 6), quadratics(), quadratics(),
       st.integers(0, 2 ** 32 - 1))
def test_distance_transform_2d_is_the_max_over_all_positions(H, W, abx, aby, seed):
    rng = np.random.default_rng(seed)
    (ax, bx), (ay, by) = abx, aby
    f = rng.normal(size=(H, W)) * rng.choice([0.1, 1.0, 30.0])
    assert_dt2d_is_the_brute_force_max(f, ax, bx, ay, by, rtol=1e-9)


def assert_dt2d_is_the_brute_force_max(f, ax, bx, ay, by, rtol=None, atol=None):
    """distance_transform_2d against max over every position (tolerance rtol x scale or atol)."""
    d, arg = distance_transform_2d(f, ax, bx, ay, by)
    H, W = f.shape
    ys, xs = np.mgrid[0:H, 0:W]
    for y in range(H):
        for x in range(W):
            u, r = xs - x, ys - y
            values = (f - ax * u ** 2 - bx * u - ay * r ** 2 - by * r).ravel()
            tol = atol if atol is not None else rtol * max(1.0, np.abs(values).max())
            assert d[y, x] == pytest.approx(values.max(), abs=tol)
            assert values[arg[y, x]] == pytest.approx(d[y, x], abs=tol)


@pytest.mark.parametrize("ax, ay", [(0.0, 0.0), (1e-320, 0.0), (0.0, 0.5), (0.3, 0.0)])
def test_distance_transform_2d_with_linear_axes(ax, ay):
    """Zero (and subnormal) quadratic weights on one or both axes: the linear shortcuts."""
    rng = np.random.default_rng(int(ax > 0) + 2 * int(ay > 0))
    H, W = 5, 7
    f = np.round(rng.normal(size=(H, W)) * 3)          # ties
    for bx, by in [(0.0, 0.0), (0.7, -1.2), (-2.0, 0.4)]:
        assert_dt2d_is_the_brute_force_max(f, ax, bx, ay, by, atol=1e-12)


def test_distance_transforms_reject_negative_quadratics():
    with pytest.raises(ValueError, match="quadratic"):
        distance_transform_1d(np.zeros(3), -0.1, 0.0)
    with pytest.raises(ValueError, match="quadratic"):
        distance_transform_2d(np.zeros((2, 2)), 1.0, 0.0, -1e-12, 0.0)
    with pytest.raises(ValueError, match="finite"):
        distance_transform_1d(np.array([0.0, np.nan]), 1.0, 0.0)


# ---------------------------------------------------------------------------
# An independent reference of the pose model (vectorised over labellings)
# ---------------------------------------------------------------------------


def reference_arcs(parents):
    """(source, destination) of every arc: for the k-th non-root c, (c, parent) then reverse."""
    arcs = []
    for c, p in enumerate(parents):
        if p >= 0:
            arcs += [(c, p), (p, c)]
    return np.array(arcs).reshape(-1, 2)


def all_labellings(P, A, T, H, W):
    """Every labelling [x_0, y_0, ..., t_0, ...] as rows of an int32 array."""
    cells = np.array([(x, y) for y in range(H) for x in range(W)])
    pos = np.array(list(itertools.product(range(H * W), repeat=P)))
    typ = np.array(list(itertools.product(range(T), repeat=A))).reshape(-1, A)
    pos, typ = np.repeat(pos, len(typ), axis=0), np.tile(typ, (len(pos), 1))
    return np.concatenate([cells[pos].reshape(len(pos), 2 * P), typ], axis=1).astype(np.int32)


def reference_phi(parents, x, Y):
    """phi(x, y) of each row of Y: [unary | arc types | -(dx, dx^2, dy, dy^2) per type]."""
    unary, pairwise, offsets = x
    P, (A, T) = len(parents), pairwise.shape[:2]
    arcs = reference_arcs(parents)
    M = len(Y)
    pos = Y[:, :2 * P].reshape(M, P, 2)
    typ = Y[:, 2 * P:]
    src, dst = arcs[:, 0], arcs[:, 1]
    phi_u = unary[np.arange(P), pos[:, :, 1], pos[:, :, 0]]
    phi_t = pairwise[np.arange(A), typ, pos[:, src, 1], pos[:, src, 0]]
    disp = pos[:, src] - pos[:, dst] - offsets[np.arange(A), typ]
    deform = np.zeros((M, A, T, 4))
    onehot = typ[:, :, None] == np.arange(T)                       # (M, A, T)
    feats = -np.stack([disp[..., 0], disp[..., 0] ** 2, disp[..., 1], disp[..., 1] ** 2], -1)
    deform[:] = onehot[..., None] * feats[:, :, None, :]
    return np.concatenate([phi_u, phi_t, deform.reshape(M, -1)], axis=1)


def reference_loss(P, truth, Y, scale_parts, kind, loss_scale=1.0):
    t = truth[:2 * P].reshape(P, 2)
    a, b = scale_parts
    rho2 = loss_scale ** 2 * float(np.sum((t[a] - t[b]) ** 2))
    dist2 = np.sum((Y[:, :2 * P].reshape(len(Y), P, 2) - t) ** 2, axis=2)
    if kind == "pdj":
        return np.mean(dist2 > rho2, axis=1)
    return np.mean(np.minimum(1.0, dist2 / rho2), axis=1)


TREES = {2: [[-1, 0], [1, -1]], 3: [[-1, 0, 0], [-1, 0, 1], [2, -1, 1]]}


def random_input(rng, P, T, H, W, scale=1.0):
    A = 2 * (P - 1)
    return (rng.normal(size=(P, H, W)) * scale, rng.normal(size=(A, T, H, W)) * scale,
            rng.normal(size=(A, T, 2)))


def random_truth(rng, P, A, T, H, W, scale_parts):
    while True:
        pos = rng.integers(0, [W, H], size=(P, 2))
        if np.any(pos[scale_parts[0]] != pos[scale_parts[1]]):
            return np.concatenate([pos.ravel(), rng.integers(0, T, size=A)]).astype(np.int32)


def feasible_weights(rng, model, count=4):
    """Random weights with quadratic deformation weights >= 0 (some exactly 0), and 0."""
    lower, _ = model.weight_bounds()
    quadratic = lower == 0
    out = [np.zeros(model.size_joint_feature)]
    for scale in (0.1, 1.0, 5.0)[:count - 1]:
        w = rng.normal(size=model.size_joint_feature) * scale
        w[quadratic] = np.abs(w[quadratic]) * (rng.random(quadratic.sum()) < 0.7)
        out.append(w)
    return out


@st.composite
def tiny_poses(draw):
    """Up to 3 parts, 2 types, a 3 x 3 grid: at most 9^3 * 2^4 = 11,664 labellings."""
    P = draw(st.sampled_from([2, 3]))
    parents = draw(st.sampled_from(TREES[P]))
    T = draw(st.integers(1, 2))
    H, W = draw(st.sampled_from([(1, 2), (2, 1), (2, 2), (2, 3), (3, 3)]))
    n = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["truncated", "pdj"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    scale_parts = tuple(rng.permutation(P)[:2])
    A = 2 * (P - 1)
    X = [random_input(rng, P, T, H, W) for _ in range(n)]
    Y = [random_truth(rng, P, A, T, H, W, scale_parts) for _ in range(n)]
    model = PoseModel(parents, scale_parts, n_types=T, loss=kind)
    return model, X, Y, rng


# ---------------------------------------------------------------------------
# The oracle against enumeration
# ---------------------------------------------------------------------------


def test_all_labellings_enumerates_every_labelling_once():
    cands = all_labellings(3, 4, 2, 2, 3)
    assert cands.shape == (6 ** 3 * 2 ** 4, 10)
    assert len({c.tobytes() for c in cands}) == len(cands)
    model = PoseModel([-1, 0, 0], (0, 1), n_types=2)
    x = random_input(np.random.default_rng(0), 3, 2, 2, 3)
    assert {c.tobytes() for c in cands} == {c.tobytes() for c in model.enumerate_labellings(x)}


@settings(max_examples=scaled_examples(40))
@given(tiny_poses())
def test_tree_maxsum_equals_enumeration(case):
    """solve: max of H over all labellings, and psi / loss / H of its own labelling."""
    check_against_enumeration(*case)


@pytest.mark.parametrize("parents", TREES[3])
@pytest.mark.parametrize("kind", ["truncated", "pdj"])
def test_three_parts_two_types_on_a_3x3_grid(parents, kind):
    """The full-size toy: 9^3 positions x 2^4 arc types = 11,664 labellings per example."""
    rng = np.random.default_rng(len(kind) + 10 * parents.index(-1))
    model = PoseModel(parents, (0, 2), n_types=2, loss=kind)
    X = [random_input(rng, 3, 2, 3, 3, scale=s) for s in (0.3, 3.0)]
    Y = [random_truth(rng, 3, 4, 2, 3, 3, (0, 2)) for _ in X]
    check_against_enumeration(model, X, Y, rng)


def check_against_enumeration(model, X, Y, rng):
    oracle = model.bind(X, Y)
    P, A, T = model.n_parts, model.n_arcs, model.n_types
    for i, (x, y) in enumerate(zip(X, Y)):
        H, W = x[0].shape[1:]
        cands = all_labellings(P, A, T, H, W)
        psi = reference_phi(model.parents, x, y[None])[0] - reference_phi(model.parents, x, cands)
        loss = reference_loss(P, y, cands, model.scale_parts, model.loss_kind)
        for w in feasible_weights(rng, model):
            scores = loss - psi @ w
            tol = 1e-9 * max(1.0, np.abs(scores).max())
            labels, psi_s, loss_s, score = oracle.solve_py(i, w)
            k = int(np.flatnonzero((cands == labels).all(axis=1))[0])
            assert score == pytest.approx(scores.max(), abs=tol)
            assert score == pytest.approx(scores[k], abs=tol)
            np.testing.assert_allclose(psi_s, psi[k], atol=1e-12)
            assert loss_s == pytest.approx(loss[k], abs=1e-12)
            # evaluate agrees with solve and with the reference on other labellings
            psi_e, loss_e, score_e = oracle.evaluate_py(i, labels, w)
            np.testing.assert_allclose(psi_e, psi_s, atol=1e-12)
            assert (loss_e, score_e) == pytest.approx((loss_s, score), abs=1e-12)
            for k in rng.choice(len(cands), size=min(20, len(cands)), replace=False):
                psi_e, loss_e, score_e = oracle.evaluate_py(i, cands[k], w)
                np.testing.assert_allclose(psi_e, psi[k], atol=1e-12)
                assert (loss_e, score_e) == pytest.approx((loss[k], scores[k]), abs=tol)


def reference_maxsum(model, x, truth, w):
    """max over labellings of loss + <w, phi> by dynamic programming over the tree, each
    edge maximised over (t_up, t_down, l_child) by brute force (O(T^2 L^2) per edge)."""
    unary, pairwise, offsets = x
    P, (A, T), (H, W) = model.n_parts, pairwise.shape[:2], unary.shape[1:]
    parents = np.asarray(model.parents)
    pos = np.stack(np.meshgrid(np.arange(W), np.arange(H)), -1).reshape(-1, 2)   # (x, y)
    t = truth[:2 * P].reshape(P, 2)
    a, b = model.scale_parts
    rho2 = model.loss_scale ** 2 * float(np.sum((t[a] - t[b]) ** 2))
    dist2 = ((pos[None] - t[:, None]) ** 2).sum(-1)
    loss = (dist2 > rho2) if model.loss_kind == "pdj" else np.minimum(1.0, dist2 / rho2)
    belief = w[:P, None] * unary.reshape(P, -1) + loss / P
    w_type, w_def = w[P:P + A], w[P + A:].reshape(A, T, 4)

    def deform(arc, typ, d):                       # score of displacements d (..., 2)
        e = d - offsets[arc, typ]
        return -(w_def[arc, typ] * np.stack([e[..., 0], e[..., 0] ** 2, e[..., 1],
                                              e[..., 1] ** 2], -1)).sum(-1)

    order = [int(np.flatnonzero(parents == -1)[0])]
    for p in order:
        order.extend(np.flatnonzero(parents == p).tolist())
    arc_of = {c: 2 * k for k, c in enumerate(np.flatnonzero(parents >= 0))}
    disp = pos[:, None] - pos[None]                # [l_child, l_parent]
    for c in reversed(order[1:]):
        up, down = arc_of[c], arc_of[c] + 1
        msg = np.full(H * W, -np.inf)
        for t1, t2 in itertools.product(range(T), repeat=2):
            total = (belief[c][:, None] + w_type[up] * pairwise[up, t1].ravel()[:, None]
                     + w_type[down] * pairwise[down, t2].ravel()[None]
                     + deform(up, t1, disp) + deform(down, t2, -disp))
            msg = np.maximum(msg, total.max(axis=0))
        belief[parents[c]] += msg
    return belief[order[0]].max()


def check_against_dp(model, X, Y, weights):
    """solve: H of its labelling (from the reference phi and loss) is the DP maximum."""
    oracle = model.bind(X, Y)
    for w in weights:
        for i, (x, y) in enumerate(zip(X, Y)):
            labels, _, loss, score = oracle.solve_py(i, w)
            best = reference_maxsum(model, x, y, w)
            ref_loss = reference_loss(model.n_parts, y, labels[None], model.scale_parts,
                                      model.loss_kind)[0]
            phi = reference_phi(model.parents, x, np.stack([labels, y]))
            tol = 1e-9 * max(1.0, abs(best))
            assert loss == pytest.approx(ref_loss, abs=1e-12)
            assert score == pytest.approx(ref_loss + (phi[0] - phi[1]) @ w, abs=tol)
            assert ref_loss + phi[0] @ w == pytest.approx(best, abs=tol)


@pytest.mark.parametrize("seed", range(6))
def test_tree_maxsum_equals_dynamic_programming_on_larger_grids(seed):
    """Grids too large to enumerate: the max equals a brute-force DP, the labelling reaches it."""
    rng = np.random.default_rng(seed)
    parents = [[-1, 0, 1, 1, 0], [2, 2, -1, 0, 3]][seed % 2]
    H, W = [(7, 9), (12, 5), (1, 11), (10, 10), (6, 1), (8, 13)][seed]
    T = 3
    model = PoseModel(parents, (0, 2), n_types=T, loss=["truncated", "pdj"][seed % 2])
    X = [random_input(rng, 5, T, H, W, scale=s) for s in (0.3, 3.0)]
    for x in X:                                    # mean displacements of a few cells
        x[2][:] = rng.integers(-3, 4, size=x[2].shape)
    Y = [random_truth(rng, 5, 8, T, H, W, (0, 2)) for _ in X]
    check_against_dp(model, X, Y, feasible_weights(rng, model))


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e4])
def test_tree_maxsum_with_tied_types_and_extreme_scales(scale):
    """Duplicated types (exact ties between type pairs, which the pair-skipping bounds must
    never drop wrongly) and weights from tiny to huge: the max equals the brute-force DP."""
    rng = np.random.default_rng(11)
    T, (H, W) = 3, (9, 8)
    model = PoseModel([-1, 0, 1, 0], (0, 2), n_types=T)
    X = [random_input(rng, 4, T, H, W) for _ in range(2)]
    for _, pairwise, offsets in X:                 # type 2 repeats type 0 on every arc
        pairwise[:, 2] = pairwise[:, 0]
        offsets[:] = rng.integers(-2, 3, size=offsets.shape)
        offsets[:, 2] = offsets[:, 0]
    Y = [random_truth(rng, 4, 6, T, H, W, (0, 2)) for _ in X]
    weights = [w * scale for w in feasible_weights(rng, model)[1:]]
    for w in weights:
        w[4 + 6:].reshape(6, T, 4)[:, 2] = w[4 + 6:].reshape(6, T, 4)[:, 0]
    check_against_dp(model, X, Y, weights)


@settings(max_examples=scaled_examples(30))
@given(tiny_poses())
def test_ground_truth_psi_zero_and_losses_in_unit_interval(case):
    model, X, Y, rng = case
    oracle = model.bind(X, Y)
    w = feasible_weights(rng, model)[-1]
    for i, (x, y) in enumerate(zip(X, Y)):
        psi, loss, score = oracle.evaluate_py(i, y, w)
        assert not np.any(psi) and loss == 0.0 and score == 0.0
        H, W = x[0].shape[1:]
        cands = all_labellings(model.n_parts, model.n_arcs, model.n_types, H, W)
        losses = reference_loss(model.n_parts, y, cands, model.scale_parts, model.loss_kind)
        assert losses.min() >= 0.0 and losses.max() <= 1.0
        for k in rng.choice(len(cands), size=min(30, len(cands)), replace=False):
            assert model.loss(y, cands[k]) == pytest.approx(losses[k], abs=1e-15)
            assert oracle.evaluate_py(i, cands[k], w)[1] == pytest.approx(losses[k], abs=1e-15)
        assert np.all(losses[(cands[:, :2 * model.n_parts] == y[:2 * model.n_parts])
                             .all(axis=1)] == 0.0)
        # the max oracle is at least H(y_i) = 0
        assert oracle.solve_py(i, w)[3] >= -1e-12


@settings(max_examples=scaled_examples(30))
@given(tiny_poses())
def test_joint_feature_and_predict_against_reference(case):
    model, X, _, rng = case
    for x in X:
        H, W = x[0].shape[1:]
        cands = all_labellings(model.n_parts, model.n_arcs, model.n_types, H, W)
        phi = reference_phi(model.parents, x, cands)
        for k in rng.choice(len(cands), size=5):
            np.testing.assert_allclose(model.joint_feature(x, cands[k]), phi[k], atol=1e-15)
        for w in feasible_weights(rng, model):
            pred = model.predict([x], w)[0]
            k = int(np.flatnonzero((cands == pred).all(axis=1))[0])
            assert phi[k] @ w == pytest.approx((phi @ w).max(), abs=1e-9 * max(1, np.abs(w).max()))


def test_shared_checker_on_a_fixed_instance():
    """ssvm_core.testing.check_oracle with BruteForceOracle over model.enumerate_labellings."""
    rng = np.random.default_rng(3)
    model = PoseModel([-1, 0, 1], (0, 2), n_types=2)
    X = [random_input(rng, 3, 2, 2, 2) for _ in range(2)]
    Y = [random_truth(rng, 3, 4, 2, 2, 2, (0, 2)) for _ in range(2)]
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    assert len(problem.candidates[0]) == 4 ** 3 * 2 ** 4
    check_oracle(model.bind(X, Y), problem, feasible_weights(rng, model, 3), atol=1e-10,
                 check_labels=False)


def test_loss_scale_and_loss_kinds():
    rng = np.random.default_rng(1)
    model = PoseModel([-1, 0, 0], (1, 2), loss="pdj", loss_scale=0.5)
    X = [random_input(rng, 3, 2, 3, 3)]
    y = np.array([0, 0, 0, 2, 2, 2, 0, 1, 1, 0], dtype=np.int32)    # |l_1 - l_2| = 2
    z = y.copy()
    z[:2] = (1, 1)                                                   # part 0 moves sqrt 2 > 1
    assert model.loss(y, z) == pytest.approx(1 / 3)
    oracle = model.bind(X, [y])
    assert oracle.evaluate_py(0, z, np.zeros(model.size_joint_feature))[1] == pytest.approx(1 / 3)
    truncated = PoseModel([-1, 0, 0], (1, 2), loss_scale=2.0)       # rho^2 = 16
    assert truncated.loss(y, z) == pytest.approx(2 / 16 / 3)


# ---------------------------------------------------------------------------
# Sign constraint, layout, inputs
# ---------------------------------------------------------------------------


def test_paper_dimension_and_weight_bounds():
    parents = [-1] + [0] * 25                          # any 26-part tree
    model = PoseModel(parents, (0, 1), n_types=13)
    assert model.size_joint_feature == 2676            # Osokin et al. (2016), Table 1 (LSP)
    lower, upper = model.weight_bounds()
    assert lower.shape == upper.shape == (2676,)
    assert np.all(upper == np.inf)
    assert np.count_nonzero(lower == 0) == 2 * 50 * 13
    deform = lower[26 + 50:].reshape(50, 13, 4)
    assert np.all(deform[:, :, [1, 3]] == 0) and np.all(deform[:, :, [0, 2]] == -np.inf)
    assert np.all(lower[:76] == -np.inf)


def test_negative_quadratic_weight_raises():
    rng = np.random.default_rng(0)
    model = PoseModel([-1, 0, 0], (1, 2))
    X = [random_input(rng, 3, 2, 3, 3)]
    Y = [random_truth(rng, 3, 4, 2, 3, 3, (1, 2))]
    oracle = model.bind(X, Y)
    lower, _ = model.weight_bounds()
    for j in np.flatnonzero(lower == 0):
        w = np.zeros(model.size_joint_feature)
        w[j] = -1e-3
        with pytest.raises(ValueError, match=rf"negative quadratic deformation weight w\[{j}\]"):
            oracle.solve_py(0, w)
        with pytest.raises(ValueError, match="weight_bounds"):
            model.predict(X, w)
    w = np.zeros(model.size_joint_feature)
    w[np.flatnonzero(lower == -np.inf)] = -1.0            # linear weights may be negative
    oracle.solve_py(0, w)
    w[np.flatnonzero(lower == 0)[0]] = -1.0
    oracle.evaluate_py(0, Y[0], w)                        # evaluate needs no transform


def test_bad_inputs_are_rejected():
    rng = np.random.default_rng(0)
    model = PoseModel([-1, 0, 0], (1, 2))
    x = random_input(rng, 3, 2, 3, 3)
    y = random_truth(rng, 3, 4, 2, 3, 3, (1, 2))
    with pytest.raises(ValueError, match="unary has shape"):
        model.bind([(x[0][:2], x[1], x[2])], [y])
    with pytest.raises(ValueError, match="pairwise has shape"):
        model.bind([(x[0], x[1][:, :, :2], x[2])], [y])
    with pytest.raises(ValueError, match="offsets have shape"):
        model.bind([(x[0], x[1], x[2][:, :1])], [y])
    bad = x[1].copy()
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.bind([(x[0], bad, x[2])], [y])
    with pytest.raises(ValueError, match="triple"):
        model.bind([x[:2]], [y])
    with pytest.raises(ValueError, match="outside the 3 x 3 grid"):
        model.bind([x], [np.where(np.arange(10) == 0, 3, y)])
    with pytest.raises(ValueError, match="arc type"):
        model.bind([x], [np.where(np.arange(10) == 9, 2, y)])
    with pytest.raises(ValueError, match="shape"):
        model.bind([x], [y[:-1]])
    same = y.copy()
    same[4:6] = same[2:4]
    with pytest.raises(ValueError, match="coincide"):
        model.bind([x], [same])
    oracle = model.bind([x], [y])
    w = np.zeros(model.size_joint_feature)
    with pytest.raises(ValueError, match="outside the 3 x 3 grid"):
        oracle.evaluate_py(0, np.where(np.arange(10) == 1, -1, y), w)
    with pytest.raises(ValueError, match="entries"):
        oracle.evaluate_py(0, y[:9], w)
    with pytest.raises(ValueError, match="type 5"):
        oracle.evaluate_py(0, np.where(np.arange(10) == 7, 5, y), w)


@pytest.mark.parametrize("parents, message", [
    ([0, -1, -1], "exactly one root"),
    ([1, 2, 0], "exactly one root"),
    ([-1, 2, 1], "cycle"),
    ([-1, 0, 3], "another part"),
    ([-1, 1], "another part"),
    ([-1], "at least two parts"),
])
def test_bad_trees_are_rejected(parents, message):
    with pytest.raises(ValueError, match=message):
        PoseModel(parents, (0, 1))


def test_pickle_and_threads_give_the_same_answers():
    rng = np.random.default_rng(5)
    model = PoseModel([-1, 0, 1, 1], (0, 3))
    X = [random_input(rng, 4, 3, 5, 4) for _ in range(6)]
    Y = [random_truth(rng, 4, 6, 3, 5, 4, (0, 3)) for _ in range(6)]
    oracle = model.bind(X, Y)
    w = feasible_weights(rng, model)[-1]
    expected = [oracle.solve_py(i, w) for i in range(6)]
    clone = pickle.loads(pickle.dumps(oracle))
    assert isinstance(clone, PoseOracle)
    results = [None] * 6

    def run(i):
        results[i] = clone.solve_py(i, w)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[2:] == want[2:]


def test_examples_may_have_different_grids():
    """Packing examples of different sizes gives each block the answers of its own oracle."""
    rng = np.random.default_rng(7)
    model = PoseModel([-1, 0, 0, 1], (2, 3), n_types=2)
    shapes = [(3, 5), (4, 2), (1, 6)]
    X = [random_input(rng, 4, 2, H, W) for H, W in shapes]
    Y = [random_truth(rng, 4, 6, 2, H, W, (2, 3)) for H, W in shapes]
    oracle = model.bind(X, Y)
    for w in feasible_weights(rng, model):
        together = model.predict(X, w)
        for i in range(3):
            alone = model.bind([X[i]], [Y[i]])
            got, want = oracle.solve_py(i, w), alone.solve_py(0, w)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            assert got[2:] == want[2:]
            np.testing.assert_array_equal(together[i], model.predict([X[i]], w)[0])

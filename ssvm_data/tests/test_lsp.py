"""Tests of the LSP joints loader, the 26-node pose tree and the LSP-like generator."""

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.io

import ssvm_data
from ssvm_data import lsp, synthetic

REAL_HOME = Path(os.environ["SSVM_DATA_HOME"]) if os.environ.get("SSVM_DATA_HOME") else None
REAL_FILE = None if REAL_HOME is None else REAL_HOME / "lsp" / lsp.LSP_FILE


@pytest.fixture(autouse=True)
def isolated(monkeypatch):
    """No data home from the environment."""
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)


def raw_joints(seed=0, n=lsp.N_IMAGES):
    """A (3, 14, n) array laid out like the real file: x, y in pixels, then 0/1 flags."""
    rng = np.random.default_rng(seed)
    raw = np.empty((3, 14, n))
    raw[:2] = rng.uniform(0, 1000, size=(2, 14, n))
    raw[2] = rng.random((14, n)) < 0.07
    return raw


def write(folder, raw, name=lsp.LSP_FILE, variable="joints"):
    folder.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(folder / name, {variable: raw})
    return folder / name


# --- loading and lookup ---------------------------------------------------------------


def test_layout_and_types(tmp_path):
    raw = raw_joints()
    file = write(tmp_path, raw)
    joints, flags = ssvm_data.load_lsp_joints(file)
    assert joints.shape == (2000, 14, 2) and joints.dtype == np.float64
    assert joints.flags.c_contiguous
    assert flags.shape == (2000, 14) and flags.dtype == np.int8
    i, j = 1234, 7
    np.testing.assert_array_equal(joints[i, j], raw[:2, j, i])
    assert flags[i, j] == raw[2, j, i]
    np.testing.assert_array_equal(flags, raw[2].T)


def test_lookup_order(tmp_path, monkeypatch):
    first, second = raw_joints(1), raw_joints(2)
    write(tmp_path / "explicit", first)
    write(tmp_path / "home" / "lsp", second)
    # a folder given as path wins over the data home
    joints, _ = lsp.load_lsp_joints(tmp_path / "explicit", data_home=tmp_path / "home")
    np.testing.assert_array_equal(joints[0, 0], first[:2, 0, 0])
    # data_home, then $SSVM_DATA_HOME
    joints, _ = lsp.load_lsp_joints(data_home=tmp_path / "home")
    np.testing.assert_array_equal(joints[0, 0], second[:2, 0, 0])
    monkeypatch.setenv("SSVM_DATA_HOME", str(tmp_path / "home"))
    joints, _ = lsp.load_lsp_joints()
    np.testing.assert_array_equal(joints[0, 0], second[:2, 0, 0])
    # a folder without the file falls back to the data home
    (tmp_path / "empty").mkdir()
    assert lsp.find_lsp_file(tmp_path / "empty") == tmp_path / "home" / "lsp" / lsp.LSP_FILE


def test_missing_file_says_where_to_put_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"joints_original_size\.mat.*SSVM_DATA_HOME/lsp"):
        lsp.load_lsp_joints()
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "lsp")):
        lsp.load_lsp_joints(data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        lsp.load_lsp_joints(tmp_path / "nowhere.mat")


def test_missing_variable(tmp_path):
    file = write(tmp_path, raw_joints(), variable="poses")
    with pytest.raises(ValueError, match="no variable 'joints'"):
        lsp.load_lsp_joints(file)


@pytest.mark.parametrize("shape", [(3, 14, 100), (14, 3, 2000), (2, 14, 2000), (3, 14),
                                   (3, 13, 2000)])
def test_wrong_shape(tmp_path, shape):
    file = write(tmp_path, np.zeros(shape))
    with pytest.raises(ValueError, match=r"'joints' has shape .*expected \(3, 14, 2000\)"):
        lsp.load_lsp_joints(file)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_coordinates(tmp_path, bad):
    raw = raw_joints()
    raw[1, 12, 345] = bad
    raw[0, 3, 1999] = bad
    file = write(tmp_path, raw)
    with pytest.raises(ValueError, match=r"2 non-finite coordinate\(s\), the first for image "
                                         r"345 \(neck\)"):
        lsp.load_lsp_joints(file)


def test_bad_flags(tmp_path):
    raw = raw_joints()
    raw[2, 0, 5] = 0.5
    with pytest.raises(ValueError, match="flags .* must be 0 or 1, found 0.5"):
        lsp.load_lsp_joints(write(tmp_path, raw))


def test_text_variable(tmp_path):
    file = write(tmp_path, "not numbers")
    with pytest.raises(ValueError, match="shape"):
        lsp.load_lsp_joints(file)


def test_not_a_mat_file_and_truncated_file(tmp_path):
    junk = tmp_path / "junk.mat"
    junk.write_bytes(b"this is not a MATLAB file" * 10)
    with pytest.raises(ValueError, match="junk.mat is not a readable MATLAB file"):
        lsp.load_lsp_joints(junk)
    good = write(tmp_path, raw_joints())
    truncated = tmp_path / "truncated.mat"
    truncated.write_bytes(good.read_bytes()[:len(good.read_bytes()) // 2])
    with pytest.raises(ValueError, match="truncated.mat"):
        lsp.load_lsp_joints(truncated)


def test_hdf5_mat_file_is_explained(tmp_path):
    v73 = tmp_path / "v73.mat"
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5"
    v73.write_bytes(header.ljust(116) + b"\x00" * 8 + b"\x00\x02IM" + b"\x00" * 400)
    with pytest.raises(ValueError, match="v7.3"):
        lsp.load_lsp_joints(v73)


# --- the 26-node tree -------------------------------------------------------------------


def test_pose_tree_is_one_tree_rooted_at_the_neck():
    parents = np.array(lsp.POSE_TREE_PARENTS)
    assert parents.shape == (26,) and np.flatnonzero(parents < 0).tolist() == [12]
    for node in range(26):                      # every node reaches the root
        seen = set()
        while node != 12:
            assert node not in seen
            seen.add(node)
            node = parents[node]
    assert lsp.JOINTS[12] == "neck"
    assert [lsp.JOINTS[j] for j in lsp.SCALE_PARTS] == ["left shoulder", "right hip"]


def test_midpoints_sit_on_their_limbs_and_connect_them():
    joints = np.random.default_rng(0).normal(size=(5, 14, 2))
    nodes = lsp.pose_tree_nodes(joints)
    assert nodes.shape == (5, 26, 2)
    np.testing.assert_array_equal(nodes[:, :14], joints)
    parents = np.array(lsp.POSE_TREE_PARENTS)
    for m, (a, b, f) in enumerate(lsp.MIDPOINTS, start=14):
        np.testing.assert_allclose(nodes[:, m], (1 - f) * joints[:, a] + f * joints[:, b])
        same_limb = {a, b} | {14 + k for k, (c, d, _) in enumerate(lsp.MIDPOINTS)
                              if {c, d} == {a, b}}
        assert parents[m] in same_limb
        assert set(np.flatnonzero(parents == m)) <= same_limb
    with pytest.raises(ValueError, match="expected"):
        lsp.pose_tree_nodes(np.zeros((13, 2)))


# --- the real file ----------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.skipif(REAL_FILE is None or not REAL_FILE.is_file(),
                    reason="set SSVM_DATA_HOME to a folder holding lsp/joints_original_size.mat")
def test_real_file():
    joints, flags = lsp.load_lsp_joints(data_home=REAL_HOME)
    assert joints.shape == (2000, 14, 2) and flags.shape == (2000, 14)
    assert int(flags.sum()) == 2044 and int((flags == 0).sum()) == 25956
    assert int(np.any(flags == 1, axis=1).sum()) == 944
    # the ranges the data README gives, to one decimal
    assert round(joints[..., 0].min(), 1) == 6.7 and round(joints[..., 0].max(), 1) == 1018.8
    assert round(joints[..., 1].min(), 1) == 2.4 and round(joints[..., 1].max(), 1) == 1023.8
    np.testing.assert_allclose(joints[0, 0], [473.95283019, 552.63152053])   # im0001 ankle
    # head top above the neck, and the neck above both hips, in most images
    assert np.mean(joints[:, 13, 1] < joints[:, 12, 1]) > 0.9
    assert np.mean(joints[:, 12, 1] < joints[:, [2, 3], 1].mean(axis=1)) > 0.9


# --- the LSP-like generator ---------------------------------------------------------------


def test_lsp_like_shapes_and_reproducibility():
    assert ssvm_data.lsp_like is synthetic.lsp_like
    X, Y = synthetic.lsp_like(3, grid=(10, 12), n_types=4, random_state=7)
    X2, Y2 = synthetic.lsp_like(3, grid=(10, 12), n_types=4,
                                random_state=np.random.default_rng(7))
    for (u, p, o), y, (u2, p2, _o2), y2 in zip(X, Y, X2, Y2):
        assert u.shape == (26, 10, 12) and p.shape == (50, 4, 10, 12) and o.shape == (50, 4, 2)
        assert u.dtype == p.dtype == o.dtype == np.float64
        assert y.shape == (102,) and y.dtype == np.int32
        np.testing.assert_array_equal(u, u2)
        np.testing.assert_array_equal(p, p2)
        np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(Y[0], synthetic.lsp_like(1, grid=(10, 12), n_types=4,
                                                       random_state=8)[1][0])


def test_lsp_like_plants_the_offsets_and_the_types():
    X, Y = synthetic.lsp_like(30, random_state=0)
    parents = np.array(lsp.POSE_TREE_PARENTS)
    children = np.flatnonzero(parents >= 0)
    offsets = X[0][2]
    assert not offsets.flags.writeable
    np.testing.assert_array_equal(offsets[1::2], -offsets[0::2])
    deviations, hits, type_hits = [], 0, 0
    for (unary, pairwise, _), y in zip(X, Y):
        pos, types = y[:52].reshape(26, 2), y[52:]
        assert pos[:, 0].max() < 16 and pos[:, 1].max() < 16 and pos.min() >= 0
        np.testing.assert_array_equal(types[0::2], types[1::2])     # one type per edge
        for k, c in enumerate(children):
            inside = 0 < pos[c, 0] < 15 and 0 < pos[c, 1] < 15
            if inside:
                deviations.append(pos[c] - pos[parents[c]] - offsets[2 * k, types[2 * k]])
            for a, src in ((2 * k, pos[c]), (2 * k + 1, pos[parents[c]])):
                type_hits += np.argmax(pairwise[a, :, src[1], src[0]]) == types[a]
        hits += sum(np.unravel_index(np.argmax(unary[p]), (16, 16)) == (pos[p, 1], pos[p, 0])
                    for p in range(26))
    deviations = np.abs(np.array(deviations))
    assert deviations.max() <= 0.5 + 5 * 0.35 and deviations.mean() < 0.6
    assert type_hits / (30 * 50) > 0.4          # the type maps carry the planted types
    # unaries alone find many parts but not all: the tree has work to do
    assert 0.4 < hits / (30 * 26) < 0.95


def test_lsp_like_loss_scale_is_never_zero():
    _, Y = synthetic.lsp_like(60, grid=(4, 4), n_types=2, random_state=0)
    a, b = lsp.SCALE_PARTS
    assert all(np.any(y[2 * a:2 * a + 2] != y[2 * b:2 * b + 2]) for y in Y)


@pytest.mark.parametrize("kwargs, error", [
    ({"n": 0}, ValueError), ({"grid": (3, 16)}, ValueError), ({"grid": 16}, ValueError),
    ({"n_types": 0}, ValueError), ({"n": 1.5}, TypeError),
])
def test_lsp_like_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        synthetic.lsp_like(**kwargs)


# --- arc types by k-means -------------------------------------------------------------------


def assert_kmeans_fixed_point(nodes, offsets, types):
    """Every centre is the mean of its members; every member is nearest to its centre."""
    parents = np.array(lsp.POSE_TREE_PARENTS)
    for k, c in enumerate(np.flatnonzero(parents >= 0)):
        displacement = nodes[:, c] - nodes[:, parents[c]]
        for a, data in ((2 * k, displacement), (2 * k + 1, -displacement)):
            for t in range(offsets.shape[1]):
                members = data[types[:, a] == t]
                assert len(members) > 0
                np.testing.assert_allclose(offsets[a, t], members.mean(axis=0), atol=1e-9)
            d2 = ((data[:, None] - offsets[a][None]) ** 2).sum(-1)
            chosen = d2[np.arange(len(data)), types[:, a]]
            assert np.all(chosen <= d2.min(axis=1) + 1e-9)


def test_cluster_arc_types_recovers_planted_clusters():
    rng = np.random.default_rng(0)
    template = lsp.pose_tree_nodes(rng.normal(size=(14, 2)) * 10)
    parents = np.array(lsp.POSE_TREE_PARENTS)
    shifts = np.array([[0.0, 0.0], [40.0, 0.0], [0.0, 40.0]])
    planted = rng.integers(0, 3, size=(60, 26))
    nodes = np.empty((60, 26, 2))
    order = [12]
    for p in order:
        order.extend(int(c) for c in np.flatnonzero(parents == p))
    for n in range(60):
        nodes[n, 12] = template[12]
        for c in order[1:]:
            nodes[n, c] = (nodes[n, parents[c]] + template[c] - template[parents[c]]
                           + shifts[planted[n, c]] + rng.normal(scale=0.5, size=2))
    offsets, types = lsp.cluster_arc_types(nodes, 3, random_state=1)
    assert offsets.shape == (50, 3, 2) and types.shape == (60, 50) and types.dtype == np.int32
    assert_kmeans_fixed_point(nodes, offsets, types)
    for k, c in enumerate(np.flatnonzero(parents >= 0)):
        for a in (2 * k, 2 * k + 1):               # the same partition, up to renaming
            pairs = set(zip(planted[:, c].tolist(), types[:, a].tolist()))
            assert len(pairs) == len(set(planted[:, c].tolist()))


@pytest.mark.shared_data
@pytest.mark.skipif(REAL_FILE is None or not REAL_FILE.is_file(),
                    reason="set SSVM_DATA_HOME to a folder holding lsp/joints_original_size.mat")
def test_cluster_arc_types_on_real_poses():
    joints, _ = lsp.load_lsp_joints(data_home=REAL_HOME)
    nodes = lsp.pose_tree_nodes(joints[:300])
    offsets, types = lsp.cluster_arc_types(nodes, 13)
    assert offsets.shape == (50, 13, 2) and types.shape == (300, 50)
    assert_kmeans_fixed_point(nodes, offsets, types)


def test_cluster_arc_types_rejects_bad_input():
    nodes = np.zeros((5, 26, 2))
    with pytest.raises(ValueError, match="fewer than 2 distinct"):
        lsp.cluster_arc_types(nodes, 2)
    with pytest.raises(ValueError, match="shape"):
        lsp.cluster_arc_types(np.zeros((5, 14, 2)), 2)
    nodes[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        lsp.cluster_arc_types(nodes, 2)
    with pytest.raises(ValueError, match="n_types"):
        lsp.cluster_arc_types(np.zeros((5, 26, 2)), 0)

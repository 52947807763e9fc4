"""HorseSeg: the .mat loader (on files written here) and the synthetic generator."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse

import ssvm_data
from ssvm_data import synthetic
from ssvm_data.horseseg import HORSESEG_SIZES, SuperpixelImage, horseseg_like, load_horseseg


def cell(items) -> np.ndarray:
    """A MATLAB cell column holding ``items`` (dicts become structs in savemat)."""
    out = np.empty((len(items), 1), dtype=object)
    for k, item in enumerate(items):
        out[k, 0] = item
    return out


def pattern(x: SuperpixelImage) -> dict:
    """The authors' layout: one column per node / edge, single-precision features."""
    return {"features": x.unary.T.astype(np.float32),
            "edge_structure": x.edges.T.astype(np.int32),
            "features_pairwise": x.pairwise.T.astype(np.float32),
            "num_nodes": float(len(x.unary)), "num_edges": float(len(x.edges)),
            "num_states": 2.0, "image_file": "HDSeg/images/x.JPEG"}


def file_variables(X, Y, X_test, Y_test, **overrides):
    """The variables of a horseSeg file; an override of None drops the variable."""
    variables = {
        "patterns_train": cell([pattern(x) for x in X]),
        "labels_train": cell([{"labels": y.astype(float), "superpixel_size": np.ones(len(y))}
                              for y in Y]),
        "patterns_test": cell([pattern(x) for x in X_test]),
        "labels_test": cell([{"labels": y.astype(float)} for y in Y_test]),
    }
    variables.update(overrides)
    return {k: v for k, v in variables.items() if v is not None}


def write(path, X, Y, X_test, Y_test, **overrides):
    scipy.io.savemat(path, file_variables(X, Y, X_test, Y_test, **overrides))
    return path


def small_data(seed=0):
    X, Y = horseseg_like(5, n_nodes=12, n_unary=6, n_pairwise=4, random_state=seed)
    return X[:3], Y[:3], X[3:], Y[3:]


def as_float32(x: SuperpixelImage) -> SuperpixelImage:
    """What a single-precision file holds, back in float64."""
    return SuperpixelImage(x.unary.astype(np.float32).astype(np.float64), x.edges,
                           x.pairwise.astype(np.float32).astype(np.float64))


def test_round_trip_through_the_authors_layout(tmp_path):
    data = small_data()
    file = write(tmp_path / "horseSeg_small.mat", *data)
    loaded = load_horseseg(path=file)
    for got_X, got_Y, want_X, want_Y in zip(loaded[0::2], loaded[1::2], data[0::2], data[1::2]):
        assert len(got_X) == len(want_X)
        for got, want, y_got, y_want in zip(got_X, want_X, got_Y, want_Y):
            want = as_float32(want)
            assert isinstance(got, SuperpixelImage)
            for a, b in zip(got, want):
                assert a.flags.c_contiguous and a.shape == b.shape
                np.testing.assert_array_equal(a, b)
            assert got.unary.dtype == got.pairwise.dtype == np.float64
            assert got.edges.dtype == np.int64
            assert y_got.dtype == np.int32
            np.testing.assert_array_equal(y_got, y_want)


def test_file_is_found_in_a_folder_and_in_the_data_home(tmp_path, monkeypatch):
    folder = tmp_path / "horseseg"
    folder.mkdir()
    write(folder / "horseSeg_medium.mat", *small_data())
    assert len(load_horseseg("medium", path=folder)[0]) == 3
    assert len(load_horseseg("medium", data_home=tmp_path)[2]) == 2
    monkeypatch.setenv("SSVM_DATA_HOME", str(tmp_path))
    assert len(load_horseseg("medium")[0]) == 3
    with pytest.raises(FileNotFoundError,
                       match=r"horseSeg_small.mat not found: put it in .*horseseg"):
        load_horseseg("small")
    with pytest.raises(ValueError, match="unknown HorseSeg size 'huge'"):
        load_horseseg("huge")


def with_change(data, kind, index, change):
    """Overrides for the training cells with ``change(dict)`` applied to one image."""
    X, Y = data[0], data[1]
    patterns = [pattern(x) for x in X]
    labels = [{"labels": y.astype(float), "superpixel_size": np.ones(len(y))} for y in Y]
    change((patterns if kind == "patterns" else labels)[index])
    return {"patterns_train": cell(patterns), "labels_train": cell(labels)}


def drop(key):
    return lambda d: d.pop(key)


def put(**values):
    return lambda d: d.update(values)


def set_entry(key, where, value):
    def change(d):
        d[key] = np.array(d[key], dtype=float)
        d[key][where] = value
    return change


@pytest.mark.parametrize("kind, change, message", [
    ("patterns", drop("features"), "train image 1 has no field 'features'"),
    ("patterns", drop("edge_structure"), "no field 'edge_structure'"),
    ("patterns", drop("features_pairwise"), "no field 'features_pairwise'"),
    ("labels", drop("labels"), "no field 'labels'"),
    ("patterns", put(features=np.ones((6, 11))), r"num_nodes = \[12.\] does not match"),
    ("patterns", put(edge_structure=np.zeros((3, 5))),
     r"edge_structure \(2, n_edges\) has shape \(3, 5\), expected 2 rows"),
    ("patterns", put(features_pairwise=np.ones((4, 2))),
     "features_pairwise has 2 columns but edge_structure has"),
    ("patterns", set_entry("edge_structure", (1, 0), 12),
     r"endpoints outside \[0, 12\) \(min 0, max 12\); indices must be 0-based"),
    ("patterns", set_entry("edge_structure", (0, 2), -1), "endpoints outside"),
    ("patterns", set_entry("edge_structure", (0, 0), 0.5), "must hold integers"),
    ("patterns", set_entry("features_pairwise", (1, 3), -0.5),
     "features_pairwise has negative values"),
    ("patterns", put(num_nodes=13.0), "num_nodes = .* does not match"),
    ("patterns", put(num_edges=1.0), "num_edges = .* does not match"),
    ("patterns", set_entry("features", (2, 2), np.nan), "not all finite"),
    ("patterns", put(features=np.ones((7, 12))), "has 7 unary features, image 0 has 6"),
    ("labels", set_entry("labels", 0, 2), r"labels must be 0 or 1, found \[0, 1, 2\]"),
    ("labels", set_entry("labels", 0, 0.5), "labels must hold integers"),
    ("labels", put(labels=np.zeros(11)), r"labels has shape \(1, 11\), expected 12"),
    ("labels", put(labels="horse"), "labels must be numeric"),
])
def test_malformed_images_are_rejected(tmp_path, kind, change, message):
    data = small_data()
    file = write(tmp_path / "bad.mat", *data, **with_change(data, kind, 1, change))
    with pytest.raises(ValueError, match=message):
        load_horseseg(path=file)


def test_self_loops_are_rejected(tmp_path):
    data = small_data()

    def loop(d):
        d["edge_structure"] = np.array(d["edge_structure"])
        d["edge_structure"][1, 0] = d["edge_structure"][0, 0]
    file = write(tmp_path / "bad.mat", *data, **with_change(data, "patterns", 0, loop))
    with pytest.raises(ValueError, match="train image 0: edge_structure has self-loops"):
        load_horseseg(path=file)


@pytest.mark.parametrize("missing", ["patterns_train", "labels_train", "patterns_test",
                                     "labels_test"])
def test_missing_variables_are_rejected(tmp_path, missing):
    file = write(tmp_path / "bad.mat", *small_data(), **{missing: None})
    with pytest.raises(ValueError, match=f"has no variable '{missing}'"):
        load_horseseg(path=file)


def test_other_structural_problems(tmp_path):
    X, Y, X_test, Y_test = small_data()
    file = write(tmp_path / "a.mat", X, Y, X_test, Y_test,
                 labels_train=cell([{"labels": y.astype(float)} for y in Y[:2]]))
    with pytest.raises(ValueError, match="patterns_train has 3 images but labels_train has 2"):
        load_horseseg(path=file)
    file = write(tmp_path / "b.mat", X, Y, X_test, Y_test, patterns_test=np.ones((2, 2)))
    with pytest.raises(ValueError, match="patterns_test must be a cell array of structs"):
        load_horseseg(path=file)
    file = write(tmp_path / "c.mat", X, Y, X_test, Y_test, patterns_test=cell([1.0, 2.0]))
    with pytest.raises(ValueError, match="test image 0 is not a struct"):
        load_horseseg(path=file)
    small = horseseg_like(2, n_nodes=12, n_unary=6, n_pairwise=3, random_state=1)
    file = write(tmp_path / "d.mat", X, Y, *small)
    with pytest.raises(ValueError, match="different feature counts"):
        load_horseseg(path=file)


def test_unreadable_files_are_rejected(tmp_path):
    garbage = tmp_path / "garbage.mat"
    garbage.write_bytes(b"this is not a MATLAB file at all" * 10)
    with pytest.raises(ValueError, match="not a readable MATLAB file"):
        load_horseseg(path=garbage)
    good = write(tmp_path / "good.mat", *small_data())
    truncated = tmp_path / "truncated.mat"
    truncated.write_bytes(good.read_bytes()[:400])
    with pytest.raises(ValueError, match="not a readable MATLAB file"):
        load_horseseg(path=truncated)
    # MATLAB v7.3 files are HDF5: scipy cannot read them and the error says so.
    hdf5 = tmp_path / "v73.mat"
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2016 HDF5"
    hdf5.write_bytes(header.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02IM" + b"\x00" * 512)
    with pytest.raises(ValueError, match=r"MATLAB v7.3 \(HDF5\)"):
        load_horseseg(path=hdf5)


# --- MATLAB v7.3 (HDF5) files --------------------------------------------------------

_MATLAB_CLASSES = {np.dtype(np.float64): "double", np.dtype(np.float32): "single",
                   np.dtype(np.int32): "int32", np.dtype(np.uint8): "uint8"}


def savemat73(path, contents):
    """Write ``contents`` as MATLAB's save -v7.3 does (see ssvm_data._mat73).

    A 512-byte user block with the MAT-file header; arrays transposed (1-D as
    rows); empty arrays as their size with MATLAB_empty; dicts as struct groups;
    object arrays as cells of references into ``#refs#``; str as uint16 chars;
    scipy sparse matrices as MATLAB sparse groups.
    """
    h5py = pytest.importorskip("h5py", reason="h5py (the ssvm-data[hdf5] extra) is needed")
    counter = iter(range(10 ** 9))

    def put(group, name, value):
        if isinstance(value, dict):
            g = group.create_group(name)
            g.attrs["MATLAB_class"] = np.bytes_("struct")
            for key, item in value.items():
                put(g, key, item)
            return
        if isinstance(value, np.ndarray) and value.dtype == object:
            refs = np.empty(value.shape[::-1], dtype=h5py.ref_dtype)
            for index in np.ndindex(value.shape):
                key = f"{next(counter):x}"
                put(f["#refs#"], key, value[index])
                refs[index[::-1]] = f["#refs#"][key].ref
            ds = group.create_dataset(name, data=refs)
            ds.attrs["MATLAB_class"] = np.bytes_("cell")
            return
        if isinstance(value, str):
            ds = group.create_dataset(name, data=np.array([[ord(c)] for c in value], np.uint16))
            ds.attrs["MATLAB_class"] = np.bytes_("char")
            return
        if scipy.sparse.issparse(value):
            csc = scipy.sparse.csc_array(value)
            g = group.create_group(name)
            g.attrs["MATLAB_class"] = np.bytes_("double")
            g.attrs["MATLAB_sparse"] = np.uint64(csc.shape[0])
            g.create_dataset("data", data=csc.data.astype(np.float64))
            g.create_dataset("ir", data=csc.indices.astype(np.uint64))
            g.create_dataset("jc", data=csc.indptr.astype(np.uint64))
            return
        array = np.asarray(value)
        array = array.reshape(1, -1) if array.ndim < 2 else array
        if array.size == 0:
            ds = group.create_dataset(name, data=np.array(array.shape, dtype=np.uint64))
            ds.attrs["MATLAB_empty"] = np.uint8(1)
        else:
            ds = group.create_dataset(name, data=array.T)
        ds.attrs["MATLAB_class"] = np.bytes_(_MATLAB_CLASSES[array.dtype])

    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_group("#refs#")
        for name, value in contents.items():
            put(f, name, value)
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2016 HDF5"
    with open(path, "r+b") as stream:
        stream.write(header.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02IM")
    return path


def write73(path, X, Y, X_test, Y_test, **overrides):
    return savemat73(path, file_variables(X, Y, X_test, Y_test, **overrides))


def test_v73_file_loads_like_the_v7_file(tmp_path):
    X, Y, X_test, Y_test = small_data()
    # A single-superpixel image: no edges, so empty edge arrays (MATLAB_empty).
    lone, lone_y = horseseg_like(1, n_nodes=1, n_unary=6, n_pairwise=4, random_state=3)
    X_test, Y_test = X_test + lone, Y_test + lone_y
    want = load_horseseg(path=write(tmp_path / "v7.mat", X, Y, X_test, Y_test))
    got = load_horseseg(path=write73(tmp_path / "v73.mat", X, Y, X_test, Y_test))
    assert got[2][-1].edges.shape == (0, 2) and got[2][-1].pairwise.shape == (0, 4)
    for got_part, want_part in zip(got, want):
        assert len(got_part) == len(want_part)
        for a, b in zip(got_part, want_part):
            for u, v in zip(a if isinstance(a, tuple) else [a], b if isinstance(b, tuple) else [b]):
                assert u.dtype == v.dtype and u.shape == v.shape and u.flags.c_contiguous
                np.testing.assert_array_equal(u, v)


def test_v73_sparse_features_load_dense(tmp_path):
    X, Y, X_test, Y_test = small_data()
    sparse = dict(pattern(X[0]), features=scipy.sparse.csc_array(
        X[0].unary.T * (np.arange(X[0].unary.size).reshape(X[0].unary.T.shape) % 3 == 0)))
    patterns = cell([sparse] + [pattern(x) for x in X[1:]])
    got = load_horseseg(path=write73(tmp_path / "s.mat", X, Y, X_test, Y_test,
                                     patterns_train=patterns))
    np.testing.assert_array_equal(got[0][0].unary, sparse["features"].toarray().T)
    np.testing.assert_array_equal(got[0][1].unary, X[1].unary.astype(np.float32))


def test_v73_unsupported_content_is_rejected(tmp_path):
    h5py = pytest.importorskip("h5py", reason="h5py (the ssvm-data[hdf5] extra) is needed")
    data = small_data()
    file = write73(tmp_path / "a.mat", *data)
    with h5py.File(file, "r+") as f:                       # a 2-element struct array
        labels = f[f["labels_test"][0, 0]]
        del labels["labels"]
        labels.create_dataset("labels", data=np.array([[f["#refs#"].ref], [f["#refs#"].ref]],
                                                      dtype=h5py.ref_dtype))
    with pytest.raises(ValueError, match="struct array; only scalar structs"):
        load_horseseg(path=file)
    file = write73(tmp_path / "b.mat", *data)
    with h5py.File(file, "r+") as f:
        f["patterns_train"].attrs["MATLAB_class"] = np.bytes_("function_handle")
    with pytest.raises(ValueError, match="MATLAB class 'function_handle'"):
        load_horseseg(path=file)
    good = write73(tmp_path / "c.mat", *data).read_bytes()
    truncated = tmp_path / "truncated.mat"
    truncated.write_bytes(good[:len(good) // 2])
    with pytest.raises(ValueError, match="h5py cannot read"):
        load_horseseg(path=truncated)


def test_v73_without_h5py_says_how_to_install_it(tmp_path, monkeypatch):
    file = write73(tmp_path / "a.mat", *small_data())
    monkeypatch.setitem(sys.modules, "h5py", None)        # makes `import h5py` fail
    with pytest.raises(ValueError, match=r"pip install 'ssvm-data\[hdf5\]'"):
        load_horseseg(path=file)


# --- generator -----------------------------------------------------------------------


def test_generator_shapes_and_values():
    X, Y = horseseg_like(4, random_state=0)
    assert len(X) == len(Y) == 4
    for x, y in zip(X, Y):
        n_nodes, n_edges = 147, len(x.edges)
        assert x.unary.shape == (n_nodes, 1969) and x.pairwise.shape == (n_edges, 100)
        assert x.unary.flags.c_contiguous and x.pairwise.flags.c_contiguous
        assert y.shape == (n_nodes,) and y.dtype == np.int32 and set(y.tolist()) <= {0, 1}
        np.testing.assert_array_equal(x.unary[:, 0], 1.0)
        np.testing.assert_allclose(np.linalg.norm(x.unary[:, 1:], axis=1), 1.0)  # histograms
        assert x.unary.min() >= 0
        np.testing.assert_array_equal(x.pairwise[:, 0], 1.0)
        assert np.all((x.pairwise > 0) & (x.pairwise <= 1))
        # A planar triangulation: between n - 1 (connected) and 3n - 6 edges, no duplicates.
        assert n_nodes - 1 <= n_edges <= 3 * n_nodes - 6
        assert np.all(x.edges[:, 0] < x.edges[:, 1]) and x.edges.max() < n_nodes
        assert len(np.unique(x.edges, axis=0)) == n_edges
        nodes = set(x.edges.ravel().tolist())
        assert nodes == set(range(n_nodes))


def test_labels_are_correlated_with_the_features():
    X, Y = horseseg_like(12, n_unary=200, n_pairwise=10, random_state=2)
    unary = np.vstack([x.unary[:, 1:] for x in X])
    y = np.concatenate(Y)
    assert 0.05 < y.mean() < 0.6
    # A linear rule (log-ratio of the class mean histograms, fitted with its threshold on
    # half the nodes) beats the majority class on the other half.
    fit, held = slice(0, len(y) // 2), slice(len(y) // 2, None)
    means = [unary[fit][y[fit] == c].mean(axis=0) + 1e-3 for c in (0, 1)]
    score = unary @ (np.log(means[1]) - np.log(means[0]))
    threshold = max(np.quantile(score[fit], np.linspace(0, 1, 101)),
                    key=lambda t: np.mean((score[fit] > t) == y[fit]))
    majority = max(y[held].mean(), 1 - y[held].mean())
    assert np.mean((score[held] > threshold) == y[held]) > majority + 0.05
    # Edges inside a class look more alike (larger exp(-eta d)) than edges across.
    same = np.concatenate([y_[x.edges[:, 0]] == y_[x.edges[:, 1]] for x, y_ in zip(X, Y)])
    pairwise = np.vstack([x.pairwise for x in X])
    assert pairwise[same, 1:].mean() > pairwise[~same, 1:].mean()


def test_generator_sizes_and_parameters():
    assert HORSESEG_SIZES == {"small": 147, "medium": 6121, "large": 25438}
    X, _ = horseseg_like(size="small", n_nodes=3, n_unary=2, n_pairwise=2, random_state=0)
    assert len(X) == 147
    X, _ = horseseg_like(2, n_nodes=1, n_unary=1, n_pairwise=1, random_state=0)
    assert X[0].unary.shape == (1, 1) and X[0].edges.shape == (0, 2)
    assert X[0].pairwise.shape == (0, 1)
    X, _ = horseseg_like(1, n_nodes=2, n_unary=3, n_pairwise=30, random_state=0)
    np.testing.assert_array_equal(X[0].edges, [[0, 1]])
    assert X[0].pairwise.shape == (1, 30)
    with pytest.raises(ValueError, match="unknown HorseSeg size"):
        horseseg_like(size="tiny")
    with pytest.raises(ValueError, match="n_nodes must be at least 1"):
        horseseg_like(2, n_nodes=0)
    with pytest.raises(TypeError, match="n_images must be an integer"):
        horseseg_like(2.5)


def test_generator_is_seeded_and_reexported():
    a = horseseg_like(2, n_nodes=30, n_unary=20, n_pairwise=5, random_state=7)
    b = horseseg_like(2, n_nodes=30, n_unary=20, n_pairwise=5,
                      random_state=np.random.default_rng(7))
    for xa, xb in zip(a[0], b[0]):
        for u, v in zip(xa, xb):
            np.testing.assert_array_equal(u, v)
    c = horseseg_like(2, n_nodes=30, n_unary=20, n_pairwise=5, random_state=8)
    assert not np.array_equal(a[0][0].unary, c[0][0].unary)
    assert synthetic.horseseg_like is ssvm_data.horseseg_like is horseseg_like
    assert ssvm_data.load_horseseg is load_horseseg


def test_registry_dataset():
    X, _, X_test, _ = ssvm_data.load_dataset("synthetic-horseseg", random_state=0)
    assert (len(X), len(X_test)) == (20, 20)
    assert X[0].unary.shape == (147, 1969) and X[0].pairwise.shape[1] == 100
    names = [d["name"] for d in ssvm_data.available_datasets()]
    assert "synthetic-horseseg" in names

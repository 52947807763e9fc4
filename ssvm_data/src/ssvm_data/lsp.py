"""Leeds Sports Pose joint annotations (Johnson & Everingham, BMVC 2010) and the pose tree."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ssvm_data import _io

#: The file :func:`load_lsp_joints` looks for (the "original size" release of LSP).
LSP_FILE = "joints_original_size.mat"
N_IMAGES = 2000
#: The 14 LSP joints, in the order of the file.
JOINTS = ("right ankle", "right knee", "right hip", "left hip", "left knee", "left ankle",
          "right wrist", "right elbow", "right shoulder", "left shoulder", "left elbow",
          "left wrist", "neck", "head top")

#: The 12 extra nodes of the 26-node tree: (joint a, joint b, f) is (1 - f) a + f b.
MIDPOINTS = ((8, 7, 0.5), (7, 6, 0.5), (9, 10, 0.5), (10, 11, 0.5),
             (8, 2, 1 / 3), (8, 2, 2 / 3), (9, 3, 1 / 3), (9, 3, 2 / 3),
             (2, 1, 0.5), (1, 0, 0.5), (3, 4, 0.5), (4, 5, 0.5))
#: Parent of each of the 26 nodes (14 joints, then the midpoints), -1 at the root (the
#: neck): head, arms through elbow midpoints, torso sides through two points each, legs.
POSE_TREE_PARENTS = (23, 22, 19, 21, 24, 25, 15, 14, 12, 12, 16, 17, -1, 12,
                     8, 7, 9, 10, 8, 18, 9, 20, 2, 1, 3, 4)
#: Nodes whose distance scales the loss of Osokin et al. (2016), App. I.4: left shoulder and right
# hip.
SCALE_PARTS = (9, 2)


def load_lsp_joints(
    path: str | os.PathLike | None = None,
    *,
    data_home: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Load the joint annotations of the 2,000 LSP images (original resolution).

    Parameters
    ----------
    path : str or os.PathLike, optional
        The ``.mat`` file, or a folder holding ``joints_original_size.mat``.
    data_home : str or os.PathLike, optional
        Folder whose ``lsp/`` sub-folder is searched; defaults to ``$SSVM_DATA_HOME``.

    Returns
    -------
    joints : numpy.ndarray
        float64, shape (2000, 14, 2): ``joints[i, j] = (x, y)`` in pixels of image
        ``im{i+1:04d}.jpg`` for joint j in the order of :data:`JOINTS`.
    flags : numpy.ndarray
        int8, shape (2000, 14): the file's third row, 0 or 1. About 1 in 14 entries
        is 1, consistent with the usual reading that 1 marks an occluded joint, but
        the release does not document it: check before relying on it.

    Raises
    ------
    FileNotFoundError
        If no file is found (the file is not downloaded: the release bundles it with
        the images); the message says where to put it.
    ValueError
        If the file is not a readable MATLAB v5/v7 file, has no variable ``joints``,
        ``joints`` does not have shape (3, 14, 2000), a coordinate is not finite or a
        flag is not 0 or 1.

    Notes
    -----
    Lookup order: `path` (a file, or a folder to search), then
    ``data_home/lsp/``. Osokin et al. (2016) train on CNN features of Chen & Yuille
    (2014), which are not part of this file: it gives the ground-truth poses only.
    """
    file = find_lsp_file(path=path, data_home=data_home)
    if file is None:
        home = _io.data_home(data_home)
        where = (f"{home / 'lsp'}{os.sep}" if home is not None
                 else f"${_io.DATA_HOME_ENV}/lsp/ (set {_io.DATA_HOME_ENV} to a folder)")
        raise FileNotFoundError(
            f"LSP joints not found: put {LSP_FILE} (the joints.mat of the original-size "
            f"release lsp_dataset_original of Johnson & Everingham 2010) into {where}, or "
            "pass path=. It is not downloaded automatically")
    return _read(file)


def find_lsp_file(
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
) -> Path | None:
    """The file :func:`load_lsp_joints` would read, or None.

    Raises
    ------
    FileNotFoundError
        If `path` is given but does not exist.
    """
    if path is not None:
        path = _io.explicit_path(path, "LSP")
        if path.is_file():
            return path
        found = _io.find_file(path, [LSP_FILE])
        if found is not None:
            return found
    home = _io.data_home(data_home)
    return None if home is None else _io.find_file(home / "lsp", [LSP_FILE])


def _read(file: Path) -> tuple[np.ndarray, np.ndarray]:
    contents = _io.read_mat(file, ["joints"])
    if "joints" not in contents:
        raise ValueError(f"{file}: no variable 'joints' (an LSP joints file holds 'joints' of "
                         "shape (3, 14, 2000))")
    raw = np.asarray(contents["joints"])
    expected = (3, len(JOINTS), N_IMAGES)
    if raw.shape != expected:
        raise ValueError(f"{file}: 'joints' has shape {raw.shape}, expected {expected} "
                         "(x / y / flag, joint, image)")
    if not np.issubdtype(raw.dtype, np.number) or np.iscomplexobj(raw):
        raise ValueError(f"{file}: 'joints' must be real numbers, got dtype {raw.dtype}")
    joints = np.ascontiguousarray(raw[:2].transpose(2, 1, 0), dtype=np.float64)
    bad = np.argwhere(~np.isfinite(joints))
    if bad.size:
        image, joint, _ = bad[0]
        raise ValueError(f"{file}: {len(bad)} non-finite coordinate(s), the first for image "
                         f"{image} ({JOINTS[joint]})")
    flags = raw[2].T
    if not np.isin(flags, (0, 1)).all():
        image, joint = np.argwhere(~np.isin(flags, (0, 1)))[0]
        raise ValueError(f"{file}: flags (row 3 of 'joints') must be 0 or 1, found "
                         f"{float(flags[image, joint])} for image {image} ({JOINTS[joint]})")
    return joints, flags.astype(np.int8)


def pose_tree_nodes(joints: np.ndarray) -> np.ndarray:
    """The 26 nodes of the pose tree: the 14 joints followed by the 12 :data:`MIDPOINTS`.

    Parameters
    ----------
    joints : array (..., 14, 2)

    Returns
    -------
    numpy.ndarray
        float64, shape (..., 26, 2).
    """
    joints = np.asarray(joints, dtype=np.float64)
    if joints.shape[-2:] != (len(JOINTS), 2):
        raise ValueError(f"joints have shape {joints.shape}, expected (..., {len(JOINTS)}, 2)")
    extra = [(1 - f) * joints[..., a, :] + f * joints[..., b, :] for a, b, f in MIDPOINTS]
    return np.concatenate([joints, np.stack(extra, axis=-2)], axis=-2)


def cluster_arc_types(nodes: np.ndarray, n_types: int = 13, *,
                      parents=POSE_TREE_PARENTS,
                      random_state: int | np.random.Generator | None = 0,
                      max_iter: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Types of the tree's arcs by K-means on their displacements (Osokin et al. (2016), App. I.4).

    For the k-th non-root node c, arc 2k is (c -> parent) with displacement
    ``nodes[:, c] - nodes[:, parent]`` and arc 2k + 1 the reverse; each arc's
    displacements over the poses are clustered into `n_types` types (k-means++
    seeding, then Lloyd's iterations until no assignment changes; an empty cluster
    is re-seeded at the displacement farthest from its centre), as Chen & Yuille
    (2014) do to obtain the mean relative positions r_pq^t.

    Parameters
    ----------
    nodes : array (n, P, 2)
        Poses, e.g. ``pose_tree_nodes(joints)`` scaled to a grid.
    n_types : int, default=13
        Types per arc, at most the number of distinct displacements of every arc.
    parents : sequence of int
        The tree, -1 at the root (default :data:`POSE_TREE_PARENTS`).
    random_state : None, int or numpy.random.Generator, default=0
        Seed of the k-means++ seeding.
    max_iter : int
        Bound on Lloyd's iterations per arc (a RuntimeError names the arc if hit).

    Returns
    -------
    offsets : numpy.ndarray
        float64 (2 (P - 1), n_types, 2): the mean displacement of every arc type,
        the ``offsets`` input of ``ssvm_oracles.PoseModel``.
    types : numpy.ndarray
        int32 (n, 2 (P - 1)): the type of every arc in every pose (the nearest centre).
    """
    nodes = np.asarray(nodes, dtype=np.float64)
    parents = np.asarray(parents)
    if nodes.ndim != 3 or nodes.shape[1:] != (len(parents), 2):
        raise ValueError(f"nodes have shape {nodes.shape}, expected (n, {len(parents)}, 2)")
    if not np.all(np.isfinite(nodes)):
        raise ValueError("nodes have NaN or infinite coordinates")
    if int(n_types) != n_types or n_types < 1:
        raise ValueError(f"n_types must be a positive integer, got {n_types}")
    rng = np.random.default_rng(random_state)
    offsets, types = [], []
    for c in np.flatnonzero(parents >= 0):
        displacement = nodes[:, c] - nodes[:, parents[c]]
        for data in (displacement, -displacement):
            centres, labels = _kmeans(data, int(n_types), rng, max_iter, f"arc {len(offsets)}")
            offsets.append(centres)
            types.append(labels)
    return np.stack(offsets), np.stack(types, axis=1).astype(np.int32)


def _kmeans(data: np.ndarray, k: int, rng: np.random.Generator, max_iter: int,
            where: str) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with k-means++ seeding; centres are the exact means of their members."""
    if len(np.unique(data, axis=0)) < k:
        raise ValueError(f"{where}: fewer than {k} distinct displacements to cluster")
    centres = data[[rng.integers(len(data))]]
    while len(centres) < k:                                  # k-means++ seeding
        d2 = np.min(((data[:, None] - centres[None]) ** 2).sum(-1), axis=1)
        centres = np.vstack([centres, data[rng.choice(len(data), p=d2 / d2.sum())]])
    labels = None
    for _ in range(max_iter):
        new = np.argmin(((data[:, None] - centres[None]) ** 2).sum(-1), axis=1)
        for j in np.setdiff1d(np.arange(k), new):            # re-seed empty clusters
            far = np.argmax(((data - centres[new]) ** 2).sum(-1))
            new[far] = j
            centres[j] = data[far]
        if labels is not None and np.array_equal(new, labels):
            return centres, labels
        labels = new
        centres = np.stack([data[labels == j].mean(axis=0) for j in range(k)])
    raise RuntimeError(f"{where}: k-means did not converge in {max_iter} iterations")

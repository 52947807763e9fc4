"""Seeded LSP-like pose data: a planted 26-node pose tree with score maps on a grid."""

from __future__ import annotations

import functools

import numpy as np

from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS, pose_tree_nodes
from ssvm_data.synthetic._checks import RandomState, check_int

# A standing person in cells of a 16-row grid, x to the right, y down, neck at (0, 0).
_TEMPLATE = np.array([(-1.5, 12.5), (-1.5, 9.0), (-1.5, 6.0), (1.5, 6.0), (1.5, 9.0),
                      (1.5, 12.5), (-3.5, 5.5), (-3.0, 3.0), (-2.0, 0.5), (2.0, 0.5),
                      (3.0, 3.0), (3.5, 5.5), (0.0, 0.0), (0.0, -1.5)])
_NECK_AT = (0.5, 0.15)          # neck position as a fraction of (W, H)
_MAX_ANGLE = np.pi / 4          # types rotate an edge by up to +-45 degrees
_POSITION_NOISE = 0.35          # cells, added to each planted displacement
_MAP_SIGMA = 0.8                # cells, width of the score bumps
_MAP_NOISE = 0.35               # standard deviation of the noise on every map
_DISTRACTORS = 2                # false bumps per unary map


def lsp_like(
    n: int = 20,
    *,
    grid: tuple[int, int] = (16, 16),
    n_types: int = 13,
    random_state: RandomState = None,
) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], list[np.ndarray]]:
    """Generate poses of the 26-node LSP tree with noisy score maps, shaped like Osokin et al.
    (2016), App. I.4.

    The tree is :data:`ssvm_data.lsp.POSE_TREE_PARENTS` (14 LSP joints and 12
    midpoints, root at the neck); each edge gives two arcs, (child -> parent) =
    arc 2k and (parent -> child) = arc 2k + 1 for the k-th non-root node. Type t
    of an edge rotates the edge of a fixed standing template by an angle in
    [-45, 45] degrees: the planted mean displacement of arc (c -> parent) is
    ``offsets[2k, t]`` and that of the reverse arc its negative. A pose draws the
    neck near the top centre, then for each edge (root to leaves) a type (peaked
    at the unrotated one, the same for both arcs) and the child at the parent
    plus the displacement plus Gaussian noise, rounded and clipped to the grid.
    Poses where the left shoulder and the right hip (:data:`ssvm_data.lsp.SCALE_PARTS`,
    whose distance scales the loss) share a cell are drawn again.

    The unary map of a node is a Gaussian bump at its position plus two weaker
    false bumps and Gaussian noise; the type map of an arc is a bump at its
    source's position, largest for the planted type, plus noise. Decoding the
    unaries alone is often wrong; the tree and the types make it right.

    Parameters
    ----------
    n : int, default=20
        Number of poses.
    grid : (int, int), default=(16, 16)
        Grid shape (H, W), each at least 4.
    n_types : int, default=13
        Types per arc (13 in Osokin et al. (2016), App. I.4).
    random_state : None, int or numpy.random.Generator, optional
        Seed for the poses and maps.

    Returns
    -------
    X : list of (unary, pairwise, offsets)
        float64 arrays of shapes (26, H, W), (50, T, H, W) and (50, T, 2) (the
        offsets are the same read-only array for every example), the input of
        ``ssvm_oracles.PoseModel``.
    Y : list of numpy.ndarray
        int32 labellings ``[x_0, y_0, ..., x_25, y_25, t_0, ..., t_49]``.

    Examples
    --------
    >>> X, Y = lsp_like(2, grid=(8, 8), n_types=3, random_state=0)
    >>> [a.shape for a in X[0]], Y[0].shape
    ([(26, 8, 8), (50, 3, 8, 8), (50, 3, 2)], (102,))
    """
    n = check_int(n, "n", minimum=1)
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise ValueError(f"grid must be a pair (H, W), got {grid!r}")
    H = check_int(grid[0], "grid[0] (H)", minimum=4)
    W = check_int(grid[1], "grid[1] (W)", minimum=4)
    n_types = check_int(n_types, "n_types", minimum=1)
    rng = np.random.default_rng(random_state)
    parents = np.array(POSE_TREE_PARENTS)
    children = np.flatnonzero(parents >= 0)
    offsets = _offsets(H, W, n_types)
    X, Y = [], []
    for _ in range(n):
        positions, types = _sample_pose(rng, parents, children, offsets, H, W)
        while np.array_equal(*positions[list(SCALE_PARTS)]):   # the loss scale must be > 0
            positions, types = _sample_pose(rng, parents, children, offsets, H, W)
        X.append((_unary_maps(rng, positions, H, W),
                  _type_maps(rng, parents, children, positions, types, n_types, H, W),
                  offsets))
        y = np.concatenate([positions.ravel(), np.repeat(types, 2)]).astype(np.int32)
        Y.append(y)
    return X, Y


@functools.cache
def _offsets(H: int, W: int, n_types: int) -> np.ndarray:
    """Planted mean displacements (50, T, 2), read-only: arc 2k child - parent, 2k+1 reverse."""
    parents = np.array(POSE_TREE_PARENTS)
    nodes = pose_tree_nodes(_TEMPLATE) * np.array([W, H]) / 16.0
    angles = np.linspace(-_MAX_ANGLE, _MAX_ANGLE, n_types) if n_types > 1 else np.zeros(1)
    rotation = np.stack([np.stack([np.cos(angles), -np.sin(angles)], -1),
                         np.stack([np.sin(angles), np.cos(angles)], -1)], -2)  # (T, 2, 2)
    out = []
    for c in np.flatnonzero(parents >= 0):
        displacement = rotation @ (nodes[c] - nodes[parents[c]])  # (T, 2)
        out += [displacement, -displacement]
    result = np.stack(out)
    result.flags.writeable = False
    return result


def _sample_pose(rng, parents, children, offsets, H, W):
    """Positions (26, 2) as integer (x, y) and one type per edge, root to leaves."""
    T = offsets.shape[1]
    positions = np.zeros((len(parents), 2), dtype=np.int64)
    root = int(np.flatnonzero(parents < 0)[0])
    neck = np.array([_NECK_AT[0] * W, _NECK_AT[1] * H]) + rng.normal(scale=0.5, size=2)
    positions[root] = _clip(neck, H, W)
    types = np.zeros(len(children), dtype=np.int64)
    edge_of = {int(c): k for k, c in enumerate(children)}
    for c in _root_first(parents):
        if parents[c] < 0:
            continue
        k = edge_of[c]
        types[k] = int(np.clip(np.rint(T // 2 + rng.normal(scale=T / 4)), 0, T - 1))
        target = positions[parents[c]] + offsets[2 * k, types[k]]
        positions[c] = _clip(target + rng.normal(scale=_POSITION_NOISE, size=2), H, W)
    return positions, types


def _root_first(parents: np.ndarray) -> list[int]:
    order = [int(np.flatnonzero(parents < 0)[0])]
    for p in order:
        order.extend(int(c) for c in np.flatnonzero(parents == p))
    return order


def _clip(point: np.ndarray, H: int, W: int) -> np.ndarray:
    return np.clip(np.rint(point), 0, [W - 1, H - 1]).astype(np.int64)


def _bump(center, H: int, W: int) -> np.ndarray:
    ys, xs = np.mgrid[0:H, 0:W]
    return np.exp(-((xs - center[0]) ** 2 + (ys - center[1]) ** 2) / (2 * _MAP_SIGMA ** 2))


def _unary_maps(rng, positions, H, W) -> np.ndarray:
    maps = np.stack([_bump(p, H, W) for p in positions])
    for p in range(len(positions)):
        for _ in range(_DISTRACTORS):
            fake = rng.uniform([0, 0], [W - 1, H - 1])
            maps[p] += rng.uniform(0.3, 0.8) * _bump(fake, H, W)
    return maps + rng.normal(scale=_MAP_NOISE, size=maps.shape)


def _type_maps(rng, parents, children, positions, types, T, H, W) -> np.ndarray:
    maps = np.empty((2 * len(children), T, H, W))
    t = np.arange(T)
    for k, c in enumerate(children):
        for a, source in ((2 * k, c), (2 * k + 1, parents[c])):
            weight = np.exp(-0.5 * (t - types[k]) ** 2)
            maps[a] = weight[:, None, None] * _bump(positions[source], H, W)
    return maps + rng.normal(scale=_MAP_NOISE, size=maps.shape)


"""Seeded HorseSeg-like superpixel graphs with learnable labels (``horseseg_like``)."""

from __future__ import annotations

import numpy as np
import scipy.spatial

from ssvm_data.horseseg import (
    HORSESEG_SIZES,
    N_PAIRWISE,
    N_SUPERPIXELS,
    N_UNARY,
    SuperpixelImage,
)
from ssvm_data.synthetic._checks import RandomState, check_int

_HISTOGRAM_DRAWS = 100  # samples per node histogram
_MAX_MIXING = 0.6  # nodes draw up to this share of samples from the other class
_N_DISTANCES = 9  # chi^2 distances per edge (the paper: 9 pairs of histograms)
_ETA_RANGE = (-5.0, 5.0)  # log2 of the bandwidths eta of exp(-eta d)


def horseseg_like(
    n_images: int | None = None,
    *,
    size: str = "small",
    n_nodes: int = N_SUPERPIXELS,
    n_unary: int = N_UNARY,
    n_pairwise: int = N_PAIRWISE,
    random_state: RandomState = None,
) -> tuple[list[SuperpixelImage], list[np.ndarray]]:
    """Generate superpixel graphs shaped like HorseSeg, with learnable labels.

    Each image is a random planar segmentation of the unit square: ``n_nodes``
    uniform seed points, adjacent when their Voronoi cells share an edge
    (the Delaunay triangulation of the seeds, about 3 ``n_nodes`` edges).  The
    object is a random ellipse; a superpixel is labelled 1 when its seed lies
    inside it.

    Unary features: a constant 1, then a histogram of 100 draws over
    ``n_unary - 1`` bins from a mixture of the class's fixed bin distribution
    (drawn once per call) and, with a per-node weight uniform in [0, 0.6], the
    other class's, so some superpixels look like the other class and the
    pairwise terms matter; the histogram is scaled to unit Euclidean norm.
    Pairwise features: a constant 1, then exp(-eta d_g) for chi^2 distances d_g
    between the two nodes' (sum-to-one) histograms on 9 groups of bins and eta
    in 2^-5 ... 2^5 (11 values for the default 100 features, as in Osokin et al. (2016)
    App. I.3), all in (0, 1].

    Parameters
    ----------
    n_images : int, optional
        Number of images; defaults to the image count of ``size``.
    size : {"small", "medium", "large"}, default="small"
        147, 6,121 or 25,438 images, the sizes of HorseSeg (used when
        ``n_images`` is None).  At the default feature counts one image takes
        about 2.4 MB (float64), so the larger sizes need many gigabytes.
    n_nodes : int, default=147
        Superpixels per image (every image has this many; HorseSeg averages 147).
    n_unary : int, default=1969
        Unary features per node, at least 1.
    n_pairwise : int, default=100
        Pairwise features per edge, at least 1.
    random_state : None, int or numpy.random.Generator, optional
        Seed for the class distributions, the segmentations and the features.

    Returns
    -------
    X : list of SuperpixelImage
        ``(unary (n_nodes, n_unary), edges (n_edges, 2) int64, pairwise (n_edges,
        n_pairwise))``, float64 and C-contiguous, as :func:`load_horseseg`.
    Y : list of numpy.ndarray
        int32 arrays of n_nodes labels in {0, 1}.

    Examples
    --------
    >>> X, Y = horseseg_like(2, n_nodes=20, n_unary=10, n_pairwise=5, random_state=0)
    >>> X[0].unary.shape, X[0].pairwise.shape[1], Y[0].dtype
    ((20, 10), 5, dtype('int32'))
    """
    if size not in HORSESEG_SIZES:
        raise ValueError(f"unknown HorseSeg size {size!r}; choose one of {list(HORSESEG_SIZES)}")
    n_images = HORSESEG_SIZES[size] if n_images is None else check_int(
        n_images, "n_images", minimum=1)
    n_nodes = check_int(n_nodes, "n_nodes", minimum=1)
    n_unary = check_int(n_unary, "n_unary", minimum=1)
    n_pairwise = check_int(n_pairwise, "n_pairwise", minimum=1)
    rng = np.random.default_rng(random_state)
    n_bins = n_unary - 1
    shared = rng.dirichlet(np.ones(n_bins)) if n_bins else np.zeros(0)
    classes = [0.5 * shared + 0.5 * rng.dirichlet(np.full(n_bins, 0.1)) for _ in range(2)]
    X, Y = [], []
    for _ in range(n_images):
        seeds = rng.random((n_nodes, 2))
        edges = _adjacency(seeds)
        y = _ellipse_labels(rng, seeds)
        histograms = _histograms(rng, y, classes)
        pairwise = np.hstack([np.ones((len(edges), 1)),
                              _similarities(histograms, edges, n_pairwise - 1)])
        # L2-normalised histograms: with sum-to-one bins the constant feature would dominate
        # psi and BCFW would crawl (the histogram part of psi would be ~100 times smaller).
        norms = np.linalg.norm(histograms, axis=1, keepdims=True)
        unary = np.hstack([np.ones((n_nodes, 1)),
                           np.divide(histograms, norms, out=histograms, where=norms > 0)])
        X.append(SuperpixelImage(unary, edges, pairwise))
        Y.append(y)
    return X, Y


def _adjacency(seeds: np.ndarray) -> np.ndarray:
    """Sorted unique Delaunay edges of the seeds (a path for fewer than 3 seeds)."""
    n = len(seeds)
    if n < 3:
        return np.array([[0, 1]] if n == 2 else np.zeros((0, 2)), dtype=np.int64).reshape(-1, 2)
    triangles = scipy.spatial.Delaunay(seeds).simplices
    pairs = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [0, 2]]])
    return np.unique(np.sort(pairs, axis=1), axis=0).astype(np.int64)


def _ellipse_labels(rng: np.random.Generator, seeds: np.ndarray) -> np.ndarray:
    centre = rng.uniform(0.3, 0.7, size=2)
    axes = rng.uniform(0.2, 0.4, size=2)
    angle = rng.uniform(0, np.pi)
    rotation = np.array([[np.cos(angle), np.sin(angle)], [-np.sin(angle), np.cos(angle)]])
    local = (seeds - centre) @ rotation.T / axes
    return (np.sum(local ** 2, axis=1) <= 1.0).astype(np.int32)


def _histograms(rng: np.random.Generator, y: np.ndarray, classes) -> np.ndarray:
    """Per node: 100 draws, a binomial share of them from the other class's bins."""
    n_bins = len(classes[0])
    counts = np.zeros((len(y), n_bins))
    if n_bins == 0:
        return counts
    foreign = rng.binomial(_HISTOGRAM_DRAWS, rng.uniform(0, _MAX_MIXING, size=len(y)))
    for c in (0, 1):
        own, other = y == c, y != c
        counts[own] += rng.multinomial(_HISTOGRAM_DRAWS - foreign[own], classes[c])
        counts[other] += rng.multinomial(foreign[other], classes[c])
    return counts / _HISTOGRAM_DRAWS


def _similarities(histograms: np.ndarray, edges: np.ndarray, n_features: int) -> np.ndarray:
    """exp(-eta d_g(p, q)) for chi^2 distances d_g on groups of bins, eta on a log2 grid."""
    n_bins = histograms.shape[1]
    if n_features == 0:
        return np.zeros((len(edges), 0))
    if n_bins == 0:
        return np.ones((len(edges), n_features))
    a, b = histograms[edges[:, 0]], histograms[edges[:, 1]]
    total = a + b
    terms = np.divide((a - b) ** 2, total, out=np.zeros_like(total), where=total > 0)
    starts = [chunk[0] for chunk in np.array_split(np.arange(n_bins), min(_N_DISTANCES, n_bins))]
    distances = 0.5 * np.add.reduceat(terms, starts, axis=1)
    n_eta = -(-n_features // len(starts))
    etas = 2.0 ** np.linspace(*_ETA_RANGE, n_eta) if n_eta > 1 else np.ones(1)
    features = np.exp(-distances[:, :, None] * etas[None, None, :])
    features = features.reshape(len(edges), len(starts) * n_eta)
    return np.ascontiguousarray(features[:, :n_features])

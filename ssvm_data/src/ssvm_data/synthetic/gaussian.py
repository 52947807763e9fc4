"""Seeded Gaussian problems: an HMM with Gaussian emissions, and Gaussian blobs."""

from __future__ import annotations

import numpy as np

from ssvm_data.synthetic._checks import RandomState, check_int, check_length
from ssvm_data.synthetic._markov import sample_chains

_MEAN_SCALE = 1.5  # spread of the Gaussian means of chain() and multiclass()


def chain(
    n: int = 50,
    *,
    length: int | tuple[int, int] = 5,
    n_states: int = 3,
    n_features: int = 4,
    random_state: RandomState = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Generate sequences from a random hidden Markov model with Gaussian emissions.

    The start and transition probabilities are drawn from a flat Dirichlet, the
    per-state means from a normal distribution with standard deviation 1.5. The
    features of a position are its state's mean plus standard normal noise.

    Parameters
    ----------
    n : int, default=50
        Number of sequences.
    length : int or (int, int), default=5
        Sequence length, or an inclusive ``(min, max)`` range to draw it from.
    n_states : int, default=3
        Number of hidden states (labels), at least 2.
    n_features : int, default=4
        Number of features per position.
    random_state : None, int or numpy.random.Generator, optional
        Seed for the model and the samples.

    Returns
    -------
    X : list of numpy.ndarray
        float64 arrays of shape ``(T_i, n_features)``.
    Y : list of numpy.ndarray
        int32 arrays of shape ``(T_i,)`` with values in ``[0, n_states)``.

    Examples
    --------
    >>> X, Y = chain(2, length=(2, 4), random_state=0)
    >>> [x.shape[1] for x in X], [int(y.max()) < 3 for y in Y]
    ([4, 4], [True, True])
    """
    n = check_int(n, "n", minimum=1)
    low, high = check_length(length)
    n_states = check_int(n_states, "n_states", minimum=2)
    n_features = check_int(n_features, "n_features", minimum=1)
    rng = np.random.default_rng(random_state)
    start = rng.dirichlet(np.ones(n_states))
    transition = rng.dirichlet(np.ones(n_states), size=n_states)
    means = rng.normal(scale=_MEAN_SCALE, size=(n_states, n_features))
    Y = sample_chains(rng, start, transition, rng.integers(low, high + 1, size=n))
    X = [means[y] + rng.normal(size=(len(y), n_features)) for y in Y]
    return X, Y


def multiclass(
    n: int = 100,
    *,
    n_features: int = 5,
    n_classes: int = 3,
    random_state: RandomState = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Generate Gaussian blobs, one per class.

    The class centres are drawn from a normal distribution with standard deviation
    1.5, the classes uniformly, and each sample is its centre plus standard normal
    noise.

    Parameters
    ----------
    n : int, default=100
        Number of samples.
    n_features : int, default=5
        Number of features.
    n_classes : int, default=3
        Number of classes, at least 2.
    random_state : None, int or numpy.random.Generator, optional
        Seed for the centres and the samples.

    Returns
    -------
    X : numpy.ndarray
        float64 array of shape ``(n, n_features)``.
    y : numpy.ndarray
        int32 array of shape ``(n,)`` with values in ``[0, n_classes)``.

    Examples
    --------
    >>> X, y = multiclass(10, random_state=0)
    >>> X.shape, y.dtype
    ((10, 5), dtype('int32'))
    """
    n = check_int(n, "n", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    rng = np.random.default_rng(random_state)
    centres = rng.normal(scale=_MEAN_SCALE, size=(n_classes, n_features))
    y = rng.integers(n_classes, size=n).astype(np.int32)
    return centres[y] + rng.normal(size=(n, n_features)), y

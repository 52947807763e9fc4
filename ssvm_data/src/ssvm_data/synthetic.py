"""Seeded generators of small structured-prediction problems.

Every generator takes ``random_state`` (None, an int or a `numpy.random.Generator`,
passed to `numpy.random.default_rng`); the same seed gives identical output. Tests,
benchmarks and examples share these generators.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from ssvm_data.horseseg import horseseg_like
from ssvm_data.synthetic_conll import conll_like
from ssvm_data.synthetic_matching import matching
from ssvm_data.synthetic_pose import lsp_like

__all__ = ["chain", "conll_like", "horseseg_like", "lsp_like", "matching", "multiclass",
           "ocr_like"]

RandomState = int | np.random.Generator | None

#: Image shape of one OCR-like letter (rows, columns), stored row-major.
GLYPH_SHAPE = (16, 8)
N_LETTERS = 26

# Fixed seeds: the glyphs and the letter bigrams are the same for every random_state.
_GLYPH_SEED = 16032003
_BIGRAM_SEED = 26032003
_STROKES_PER_GLYPH = 4
_MIN_GLYPH_DISTANCE = 20  # Hamming distance between any two glyphs
_SUCCESSORS = 4  # likely next letters per letter
_BIGRAM_FLOOR = 0.05  # probability mass spread uniformly over all next letters
_SHIFT_PROBABILITY = 0.25
_FLIP_PROBABILITY = 0.1
_OCR_LENGTHS = (3, 14)
_MEAN_SCALE = 1.5  # spread of the Gaussian means of chain() and multiclass()


def ocr_like(
    n_words: int = 200, *, random_state: RandomState = None
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Generate noisy OCR-shaped words with a letter bigram structure.

    Each of the 26 letters has a fixed binary 16x8 prototype glyph (a few random
    strokes, the same for every `random_state`). A word has 3 to 14 letters that
    follow a fixed sparse Markov chain: from each letter, four next letters carry
    95% of the probability. Each letter instance is its glyph, shifted by one pixel
    in a random direction with probability 0.25, then with each pixel flipped with
    probability 0.1.

    Parameters
    ----------
    n_words : int, default=200
        Number of words.
    random_state : None, int or numpy.random.Generator, optional
        Seed for the lengths, letters and noise.

    Returns
    -------
    X : list of numpy.ndarray
        C-contiguous float64 arrays of shape ``(T_i, 128)`` with 0/1 values, like
        :func:`ssvm_data.load_ocr`.
    Y : list of numpy.ndarray
        int32 arrays of shape ``(T_i,)`` with values 0..25.

    Examples
    --------
    >>> X, Y = ocr_like(3, random_state=0)
    >>> X[0].shape[1], X[0].dtype, Y[0].dtype
    (128, dtype('float64'), dtype('int32'))
    """
    n_words = _check_int(n_words, "n_words", minimum=1)
    rng = np.random.default_rng(random_state)
    start, transition = _bigrams()
    lengths = rng.integers(_OCR_LENGTHS[0], _OCR_LENGTHS[1] + 1, size=n_words)
    Y = _sample_chains(rng, start, transition, lengths)
    images = _noisy_letters(rng, _glyphs()[np.concatenate(Y)])
    X = np.split(images.reshape(len(images), -1).astype(np.float64), np.cumsum(lengths)[:-1])
    return X, Y


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
    n = _check_int(n, "n", minimum=1)
    low, high = _check_length(length)
    n_states = _check_int(n_states, "n_states", minimum=2)
    n_features = _check_int(n_features, "n_features", minimum=1)
    rng = np.random.default_rng(random_state)
    start = rng.dirichlet(np.ones(n_states))
    transition = rng.dirichlet(np.ones(n_states), size=n_states)
    means = rng.normal(scale=_MEAN_SCALE, size=(n_states, n_features))
    Y = _sample_chains(rng, start, transition, rng.integers(low, high + 1, size=n))
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
    n = _check_int(n, "n", minimum=1)
    n_features = _check_int(n_features, "n_features", minimum=1)
    n_classes = _check_int(n_classes, "n_classes", minimum=2)
    rng = np.random.default_rng(random_state)
    centres = rng.normal(scale=_MEAN_SCALE, size=(n_classes, n_features))
    y = rng.integers(n_classes, size=n).astype(np.int32)
    return centres[y] + rng.normal(size=(n, n_features)), y


# --- argument checks -------------------------------------------------------------


def _check_int(value: object, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def _check_length(length: int | tuple[int, int]) -> tuple[int, int]:
    """Return the inclusive (min, max) length range."""
    if isinstance(length, (tuple, list)):
        if len(length) != 2:
            raise ValueError(f"length must be an integer or a (min, max) pair, got {length!r}")
        low = _check_int(length[0], "length[0] (the minimum length)", minimum=1)
        high = _check_int(length[1], "length[1] (the maximum length)", minimum=low)
        return low, high
    length = _check_int(length, "length", minimum=1)
    return length, length


# --- shared machinery --------------------------------------------------------------


def _sample_chains(rng: np.random.Generator, start: np.ndarray, transition: np.ndarray,
                   lengths: np.ndarray) -> list[np.ndarray]:
    """Draw one Markov chain per length, all chains advanced together."""
    uniforms = rng.random((len(lengths), lengths.max()))
    states = np.empty(uniforms.shape, dtype=np.int32)
    states[:, 0] = _inverse_cdf(np.cumsum(start)[None, :], uniforms[:, 0])
    cdf = np.cumsum(transition, axis=1)
    for t in range(1, uniforms.shape[1]):
        states[:, t] = _inverse_cdf(cdf[states[:, t - 1]], uniforms[:, t])
    return [states[i, :length].copy() for i, length in enumerate(lengths)]


def _inverse_cdf(cdf: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Index of the first cdf entry above each uniform (cdf rows broadcast)."""
    return np.minimum((uniforms[:, None] >= cdf).sum(axis=1), cdf.shape[-1] - 1)


def _noisy_letters(rng: np.random.Generator, glyphs: np.ndarray) -> np.ndarray:
    """Shift some glyphs by one pixel (zero fill), then flip pixels at random."""
    n, height, width = glyphs.shape
    moves = np.array([(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)])
    shifted = rng.random(n) < _SHIFT_PROBABILITY
    move = moves[np.where(shifted, rng.integers(1, len(moves), size=n), 0)]
    padded = np.pad(glyphs, ((0, 0), (1, 1), (1, 1)))
    rows = np.arange(height)[None, :] + 1 - move[:, :1]
    cols = np.arange(width)[None, :] + 1 - move[:, 1:]
    images = padded[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]
    return images ^ (rng.random(images.shape) < _FLIP_PROBABILITY)


@functools.cache
def _glyphs() -> np.ndarray:
    """The fixed prototype of each letter, bool array of shape (26, 16, 8), read-only."""
    rng = np.random.default_rng(_GLYPH_SEED)
    glyphs: list[np.ndarray] = []
    while len(glyphs) < N_LETTERS:
        glyph = _random_glyph(rng)
        if all((glyph ^ other).sum() >= _MIN_GLYPH_DISTANCE for other in glyphs):
            glyphs.append(glyph)
    result = np.stack(glyphs)
    result.flags.writeable = False
    return result


def _random_glyph(rng: np.random.Generator) -> np.ndarray:
    """A few straight strokes inside a one-pixel margin."""
    height, width = GLYPH_SHAPE
    glyph = np.zeros(GLYPH_SHAPE, dtype=bool)
    for _ in range(_STROKES_PER_GLYPH):
        (r0, c0), (r1, c1) = rng.integers((1, 1), (height - 1, width - 1), size=(2, 2))
        steps = max(abs(r1 - r0), abs(c1 - c0)) + 1
        glyph[np.rint(np.linspace(r0, r1, steps)).astype(int),
              np.rint(np.linspace(c0, c1, steps)).astype(int)] = True
    return glyph


@functools.cache
def _bigrams() -> tuple[np.ndarray, np.ndarray]:
    """Fixed start distribution (26,) and sparse-ish transition matrix (26, 26)."""
    rng = np.random.default_rng(_BIGRAM_SEED)
    transition = np.full((N_LETTERS, N_LETTERS), _BIGRAM_FLOOR / N_LETTERS)
    for row in transition:
        successors = rng.choice(N_LETTERS, size=_SUCCESSORS, replace=False)
        row[successors] += (1 - _BIGRAM_FLOOR) * rng.dirichlet(np.ones(_SUCCESSORS))
    start = rng.dirichlet(np.ones(N_LETTERS))
    start.flags.writeable = False
    transition.flags.writeable = False
    return start, transition

"""Seeded OCR-like words: fixed letter glyphs, letter bigrams, pixel noise."""

from __future__ import annotations

import functools

import numpy as np

from ssvm_data.synthetic._checks import RandomState, check_int
from ssvm_data.synthetic._markov import sample_chains

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
    n_words = check_int(n_words, "n_words", minimum=1)
    rng = np.random.default_rng(random_state)
    start, transition = _bigrams()
    lengths = rng.integers(_OCR_LENGTHS[0], _OCR_LENGTHS[1] + 1, size=n_words)
    Y = sample_chains(rng, start, transition, lengths)
    images = _noisy_letters(rng, _glyphs()[np.concatenate(Y)])
    X = np.split(images.reshape(len(images), -1).astype(np.float64), np.cumsum(lengths)[:-1])
    return X, Y


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

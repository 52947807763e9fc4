"""Seeded CoNLL-like sentences: IOB chunk tags, POS tags and words, CRFsuite attributes.

Re-exported as :func:`ssvm_data.synthetic.conll_like`.
"""

from __future__ import annotations

import functools

import numpy as np

from ssvm_data.conll import CHUNK_TAGS, Sentences, extract_attributes
from ssvm_data.synthetic._checks import check_int

# Fixed seed: the "language" (chunk grammar, tag -> POS -> word tables) is the same for
# every random_state; random_state draws the sentences.
_LANGUAGE_SEED = 2000
#: Chunk types with their relative frequencies in the CoNLL-2000 training file
#: (chunks, i.e. B- tags, and single O tokens) and mean chunk lengths in tokens.
_CHUNKS = {
    "NP": (55081, 2.2), "VP": (21467, 1.6), "PP": (21281, 1.0), "O": (27902, 1.0),
    "ADVP": (4227, 1.1), "SBAR": (2207, 1.0), "ADJP": (2060, 1.3), "PRT": (556, 1.0),
    "CONJP": (56, 1.3), "INTJ": (31, 1.3), "LST": (10, 1.0), "UCP": (2, 3.0),
}
_N_POS = 44
_POS_PER_TAG = 3  # likely POS tags of each chunk tag (plus a small floor on all)
_POS_FLOOR = 0.02
_MEAN_LENGTH = 23.7  # tokens per sentence in the training file
_MAX_LENGTH = 78
_ZIPF = 1.1


@functools.cache
def _language(n_words: int):
    """Chunk-type Markov chain, tag -> POS and POS -> word probabilities."""
    rng = np.random.default_rng(_LANGUAGE_SEED)
    names = list(_CHUNKS)
    freq = np.array([_CHUNKS[name][0] for name in names], dtype=float)
    freq /= freq.sum()
    # each row: the marginal frequencies, perturbed per previous chunk type
    transition = rng.dirichlet(200.0 * freq + 0.01, size=len(names))
    pos = np.full((len(CHUNK_TAGS), _N_POS), _POS_FLOOR / _N_POS)
    for tag in range(len(CHUNK_TAGS)):
        likely = rng.choice(_N_POS, size=_POS_PER_TAG, replace=False)
        pos[tag, likely] += (1.0 - _POS_FLOOR) * rng.dirichlet(np.ones(_POS_PER_TAG))
    words_of_pos = np.array_split(rng.permutation(n_words), _N_POS)
    zipf = [1.0 / np.arange(1, len(w) + 1) ** _ZIPF for w in words_of_pos]
    return names, freq, transition, pos, words_of_pos, [z / z.sum() for z in zipf]


def conll_like(
    n_sentences: int = 200,
    *,
    n_words: int = 5000,
    min_count: int = 1,
    random_state: int | np.random.Generator | None = None,
) -> tuple[list, list[np.ndarray]]:
    """Generate CoNLL-2000-like chunking data with the loader's sparse attributes.

    Sentences are sequences of chunks whose types (NP, VP, PP, O, ...) follow a
    fixed Markov chain with the chunk frequencies of the CoNLL-2000 training file;
    a chunk of type X is tagged ``B-X I-X ...``. Each token draws a POS tag (44
    tags) from a sparse distribution of its chunk tag, and a word from a Zipf
    law over that POS tag's share of an ``n_words`` vocabulary. Sentence lengths
    are 1 + Poisson(22.7), at most 78 tokens. The tokens then go through the
    same attribute extraction as :func:`ssvm_data.load_conll2000` (CRFsuite's
    chunking templates), with the attributes built from these sentences.

    Parameters
    ----------
    n_sentences : int, default=200
        Number of sentences.
    n_words : int, default=5000
        Vocabulary size (at least 44, one word per POS tag).
    min_count : int, default=1
        As in :func:`ssvm_data.load_conll2000`.
    random_state : None, int or numpy.random.Generator, optional
        Seed for the sentences (the chunk grammar and word tables are fixed).

    Returns
    -------
    X : list of scipy.sparse.csr_array
        ``(T_i, n_attributes)`` binary float64 token x attribute matrices.
    Y : list of numpy.ndarray
        int32 arrays of shape ``(T_i,)`` indexing ``ssvm_data.conll.CHUNK_TAGS``
        (23 tags).

    Examples
    --------
    >>> X, Y = conll_like(3, random_state=0)
    >>> X[0].shape[0] == Y[0].shape[0], X[0].format, int(max(y.max() for y in Y)) < 23
    (True, 'csr', True)
    """
    n_sentences = check_int(n_sentences, "n_sentences", minimum=1)
    n_words = check_int(n_words, "n_words", minimum=_N_POS)
    rng = np.random.default_rng(random_state)
    names, freq, transition, pos_probs, words_of_pos, zipf = _language(n_words)
    tag_of = {tag: k for k, tag in enumerate(CHUNK_TAGS)}
    lengths = np.minimum(1 + rng.poisson(_MEAN_LENGTH - 1.0, size=n_sentences), _MAX_LENGTH)
    labels = np.concatenate([_chunk_tags(rng, length, names, freq, transition, tag_of)
                             for length in lengths.tolist()])
    pos = _draw_rows(rng, pos_probs[labels])
    words = np.empty(len(labels), dtype=np.int64)
    for p in np.unique(pos).tolist():
        where = np.flatnonzero(pos == p)
        words[where] = words_of_pos[p][rng.choice(len(zipf[p]), size=len(where), p=zipf[p])]
    sentences = Sentences([f"w{k}" for k in words.tolist()], [f"P{k}" for k in pos.tolist()],
                          labels, lengths.astype(np.intp))
    X, Y, _, _, _ = extract_attributes(sentences, min_count=min_count)
    return X, Y


def _chunk_tags(rng: np.random.Generator, length: int, names: list[str], freq: np.ndarray,
                transition: np.ndarray, tag_of: dict[str, int]) -> np.ndarray:
    """IOB tags of one sentence: chunks from the Markov chain, cut at `length` tokens."""
    tags: list[int] = []
    chunk = rng.choice(len(names), p=freq)
    while len(tags) < length:
        name = names[chunk]
        if name == "O":
            tags.append(tag_of["O"])
        else:
            size = 1 + rng.poisson(_CHUNKS[name][1] - 1.0)
            tags += [tag_of[f"B-{name}"]] + [tag_of[f"I-{name}"]] * (size - 1)
        chunk = rng.choice(len(names), p=transition[chunk])
    return np.array(tags[:length], dtype=np.int32)


def _draw_rows(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One index per row of `probs` (rows sum to 1), by inverting the row's CDF."""
    cdf = np.cumsum(probs, axis=1)
    draws = (rng.random(len(probs))[:, None] * cdf[:, -1:] >= cdf).sum(axis=1)
    return np.minimum(draws, probs.shape[1] - 1)

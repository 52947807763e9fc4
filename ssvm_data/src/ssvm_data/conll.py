"""CoNLL-2000 text chunking (Tjong Kim Sang & Buchholz, CoNLL 2000).

Sentences are read from the shared-task files (``word POS chunk`` per line,
a blank line between sentences) and turned into sparse binary token x
attribute matrices with the attribute templates of CRFsuite's chunking
example (Osokin et al. (2016), App. I.2 uses these attributes).
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ssvm_data import _io

#: Where the shared-task organisers published the files.
CONLL_URLS = {
    "train": "https://www.clips.uantwerpen.be/conll2000/chunking/train.txt.gz",
    "test": "https://www.clips.uantwerpen.be/conll2000/chunking/test.txt.gz",
}
#: MD5 of the decompressed original files.
CONLL_MD5 = {
    "train": "2e2f24e90e20fcb910ab2251b5ed8cd0",
    "test": "56944df34be553b72a2a634e539a0951",
}
#: The train/test splits of :func:`load_conll2000`.
SPLITS = {
    "full": "train on all 8,936 training sentences, test on the 2,012 test sentences",
    "small": "train on the first 1,000 training sentences, test on the 2,012 test sentences",
}
SMALL_SIZE = 1000
#: The 23 chunk tags of the union of both files (``I-LST`` occurs only in the test
#: file); label k of ``Y`` is ``CHUNK_TAGS[k]``.
CHUNK_TAGS = (
    "B-ADJP", "B-ADVP", "B-CONJP", "B-INTJ", "B-LST", "B-NP", "B-PP", "B-PRT", "B-SBAR",
    "B-UCP", "B-VP", "I-ADJP", "I-ADVP", "I-CONJP", "I-INTJ", "I-LST", "I-NP", "I-PP",
    "I-PRT", "I-SBAR", "I-UCP", "I-VP", "O",
)
#: CRFsuite's chunking templates: each is a tuple of (field, offset) pairs; a token
#: gets the attribute ``name=value`` when every offset stays inside the sentence.
TEMPLATES = (
    (("w", -2),), (("w", -1),), (("w", 0),), (("w", 1),), (("w", 2),),
    (("w", -1), ("w", 0)), (("w", 0), ("w", 1)),
    (("pos", -2),), (("pos", -1),), (("pos", 0),), (("pos", 1),), (("pos", 2),),
    (("pos", -2), ("pos", -1)), (("pos", -1), ("pos", 0)), (("pos", 0), ("pos", 1)),
    (("pos", 1), ("pos", 2)),
    (("pos", -2), ("pos", -1), ("pos", 0)), (("pos", -1), ("pos", 0), ("pos", 1)),
    (("pos", 0), ("pos", 1), ("pos", 2)),
)
#: Attributes CRFsuite's example adds to the first and the last token.
BOS, EOS = "__BOS__", "__EOS__"

_FILES = {split: (f"{split}.txt.gz", f"{split}.txt") for split in ("train", "test")}
_TAG_INDEX = {tag: k for k, tag in enumerate(CHUNK_TAGS)}


class Sentences(NamedTuple):
    """Tokens of a file, sentence after sentence."""

    words: list[str]
    pos: list[str]
    labels: np.ndarray  # (n_tokens,) int32 indices into CHUNK_TAGS
    lengths: np.ndarray  # (n_sentences,) tokens per sentence


@dataclass(frozen=True)
class ConllVocabulary:
    """The attribute and tag vocabularies of a loaded CoNLL data set.

    Attributes
    ----------
    attributes : tuple of str
        CRFsuite-style names, ``"w[-1]|w[0]=He|reckons"``, ``"pos[0]=NN"``,
        ``"__BOS__"``; column ``j`` of every ``X[i]`` is ``attributes[j]``.
    tags : tuple of str
        The chunk tags; label ``k`` is ``tags[k]`` (:data:`CHUNK_TAGS`).
    counts : numpy.ndarray
        Training tokens on which each attribute is active.
    """

    attributes: tuple[str, ...]
    tags: tuple[str, ...]
    counts: np.ndarray

    @property
    def n_attributes(self) -> int:
        return len(self.attributes)

    @property
    def n_tags(self) -> int:
        return len(self.tags)


class _Attributes(NamedTuple):
    """Attribute ids of the training data: one sorted key table per template."""

    words: dict[str, int]  # word -> id (0..V-1); unknown words get V
    pos: dict[str, int]
    keys: list[np.ndarray]  # per template (and BOS, EOS): sorted kept keys
    offsets: np.ndarray  # first attribute id of each template
    counts: np.ndarray


def load_conll2000(
    split: str = "full",
    *,
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
    download: bool | None = None,
    min_count: int = 1,
    return_vocab: bool = False,
):
    """Load CoNLL-2000 chunking as sparse token x attribute matrices.

    Parameters
    ----------
    split : {"full", "small"}, default="full"
        ``"full"`` trains on all 8,936 training sentences; ``"small"`` on the
        first 1,000 (for quick runs). Both test on the 2,012 test sentences.
    path : str or os.PathLike, optional
        A folder holding ``train.txt[.gz]`` and ``test.txt[.gz]``, searched first.
    data_home : str or os.PathLike, optional
        Folder whose ``conll2000/`` sub-folder is searched; defaults to
        ``$SSVM_DATA_HOME``.
    download : bool, optional
        Whether to download the original files when none are found locally. None
        (the default) downloads unless ``$SSVM_OFFLINE`` is set (non-empty).
    min_count : int, default=1
        Keep the attributes active on at least this many training tokens
        (1 keeps all, as CRFsuite does by default).
    return_vocab : bool, default=False
        Also return a :class:`ConllVocabulary`.

    Returns
    -------
    X, Y, X_test, Y_test : lists
        ``X[i]`` is a ``scipy.sparse.csr_array`` of shape ``(T_i, n_attributes)``
        with float64 ones at the active attributes of each token (indices sorted,
        no duplicates); ``Y[i]`` is an int32 array of shape ``(T_i,)`` with values
        in ``0..22`` indexing :data:`CHUNK_TAGS`.
    vocab : ConllVocabulary
        Only with ``return_vocab=True``.

    Raises
    ------
    ValueError
        If `split` or `min_count` is invalid, or a file is malformed (wrong
        column count, unknown chunk tag, bad or truncated gzip); the message names
        the file and the line.
    FileNotFoundError
        If `path` does not exist, or no files are found and downloading is
        disabled or fails; the message says where to put which files.

    Notes
    -----
    Attributes follow CRFsuite's chunking example (``example/chunking.py``): the
    words ``w[-2..2]`` and POS tags ``pos[-2..2]`` around the token, the word
    bigrams ``w[-1]|w[0]`` and ``w[0]|w[1]``, the four POS bigrams and three POS
    trigrams inside the window, and ``__BOS__``/``__EOS__`` on the first/last
    token. A template is skipped where it reaches outside the sentence. No
    constant attribute is added: the chain model's bias, start and end features
    play that role. Attributes are built from the training sentences of the
    split only, numbered template by template (so each row's indices come out
    sorted); test tokens lose the attributes never seen in training.

    Labels index the 23 tags of the union of both files. The training file has
    22 of them (``I-LST`` occurs only in the test file, on 2 tokens), the
    number used by Osokin et al. (2016); keeping the 23rd makes every test
    labelling representable and adds one unused state.

    With every attribute kept the full training set has 335,674 attributes
    (19 templates plus ``__BOS__`` and ``__EOS__``), against the 74,658 reported
    by Osokin et al. (2016) (Table 1, whose preprocessing is not published); ``min_count=3``
    gives 75,289.

    Lookup order: `path`; then ``data_home/conll2000/``; then pooch's cache
    (``pooch.os_cache("ssvm")``) holding a previous download; then a download into
    that cache. In a folder, ``<split>.txt.gz`` is preferred to ``<split>.txt``.
    The decompressed content of a download is checked against the MD5 of the
    original file.

    References
    ----------
    E. F. Tjong Kim Sang and S. Buchholz, "Introduction to the CoNLL-2000 Shared
    Task: Chunking", CoNLL 2000.

    Examples
    --------
    >>> X, Y, X_test, Y_test = load_conll2000()  # doctest: +SKIP
    >>> len(X), len(X_test), X[0].shape[1]  # doctest: +SKIP
    (8936, 2012, 335674)
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits are "
                         + "; ".join(f"{name!r} ({what})" for name, what in SPLITS.items()))
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"min_count must be an integer >= 1, got {min_count!r}")
    files = find_conll_files(path=path, data_home=data_home)
    if files is None:
        files = _download(path, data_home, download)
    train, test = (read_conll_file(files[name]) for name in ("train", "test"))
    if split == "small":
        train = _first_sentences(train, SMALL_SIZE)
    X, Y, X_test, Y_test, vocab = extract_attributes(train, test, min_count=min_count,
                                                     names=return_vocab)
    return (X, Y, X_test, Y_test, vocab) if return_vocab else (X, Y, X_test, Y_test)


def load_conll_tokens(
    split: str = "full",
    part: str = "test",
    *,
    file: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
    download: bool | None = None,
    min_count: int = 1,
) -> tuple[Sentences, list, list[np.ndarray]]:
    """The sentences of one part of a split, or of any CoNLL-format file, with their matrices.

    The attributes are those of the training sentences of `split` (as in
    :func:`load_conll2000`), so the matrices fit a model trained on that
    split whatever file they are read from; the sentences keep the words
    and POS tags (to write predictions next to them).

    Parameters
    ----------
    split : {"full", "small"}, default="full"
        The split whose training sentences define the attributes.
    part : {"train", "test"}, default="test"
        Which sentences of the split to return (ignored with `file`).
    file : str or os.PathLike, optional
        A file in the CoNLL-2000 format (``word POS chunk`` per line, a blank
        line between sentences; optionally gzipped) to read instead.
    path, data_home, download, min_count :
        As in :func:`load_conll2000` (where the shared-task files are).

    Returns
    -------
    sentences : Sentences
        ``words``, ``pos``, ``labels`` (token after token) and ``lengths``.
    X, Y : lists
        Per sentence a CSR token x attribute matrix and its labels, as
        :func:`load_conll2000` returns them.

    Raises
    ------
    ValueError
        Unknown `split` or `part`, or a malformed file (the message names it).
    FileNotFoundError
        The shared-task files (or `file`) cannot be found.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits are {', '.join(SPLITS)}")
    if part not in ("train", "test"):
        raise ValueError(f"part must be 'train' or 'test', got {part!r}")
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"min_count must be an integer >= 1, got {min_count!r}")
    if file is not None and not Path(os.fspath(file)).is_file():
        raise FileNotFoundError(f"CoNLL file {os.fspath(file)} does not exist")
    files = find_conll_files(path=path, data_home=data_home)
    if files is None:
        files = _download(path, data_home, download)
    train = read_conll_file(files["train"])
    if split == "small":
        train = _first_sentences(train, SMALL_SIZE)
    if file is not None:
        target = read_conll_file(file)
    else:
        target = train if part == "train" else read_conll_file(files["test"])
    _, _, X, Y, _ = extract_attributes(train, target, min_count=min_count)
    return target, X, Y


def find_conll_files(
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
) -> dict[str, Path] | None:
    """Return the train and test files :func:`load_conll2000` would read, or None.

    Both files must be in the same folder.

    Parameters
    ----------
    path, data_home : str or os.PathLike, optional
        As in :func:`load_conll2000`.

    Raises
    ------
    FileNotFoundError
        If `path` is given but is not a folder.
    """
    if path is not None:
        path = Path(os.fspath(path)).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"CoNLL-2000 data path {path} is not a folder holding "
                                    "train.txt[.gz] and test.txt[.gz]")
    for directory in _search_plan(path, data_home):
        found = {split: _io.find_file(directory, names) for split, names in _FILES.items()}
        if all(found.values()):
            return found
    return None


def search_folders(data_home: str | os.PathLike | None = None) -> list[Path]:
    """The folders :func:`load_conll2000` searches without ``path=``, in order:
    ``data_home/conll2000`` (``$SSVM_DATA_HOME/conll2000`` by default, when set) and
    the download cache."""
    return _search_plan(None, data_home)


def _search_plan(path: Path | None, data_home) -> list[Path]:
    plan = [path] if path is not None else []
    home = _io.data_home(data_home)
    if home is not None:
        plan.append(home / "conll2000")
    plan.append(_io.cache_dir() / "conll2000")
    return plan


def _download(path, data_home, download: bool | None) -> dict[str, Path]:
    """Fetch the original files, or raise FileNotFoundError saying where to put them."""
    if not _io.download_enabled(download):
        why = "download=False" if download is False else f"${_io.OFFLINE_ENV} is set"
        raise FileNotFoundError(_not_found_message(path, data_home,
                                                   f"downloading is disabled ({why})"))
    try:
        (_io.cache_dir() / "conll2000").mkdir(parents=True, exist_ok=True)
        return {split: _io.download_gzip(url, f"conll2000/{split}.txt.gz", CONLL_MD5[split])
                for split, url in CONLL_URLS.items()}
    except (OSError, ValueError) as err:
        raise FileNotFoundError(_not_found_message(path, data_home,
                                                   f"downloading failed: {err}")) from err


def _not_found_message(path, data_home, reason: str) -> str:
    home = _io.data_home(data_home)
    env = _io.DATA_HOME_ENV
    target = (f"{home / 'conll2000'}{os.sep}" if home is not None
              else f"${env}/conll2000/ (set {env} to a folder of your choice)")
    searched = ", ".join(str(directory) for directory in _search_plan(
        None if path is None else Path(os.fspath(path)).expanduser(), data_home))
    return (f"CoNLL-2000 data not found (searched {searched}) and {reason}. "
            f"Put train.txt.gz and test.txt.gz (or the uncompressed train.txt and test.txt) "
            f"into {target}, or pass path=. The originals are {CONLL_URLS['train']} and "
            f"{CONLL_URLS['test']} (MD5 of the decompressed files: {CONLL_MD5['train']} "
            f"and {CONLL_MD5['test']}).")


# --- reading -------------------------------------------------------------------------


def read_conll_file(path: str | os.PathLike) -> Sentences:
    """Read one CoNLL-2000 file (optionally gzipped) and check every line.

    Raises
    ------
    ValueError
        On a bad or truncated gzip, a line without exactly three non-empty fields
        separated by single spaces, a chunk tag outside :data:`CHUNK_TAGS`, or a
        file without tokens; the message names the file and the line.
    """
    path = Path(os.fspath(path))
    raw = path.read_bytes()
    if path.suffix.lower() == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise ValueError(f"cannot decompress {path} (bad or truncated gzip): {err}") from err
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise ValueError(f"{path}, line {line}: byte {raw[err.start]:#x} is not ASCII") from err
    words, pos, labels, lengths = [], [], [], []
    length = 0
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line:
            if length:
                lengths.append(length)
                length = 0
            continue
        fields = line.split(" ")
        if len(fields) != 3 or not all(fields):
            raise ValueError(f"{path}, line {number}: {line!r} has {len(fields)} "
                             "space-separated field(s); expected 3 non-empty fields "
                             "'word POS chunk' separated by single spaces")
        label = _TAG_INDEX.get(fields[2])
        if label is None:
            raise ValueError(f"{path}, line {number}: chunk tag {fields[2]!r} is not one of "
                             f"the {len(CHUNK_TAGS)} CoNLL-2000 tags ({' '.join(CHUNK_TAGS)})")
        words.append(fields[0])
        pos.append(fields[1])
        labels.append(label)
        length += 1
    if length:
        lengths.append(length)
    if not lengths:
        raise ValueError(f"{path}: the file holds no tokens")
    return Sentences(words, pos, np.array(labels, dtype=np.int32),
                     np.array(lengths, dtype=np.intp))


def _first_sentences(data: Sentences, n: int) -> Sentences:
    lengths = data.lengths[:n]
    stop = int(lengths.sum())
    return Sentences(data.words[:stop], data.pos[:stop], data.labels[:stop], lengths)


# --- attribute extraction --------------------------------------------------------------


def extract_attributes(train: Sentences, test: Sentences | None = None, *,
                       min_count: int = 1, names: bool = False):
    """Attribute matrices of `train` (which defines the attributes) and `test`.

    Returns ``X, Y, X_test, Y_test, vocab``; ``X_test``/``Y_test`` are None
    without `test`, and ``vocab`` is None unless `names` (building the names
    of all attributes takes a moment).
    """
    attrs = _train_attributes(train, min_count)
    X, Y = _matrices(train, attrs)
    X_test = Y_test = None
    if test is not None:
        X_test, Y_test = _matrices(test, attrs)
    vocab = _vocabulary(attrs) if names else None
    return X, Y, X_test, Y_test, vocab


def _ids(tokens: list[str], table: dict[str, int]) -> np.ndarray:
    unknown = len(table)
    return np.fromiter((table.get(tok, unknown) for tok in tokens), dtype=np.int64,
                       count=len(tokens))


def _template_keys(data: Sentences, word_ids: np.ndarray, pos_ids: np.ndarray,
                   bases: dict[str, int]) -> list[np.ndarray]:
    """Per template (then BOS, EOS), the key of each token's value; -1 where absent.

    A key encodes the template's tuple of field ids in base ``bases[field]``.
    """
    n = len(word_ids)
    starts = np.repeat(np.cumsum(data.lengths) - data.lengths, data.lengths)
    position = np.arange(n) - starts
    length = np.repeat(data.lengths, data.lengths)
    columns = {"w": word_ids, "pos": pos_ids}
    out = []
    for template in TEMPLATES:
        key = np.zeros(n, dtype=np.int64)
        inside = np.ones(n, dtype=bool)
        for field, offset in template:
            inside &= (position + offset >= 0) & (position + offset < length)
            shifted = np.take(columns[field], np.clip(np.arange(n) + offset, 0, n - 1))
            key = key * bases[field] + shifted
        out.append(np.where(inside, key, -1))
    out.append(np.where(position == 0, 0, -1))
    out.append(np.where(position == length - 1, 0, -1))
    return out


def _train_attributes(train: Sentences, min_count: int) -> _Attributes:
    words = {w: k for k, w in enumerate(dict.fromkeys(train.words))}
    pos = {p: k for k, p in enumerate(dict.fromkeys(train.pos))}
    bases = {"w": len(words) + 1, "pos": len(pos) + 1}
    all_keys = _template_keys(train, _ids(train.words, words), _ids(train.pos, pos), bases)
    kept, counts = [], []
    for keys in all_keys:
        unique, count = np.unique(keys[keys >= 0], return_counts=True)
        keep = count >= min_count
        kept.append(unique[keep])
        counts.append(count[keep])
    offsets = np.concatenate([[0], np.cumsum([len(k) for k in kept])])
    return _Attributes(words, pos, kept, offsets, np.concatenate(counts))


def _matrices(data: Sentences, attrs: _Attributes) -> tuple[list, list[np.ndarray]]:
    """Per sentence a CSR token x attribute matrix and its labels."""
    bases = {"w": len(attrs.words) + 1, "pos": len(attrs.pos) + 1}
    all_keys = _template_keys(data, _ids(data.words, attrs.words), _ids(data.pos, attrs.pos),
                              bases)
    n, n_attributes = len(data.words), int(attrs.offsets[-1])
    ids = np.full((n, len(all_keys)), -1, dtype=np.int64)
    for j, (keys, table) in enumerate(zip(all_keys, attrs.keys)):
        where = np.minimum(np.searchsorted(table, keys), max(len(table) - 1, 0))
        found = (keys >= 0) & (table[where] == keys) if len(table) else np.zeros(n, bool)
        ids[:, j] = np.where(found, attrs.offsets[j] + where, -1)
    active = ids >= 0
    indices = ids[active].astype(np.int32)          # row-major: sorted within a token
    token_ptr = np.concatenate([[0], np.cumsum(active.sum(axis=1))])
    sentence_ptr = np.concatenate([[0], np.cumsum(data.lengths)])
    X, Y = [], []
    for start, stop in zip(sentence_ptr[:-1].tolist(), sentence_ptr[1:].tolist()):
        lo, hi = token_ptr[start], token_ptr[stop]
        X.append(sp.csr_array((np.ones(hi - lo), indices[lo:hi], token_ptr[start:stop + 1] - lo),
                              shape=(stop - start, n_attributes)))
        Y.append(data.labels[start:stop].copy())
    return X, Y


def _vocabulary(attrs: _Attributes) -> ConllVocabulary:
    """Names of the attributes, in column order."""
    values = {"w": list(attrs.words), "pos": list(attrs.pos)}
    bases = {"w": len(attrs.words) + 1, "pos": len(attrs.pos) + 1}
    names = []
    for template, keys in zip(TEMPLATES, attrs.keys):
        label = "|".join(f"{field}[{offset}]" for field, offset in template)
        for key in keys.tolist():
            parts = []
            for field, _ in reversed(template):
                key, digit = divmod(key, bases[field])
                parts.append(values[field][digit])
            names.append(f"{label}={'|'.join(reversed(parts))}")
    names += [BOS] * len(attrs.keys[-2]) + [EOS] * len(attrs.keys[-1])
    return ConllVocabulary(tuple(names), CHUNK_TAGS, attrs.counts)

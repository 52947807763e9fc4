"""Tests of ssvm_data.load_conll2000: attributes, validation, lookup order, real data."""

import gzip
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import ssvm_data
from ssvm_data import _io, conll

REAL_HOME = os.environ.get("SSVM_DATA_HOME")
REAL = Path(REAL_HOME, "conll2000") if REAL_HOME else None

TRAIN = """He PRP B-NP
reckons VBZ B-VP
the DT B-NP
current JJ I-NP
deficit NN I-NP
. . O

Rockwell NNP B-NP
said VBD B-VP

Yes UH B-INTJ
"""
# 'Friday' is unknown in training; I-LST occurs only here (as in the real files)
TEST = """He PRP B-NP
said VBD B-VP
Friday NNP B-NP

1 CD B-LST
2 CD I-LST
"""


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No data home from the environment, no downloads, an empty private cache."""
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)
    monkeypatch.setenv("SSVM_OFFLINE", "1")
    monkeypatch.setattr(_io, "cache_dir", lambda: tmp_path / "cache")


def write(folder, train=TRAIN, test=TEST, gz=True):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("train", train), ("test", test)):
        data = text.encode() if isinstance(text, str) else text
        if gz:
            (folder / f"{name}.txt.gz").write_bytes(gzip.compress(data))
        else:
            (folder / f"{name}.txt").write_bytes(data)
    return folder


def crfsuite_attributes(sentence):
    """Attribute names of each token, written directly after CRFsuite's chunking.py."""
    out = []
    for t in range(len(sentence)):
        names = []
        for template in conll.TEMPLATES:
            if all(0 <= t + offset < len(sentence) for _, offset in template):
                name = "|".join(f"{field}[{offset}]" for field, offset in template)
                value = "|".join(sentence[t + offset][0 if field == "w" else 1]
                                 for field, offset in template)
                names.append(f"{name}={value}")
        if t == 0:
            names.append("__BOS__")
        if t == len(sentence) - 1:
            names.append("__EOS__")
        out.append(names)
    return out


def parse(text):
    sentences = [[line.split(" ") for line in block.splitlines()]
                 for block in text.strip("\n").split("\n\n")]
    return sentences


def active_names(x, vocab):
    return [[vocab.attributes[j] for j in x.indices[x.indptr[t]:x.indptr[t + 1]]]
            for t in range(x.shape[0])]


# --- attributes -------------------------------------------------------------------------


def test_attributes_match_crfsuite_templates(tmp_path):
    X, Y, _, _, vocab = ssvm_data.load_conll2000(path=write(tmp_path / "d"),
                                                           return_vocab=True)
    train = parse(TRAIN)
    expected = [crfsuite_attributes(s) for s in train]
    assert sorted(vocab.attributes) == sorted({a for s in expected for tok in s for a in tok})
    assert vocab.n_attributes == len(vocab.attributes) == X[0].shape[1]
    for x, y, sentence, names in zip(X, Y, train, expected):
        assert isinstance(x, sp.csr_array) and x.dtype == np.float64
        assert x.has_sorted_indices and np.all(x.data == 1.0)
        assert [sorted(a) for a in active_names(x, vocab)] == [sorted(a) for a in names]
        assert y.dtype == np.int32
        assert [conll.CHUNK_TAGS[k] for k in y] == [tok[2] for tok in sentence]
    # the middle token of "Rockwell said" style windows, spelled out by hand
    assert sorted(active_names(X[0], vocab)[1]) == sorted([
        "w[-1]=He", "w[0]=reckons", "w[1]=the", "w[2]=current", "w[-1]|w[0]=He|reckons",
        "w[0]|w[1]=reckons|the", "pos[-1]=PRP", "pos[0]=VBZ", "pos[1]=DT", "pos[2]=JJ",
        "pos[-1]|pos[0]=PRP|VBZ", "pos[0]|pos[1]=VBZ|DT", "pos[1]|pos[2]=DT|JJ",
        "pos[-1]|pos[0]|pos[1]=PRP|VBZ|DT", "pos[0]|pos[1]|pos[2]=VBZ|DT|JJ"])
    assert active_names(X[2], vocab) == [["w[0]=Yes", "pos[0]=UH", "__BOS__", "__EOS__"]]
    counts = {a: 0 for a in vocab.attributes}
    for names in expected:
        for tok in names:
            for a in tok:
                counts[a] += 1
    assert vocab.counts.tolist() == [counts[a] for a in vocab.attributes]
    assert vocab.tags == conll.CHUNK_TAGS and vocab.n_tags == 23


def test_test_split_keeps_only_training_attributes(tmp_path):
    _, _, X_test, Y_test, vocab = ssvm_data.load_conll2000(path=write(tmp_path / "d"),
                                                           return_vocab=True)
    known = set(vocab.attributes)
    for x, sentence in zip(X_test, parse(TEST)):
        assert x.shape[1] == vocab.n_attributes
        names = crfsuite_attributes(sentence)
        assert active_names(x, vocab) == [[a for a in tok if a in known] for tok in names]
    # 'He said Friday': Friday, and w[-1]=said (no training token follows 'said'), are
    # unknown, so are the POS n-grams never seen in training
    assert "w[1]=Friday" not in known and "w[0]=He" in active_names(X_test[0], vocab)[0]
    assert active_names(X_test[0], vocab)[2] == ["w[-2]=He", "pos[-2]=PRP", "pos[0]=NNP",
                                                 "__EOS__"]
    assert [y.tolist() for y in Y_test] == [[5, 10, 5], [4, 15]]       # I-LST is label 15


def test_min_count_and_small_split(tmp_path):
    folder = write(tmp_path / "d")
    _, _, _, _, full = ssvm_data.load_conll2000(path=folder, return_vocab=True)
    X, _, _, _, vocab = ssvm_data.load_conll2000(path=folder, min_count=2, return_vocab=True)
    frequent = [a for a, c in zip(full.attributes, full.counts) if c >= 2]
    # three sentences: only __BOS__ and __EOS__ occur on two tokens or more
    assert list(vocab.attributes) == frequent == ["__BOS__", "__EOS__"]
    assert vocab.counts.tolist() == [3, 3] and X[2].toarray().tolist() == [[1.0, 1.0]]
    small = ssvm_data.load_conll2000("small", path=folder)
    assert len(small[0]) == 3                      # fewer than 1,000 sentences: all of them
    with pytest.raises(ValueError, match="min_count must be an integer >= 1"):
        ssvm_data.load_conll2000(path=folder, min_count=0)
    with pytest.raises(ValueError, match="unknown split 'tiny'"):
        ssvm_data.load_conll2000("tiny", path=folder)


def test_small_split_builds_attributes_from_its_sentences(tmp_path, monkeypatch):
    monkeypatch.setattr(conll, "SMALL_SIZE", 2)
    folder = write(tmp_path / "d")
    X, _, X_test, _, vocab = ssvm_data.load_conll2000("small", path=folder, return_vocab=True)
    assert len(X) == 2 and len(X_test) == 2
    assert not any("Yes" in a for a in vocab.attributes)


def test_plain_text_files_and_gzip_preference(tmp_path):
    folder = write(tmp_path / "d", gz=False)
    a = ssvm_data.load_conll2000(path=folder)
    write(folder, train=TRAIN.replace("Yes UH B-INTJ", "No UH B-INTJ"))     # .gz wins
    b = ssvm_data.load_conll2000(path=folder, return_vocab=True)
    assert "w[0]=No" in b[4].attributes and "w[0]=Yes" not in b[4].attributes
    assert [y.tolist() for y in a[1]] == [y.tolist() for y in b[1]]


def test_crlf_and_missing_final_blank_line(tmp_path):
    a = ssvm_data.load_conll2000(path=write(tmp_path / "a"))
    b = ssvm_data.load_conll2000(path=write(tmp_path / "b", train=TRAIN.rstrip("\n"),
                                            test=TEST.replace("\n", "\r\n")))
    for u, v in zip(a, b):
        for p, q in zip(u, v):
            assert (p != q).nnz == 0 if sp.issparse(p) else np.array_equal(p, q)


# --- malformed files ---------------------------------------------------------------------


@pytest.mark.parametrize("which, text, message", [
    ("train", TRAIN.replace("reckons VBZ B-VP", "reckons VBZ"),
     r"train.txt.gz, line 2: 'reckons VBZ' has 2 space-separated field\(s\); expected 3"),
    ("train", TRAIN.replace("the DT B-NP", "the  DT B-NP"), r"train.txt.gz, line 3: .* 4 "),
    ("train", TRAIN.replace("Yes UH B-INTJ", "Yes UH B-INTJ extra"), r"train.txt.gz, line 11"),
    ("train", TRAIN.replace("said VBD B-VP", "said VBD B-XP"),
     r"train.txt.gz, line 9: chunk tag 'B-XP' is not one of the 23 CoNLL-2000 tags"),
    ("test", TEST.replace("2 CD I-LST", "2 CD I-FOO"),
     r"test.txt.gz, line 6: chunk tag 'I-FOO' is not one of the 23"),
    ("test", "\n\n", r"test.txt.gz: the file holds no tokens"),
    ("test", TEST.replace("Friday", "Fr\xe9day").encode("latin-1"),
     r"test.txt.gz, line 3: byte 0xe9 is not ASCII"),
])
def test_malformed_files_name_file_and_line(tmp_path, which, text, message):
    kwargs = {which: text}
    folder = write(tmp_path / "d", **kwargs)
    with pytest.raises(ValueError, match=message):
        ssvm_data.load_conll2000(path=folder)


def test_truncated_gzip(tmp_path):
    folder = write(tmp_path / "d")
    data = (folder / "train.txt.gz").read_bytes()
    (folder / "train.txt.gz").write_bytes(data[:len(data) - 12])
    with pytest.raises(ValueError, match=r"cannot decompress .*train.txt.gz \(bad or truncated"):
        ssvm_data.load_conll2000(path=folder)


# --- lookup order and download ------------------------------------------------------------


def test_lookup_order(tmp_path, monkeypatch):
    home = write(tmp_path / "home" / "conll2000").parent
    explicit = write(tmp_path / "explicit", train=TRAIN.replace("Yes", "Maybe"))
    assert conll.find_conll_files(data_home=home)["train"] == home / "conll2000" / "train.txt.gz"
    monkeypatch.setenv("SSVM_DATA_HOME", str(home))
    vocab = ssvm_data.load_conll2000(return_vocab=True)[4]
    assert "w[0]=Yes" in vocab.attributes
    vocab = ssvm_data.load_conll2000(path=explicit, return_vocab=True)[4]
    assert "w[0]=Maybe" in vocab.attributes
    conll_entry = next(d for d in ssvm_data.available_datasets() if d["name"] == "conll")
    assert conll_entry["path"] == str(home / "conll2000")
    X, _, X_test, _ = ssvm_data.load_dataset("conll-small")
    assert len(X) == 3 and len(X_test) == 2


def test_missing_files_say_where_to_put_them(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        ssvm_data.load_conll2000(data_home=tmp_path / "home")
    text = str(info.value)
    assert "train.txt.gz and test.txt.gz" in text and str(tmp_path / "home" / "conll2000") in text
    assert "SSVM_OFFLINE" in text and conll.CONLL_MD5["train"] in text
    write(tmp_path / "half", test=TEST)
    (tmp_path / "half" / "test.txt.gz").unlink()
    assert conll.find_conll_files(path=tmp_path / "half") is None
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        ssvm_data.load_conll2000(path=tmp_path / "nowhere")
    conll_entry = next(d for d in ssvm_data.available_datasets(tmp_path) if d["name"] == "conll")
    assert not conll_entry["available"]


def test_download_then_reuse_cache(monkeypatch):
    import pooch

    calls = []

    def retrieve(url, known_hash=None, fname=None, path=None, **kwargs):
        calls.append(url)
        target = Path(path) / fname
        assert target.parent.is_dir()              # pooch writes a temporary file there
        text = TRAIN if url == conll.CONLL_URLS["train"] else TEST
        target.write_bytes(gzip.compress(text.encode()))
        return str(target)

    monkeypatch.setattr(pooch, "retrieve", retrieve)
    monkeypatch.setattr(conll, "CONLL_MD5", {"train": hashlib.md5(TRAIN.encode()).hexdigest(),
                                             "test": hashlib.md5(TEST.encode()).hexdigest()})
    monkeypatch.delenv("SSVM_OFFLINE")
    X, _, X_test, _ = ssvm_data.load_conll2000()
    assert (len(X), len(X_test)) == (3, 2)
    assert calls == [conll.CONLL_URLS["train"], conll.CONLL_URLS["test"]]
    ssvm_data.load_conll2000(download=True)
    assert len(calls) == 2


def test_download_with_wrong_content_fails(monkeypatch):
    import pooch

    def retrieve(url, known_hash=None, fname=None, path=None, **kwargs):
        target = Path(path) / fname
        target.write_bytes(gzip.compress(b"x X O\n"))
        return str(target)

    monkeypatch.setattr(pooch, "retrieve", retrieve)
    with pytest.raises(FileNotFoundError, match="does not have the expected content"):
        ssvm_data.load_conll2000(download=True)


# --- synthetic ----------------------------------------------------------------------------


def test_conll_like_is_seeded_and_iob_valid():
    X, Y = ssvm_data.synthetic.conll_like(60, random_state=3)
    X2, Y2 = ssvm_data.conll_like(60, random_state=3)
    _, Y3 = ssvm_data.conll_like(60, random_state=4)
    assert all((a != b).nnz == 0 for a, b in zip(X, X2))
    assert all(np.array_equal(a, b) for a, b in zip(Y, Y2))
    assert not all(len(a) == len(b) and np.array_equal(a, b) for a, b in zip(Y, Y3))
    n_attributes = X[0].shape[1]
    tags = conll.CHUNK_TAGS
    for x, y in zip(X, Y):
        assert isinstance(x, sp.csr_array) and x.shape == (len(y), n_attributes)
        assert 1 <= len(y) <= 78 and y.dtype == np.int32 and 0 <= y.min() and y.max() < 23
        assert np.all(x.data == 1.0) and np.all(np.diff(x.indptr) >= 1)
        for t, k in enumerate(y):                # I-X only continues a chunk of type X
            if tags[k].startswith("I-"):
                assert t > 0 and tags[y[t - 1]][2:] == tags[k][2:]
    lengths = [len(y) for y in Y]
    assert 15 < np.mean(lengths) < 32
    with pytest.raises(ValueError, match="n_words must be at least 44"):
        ssvm_data.conll_like(5, n_words=10)


# --- the real files ------------------------------------------------------------------------


def shared_data(test):
    missing = REAL is None or not REAL.is_dir()
    skip = pytest.mark.skipif(
        missing, reason="set SSVM_DATA_HOME to a folder holding conll2000/ to run the "
        "real-data tests")
    return pytest.mark.shared_data(skip(test))


@pytest.fixture(scope="module")
def real():
    return ssvm_data.load_conll2000(path=REAL, download=False, return_vocab=True)


@shared_data
def test_real_counts(real):
    X, Y, X_test, Y_test, vocab = real
    assert (len(X), len(X_test)) == (8936, 2012)
    assert sum(len(y) for y in Y) == 211727 and sum(len(y) for y in Y_test) == 47377
    lengths = [len(y) for y in Y]
    assert (min(lengths), max(lengths)) == (1, 78)
    counts = np.bincount(np.concatenate(Y), minlength=23)
    tag = conll.CHUNK_TAGS.index
    assert np.count_nonzero(counts) == 22 and counts[tag("I-LST")] == 0
    assert [counts[tag(t)] for t in ("I-NP", "B-NP", "O", "B-VP", "B-PP")] == [
        63307, 55081, 27902, 21467, 21281]
    test_counts = np.bincount(np.concatenate(Y_test), minlength=23)
    assert np.count_nonzero(test_counts) == 19 and test_counts[tag("I-LST")] == 2
    # 19 templates over the training words and POS tags, plus __BOS__ and __EOS__
    assert vocab.n_attributes == X[0].shape[1] == 335674
    assert all(x.shape == (len(y), 335674) and x.has_sorted_indices for x, y in zip(X, Y))
    assert all(x.shape[1] == 335674 for x in X_test)


@shared_data
def test_real_attributes_match_crfsuite_on_a_sample(real):
    X, _, _, _, vocab = real
    with gzip.open(REAL / "train.txt.gz", "rt") as f:
        sentences = parse(f.read())
    assert len(sentences) == 8936
    for i in range(0, 8936, 97):
        names = crfsuite_attributes(sentences[i])
        assert [sorted(a) for a in active_names(X[i], vocab)] == [sorted(a) for a in names]

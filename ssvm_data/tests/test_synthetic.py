"""Tests of the seeded generators in ssvm_data.synthetic."""

import numpy as np
import pytest

import ssvm_data
from ssvm_data import synthetic

GENERATORS = {
    "ocr_like": lambda seed: synthetic.ocr_like(20, random_state=seed),
    "chain": lambda seed: synthetic.chain(20, length=(2, 6), random_state=seed),
    "multiclass": lambda seed: synthetic.multiclass(20, random_state=seed),
}


def flat(output):
    """Concatenate the per-sequence arrays of a generator output."""
    return [np.concatenate(part) if isinstance(part, list) else part for part in output]


def test_package_reexports_the_generators():
    assert ssvm_data.ocr_like is synthetic.ocr_like
    assert ssvm_data.chain is synthetic.chain
    assert ssvm_data.multiclass is synthetic.multiclass


@pytest.mark.parametrize("name", GENERATORS)
def test_same_seed_same_output(name):
    generate = GENERATORS[name]
    for a, b in zip(flat(generate(7)), flat(generate(7))):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(flat(generate(7)), flat(generate(np.random.default_rng(7)))):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(flat(generate(7))[0], flat(generate(8))[0])


@pytest.mark.parametrize("name", GENERATORS)
def test_none_seed_works(name):
    assert len(GENERATORS[name](None)[0]) == 20


def test_ocr_like_shapes_and_values():
    X, Y = synthetic.ocr_like(50, random_state=0)
    assert len(X) == len(Y) == 50
    for x, y in zip(X, Y):
        assert x.dtype == np.float64 and x.flags.c_contiguous and x.shape == (len(y), 128)
        assert y.dtype == np.int32 and 3 <= len(y) <= 14
        assert set(np.unique(x)) <= {0.0, 1.0}
        assert y.min() >= 0 and y.max() < 26


def test_chain_shapes_and_values():
    X, Y = synthetic.chain(30, length=(2, 4), n_states=5, n_features=3, random_state=0)
    assert len(X) == len(Y) == 30
    assert {len(y) for y in Y} == {2, 3, 4}
    for x, y in zip(X, Y):
        assert x.dtype == np.float64 and x.shape == (len(y), 3)
        assert y.dtype == np.int32 and y.min() >= 0 and y.max() < 5
    X, Y = synthetic.chain(4, length=6, random_state=0)
    assert [x.shape for x in X] == [(6, 4)] * 4


def test_multiclass_shapes_and_values():
    X, y = synthetic.multiclass(40, n_features=2, n_classes=4, random_state=0)
    assert X.dtype == np.float64 and X.shape == (40, 2)
    assert y.dtype == np.int32 and y.shape == (40,) and y.min() >= 0 and y.max() < 4


@pytest.mark.parametrize("call, name", [
    (lambda: synthetic.ocr_like(2.5), "n_words"),
    (lambda: synthetic.chain(True), "n"),
    (lambda: synthetic.chain(length=(1, "3")), "length"),
    (lambda: synthetic.multiclass(n_classes=None), "n_classes"),
])
def test_non_integer_arguments(call, name):
    with pytest.raises(TypeError, match=rf"^{name}\b"):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda: synthetic.ocr_like(0), "n_words"),
    (lambda: synthetic.chain(0), "n"),
    (lambda: synthetic.chain(length=0), "length"),
    (lambda: synthetic.chain(length=(5, 3)), "length"),
    (lambda: synthetic.chain(length=(0, 3)), "length"),
    (lambda: synthetic.chain(length=(1, 2, 3)), "length"),
    (lambda: synthetic.chain(n_states=1), "n_states"),
    (lambda: synthetic.chain(n_features=0), "n_features"),
    (lambda: synthetic.multiclass(-1), "n"),
    (lambda: synthetic.multiclass(n_features=0), "n_features"),
    (lambda: synthetic.multiclass(n_classes=1), "n_classes"),
])
def test_invalid_arguments(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()


def test_ocr_like_letters_are_separable_across_seeds():
    """Glyphs do not depend on the seed: class means of one draw classify another."""
    X, Y = synthetic.ocr_like(300, random_state=0)
    X_test, Y_test = synthetic.ocr_like(100, random_state=1)
    letters, labels = np.concatenate(X), np.concatenate(Y)
    means = np.stack([letters[labels == k].mean(axis=0) for k in range(26)])
    test_letters, test_labels = np.concatenate(X_test), np.concatenate(Y_test)
    distances = ((test_letters[:, None, :] - means[None]) ** 2).sum(axis=-1)
    assert (distances.argmin(axis=1) == test_labels).mean() > 0.8


def test_ocr_like_has_bigram_structure():
    """The most frequent successor in one draw predicts the next letter in another."""
    _, Y = synthetic.ocr_like(600, random_state=0)
    _, Y_test = synthetic.ocr_like(200, random_state=1)
    counts = np.zeros((26, 26))
    for y in Y:
        np.add.at(counts, (y[:-1], y[1:]), 1)
    pairs = np.concatenate([np.stack([y[:-1], y[1:]], axis=1) for y in Y_test])
    bigram_accuracy = (counts.argmax(axis=1)[pairs[:, 0]] == pairs[:, 1]).mean()
    unigram_accuracy = (pairs[:, 1] == np.bincount(np.concatenate(Y)).argmax()).mean()
    assert bigram_accuracy > 0.35 and bigram_accuracy > 2.5 * unigram_accuracy


def test_chain_states_are_learnable():
    """Per-state means fitted on one part of a draw beat chance on the rest."""
    X, Y = synthetic.chain(200, length=(3, 8), n_states=3, random_state=0)
    features, states = np.concatenate(X), np.concatenate(Y)
    half = len(states) // 2
    means = np.stack([features[:half][states[:half] == k].mean(axis=0) for k in range(3)])
    predicted = ((features[half:, None, :] - means[None]) ** 2).sum(axis=-1).argmin(axis=1)
    assert (predicted == states[half:]).mean() > 0.5

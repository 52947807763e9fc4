"""Task metrics: chunk F1 against an independent conlleval-style counter, the others against
scikit-learn and the models' losses."""

import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import precision_recall_fscore_support

from ssvm_data.conll import CHUNK_TAGS, read_conll_file
from ssvm_data.metrics import (
    chunk_scores,
    chunks,
    class_scores,
    hamming_accuracy,
    sequence_accuracy,
    task_metrics,
    token_accuracy,
)
from ssvm_oracles import ChainModel

# seqeval (whose default mode follows conlleval) does not install here (its sdist fails to
# build), so the reference is written below in the style of conlleval.pl: one pass over the
# tokens with the "chunk ends here / starts here" tests and a flag for a matching open chunk.


def _parts(tag):
    return ("O", "") if tag == "O" else tuple(tag.split("-", 1))


def _ends(prev, cur):
    (p, pt), (c, ct) = _parts(prev), _parts(cur)
    return p != "O" and (c in ("B", "O") or pt != ct)


def _starts(prev, cur):
    (p, pt), (c, ct) = _parts(prev), _parts(cur)
    return c == "B" or (c == "I" and (p == "O" or pt != ct))


def conlleval_counts(gold_sentences, guess_sentences):
    """{type: [correct, guessed, gold]} counted token by token, as conlleval.pl does."""
    counts = {}
    for gold, guess in zip(gold_sentences, guess_sentences):
        in_match = False
        prev_gold = prev_guess = "O"
        for g, p in list(zip(gold, guess)) + [("O", "O")]:       # the boundary closes chunks
            if in_match:
                gold_end, guess_end = _ends(prev_gold, g), _ends(prev_guess, p)
                if gold_end and guess_end:
                    counts.setdefault(_parts(prev_gold)[1], [0, 0, 0])[0] += 1
                    in_match = False
                elif gold_end != guess_end or _parts(g)[1] != _parts(p)[1]:
                    in_match = False
            gold_start, guess_start = _starts(prev_gold, g), _starts(prev_guess, p)
            if gold_start and guess_start and _parts(g)[1] == _parts(p)[1]:
                in_match = True
            if guess_start:
                counts.setdefault(_parts(p)[1], [0, 0, 0])[1] += 1
            if gold_start:
                counts.setdefault(_parts(g)[1], [0, 0, 0])[2] += 1
            prev_gold, prev_guess = g, p
    return counts


def _check_against_reference(Y_true, Y_pred, tags):
    scores = chunk_scores(Y_true, Y_pred, tags)
    reference = conlleval_counts([[tags[k] for k in y] for y in Y_true],
                                 [[tags[k] for k in y] for y in Y_pred])
    assert sorted(scores["per_type"]) == sorted(reference)
    for kind, (correct, guessed, gold) in reference.items():
        s = scores["per_type"][kind]
        assert (s["correct"], s["predicted"], s["gold"]) == (correct, guessed, gold), kind
    correct, guessed, gold = np.sum(list(reference.values()), axis=0).tolist()
    assert (scores["correct"], scores["predicted"], scores["gold"]) == (correct, guessed, gold)
    precision, recall = correct / guessed, correct / gold
    assert scores["precision"] == pytest.approx(precision)
    assert scores["recall"] == pytest.approx(recall)
    assert scores["f1"] == pytest.approx(2 * precision * recall / (precision + recall))
    return scores


def test_chunks_follow_the_conll_rules():
    assert chunks(["I-NP", "I-NP", "O", "I-VP", "I-NP", "B-NP", "B-NP", "I-NP"]) == [
        ("NP", 0, 2), ("VP", 3, 4), ("NP", 4, 5), ("NP", 5, 6), ("NP", 6, 8)]
    assert chunks(["O", "O"]) == [] and chunks([]) == []
    with pytest.raises(ValueError, match="'X-NP'"):
        chunks(["X-NP"])


def test_a_hand_counted_example():
    tags = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
    gold = [[1, 2, 3, 0, 1], [4, 4]]          # NP VP NP | VP (an I- after the start)
    guess = [[1, 2, 4, 0, 2], [3, 4]]         # NP VP NP | VP
    s = chunk_scores(gold, guess, tags)
    assert (s["correct"], s["predicted"], s["gold"]) == (4, 4, 4)
    guess = [[1, 1, 3, 0, 0], [3, 1]]         # NP NP VP | VP NP
    s = chunk_scores(gold, guess, tags)
    assert (s["correct"], s["predicted"], s["gold"]) == (1, 5, 4)
    assert s["per_type"]["VP"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "correct": 1,
                                   "predicted": 2, "gold": 2}
    _check_against_reference(gold, guess, tags)


@pytest.mark.parametrize("seed", range(5))
def test_chunk_scores_equal_the_reference_on_random_tags(seed):
    rng = np.random.default_rng(seed)
    tags = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "I-PP"]
    Y_true = [rng.integers(0, len(tags), size=rng.integers(1, 15)) for _ in range(300)]
    noisy = [np.where(rng.random(len(y)) < 0.3, rng.integers(0, len(tags), len(y)), y)
             for y in Y_true]
    independent = [rng.integers(0, len(tags), size=len(y)) for y in Y_true]
    for Y_pred in (noisy, independent):
        _check_against_reference(Y_true, Y_pred, tags)


HOME = os.environ.get("SSVM_DATA_HOME")
REAL = Path(HOME, "conll2000") if HOME else None


@pytest.mark.shared_data
@pytest.mark.skipif(REAL is None or not REAL.is_dir(),
                    reason="set SSVM_DATA_HOME to a folder holding conll2000/ to run this test")
def test_chunk_scores_equal_the_reference_on_the_conll_test_set():
    test = read_conll_file(REAL / "test.txt.gz")
    Y_true = np.split(test.labels, np.cumsum(test.lengths)[:-1])
    assert len(Y_true) == 2012
    rng = np.random.default_rng(0)
    Y_pred = [np.where(rng.random(len(y)) < 0.1, rng.integers(0, 23, len(y)), y)
              for y in Y_true]
    scores = _check_against_reference(Y_true, Y_pred, CHUNK_TAGS)
    assert scores["gold"] == 23852                 # chunks of the CoNLL-2000 test file
    perfect = chunk_scores(Y_true, Y_true, CHUNK_TAGS)
    assert perfect["f1"] == 1.0 and perfect["gold"] == 23852


def test_sequence_metrics_against_the_chain_loss():
    rng = np.random.default_rng(1)
    Y_true = [rng.integers(0, 3, size=rng.integers(1, 8)) for _ in range(50)]
    Y_pred = [np.where(rng.random(len(y)) < 0.2, (y + 1) % 3, y) for y in Y_true]
    model = ChainModel(3)
    assert hamming_accuracy(Y_true, Y_pred) == pytest.approx(
        1 - model.mean_loss(Y_true, Y_pred))
    assert sequence_accuracy(Y_true, Y_pred) == np.mean(
        [np.array_equal(a, b) for a, b in zip(Y_true, Y_pred)])
    flat_true, flat_pred = np.concatenate(Y_true), np.concatenate(Y_pred)
    assert token_accuracy(Y_true, Y_pred) == pytest.approx(np.mean(flat_true == flat_pred))
    with pytest.raises(ValueError, match="true shape"):
        hamming_accuracy([[0, 1]], [[0]])


def test_class_scores_equal_scikit_learn():
    rng = np.random.default_rng(2)
    y_true = rng.integers(0, 4, size=200)
    y_pred = np.where(rng.random(200) < 0.4, rng.integers(0, 3, 200), y_true)  # 3 rarer
    s = class_scores(y_true, y_pred, 5)           # class 4 never occurs
    precision, recall, _, support = precision_recall_fscore_support(
        y_true, y_pred, labels=range(5), zero_division=0)
    for k in range(5):
        assert s["per_class"][k]["precision"] == pytest.approx(precision[k])
        assert s["per_class"][k]["recall"] == pytest.approx(recall[k])
        assert s["per_class"][k]["support"] == support[k]
    assert s["accuracy"] == np.mean(y_true == y_pred)


def test_task_metrics_by_kind():
    tags = ["O", "B-NP", "I-NP"]
    out = task_metrics("chunking", [[1, 2, 0]], [[1, 2, 0]], tags)
    assert set(out) == {"hamming_accuracy", "sequence_accuracy", "token_accuracy", "chunk_f1"}
    assert out["chunk_f1"]["f1"] == 1.0
    assert set(task_metrics("sequence", [[1]], [[0]])) == {"hamming_accuracy",
                                                           "sequence_accuracy"}
    named = task_metrics("multiclass", [0, 1], [0, 0], ["cat", "dog"])
    assert named["accuracy"] == 0.5 and named["per_class"]["dog"]["recall"] == 0.0
    assert task_metrics("structured", [[1]], [[0]]) == {}
    with pytest.raises(ValueError, match="unknown task"):
        task_metrics("ranking", [[1]], [[1]])
    with pytest.raises(ValueError, match="tag names"):
        task_metrics("chunking", [[1]], [[1]])

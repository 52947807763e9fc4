"""Evaluation metrics of the data sets' tasks (what ``ssvm evaluate`` prints).

- Every task: the score 1 - mean task loss, which needs the model's loss and
  is computed by the caller (``ssvm evaluate``).
- ``"sequence"`` (OCR): Hamming accuracy, 1 - the mean normalised Hamming
  loss (the per-letter accuracy averaged over words, the number the BCFW
  papers report as test error), and word (sequence) accuracy.
- ``"chunking"`` (CoNLL-2000): the same, the token accuracy over all tokens,
  and chunk precision, recall and F1 overall and per chunk type by the rules
  of the shared task's ``conlleval`` script (Tjong Kim Sang & Buchholz 2000).
- ``"multiclass"``: accuracy and per-class precision and recall.

Which task a registry data set has is :func:`ssvm_data.registry.dataset_task`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The task kinds and the metrics each reports (besides the score 1 - mean loss).
TASK_METRICS = {
    "sequence": ("hamming_accuracy", "sequence_accuracy"),
    "chunking": ("hamming_accuracy", "sequence_accuracy", "token_accuracy", "chunk_f1"),
    "multiclass": ("accuracy", "per_class"),
    "structured": (),
}


def _pairs(Y_true: Sequence, Y_pred: Sequence) -> list[tuple[np.ndarray, np.ndarray]]:
    if len(Y_true) != len(Y_pred):
        raise ValueError(f"{len(Y_true)} true labellings but {len(Y_pred)} predictions")
    if len(Y_true) == 0:
        raise ValueError("no labellings to evaluate")
    out = []
    for i, (t, p) in enumerate(zip(Y_true, Y_pred)):
        t, p = np.atleast_1d(np.asarray(t)), np.atleast_1d(np.asarray(p))
        if t.shape != p.shape:
            raise ValueError(f"labelling {i}: true shape {t.shape}, predicted {p.shape}")
        out.append((t, p))
    return out


def hamming_accuracy(Y_true: Sequence, Y_pred: Sequence) -> float:
    """1 - mean normalised Hamming loss: per labelling the fraction of correct parts, averaged.

    Examples
    --------
    >>> hamming_accuracy([[0, 1, 1, 0], [2, 2]], [[0, 1, 0, 0], [2, 2]])
    0.875
    """
    return float(np.mean([np.mean(t == p) if t.size else 1.0
                          for t, p in _pairs(Y_true, Y_pred)]))


def sequence_accuracy(Y_true: Sequence, Y_pred: Sequence) -> float:
    """Fraction of labellings predicted entirely right (word accuracy on OCR).

    Examples
    --------
    >>> sequence_accuracy([[0, 1, 1, 0], [2, 2]], [[0, 1, 0, 0], [2, 2]])
    0.5
    """
    return float(np.mean([np.array_equal(t, p) for t, p in _pairs(Y_true, Y_pred)]))


def token_accuracy(Y_true: Sequence, Y_pred: Sequence) -> float:
    """Fraction of all parts (tokens) predicted right, pooled over labellings.

    Examples
    --------
    >>> token_accuracy([[0, 1, 1, 0], [2, 2]], [[0, 1, 0, 0], [2, 2]])
    0.8333333333333334
    """
    pairs = _pairs(Y_true, Y_pred)
    total = sum(t.size for t, _ in pairs)
    return float(sum(int(np.sum(t == p)) for t, p in pairs) / total) if total else 1.0


def _split_tag(tag: str) -> tuple[str, str]:
    """(prefix, type) of a B-/I-/O tag: ``"B-NP"`` -> ("B", "NP"), ``"O"`` -> ("O", "")."""
    if tag == "O":
        return "O", ""
    prefix, sep, kind = tag.partition("-")
    if not sep or prefix not in ("B", "I") or not kind:
        raise ValueError(f"chunk tag {tag!r} is not 'O', 'B-<type>' or 'I-<type>'")
    return prefix, kind


def chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The chunks of one sentence's tags as ``(type, start, stop)`` (stop exclusive).

    A chunk starts at a ``B-`` tag, and at an ``I-`` tag that follows ``O``
    or a tag of another type (as ``conlleval`` reads it); it ends before the
    next ``B-``, ``O``, tag of another type, or the end of the sentence.

    Examples
    --------
    >>> chunks(["B-NP", "I-NP", "O", "I-VP", "B-VP", "I-NP"])
    [('NP', 0, 2), ('VP', 3, 4), ('VP', 4, 5), ('NP', 5, 6)]
    """
    out = []
    start, current = None, ""
    for position, tag in enumerate(tags):
        prefix, kind = _split_tag(tag)
        if start is not None and (prefix != "I" or kind != current):
            out.append((current, start, position))
            start = None
        if prefix != "O" and start is None:
            start, current = position, kind
    if start is not None:
        out.append((current, start, len(tags)))
    return out


def _prf(correct: int, predicted: int, gold: int) -> dict:
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "correct": correct,
            "predicted": predicted, "gold": gold}


def chunk_scores(Y_true: Sequence, Y_pred: Sequence, tags: Sequence[str]) -> dict:
    """Chunk precision, recall and F1, overall and per chunk type (CoNLL-2000 rules).

    A predicted chunk is correct when a gold chunk has the same type, start
    and end.  Precision is correct / predicted chunks, recall correct / gold
    chunks, F1 their harmonic mean (0 where undefined, as ``conlleval``
    prints it).  Sentences are scored separately: a chunk never crosses a
    sentence boundary.

    Parameters
    ----------
    Y_true, Y_pred : sequences of int arrays
        Tag indices per sentence.
    tags : sequence of str
        The tag names (``tags[k]`` of label k), ``"O"``, ``"B-X"`` or ``"I-X"``.

    Returns
    -------
    dict
        ``precision``, ``recall``, ``f1``, ``correct``, ``predicted``, ``gold``
        and ``per_type``: the same keys for each chunk type (sorted by name).

    Examples
    --------
    >>> tags = ["O", "B-NP", "I-NP"]
    >>> s = chunk_scores([[1, 2, 0, 1]], [[1, 2, 0, 2]], tags)
    >>> s["correct"], s["predicted"], s["gold"], round(s["f1"], 3)
    (2, 2, 2, 1.0)
    >>> chunk_scores([[1, 2, 0, 1]], [[1, 0, 0, 1]], tags)["correct"]
    1
    """
    names = list(tags)
    counts: dict[str, list[int]] = {}
    for t, p in _pairs(Y_true, Y_pred):
        gold = set(chunks([names[k] for k in t.ravel().tolist()]))
        guess = set(chunks([names[k] for k in p.ravel().tolist()]))
        for sets, column in ((gold & guess, 0), (guess, 1), (gold, 2)):
            for kind, _, _ in sets:
                counts.setdefault(kind, [0, 0, 0])[column] += 1
    total = np.sum(list(counts.values()), axis=0) if counts else np.zeros(3, int)
    out = _prf(*(int(v) for v in total))
    out["per_type"] = {kind: _prf(*counts[kind]) for kind in sorted(counts)}
    return out


def class_scores(y_true: Sequence, y_pred: Sequence, n_classes: int | None = None) -> dict:
    """Accuracy and per-class precision, recall and support of a multiclass prediction.

    Returns ``{"accuracy": a, "per_class": {k: {"precision", "recall",
    "support"}}}`` for classes 0 .. n_classes - 1 (default: the largest class
    seen + 1); precision is 0 for a class never predicted, recall 0 for one
    never true.

    Examples
    --------
    >>> s = class_scores([0, 1, 1, 2], [0, 1, 2, 2])
    >>> s["accuracy"], s["per_class"][2]["precision"], s["per_class"][1]["recall"]
    (0.75, 0.5, 0.5)
    """
    t = np.asarray(y_true).reshape(-1).astype(np.int64)
    p = np.asarray(y_pred).reshape(-1).astype(np.int64)
    if t.shape != p.shape or t.size == 0:
        raise ValueError(f"{t.size} true classes and {p.size} predictions (need the same, "
                         "at least one)")
    K = int(max(t.max(), p.max()) + 1) if n_classes is None else int(n_classes)
    per_class = {}
    for k in range(K):
        hit = int(np.sum((t == k) & (p == k)))
        predicted, support = int(np.sum(p == k)), int(np.sum(t == k))
        per_class[k] = {"precision": hit / predicted if predicted else 0.0,
                        "recall": hit / support if support else 0.0, "support": support}
    return {"accuracy": float(np.mean(t == p)), "per_class": per_class}


def task_metrics(task: str, Y_true: Sequence, Y_pred: Sequence,
                 labels: Sequence[str] | None = None) -> dict:
    """The metrics of a task kind (see :data:`TASK_METRICS`) as a JSON-ready dict.

    Parameters
    ----------
    task : {"sequence", "chunking", "multiclass", "structured"}
        The task kind.
    Y_true, Y_pred : sequences
        True and predicted labellings.
    labels : sequence of str, optional
        Label names: the chunk tags for ``"chunking"`` (required there), the
        class names for ``"multiclass"`` (keys of ``per_class``; default the
        class numbers).

    Returns
    -------
    dict
        Metric name to value; ``chunk_f1`` holds :func:`chunk_scores`'s dict,
        ``per_class`` the per-class dict of :func:`class_scores`.
    """
    if task not in TASK_METRICS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASK_METRICS)}")
    out: dict = {}
    if task in ("sequence", "chunking"):
        out["hamming_accuracy"] = hamming_accuracy(Y_true, Y_pred)
        out["sequence_accuracy"] = sequence_accuracy(Y_true, Y_pred)
    if task == "chunking":
        if labels is None:
            raise ValueError("chunk scores need the tag names")
        out["token_accuracy"] = token_accuracy(Y_true, Y_pred)
        out["chunk_f1"] = chunk_scores(Y_true, Y_pred, labels)
    if task == "multiclass":
        scores = class_scores(Y_true, Y_pred, None if labels is None else len(labels))
        out["accuracy"] = scores["accuracy"]
        out["per_class"] = {(str(k) if labels is None else labels[k]): v
                            for k, v in scores["per_class"].items()}
    return out

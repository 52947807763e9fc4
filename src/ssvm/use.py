"""Using a trained model: ``ssvm evaluate`` and ``ssvm predict``.

Both read a model file (``ssvm train``'s ``model.npz`` or
``ssvm_core.save_model``'s output) and a data set: a registry data set (by
default the one the model was trained on, its test split) or a file in a
loader's format (``--input``).

Prediction files (``ssvm predict --output``):

- CoNLL data sets: the CoNLL evaluation format, one token per line,
  ``word POS gold predicted`` separated by single spaces, a blank line after
  each sentence (what the shared task's ``conlleval`` script reads).
- OCR data sets: one line per word, the predicted letters, a tab, the true
  letters.
- Every other data set: an ``.npz`` archive (no pickle) of the predictions
  laid end to end: ``values`` (every prediction raveled, concatenated),
  ``offsets`` (n + 1 starts into ``values``) and ``shapes`` (n, ndim), read
  back by :func:`read_predictions`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

import ssvm_data
from ssvm_core import load_model
from ssvm_core.files import atomic_write, check_writable_folder, save_json, save_npz
from ssvm_data.conll import Sentences, load_conll_tokens
from ssvm_data.metrics import task_metrics
from ssvm_data.ocr import read_ocr_words

#: Data sets whose files ``--input`` reads: the reader, and for CoNLL the split whose
#: training sentences define the attributes.
_FILE_FORMATS = {"ocr-small": ("ocr", None), "ocr-large": ("ocr", None),
                 "synthetic-ocr": ("ocr", None), "conll": ("conll", "full"),
                 "conll-small": ("conll", "small")}


class Inputs(NamedTuple):
    """The examples a command runs on, and what is known about them."""

    dataset: str
    source: str  # "test split", "train split" or the --input file
    X: list
    Y: list
    task: ssvm_data.DatasetTask
    sentences: Sentences | None  # CoNLL: the words and POS tags, for the predictions file


def add_commands(sub) -> None:
    """Register ``evaluate`` and ``predict`` on the ``ssvm`` command's subparsers."""
    evaluate = sub.add_parser(
        "evaluate", help="Score a saved model on a data set and print the task's metrics.",
        description="Predict with a saved model on a data set and print the metrics of the "
                    "data set's task: 1 - mean task loss for every task; Hamming and "
                    "sequence accuracy for sequences; chunk precision, recall and F1 by the "
                    "CoNLL-2000 rules for CoNLL; accuracy and per-class precision and recall "
                    "for multiclass data.")
    _add_common(evaluate)
    evaluate.add_argument("--json", default=None, metavar="FILE",
                          help="Also write the metrics to this JSON file. Default: none.")
    evaluate.set_defaults(func=evaluate_command)

    predict = sub.add_parser(
        "predict", help="Write a saved model's predictions on a data set to a file.",
        description="Predict with a saved model on a data set and write the predictions: "
                    "CoNLL column format (word POS gold predicted) for CoNLL data, one line "
                    "per word (predicted, a tab, true letters) for OCR data, an .npz archive "
                    "(values, offsets, shapes) otherwise.")
    _add_common(predict)
    predict.add_argument("--output", required=True, metavar="FILE",
                         help="The file to write the predictions to (replaced atomically).")
    predict.set_defaults(func=predict_command)


def _add_common(parser: argparse.ArgumentParser) -> None:
    names = [d["name"] for d in ssvm_data.available_datasets()]
    parser.add_argument("--model", required=True, metavar="PATH",
                        help="The model file: model.npz of ssvm train, or a file written by "
                             "ssvm_core.save_model.")
    parser.add_argument("--dataset", default=None, choices=names, metavar="NAME",
                        help="The registry data set to read (one of: " + ", ".join(names)
                             + "). Default: the data set recorded in the model file.")
    parser.add_argument("--split", default=None, choices=["train", "test"],
                        help="Which part of the data set to use. Default: test.")
    parser.add_argument("--input", default=None, metavar="FILE",
                        help="Read the examples from this file instead of the registry split: "
                             "for OCR data sets a letters.npz, letter.data[.gz] or "
                             "letters.pickle file (every word is used); for CoNLL data sets "
                             "a CoNLL-2000 text file (word POS chunk per line), given the "
                             "attributes of the data set's training sentences. Default: none.")
    parser.add_argument("--data-home", default=None, metavar="DIR",
                        help="The folder holding the real data sets. Default: "
                             "$SSVM_DATA_HOME.")
    parser.add_argument("--seed", type=int, default=None,
                        help="The seed of a synthetic data set. Default: the seed recorded "
                             "in the model file, else 0.")
    parser.add_argument("--trust", action="append", default=[], metavar="MODULE",
                        help="Also import model classes and functions from this module when "
                             "loading the model; repeatable. Default: only the ssvm "
                             "packages.")


def evaluate_command(args: argparse.Namespace) -> int:
    """``ssvm evaluate``: print (and with ``--json`` write) the task's metrics."""
    estimator = load_model(args.model, trusted_modules=args.trust)
    inputs = load_inputs(args, estimator.header_.get("metadata", {}))
    Y_pred = _predict(estimator, inputs, args.model)
    metrics = {"model": os.fspath(args.model), "dataset": inputs.dataset,
               "source": inputs.source, "n_examples": len(inputs.X),
               "score": 1.0 - estimator.model.mean_loss(inputs.Y, Y_pred),
               **task_metrics(inputs.task.kind, inputs.Y, Y_pred, inputs.task.labels)}
    print(format_metrics(metrics))
    if args.json is not None:
        check_writable_folder(Path(args.json).parent)    # made only once there is a result
        save_json(args.json, metrics)
        print(f"wrote {args.json}")
    return 0


def predict_command(args: argparse.Namespace) -> int:
    """``ssvm predict``: write the predictions in the data set's format."""
    estimator = load_model(args.model, trusted_modules=args.trust)
    inputs = load_inputs(args, estimator.header_.get("metadata", {}))
    Y_pred = _predict(estimator, inputs, args.model)
    check_writable_folder(Path(args.output).parent)      # made only once there is a result
    if inputs.task.kind == "chunking":
        _write_conll(args.output, inputs, Y_pred)
    elif inputs.task.kind == "sequence" and inputs.task.labels is not None:
        _write_words(args.output, inputs, Y_pred)
    else:
        write_predictions(args.output, Y_pred)
    print(f"ssvm predict: {len(Y_pred)} predictions on {inputs.dataset} ({inputs.source}), "
          f"wrote {args.output}")
    return 0


def load_inputs(args: argparse.Namespace, metadata: dict) -> Inputs:
    """The examples of ``--dataset``/``--split`` or ``--input`` (see the options' help)."""
    name = args.dataset or metadata.get("dataset")
    if name is None:
        raise ValueError(f"the model file {args.model} does not record its data set; "
                         "give --dataset")
    task = ssvm_data.dataset_task(name)      # also rejects an unknown recorded name
    if args.input is not None:
        if args.split is not None:
            raise ValueError("give --split or --input, not both (--input uses every example "
                             "of the file)")
        if name not in _FILE_FORMATS:
            raise ValueError(f"--input reads OCR and CoNLL files ({', '.join(_FILE_FORMATS)}),"
                             f" not files of {name}; use --dataset {name} --split")
        reader, conll_split = _FILE_FORMATS[name]
        if reader == "ocr":
            X, Y = read_ocr_words(args.input)
            return Inputs(name, os.fspath(args.input), X, Y, task, None)
        sentences, X, Y = load_conll_tokens(conll_split, file=args.input,
                                            data_home=args.data_home)
        return Inputs(name, os.fspath(args.input), X, Y, task, sentences)
    part = args.split or "test"
    if _FILE_FORMATS.get(name, (None,))[0] == "conll":
        sentences, X, Y = load_conll_tokens(_FILE_FORMATS[name][1], part,
                                            data_home=args.data_home)
        return Inputs(name, f"{part} split", X, Y, task, sentences)
    seed = args.seed if args.seed is not None else metadata.get("seed", 0)
    X, Y, X_test, Y_test = ssvm_data.load_dataset(name, data_home=args.data_home,
                                                  random_state=seed)
    X, Y = (X, Y) if part == "train" else (X_test, Y_test)
    return Inputs(name, f"{part} split", X, Y, task, None)


def _predict(estimator, inputs: Inputs, model_path) -> list:
    try:
        return list(estimator.predict(inputs.X))
    except ValueError as err:
        raise ValueError(f"the model {model_path} ({estimator.model!r}) does not fit the "
                         f"examples of {inputs.dataset} ({inputs.source}): {err}") from None


def format_metrics(metrics: dict) -> str:
    """The metrics as aligned text lines (what ``ssvm evaluate`` prints)."""
    lines = [f"ssvm evaluate: {metrics['model']} on {metrics['dataset']} "
             f"({metrics['source']}, {metrics['n_examples']} examples)",
             f"  score (1 - mean task loss)  {metrics['score']:.4f}"]
    for key, label in (("hamming_accuracy", "Hamming accuracy"),
                       ("sequence_accuracy", "sequence accuracy"),
                       ("token_accuracy", "token accuracy"), ("accuracy", "accuracy")):
        if key in metrics:
            lines.append(f"  {label:<26}  {metrics[key]:.4f}")
    if "chunk_f1" in metrics:
        chunk = metrics["chunk_f1"]
        lines.append(f"  chunks: precision {chunk['precision']:.4f}, recall "
                     f"{chunk['recall']:.4f}, F1 {chunk['f1']:.4f} ({chunk['correct']} "
                     f"correct of {chunk['predicted']} predicted, {chunk['gold']} true)")
        lines.append(f"  {'type':<8} {'precision':>9} {'recall':>9} {'F1':>9} {'true':>7}")
        for kind, s in chunk["per_type"].items():
            lines.append(f"  {kind:<8} {s['precision']:>9.4f} {s['recall']:>9.4f} "
                         f"{s['f1']:>9.4f} {s['gold']:>7}")
    if "per_class" in metrics:
        lines.append(f"  {'class':<8} {'precision':>9} {'recall':>9} {'support':>8}")
        for k, s in metrics["per_class"].items():
            lines.append(f"  {k:<8} {s['precision']:>9.4f} {s['recall']:>9.4f} "
                         f"{s['support']:>8}")
    return "\n".join(lines)


def _write_conll(path, inputs: Inputs, Y_pred: list) -> None:
    tags = inputs.task.labels
    words, pos = inputs.sentences.words, inputs.sentences.pos
    with atomic_write(path, "w") as f:
        token = 0
        for y, p in zip(inputs.Y, Y_pred):
            for gold, guess in zip(np.asarray(y).tolist(), np.asarray(p).tolist()):
                f.write(f"{words[token]} {pos[token]} {tags[gold]} {tags[guess]}\n")
                token += 1
            f.write("\n")


def _write_words(path, inputs: Inputs, Y_pred: list) -> None:
    letters = inputs.task.labels
    with atomic_write(path, "w") as f:
        for y, p in zip(inputs.Y, Y_pred):
            f.write("".join(letters[k] for k in np.asarray(p).tolist()) + "\t"
                    + "".join(letters[k] for k in np.asarray(y).tolist()) + "\n")


def write_predictions(path, Y_pred: list) -> None:
    """Write predictions as ``values``, ``offsets`` and ``shapes`` in an ``.npz`` (atomic)."""
    arrays = [np.asarray(p) for p in Y_pred]
    ndims = {a.ndim for a in arrays}
    if len(ndims) > 1:
        raise ValueError(f"predictions of different dimensions {sorted(ndims)}")
    ndim = ndims.pop() if ndims else 0
    values = (np.concatenate([a.ravel() for a in arrays]) if arrays
              else np.zeros(0, dtype=np.int32))
    offsets = np.concatenate([[0], np.cumsum([a.size for a in arrays])]).astype(np.int64)
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(len(arrays), ndim)
    save_npz(path, values=values, offsets=offsets, shapes=shapes)


def read_predictions(path) -> list[np.ndarray]:
    """The predictions of a file written by :func:`write_predictions`."""
    with np.load(path, allow_pickle=False) as data:
        values, offsets, shapes = data["values"], data["offsets"], data["shapes"]
    return [values[a:b].reshape(shape) for a, b, shape in
            zip(offsets[:-1].tolist(), offsets[1:].tolist(), shapes.tolist())]

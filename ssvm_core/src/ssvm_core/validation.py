"""Input checks shared by solvers, objectives and models."""

from __future__ import annotations

import numpy as np


def check_lam(lam: float) -> float:
    """The regularisation parameter lambda as a float; ``ValueError`` unless finite and > 0."""
    lam = float(lam)
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite positive number, got {lam}")
    return lam


def check_weights(w, n_features: int, layout: str | None = None) -> np.ndarray:
    """``w`` as a C-contiguous float64 vector of length ``n_features``, all finite.

    Parameters
    ----------
    w : array-like
        The weights.
    n_features : int
        Their expected length d.
    layout : str, optional
        What d is made of, for the message when the length differs (e.g.
        ``"3 classes and 5 features"``): a model's ``predict`` names the
        feature width of its inputs, so that inputs of another width than the
        training data give an error that says so.  Default None.

    Raises ``ValueError`` naming the problem otherwise.
    """
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (n_features,):
        where = "" if layout is None else (
            f" for inputs with {layout} (were the weights learned on inputs of another "
            "feature width?)")
        raise ValueError(f"w has shape {w.shape}, expected ({n_features},){where}")
    if not np.all(np.isfinite(w)):
        raise ValueError("w has non-finite entries (NaN or infinity)")
    return w


def check_order(order, n_blocks: int) -> np.ndarray:
    """``order``, the blocks of a pass in the order stepped (repeats allowed), as a
    C-contiguous intp vector; ``ValueError`` unless it holds integers in [0, n_blocks)."""
    order = np.asarray(order)
    if order.size and not np.issubdtype(order.dtype, np.integer):
        raise ValueError(f"order must hold integer block indices, got dtype {order.dtype}")
    order = np.ascontiguousarray(order, dtype=np.intp).reshape(-1)
    if order.size and (order.min() < 0 or order.max() >= n_blocks):
        raise ValueError(f"block indices outside [0, {n_blocks})")
    return order


def check_box(box, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """``box = (lower, upper)`` as two float64 vectors of length ``n_features``.

    Scalars broadcast; infinite bounds are allowed, NaN is not, and
    ``lower > upper`` anywhere (an empty box) raises ``ValueError``.
    """
    if not isinstance(box, (tuple, list)) or len(box) != 2:
        raise ValueError("box must be a pair (lower, upper)")
    bounds = []
    for name, b in zip(("lower", "upper"), box):
        arr = np.asarray(b, dtype=np.float64)
        if arr.ndim == 0:
            arr = np.full(n_features, float(arr))
        if arr.shape != (n_features,):
            raise ValueError(f"box {name} bound has shape {arr.shape}, expected "
                             f"({n_features},) or a scalar")
        if np.isnan(arr).any():
            raise ValueError(f"box {name} bound has NaN entries")
        bounds.append(np.ascontiguousarray(arr))
    lower, upper = bounds
    bad = np.flatnonzero(lower > upper)
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"infeasible box: lower > upper at {bad.size} coordinates, "
                         f"e.g. feature {k}: {lower[k]} > {upper[k]}")
    if np.isposinf(lower).any() or np.isneginf(upper).any():
        raise ValueError("infeasible box: a lower bound is +inf or an upper bound -inf")
    return lower, upper


#: The block storages a model's ``blocks`` option names ("auto": the model's choice).
BLOCK_STORAGES = ("auto", "dense", "sparse", "compact")


def check_blocks(blocks: str, offered: tuple[str, ...]) -> str:
    """A model's ``blocks`` option, checked against the storages its oracle offers.

    Parameters
    ----------
    blocks : {"auto", "dense", "sparse", "compact"}
        How the solvers keep each block's dual vector: a d-vector ("dense"),
        its entries on the block's feature support ("sparse"), or coordinates in
        the oracle's block basis ("compact"); "auto" lets the model choose
        (compact whenever it offers a basis).
    offered : tuple of str
        The storages the model's oracle offers.

    Returns
    -------
    str
        ``blocks`` itself.

    Raises
    ------
    ValueError
        If ``blocks`` is not one of ``BLOCK_STORAGES`` or the model does not
        offer it.
    """
    if blocks not in BLOCK_STORAGES:
        raise ValueError(f"blocks must be one of {', '.join(map(repr, BLOCK_STORAGES))}, "
                         f"got {blocks!r}")
    if blocks != "auto" and blocks not in offered:
        raise ValueError(f"blocks={blocks!r} is not offered by this model (it offers "
                         f"{', '.join(map(repr, ('auto',) + offered))})")
    return blocks


def resolve_box(box, oracle, model=None) -> tuple[np.ndarray, np.ndarray] | None:
    """The box of a run, checked: None or ``(lower, upper)``.

    The one place where ``box="auto"`` and ``box="model"`` are decided, for
    ``solve``, the estimator, ``ssvm_paths``, the pystruct layer and the CLI.

    Parameters
    ----------
    box : "auto", "model", (lower, upper) or None
        "auto": the declared bounds, ``weight_bounds()`` of the oracle or
        else of the model (those of models whose max oracle is exact only
        inside a box: graph cuts, w_P >= 0; pose trees, nonnegative quadratic
        deformation weights), and no box when neither declares any.
        "model": the same, but an error when neither declares bounds.  None:
        no box.  A pair: those bounds (see ``check_box``).
    oracle : MaxOracle or Python oracle
        The bound training set (the wrappers and the Python adapter forward
        ``weight_bounds``).
    model : StructuredModel, optional
        The model ``oracle`` was bound from, if known.

    Returns
    -------
    (lower, upper) or None
    """
    if isinstance(box, str):
        if box not in ("auto", "model"):
            raise ValueError(f"box must be 'auto', 'model', (lower, upper) or None, got {box!r}")
        bounds = getattr(oracle, "weight_bounds", None) or getattr(model, "weight_bounds", None)
        if bounds is None:
            if box == "model":
                raise ValueError(f"box='model' but {type(oracle).__name__} (and its model) "
                                 "declare no weight_bounds()")
            return None
        box = bounds()
    if box is None:
        return None
    return check_box(box, oracle.n_features)

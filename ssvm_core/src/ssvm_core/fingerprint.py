"""Fingerprints of bound oracles: what a solver state was trained on.

A state records the fingerprint of its oracle, and a state is only continued
on an oracle with the same one, so a saved state cannot be resumed on other
data, labels or models of the same shapes (its gaps would certify nothing).

The fingerprint is built from what a bound oracle pickles to (its
``__reduce__``): the oracle's type, then one digest per constructor argument
(the packed features, the labels, the model's parameters), streamed through
BLAKE2b without copying the arrays.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any


class _HashWriter:
    """A write-only file object that feeds a hash."""

    def __init__(self) -> None:
        self.hash = hashlib.blake2b(digest_size=16)

    def write(self, data) -> int:
        view = memoryview(data)          # bytes, or an array's buffer (no copy)
        self.hash.update(view)
        return view.nbytes


def _digest(obj: Any) -> str:
    writer = _HashWriter()
    pickle.Pickler(writer, protocol=5).dump(obj)
    return writer.hash.hexdigest()


def oracle_fingerprint(oracle) -> dict:
    """The fingerprint of a bound oracle, a JSON-serialisable dict.

    Keys: ``type`` (module and class of the oracle), ``n_blocks``,
    ``n_features`` and ``data``: one hex digest per constructor argument of
    the oracle's pickled form, or ``None`` when the oracle cannot be pickled
    (e.g. a Python oracle over an unpicklable object): then only the type
    and the shapes can be checked.
    """
    kind = type(oracle)
    fp = {"type": f"{kind.__module__}.{kind.__qualname__}",
          "n_blocks": int(oracle.n_blocks), "n_features": int(oracle.n_features),
          "data": None}
    try:
        reduced = oracle.__reduce__()
    except (TypeError, pickle.PicklingError):
        return fp
    if isinstance(reduced, tuple) and len(reduced) >= 2:
        try:
            parts = [_digest(reduced[0])] + [_digest(arg) for arg in reduced[1]]
            if len(reduced) > 2 and reduced[2] is not None:
                parts.append(_digest(reduced[2]))
        except (TypeError, AttributeError, pickle.PicklingError):
            return fp
        fp["data"] = parts
    return fp


def describe_difference(saved: dict, current: dict) -> str | None:
    """Why ``current`` is not the oracle of ``saved`` (None if they match).

    When either fingerprint lacks data digests, only the type and the
    shapes are compared.
    """
    if saved["type"] != current["type"]:
        return (f"the state was trained with a {saved['type']} oracle, this oracle is a "
                f"{current['type']} (another model)")
    for key, what in (("n_blocks", "examples"), ("n_features", "features")):
        if saved[key] != current[key]:
            return (f"the state was trained on {saved[key]} {what}, this oracle has "
                    f"{current[key]}")
    a, b = saved.get("data"), current.get("data")
    if a is None or b is None or a == b:
        return None
    if len(a) != len(b):
        return "the oracle's constructor arguments differ (another model configuration)"
    changed = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]
    return (f"the training data, labels or model parameters differ (constructor "
            f"argument(s) {changed} of {current['type'].rsplit('.', 1)[-1]} differ)")

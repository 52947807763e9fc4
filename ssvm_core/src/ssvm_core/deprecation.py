"""Deprecated spellings: one warning helper for renamed arguments and methods."""

from __future__ import annotations

import warnings
from typing import Any


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Emit a ``DeprecationWarning`` saying that ``old`` is now spelled ``new``.

    Parameters
    ----------
    old, new : str
        The deprecated and the current name (e.g. ``"enumerate_labelings"``).
    stacklevel : int, default 3
        Passed to ``warnings.warn``: 3 points at the caller of the function
        that calls this helper.
    """
    warnings.warn(f"{old} is deprecated and will be removed; use {new}",
                  DeprecationWarning, stacklevel=stacklevel)


def renamed_argument(value: Any, old_value: Any, old: str, new: str, *,
                     stacklevel: int = 4) -> Any:
    """The value of an argument renamed from ``old`` to ``new``.

    Returns ``value`` when the deprecated ``old_value`` is None; otherwise
    warns (``DeprecationWarning``) and returns ``old_value``.

    Parameters
    ----------
    value, old_value : object
        What the caller passed under the new and under the old name (None
        when not passed).
    old, new : str
        The two names.
    stacklevel : int, default 4
        Passed to ``warnings.warn``: 4 points at the code calling the function
        that calls this helper.

    Raises
    ------
    TypeError
        If both names are given.
    """
    if old_value is None:
        return value
    if value is not None:
        raise TypeError(f"give {new} only ({old} is its deprecated spelling), not both")
    warn_renamed(f"the argument {old}", new, stacklevel=stacklevel)
    return old_value

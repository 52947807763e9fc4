"""Atomic file writes: every file ssvm writes is either the old one or the new one.

A writer gets a temporary file in the destination's folder; on success the
file is flushed, fsynced and ``os.replace``-d onto the destination (atomic on
POSIX and Windows), and the folder is fsynced so the rename survives a crash.
On any error, or a ``kill -9`` before the rename, the destination is
untouched and the temporary file is removed (or, after a kill, left as a
``.<name>.*.tmp`` file that nothing reads).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file that replaces ``path`` when the block exits cleanly.

    Parameters
    ----------
    path : str or path-like
        The destination; its folder must exist and be writable.
    mode : {"wb", "w"}, default "wb"
        Binary or text (UTF-8) mode.

    Yields
    ------
    file object
        Write the whole content to it; nothing reaches ``path`` before the
        block ends without an exception.

    Raises
    ------
    OSError
        The folder does not exist or is not writable (raised before anything
        is written), or the disk fails.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save_npz(path: str | os.PathLike, **arrays: Any) -> None:
    """``numpy.savez`` to exactly ``path`` (no ``.npz`` appended), atomically."""
    with atomic_write(path) as f:
        np.savez(f, **arrays)


def save_json(path: str | os.PathLike, obj: Any, indent: int | None = 1) -> None:
    """``json.dump`` to ``path``, atomically."""
    with atomic_write(path, "w") as f:
        json.dump(obj, f, indent=indent)


def check_writable_folder(folder: str | os.PathLike) -> Path:
    """Create ``folder`` if needed and check that files can be written in it.

    Called before long work so that a bad output folder fails at once, not
    after the training.  Raises ``OSError`` naming the folder otherwise
    (e.g. it is an existing file, or not writable).
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"output folder {folder} is an existing file")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd, probe = tempfile.mkstemp(prefix=".ssvm-write-test.", dir=folder)
    except OSError as err:
        raise PermissionError(f"cannot write in output folder {folder}: "
                              f"{err.strerror or err}") from err
    os.close(fd)
    os.unlink(probe)
    return folder

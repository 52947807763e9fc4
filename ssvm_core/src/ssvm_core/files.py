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
import secrets
import shutil
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

    Called before writing a single output file (``ssvm evaluate --json``,
    ``ssvm predict --output``); a run's folder of several files is written
    with :class:`FolderGeneration` instead.  Raises ``OSError`` naming the
    folder otherwise (e.g. it is an existing file, or not writable).
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


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _is_empty_folder(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def check_new_folder(folder: str | os.PathLike, overwrite: bool = False) -> Path:
    """Check, without creating anything, that ``folder`` can be written as a new generation.

    Called before long work so that a bad output folder fails at once and
    leaves nothing behind.

    Parameters
    ----------
    folder : str or path-like
        The folder a :class:`FolderGeneration` will publish.
    overwrite : bool, default False
        Whether an existing, non-empty ``folder`` may be replaced.

    Returns
    -------
    pathlib.Path
        ``folder``.

    Raises
    ------
    NotADirectoryError
        ``folder`` or one of its ancestors is an existing file.
    FileExistsError
        ``folder`` holds files and ``overwrite`` is False.
    PermissionError
        The folder that would receive the new generation is not writable.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"output folder {folder} is an existing file")
    if folder.is_dir() and not overwrite and not _is_empty_folder(folder):
        raise FileExistsError(f"output folder {folder} exists and is not empty; pass "
                              "--overwrite to replace it, or choose another folder")
    ancestor = _nearest_existing(folder.parent)
    if not ancestor.is_dir():
        raise NotADirectoryError(f"cannot create output folder {folder}: {ancestor} is an "
                                 "existing file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write in output folder {folder}: {ancestor} is not "
                              "writable")
    return folder


def free_folder(base: str | os.PathLike) -> Path:
    """``base`` if it does not exist or is empty, else the first free ``base-2``, ``base-3``..."""
    base = Path(base)
    candidate, number = base, 1
    while candidate.exists() and not _is_empty_folder(candidate):
        number += 1
        candidate = base.with_name(f"{base.name}-{number}")
    return candidate


class FolderGeneration:
    """Write a folder's files as one generation: all of them appear together, or none.

    ``with FolderGeneration(target) as tmp:`` yields a temporary folder
    beside ``target`` (a hidden ``.<name>.*.tmp`` folder in the same parent,
    so that renaming it is atomic); write every file into it.  When the block
    exits cleanly the temporary folder is fsynced and renamed to ``target``.
    An existing non-empty ``target`` is replaced only with ``overwrite``:
    it is first renamed aside (``.<name>.*.old``), the new folder renamed in,
    and then the old one deleted.  A crash (``kill -9``) at any moment
    leaves ``target`` holding the old generation or the new one, never a
    mix; between the two renames of an overwrite both complete generations
    are on disk under their hidden names.  An exception inside the block
    removes the temporary folder and leaves ``target`` untouched.

    Parameters
    ----------
    target : str or path-like
        The folder to publish; its parents are created when the block is
        entered.
    overwrite : bool, default False
        Replace an existing, non-empty ``target``.
    renumber : bool, default False
        Without ``overwrite``: when ``target`` has been filled by someone
        else meanwhile, publish to the next free numbered folder
        (:func:`free_folder`) instead of failing.

    Attributes
    ----------
    target : pathlib.Path
        Where the generation was published (after the block).
    """

    def __init__(self, target: str | os.PathLike, overwrite: bool = False,
                 renumber: bool = False) -> None:
        self.target = check_new_folder(target, overwrite)
        self.overwrite, self.renumber = overwrite, renumber
        self._tmp: Path | None = None

    def __enter__(self) -> Path:
        parent = self.target.parent
        parent.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.", suffix=".tmp",
                                          dir=parent))
        return self._tmp

    def __exit__(self, exc_type, exc, tb) -> None:
        tmp, self._tmp = self._tmp, None
        if exc_type is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            return
        _fsync_folder(tmp)
        self._publish(tmp)

    def _publish(self, tmp: Path) -> None:
        target, parent = self.target, self.target.parent
        if target.exists() and not _is_empty_folder(target):
            if self.overwrite:
                old = parent / f".{target.name}.{secrets.token_hex(6)}.old"
                os.replace(target, old)          # aside: a sibling, so only the parent changes
                os.replace(tmp, target)
                _fsync_folder(parent)
                shutil.rmtree(old, ignore_errors=True)
                return
            if not self.renumber:
                raise FileExistsError(f"output folder {target} was filled while this run "
                                      f"worked; its outputs are kept in {tmp}")
            target = self.target = free_folder(target)
        try:
            os.replace(tmp, target)          # also replaces an empty folder
        except OSError as err:
            raise OSError(err.errno, f"cannot rename the outputs into {target} "
                                     f"({err.strerror}); they are kept in {tmp}") from err
        _fsync_folder(parent)

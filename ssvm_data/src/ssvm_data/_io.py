"""Data home lookup, file discovery and the download helper."""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

#: Environment variable naming the folder that holds the data sets.
DATA_HOME_ENV = "SSVM_DATA_HOME"
#: Environment variable that disables downloads when set to a non-empty value.
OFFLINE_ENV = "SSVM_OFFLINE"
#: Seconds to wait for the server before a download is given up.
DOWNLOAD_TIMEOUT = 10


def data_home(data_home: str | os.PathLike | None = None) -> Path | None:
    """Return the folder that holds the data sets.

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        An explicit folder. It wins over the environment.

    Returns
    -------
    pathlib.Path or None
        ``data_home`` if given, else the value of ``$SSVM_DATA_HOME`` if it is set
        and not empty, else None. ``~`` is expanded. The folder need not exist.
    """
    if data_home is None:
        data_home = os.environ.get(DATA_HOME_ENV) or None
    if data_home is None:
        return None
    return Path(os.fspath(data_home)).expanduser()


def explicit_path(path: str | os.PathLike, what: str) -> Path:
    """A user-given file or folder as a ``Path``; ``FileNotFoundError`` if it is missing."""
    path = Path(os.fspath(path)).expanduser()
    if not (path.is_file() or path.is_dir()):
        raise FileNotFoundError(f"{what} data path {path} does not exist")
    return path


def find_file(directory: Path, names: Sequence[str]) -> Path | None:
    """Return the first of `names` that is a file in `directory`, or None."""
    for name in names:
        candidate = Path(directory) / name
        if candidate.is_file():
            return candidate
    return None


def cache_dir() -> Path:
    """Return pooch's per-user cache folder for this project (it may not exist yet)."""
    import pooch

    return Path(pooch.os_cache("ssvm"))


def download_enabled(download: bool | None = None) -> bool:
    """Resolve the ``download`` argument of the loaders: None (the default) means
    "unless ``$SSVM_OFFLINE`` is set", so ``download_enabled()`` says whether a real
    data set that is not found locally would be downloaded."""
    if download is None:
        return not os.environ.get(OFFLINE_ENV)
    return bool(download)


def gunzip_md5(path: Path) -> str:
    """Return the MD5 hex digest of the decompressed content of the gzip file `path`."""
    digest = hashlib.md5()
    with gzip.open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_gzip(url: str, fname: str, md5: str) -> Path:
    """Download a gzip file into :func:`cache_dir` and check its decompressed content.

    Parameters
    ----------
    url : str
        Where to fetch the file from.
    fname : str
        File name inside the cache folder.
    md5 : str
        Expected MD5 hex digest of the *decompressed* content. The compressed bytes
        of such files are often not reproducible, so their own hash is not checked.

    Returns
    -------
    pathlib.Path
        The verified file.

    Raises
    ------
    OSError
        If the download fails (network errors from ``requests`` are OSErrors).
    ValueError
        If the content does not match `md5`; the file is deleted first.
    """
    import pooch

    downloader = pooch.HTTPDownloader(timeout=DOWNLOAD_TIMEOUT)
    path = Path(pooch.retrieve(url, known_hash=None, fname=fname, path=cache_dir(),
                               downloader=downloader))
    try:
        actual = gunzip_md5(path)
    except (OSError, EOFError, zlib.error) as err:
        actual = f"unreadable gzip ({err})"
    if actual != md5:
        path.unlink(missing_ok=True)
        raise ValueError(f"downloaded {url} does not have the expected content: "
                         f"MD5 of the decompressed data is {actual}, expected {md5}; "
                         f"the file was deleted")
    return path


def read_mat(path: Path, names: Sequence[str]) -> dict:
    """Read variables `names` of a MATLAB file: v5/v7 with ``scipy.io.loadmat``,
    v7.3 (HDF5) with h5py when it is installed (``ssvm_data._mat73``, same layout).

    Raises
    ------
    ValueError
        If the file is a MATLAB v7.3 (HDF5) file and h5py is missing or cannot
        read it, or the file is not a readable MATLAB file; the message names
        the file. Missing variables are simply absent from the result.
    """
    import scipy.io

    try:
        return scipy.io.loadmat(path, variable_names=list(names))
    except NotImplementedError as err:  # scipy's answer to MATLAB v7.3 (HDF5) files
        try:
            from ssvm_data._mat73 import read_mat73

            return read_mat73(path, names)
        except ImportError:
            raise ValueError(
                f"{path} is a MATLAB v7.3 (HDF5) file, which scipy.io.loadmat cannot read: "
                "install h5py (pip install 'ssvm-data[hdf5]') or re-save it in MATLAB with "
                "save(..., '-v7')") from err
    except (scipy.io.matlab.MatReadError, ValueError, TypeError, OSError, EOFError,
            zlib.error) as err:
        raise ValueError(f"{path} is not a readable MATLAB file: {err}") from err

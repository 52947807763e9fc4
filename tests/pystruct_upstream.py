"""pystruct 0.3.2's own tests and examples, fetched at test time, run on ``ssvm.compat.pystruct``.

Nothing of pystruct is part of this repository. :func:`sdist_root` downloads pystruct's source
distribution from the package index (its simple API names the file and its SHA-256, which must
equal :data:`SDIST_SHA256`) into a cache folder outside the working tree,
``$SSVM_PYSTRUCT_CACHE`` or ``~/.cache/ssvm/pystruct`` (pooch's per-user cache), and extracts it
there. Nothing is downloaded when ``$SSVM_OFFLINE`` is set; :class:`Unavailable` says why the
sdist cannot be had.

The rewrite rule (:func:`rewrite_source`) changes only the import prefix, nothing else:

- ``from pystruct import X`` becomes ``from ssvm.compat.pystruct import X``;
- ``pystruct.<name>`` (in ``import pystruct.x``, ``from pystruct.x import ...`` and dotted uses)
  becomes ``ssvm.compat.pystruct.<name>``;
- ``import pystruct`` becomes ``import ssvm.compat.pystruct``.

Words that are not a module path (``"Score with pystruct n-slack ssvm"``) are left alone.

What pystruct's files need from 2013-era libraries is provided outside the rewritten files, by
:func:`legacy_shims` for the duration of a test: numpy's removed aliases (``np.int``,
``np.float``, ``np.bool``, ``np.object``, ``np.complex``, ``np.str``) and stand-ins for the
``nose`` and ``nose.tools`` modules (``SkipTest`` and nose's snake-case ``assert_*`` helpers,
made, as nose made them, from ``unittest.TestCase``'s assertion methods).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import re
import shutil
import sys
import tarfile
import tempfile
import types
import unittest
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

VERSION = "0.3.2"
SDIST_NAME = f"pystruct-{VERSION}.tar.gz"
SDIST_SHA256 = "713ff8a9669260a7ff756c6df6087bfbb54c5ca4ce0395081235202161b43e76"
SIMPLE_INDEX = "https://pypi.org/simple/pystruct/"
#: Environment variable naming the cache folder (default: pooch's ``ssvm`` cache + ``pystruct``).
CACHE_ENV = "SSVM_PYSTRUCT_CACHE"
#: Seconds to wait for the package index before the download is given up.
TIMEOUT = 30
#: numpy names removed in numpy 1.24 that pystruct's files still use, and what they meant.
NUMPY_ALIASES = {"int": int, "float": float, "bool": bool, "object": object,
                 "complex": complex, "str": str}


class Unavailable(RuntimeError):
    """pystruct's sdist cannot be had here (no network, ``$SSVM_OFFLINE``, bad checksum...)."""


def cache_folder() -> Path:
    """The folder holding the sdist and its extracted tree (it may not exist yet)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    import pooch

    return Path(pooch.os_cache("ssvm")) / "pystruct"


def _sdist_url() -> str:
    """The sdist's address as the package index's simple API lists it, checked against its hash."""
    request = urllib.request.Request(SIMPLE_INDEX, headers={"Accept": "text/html"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        page = response.read().decode("utf-8", "replace")
    match = re.search(r'href="([^"]*/' + re.escape(SDIST_NAME) + r')#sha256=([0-9a-f]{64})"',
                      page)
    if match is None:
        raise Unavailable(f"{SIMPLE_INDEX} does not list {SDIST_NAME}")
    if match.group(2) != SDIST_SHA256:
        raise Unavailable(f"{SIMPLE_INDEX} lists {SDIST_NAME} with SHA-256 {match.group(2)}, "
                          f"expected {SDIST_SHA256}")
    return match.group(1)


def _download(folder: Path) -> Path:
    """Download the sdist into `folder` (hash checked by pooch) and return its path."""
    import pooch

    if os.environ.get("SSVM_OFFLINE"):
        raise Unavailable("$SSVM_OFFLINE is set and it is not in the cache "
                          f"{folder} (set {CACHE_ENV} to a folder holding {SDIST_NAME})")
    try:
        url = _sdist_url()
        return Path(pooch.retrieve(url, known_hash=f"sha256:{SDIST_SHA256}", fname=SDIST_NAME,
                                   path=folder, downloader=pooch.HTTPDownloader(timeout=TIMEOUT),
                                   progressbar=False))
    except (OSError, ValueError) as err:  # network errors and pooch's hash mismatch
        raise Unavailable(f"{type(err).__name__}: {err}") from err


def sdist_root() -> Path:
    """Return the extracted ``pystruct-0.3.2`` folder, downloading and extracting it if needed.

    Returns
    -------
    pathlib.Path
        The folder holding ``pystruct/tests`` and ``examples``.

    Raises
    ------
    Unavailable
        If the sdist is not cached and cannot be downloaded, or does not have the expected hash.
    """
    folder = cache_folder()
    root = folder / f"pystruct-{VERSION}"
    if (root / "PKG-INFO").is_file():
        return root
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise Unavailable(f"cannot create the cache folder {folder}: {err}") from err
    archive = _download(folder)
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=folder))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(staging, filter="data")
        with contextlib.suppress(OSError):  # another process may have finished first
            os.rename(staging / root.name, root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not (root / "PKG-INFO").is_file():
        raise Unavailable(f"{archive} does not hold {root.name}/PKG-INFO")
    return root


_FROM_PACKAGE = re.compile(r"\bfrom\s+pystruct\s+import\b")
_IMPORT_PACKAGE = re.compile(r"\bimport\s+pystruct\b(?!\.)")
_DOTTED = re.compile(r"(?<![\w.])pystruct\.(?=[A-Za-z_])")


def rewrite_source(text: str) -> str:
    """Apply the import-prefix rewrite rule of this module's docstring to pystruct source text."""
    text = _FROM_PACKAGE.sub("from ssvm.compat.pystruct import", text)
    text = _IMPORT_PACKAGE.sub("import ssvm.compat.pystruct", text)
    return _DOTTED.sub("ssvm.compat.pystruct.", text)


def write_rewritten(source: Path, destination: Path) -> Path:
    """Write the rewritten copy of the pystruct file `source` to `destination` and return it."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(rewrite_source(source.read_text(encoding="utf-8")), encoding="utf-8")
    return destination


def test_functions(path: Path) -> list[str]:
    """Names of the module-level ``test*`` functions of the file `path`, in file order."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]


test_functions.__test__ = False  # a helper, not a test of ours


def collect(root: Path, folders: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
    """Return ``"folder/file.py::function"`` for every upstream test in `folders`.

    Parameters
    ----------
    root : pathlib.Path
        The extracted sdist (:func:`sdist_root`).
    folders : sequence of str
        Folders under ``pystruct/tests``, e.g. ``"test_models"``.
    exclude : sequence of str, default ()
        Files (``"folder/file.py"``) left out.
    """
    tests = root / "pystruct" / "tests"
    cases = []
    for folder in folders:
        for path in sorted((tests / folder).glob("test_*.py")):
            name = f"{folder}/{path.name}"
            if name not in exclude:
                cases.extend(f"{name}::{function}" for function in test_functions(path))
    return cases


def _nose_tools() -> types.ModuleType:
    """A stand-in for ``nose.tools``: ``assert_equal`` etc. from ``unittest.TestCase``."""
    module = types.ModuleType("nose.tools")
    case = unittest.TestCase("__init__")
    case.maxDiff = None
    for name in dir(case):
        if name.startswith("assert") and "_" not in name:
            snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)
            setattr(module, snake, getattr(case, name))
    return module


def _nose() -> types.ModuleType:
    """A stand-in for the ``nose`` package: ``SkipTest`` and ``nose.tools``."""
    module = types.ModuleType("nose")
    module.SkipTest = unittest.SkipTest
    module.tools = _nose_tools()
    module.__path__ = []  # a package, so ``import nose.tools`` resolves
    return module


@contextlib.contextmanager
def legacy_shims() -> Iterator[None]:
    """Restore numpy's removed aliases and provide ``nose`` for the duration of the block."""
    added = [name for name in NUMPY_ALIASES if name not in np.__dict__]
    saved = {name: sys.modules.get(name) for name in ("nose", "nose.tools")}
    nose = _nose()
    try:
        for name in added:
            setattr(np, name, NUMPY_ALIASES[name])
        sys.modules["nose"] = nose
        sys.modules["nose.tools"] = nose.tools
        yield
    finally:
        for name in added:
            delattr(np, name)
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@contextlib.contextmanager
def seeded_global_random(seed: int) -> Iterator[None]:
    """Seed numpy's global generator for the block (pystruct's tests draw from it unseeded, so
    a run would differ from the next), and restore its previous state afterwards."""
    state = np.random.get_state()  # noqa: NPY002 (the generator pystruct's code uses)
    np.random.seed(seed)  # noqa: NPY002
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002


def load_rewritten(root: Path, relative: str, workdir: Path) -> types.ModuleType:
    """Import the rewritten copy of ``pystruct/tests/<relative>`` written under `workdir`.

    Call it inside :func:`legacy_shims`. The module is registered in ``sys.modules`` under a
    private name (``_pystruct_upstream.<folder>.<file>``) and imported once per name.
    """
    module_name = "_pystruct_upstream." + relative.removesuffix(".py").replace("/", ".")
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = write_rewritten(root / "pystruct" / "tests" / relative, workdir / relative)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module

"""Saved models: a documented, versioned ``.npz`` format without pickle.

A model file is an ``.npz`` archive holding the weights ``w``, a JSON header
``header`` (a 0-d string array) and one array ``param_<k>`` per array-valued
constructor parameter (cost matrices, class weights, box bounds), which the
header references by name.  The header records:

``format``, ``format_version``
    ``"ssvm-model"`` and :data:`FORMAT_VERSION`; a file of a newer version is
    refused with a message saying so.
``model``
    ``class`` (``"module:QualName"``), ``params`` (the model's ``get_params``),
    ``bound`` (the plain values ``bind`` left on the model, e.g. the feature
    width ``n_features_in_``) and ``size_joint_feature`` (the length of ``w``).
``estimator``
    ``class`` and ``params``: the estimator's ``get_params(deep=False)`` without
    the model and the live objects (``callback``, ``executor``; a random
    generator is recorded as None).
``fit``
    ``lam``, ``gap`` (the certified gap, None for SSG), ``certified``,
    ``iterate``, ``status``, ``passes`` and, for SSG, ``primal``.
``fingerprint``
    The fingerprint of the training oracle (see ``ssvm_core.fingerprint``).
``versions``, ``metadata``
    Versions of Python, NumPy, ssvm-core and the model's package; free
    JSON-serialisable metadata of the caller (``ssvm train`` records the data
    set and the seed).

Values in ``params`` are JSON values or tagged objects (``{"__type__": ...}``)
for tuples, non-finite floats, NumPy scalars, arrays (stored as
``param_<k>`` with their dtype and shape), module-level functions or classes
(by ``"module:QualName"``) and the rare dictionary with a ``"__type__"`` key.
Loading imports classes and functions only from the allow-list
(:data:`TRUSTED_MODULES` and the modules the caller names), so a file cannot
make ``load_model`` import arbitrary code.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
import os
import platform
import zipfile
from collections.abc import Iterable
from typing import Any

import numpy as np

from ssvm_core.exceptions import ModelFileError
from ssvm_core.files import atomic_write
from ssvm_core.models import StructuredModel

#: Name of the format, in every header.
FORMAT_NAME = "ssvm-model"
#: The version this code writes and the newest one it reads.
FORMAT_VERSION = 1
#: Top-level packages whose modules ``load_model`` imports classes and functions from.
TRUSTED_MODULES = ("ssvm", "ssvm_core", "ssvm_oracles", "ssvm_data", "ssvm_paths")
#: Estimator parameters that hold live objects and are not saved.
_LIVE_PARAMS = ("model", "callback", "executor")
#: Classes of the model files written by ``ssvm train`` before this format (``repr`` strings).
_LEGACY_CLASSES = {name: f"ssvm_oracles:{name}" for name in (
    "ChainModel", "MulticlassModel", "GraphModel", "GridModel", "MultiLabelModel",
    "BinaryModel", "GraphCutModel", "PoseModel", "MatchingModel")}


def save_model(estimator, path: str | os.PathLike, *, metadata: dict | None = None) -> None:
    """Write a fitted estimator's model and weights to ``path`` (atomically, no pickle).

    Parameters
    ----------
    estimator : FrankWolfeSSVM or SubgradientSSVM
        A fitted estimator whose model has ``get_params`` (every
        ``StructuredModel``).
    path : str or path-like
        The file to write (exactly this name; ``.npz`` is not appended).  It
        holds either its previous content or the complete new file, whatever
        happens during the write.
    metadata : dict, optional
        JSON-serialisable values stored in the header, e.g. the name of the
        training data set.  Default None: none, or those of the file a loaded
        estimator came from (as is its training fingerprint).

    Raises
    ------
    NotFittedError
        The estimator is not fitted.
    TypeError
        A parameter of the model or the estimator cannot be stored (e.g. a
        lambda or a nested function: pass a module-level function).
    """
    estimator._check_fitted()
    model = estimator.model
    arrays: dict[str, np.ndarray] = {}
    w = np.ascontiguousarray(estimator.w_, dtype=np.float64)
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "model": {
            "class": _class_ref(type(model)),
            "params": _encode(model.get_params(), arrays, "model parameter"),
            "bound": _encode(_bound_values(model), arrays, "bound value"),
            "size_joint_feature": int(w.shape[0]),
        },
        "estimator": {
            "class": _class_ref(type(estimator)),
            "params": _encode(_estimator_params(estimator), arrays, "estimator parameter"),
        },
        "fit": _encode(_fit_record(estimator), arrays, "fit record"),
        "fingerprint": _training_fingerprint(estimator),
        "versions": _versions(type(model)),
        "metadata": _encode(_metadata(estimator, metadata), arrays, "metadata"),
    }
    text = json.dumps(header, allow_nan=False)
    with atomic_write(path) as f:
        np.savez(f, header=np.array(text), w=w, **arrays)


def load_model(path: str | os.PathLike, *, trusted_modules: Iterable[str] = ()):
    """Read a model file written by :func:`save_model` (or by an older ``ssvm train``).

    Parameters
    ----------
    path : str or path-like
        The file.
    trusted_modules : iterable of str, default ()
        Modules (or packages) besides :data:`TRUSTED_MODULES` that classes and
        functions may be imported from, e.g. ``["mypackage.models"]`` for a
        model class of your own.

    Returns
    -------
    FrankWolfeSSVM or SubgradientSSVM
        A fitted estimator (``predict``, ``score``) with ``w_``, ``lam_``,
        ``gap_`` (FW), ``certified_``, ``iterate_``, ``status_``,
        ``n_passes_``, and ``header_`` (the file's header, its ``metadata``
        decoded).  It has no ``state_``: a solver state is saved separately
        (``SolverState.save``).

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ModelFileError
        (a ``ValueError``) The file is not a valid model file, is of a newer
        format version, misses a key, names a class outside the allow-list or
        not a ``StructuredModel``, or holds weights of the wrong size for its
        model; the message names the file and the problem.
    """
    trusted = tuple(TRUSTED_MODULES) + tuple(trusted_modules)
    name = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise ModelFileError("not an .npz archive")
            files = {key: data[key] for key in data.files}
        if "header" in files:
            return _from_header(files, trusted)
        if {"w", "lam", "model"} <= files.keys():
            return _from_legacy(files, trusted)
        raise ModelFileError("holds neither a model header nor the arrays w, lam and model "
                             "of an older ssvm model file")
    except FileNotFoundError:
        raise
    except ModelFileError as err:
        raise ModelFileError(f"{name}: {err}") from None
    except (ValueError, KeyError, TypeError, AttributeError, EOFError, OSError,
            zipfile.BadZipFile) as err:
        raise ModelFileError(f"{name}: not a valid ssvm model file: {err}") from None


# -- writing -------------------------------------------------------------------------------


def _class_ref(obj) -> str:
    qualname = obj.__qualname__
    if "<" in qualname:
        raise TypeError(f"{qualname} of {obj.__module__} is not a module-level name "
                        "and cannot be saved; define it at the top level of a module")
    return f"{obj.__module__}:{qualname}"


def _bound_values(model: StructuredModel) -> dict:
    """The plain values ``bind`` left on the model (not set by its constructor)."""
    fresh = vars(type(model)(**model.get_params()))
    out = {}
    for key, value in vars(model).items():
        if key in fresh and _same(fresh[key], value):
            continue
        if _is_plain(value):
            out[key] = value
    return out


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) else bool(a == b)
    except (TypeError, ValueError):
        return False


def _is_plain(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, np.integer, np.floating)):
        return True
    return isinstance(value, (tuple, list)) and all(_is_plain(v) for v in value)


def _estimator_params(estimator) -> dict:
    params = {k: v for k, v in estimator.get_params(deep=False).items()
              if k not in _LIVE_PARAMS}
    if "random_state" in params and not (params["random_state"] is None or isinstance(
            params["random_state"], (int, np.integer))):
        params["random_state"] = None          # a live generator: its seed is unknown
    return params


def _fit_record(estimator) -> dict:
    gap = getattr(estimator, "gap_", None)
    record = {
        "lam": float(estimator.lam_),
        "gap": None if gap is None else float(gap),
        "certified": bool(getattr(estimator, "certified_", False)),
        "iterate": getattr(estimator, "iterate_", None),
        "status": getattr(estimator, "status_", None),
        "passes": getattr(estimator, "n_passes_", None),
    }
    if hasattr(estimator, "primal_"):
        record["primal"] = float(estimator.primal_)
    return record


def _training_fingerprint(estimator) -> dict | None:
    """The fingerprint of the training oracle: the FW state's, SSG's ``fingerprint_``,
    else that of the file a loaded estimator came from."""
    state = getattr(estimator, "state_", None)
    if state is not None and getattr(state, "fingerprint", None) is not None:
        return state.fingerprint
    if getattr(estimator, "fingerprint_", None) is not None:
        return estimator.fingerprint_
    return getattr(estimator, "header_", {}).get("fingerprint")


def _metadata(estimator, metadata: dict | None) -> dict:
    if metadata is not None:
        return metadata
    return getattr(estimator, "header_", {}).get("metadata", {})


def _versions(model_class: type) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "numpy": np.__version__}
    top = model_class.__module__.split(".")[0]
    for dist in dict.fromkeys(("ssvm-core", top.replace("_", "-"))):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def _encode(value: Any, arrays: dict, what: str) -> Any:
    """``value`` as JSON, arrays moved to ``arrays`` (see the module docstring)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__type__": "float", "value": repr(value)}
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return {"__type__": "scalar", "dtype": value.dtype.str,
                "value": _encode(value.item(), arrays, what)}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"{what}: an array of Python objects cannot be saved")
        key = f"param_{len(arrays)}"
        arrays[key] = value
        return {"__type__": "ndarray", "key": key, "dtype": value.dtype.str,
                "shape": list(value.shape)}
    if isinstance(value, list):
        return [_encode(v, arrays, what) for v in value]
    if isinstance(value, tuple):
        return {"__type__": "tuple", "items": [_encode(v, arrays, what) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"{what}: only dictionaries with str keys can be saved")
        items = {k: _encode(v, arrays, f"{what} {k!r}") for k, v in value.items()}
        return {"__type__": "dict", "items": list(items.items())} if "__type__" in value \
            else items
    if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
        return {"__type__": "ref", "ref": _class_ref(value)}
    raise TypeError(f"{what} of type {type(value).__name__} cannot be saved in a model file")


# -- reading -------------------------------------------------------------------------------


def _decode(value: Any, arrays: dict, trusted: tuple[str, ...]) -> Any:
    if isinstance(value, list):
        return [_decode(v, arrays, trusted) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get("__type__")
    if kind is None:
        return {k: _decode(v, arrays, trusted) for k, v in value.items()}
    if kind == "float":
        return float(value["value"])
    if kind == "scalar":
        return np.dtype(value["dtype"]).type(_decode(value["value"], arrays, trusted))
    if kind == "ndarray":
        array = arrays.get(value["key"])
        if array is None:
            raise ModelFileError(f"the array {value['key']!r} named in the header is missing")
        if array.dtype.str != value["dtype"] or list(array.shape) != value["shape"]:
            raise ModelFileError(f"the array {value['key']!r} has dtype {array.dtype.str} and "
                                 f"shape {list(array.shape)}, the header says "
                                 f"{value['dtype']} and {value['shape']}")
        return array
    if kind == "tuple":
        return tuple(_decode(v, arrays, trusted) for v in value["items"])
    if kind == "dict":
        return {k: _decode(v, arrays, trusted) for k, v in value["items"]}
    if kind == "ref":
        return _import(value["ref"], trusted)
    raise ModelFileError(f"unknown tagged value {value!r} in the header")


#: The base class of the estimators a file may hold, and the estimator of older files.
_ESTIMATOR_BASE = "ssvm_core.base:BaseSSVM"
_LEGACY_ESTIMATOR = "ssvm_core.solvers:FrankWolfeSSVM"


def _import(ref: str, trusted: tuple[str, ...]):
    """The object ``module:QualName`` names, imported only from a trusted module."""
    module, sep, qualname = str(ref).partition(":")
    if not sep or not module or not qualname:
        raise ModelFileError(f"{ref!r} is not a 'module:QualName' reference")
    if not any(module == t or module.startswith(t + ".") for t in trusted):
        raise ModelFileError(
            f"{ref!r} is not in the allow-list of modules ({', '.join(trusted)}); "
            f"if you trust this file, pass trusted_modules=[{module.split('.')[0]!r}]")
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise ModelFileError(f"cannot import {ref!r}: {err}") from None
    return obj


def _require(mapping: dict, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(mapping, dict):
        raise ModelFileError(f"{where} is not a mapping")
    missing = [k for k in keys if k not in mapping]
    if missing:
        raise ModelFileError(f"{where} misses the key(s) {missing}")


def _from_header(files: dict, trusted: tuple[str, ...]):
    try:
        header = json.loads(str(files["header"]))
    except json.JSONDecodeError as err:
        raise ModelFileError(f"its header is not JSON ({err})") from None
    _require(header, ("format", "format_version"), "the header")
    if header["format"] != FORMAT_NAME:
        raise ModelFileError(f"its format is {header['format']!r}, not {FORMAT_NAME!r}")
    version = header["format_version"]
    if not isinstance(version, int) or version < 1:
        raise ModelFileError(f"format_version {version!r} is not a positive integer")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"written in model format version {version}; this ssvm-core "
                             f"reads versions up to {FORMAT_VERSION}: upgrade ssvm-core")
    _require(header, ("model", "estimator", "fit", "fingerprint", "metadata"), "the header")
    _require(header["model"], ("class", "params", "bound", "size_joint_feature"),
             "the header's model")
    _require(header["estimator"], ("class", "params"), "the header's estimator")
    _require(header["fit"], ("lam", "gap", "certified", "iterate", "status", "passes"),
             "the header's fit record")
    if "w" not in files:
        raise ModelFileError("the weights w are missing")
    model = _build_model(header["model"]["class"],
                         _decode(header["model"]["params"], files, trusted), trusted)
    bound = _decode(header["model"]["bound"], files, trusted)
    if not isinstance(bound, dict):
        raise ModelFileError("the model's bound values are not a mapping")
    for key, value in bound.items():
        if key.startswith("__") or callable(getattr(type(model), key, None)) or \
                isinstance(getattr(type(model), key, None), property):
            raise ModelFileError(f"the bound value {key!r} would replace a method or "
                                 f"property of {type(model).__name__}")
        setattr(model, key, value)
    estimator = _build_estimator(header["estimator"]["class"], model,
                                 _decode(header["estimator"]["params"], files, trusted),
                                 trusted)
    fit = _decode(header["fit"], files, trusted)
    w = _weights(files["w"], model, header["model"]["size_joint_feature"])
    estimator.w_ = w
    estimator.lam_ = float(fit["lam"])
    if fit["gap"] is not None:
        estimator.gap_ = float(fit["gap"])
    if "primal" in fit:
        estimator.primal_ = float(fit["primal"])
    estimator.certified_ = bool(fit["certified"])
    estimator.iterate_ = fit["iterate"]
    estimator.status_ = fit["status"]
    estimator.n_passes_ = fit["passes"]
    header["metadata"] = _decode(header["metadata"], files, trusted)
    estimator.header_ = header
    return estimator


def _build_model(ref: str, params: dict, trusted: tuple[str, ...]) -> StructuredModel:
    cls = _import(ref, trusted)
    if not (inspect.isclass(cls) and issubclass(cls, StructuredModel)):
        raise ModelFileError(f"{ref!r} is not a StructuredModel class")
    if not isinstance(params, dict):
        raise ModelFileError("the model parameters are not a mapping")
    try:
        return cls(**params)
    except (TypeError, ValueError) as err:
        raise ModelFileError(f"cannot rebuild {ref} from its parameters: {err}") from None


def _build_estimator(ref: str, model: StructuredModel, params: dict,
                     trusted: tuple[str, ...]):
    # resolved by path like every class of a file (the estimators' save/load call this
    # module, so it imports none of them)
    base = _import(_ESTIMATOR_BASE, trusted)
    cls = _import(ref, trusted)
    if not (inspect.isclass(cls) and issubclass(cls, base)):
        raise ModelFileError(f"{ref!r} is not an ssvm estimator class")
    if not isinstance(params, dict):
        raise ModelFileError("the estimator parameters are not a mapping")
    try:
        return cls(model, **params)
    except (TypeError, ValueError) as err:
        raise ModelFileError(f"cannot rebuild {ref} from its parameters: {err}") from None


def _weights(w: np.ndarray, model: StructuredModel, recorded: int | None) -> np.ndarray:
    """``w`` checked against the model's size (and the size the header records)."""
    if w.ndim != 1 or w.dtype.kind != "f":
        raise ModelFileError(f"w must be a vector of floats, got dtype {w.dtype} and shape "
                             f"{w.shape}")
    if not np.all(np.isfinite(w)):
        raise ModelFileError("w holds NaN or infinite values")
    if recorded is not None and w.shape[0] != recorded:
        raise ModelFileError(f"w has {w.shape[0]} entries, the header records "
                             f"{recorded}")
    try:
        expected = model.size_joint_feature
    except ValueError:                     # sizes known only once bound to data
        expected = None
    if expected is not None and w.shape[0] != expected:
        raise ModelFileError(f"w has {w.shape[0]} entries but {type(model).__name__} "
                             f"({model!r}) has {expected} joint features")
    return np.ascontiguousarray(w, dtype=np.float64)


def parse_model_repr(text: str) -> tuple[str, dict]:
    """Class name and keyword arguments of a model's ``repr`` (read by ``ast``, never run).

    Only ``Name(key=literal, ...)`` is accepted (the repr of the built-in
    models); anything else raises ``ModelFileError``.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise ModelFileError(f"the model {text!r} is not a model repr ({err.msg})") from None
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)) or tree.args:
        raise ModelFileError(f"the model {text!r} is not of the form Name(key=value, ...)")
    kwargs = {}
    for keyword in tree.keywords:
        if keyword.arg is None:
            raise ModelFileError(f"the model {text!r} has a ** argument")
        try:
            kwargs[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            raise ModelFileError(f"argument {keyword.arg} of the model {text!r} is not a "
                                 "literal") from None
    return tree.func.id, kwargs


def _from_legacy(files: dict, trusted: tuple[str, ...]):
    """An estimator from the ``model.npz`` of ``ssvm train`` before the format (w, lam,
    model = repr(model), gap, dataset)."""
    FrankWolfeSSVM = _import(_LEGACY_ESTIMATOR, trusted)   # what wrote those files

    name, kwargs = parse_model_repr(str(files["model"]))
    if name not in _LEGACY_CLASSES:
        raise ModelFileError(f"the model class {name!r} of an older model file is not one of "
                             f"the built-in models ({', '.join(_LEGACY_CLASSES)})")
    model = _build_model(_LEGACY_CLASSES[name], kwargs, trusted)
    lam = float(files["lam"])
    estimator = FrankWolfeSSVM(model, lam=lam)
    estimator.w_ = _weights(files["w"], model, None)
    estimator.lam_ = lam
    gap = float(files["gap"]) if "gap" in files else math.nan
    estimator.gap_ = gap
    estimator.certified_ = False            # the file does not say whether the oracle was exact
    estimator.iterate_ = None
    estimator.status_ = None
    estimator.n_passes_ = None
    metadata = {"dataset": str(files["dataset"])} if "dataset" in files else {}
    estimator.header_ = {"format": "ssvm train model.npz (before format version 1)",
                         "format_version": 0, "metadata": metadata}
    return estimator


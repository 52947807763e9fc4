"""The oracle conformance checker ``check_oracle``, for anyone who writes an oracle."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ssvm_core._oracle import PythonOracle, labelling_key
from ssvm_core.deprecation import renamed_argument
from ssvm_core.models import StructuredModel
from ssvm_core.oracles import as_oracle
from ssvm_core.testing.enumeration import EnumeratedProblem, enumerate_problem


def check_oracle(oracle, problem: EnumeratedProblem | None = None,
                 weights: Sequence[np.ndarray] | None = None, *,
                 model: StructuredModel | None = None, X: Sequence | None = None,
                 Y: Sequence | None = None, labellings=None, ground_truth: Sequence | None = None,
                 nu: float = 1.0, deterministic: bool = True, n_weights: int = 4,
                 random_state: int | np.random.Generator | None = 0, atol: float = 1e-10,
                 check_labels: bool = True, labelings=None) -> None:
    """Assert that ``oracle`` is a correct max oracle, on small inputs.

    For every block i and every ``w`` tested, it checks that

    - ``solve`` returns finite psi, a loss >= 0 and ``score = loss - <w, psi>``;
    - ``evaluate`` of the returned labelling reproduces psi, loss and score;
    - with ``deterministic``, a second ``solve`` at the same w returns a
      labelling with the same ``labelling_key``;
    - ``solve`` is an argmax (``score >= nu * max``) against the reference
      labellings below, and the max is >= 0 (the ground truth scores 0);
    - ``evaluate`` of every reference labelling gives a loss >= 0 and a score
      that ``solve`` does not beat by more than the tolerance;
    - the ground truth (when known) has psi = 0, loss = 0 and score = 0;
    - for an oracle that offers compact blocks (``max_coords > 0``), the
      identities of its block basis A_i (``_check_compact_block``), each named
      when it fails: ``solve`` with the coordinate buffers returns the same
      answer; A_i q_i(y) = psi_i(y) for the answer of ``solve`` and of
      ``evaluate``; theta = A_i^T w (``coord_scores``); with ``coords_only``
      the coordinates, theta, loss and score are unchanged; for random sparse
      directions e, <e, A_i^T w> = <A_i e, w>, ``coord_sqnorm`` = ||A_i e||^2
      and ``coord_add`` adds A_i e (and c2 A_i e); the ground truth's
      coordinates are empty.

    The reference labellings of a block are, in this order of preference:

    1. an enumeration: ``problem``, or ``enumerate_problem(model, X, Y)``, or
       the oracle itself when it is a ``BruteForceOracle`` (or wraps one); then
       ``solve`` must reach the enumerated max, its labelling must be a
       candidate with the enumerated psi and loss, and ``evaluate`` must
       reproduce psi, loss and score of every candidate;
    2. ``labellings``: per-block candidate labellings (a sequence of sequences,
       or a callable ``labellings(i)``), e.g. random labellings the caller
       generated; ``solve`` must score at least ``nu`` times the best of them;
    3. otherwise the labellings ``solve`` itself returned at all the weights
       tested: an answer found at one w must not beat ``solve`` at another.

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        The oracle under test.
    problem : EnumeratedProblem, optional
        The reference enumeration (e.g. ``enumerate_problem(BruteForceOracle(...))``).
    weights : sequence of ndarray, optional
        Weight vectors to test at; default ``n_weights`` Gaussian vectors of
        scales 0.1 to 10 drawn from ``random_state``, plus ``w = 0``.
    model, X, Y : optional
        A model that can enumerate labellings, with the bound data; ``Y``
        alone (without ``model``) gives the ground truths.
    labellings : sequence or callable, optional
        Candidate labellings per block (case 2 above).
    ground_truth : sequence of labellings, optional
        y_i per block (scalars count as length-1 labellings), checked to have
        psi = 0, loss = 0, score = 0 (``Y`` is used when this is omitted).
    nu : float in (0, 1]
        Required accuracy of ``solve`` (1 for an exact oracle; less for an
        approximate one, which then must score >= nu * max).
    deterministic : bool
        Require repeated ``solve`` calls at one w to return the same labelling.
    n_weights : int
        Random weight vectors when ``weights`` is omitted.
    random_state : None, int or numpy.random.Generator
        Seed of the default weights.
    atol : float
        Absolute tolerance, scaled by the magnitude of the quantities.
    check_labels : bool
        With an enumeration and ``nu == 1``, also require the returned
        labelling to be the enumeration's first maximiser (set False when ties
        are possible).
    labelings : sequence or callable, optional
        Deprecated spelling of ``labellings``.

    Raises
    ------
    AssertionError
        Naming the block, the weight index and the quantity that differ.
    """
    labellings = renamed_argument(labellings, labelings, "labelings", "labellings")
    mo = as_oracle(oracle)
    if not 0.0 < nu <= 1.0:
        raise ValueError(f"nu must be in (0, 1], got {nu}")
    if problem is None and model is not None:
        if X is None or Y is None:
            raise ValueError("give X and Y with a model")
        problem = enumerate_problem(model, X, Y)
    if problem is None and all(hasattr(mo.obj if isinstance(mo, PythonOracle) else oracle,
                                       name) for name in ("psi_matrix", "losses", "candidates")):
        problem = enumerate_problem(mo.obj if isinstance(mo, PythonOracle) else oracle)
    if problem is not None and ((mo.n_blocks, mo.n_features)
                                != (problem.n_blocks, problem.n_features)):
        raise AssertionError(f"oracle is {mo.n_blocks} x {mo.n_features}, problem "
                             f"{problem.n_blocks} x {problem.n_features}")
    if ground_truth is None:
        ground_truth = Y
    if ground_truth is not None and len(ground_truth) != mo.n_blocks:
        raise ValueError(f"{len(ground_truth)} ground truths for {mo.n_blocks} blocks")
    if weights is None:
        rng = np.random.default_rng(random_state)
        scales = np.logspace(-1, 1, max(int(n_weights), 1))
        weights = [np.zeros(mo.n_features)] + [s * rng.normal(size=mo.n_features)
                                               for s in scales]
    weights = [np.asarray(w, dtype=float) for w in weights]

    compact_rng = np.random.default_rng(random_state) if mo.max_coords > 0 else None
    found: list[dict[bytes, np.ndarray]] = [{} for _ in range(mo.n_blocks)]
    answers = {}
    for t, w in enumerate(weights):
        for i in range(mo.n_blocks):
            where = f"block {i}, weights #{t}"
            labels, psi, loss, score = mo.solve_py(i, w)
            tol = _tol(atol, w, psi, loss)
            if not np.all(np.isfinite(psi)) or not np.isfinite(score):
                raise AssertionError(f"{where}: solve returned non-finite psi or score")
            if not loss >= 0:
                raise AssertionError(f"{where}: solve returned loss {loss} < 0")
            _close(score, loss - float(w @ psi), tol, f"{where}: solve score vs loss - <w, psi>")
            e_psi, e_loss, e_score = mo.evaluate_py(i, labels, w)
            what = f"{where}, solve's labelling {labels}"
            _close(e_psi, psi, tol, f"{what}: evaluate psi")
            _close(e_loss, loss, tol, f"{what}: evaluate loss")
            _close(e_score, score, tol, f"{what}: evaluate score")
            if deterministic:
                again = mo.solve_py(i, w)[0]
                if labelling_key(again) != labelling_key(labels):
                    raise AssertionError(f"{where}: solve returned {labels}, then {again} at "
                                         "the same w (keys differ)")
            found[i][labelling_key(labels)] = np.asarray(labels)
            answers[t, i] = (labels, psi, loss, score)
            if compact_rng is not None:
                truth = None if ground_truth is None else np.atleast_1d(ground_truth[i])
                _check_compact_block(mo, i, w, (labels, psi, loss, score), truth,
                                     compact_rng, tol, where, deterministic and nu == 1.0)
            if problem is not None:
                _check_against_enumeration(mo, problem, i, w, labels, psi, loss, score,
                                           nu, check_labels, atol, where)
                _check_nonnegative(score, tol, labels, where)
            if ground_truth is not None:
                g_psi, g_loss, g_score = mo.evaluate_py(i, np.atleast_1d(ground_truth[i]), w)
                what = f"{where}, ground truth {np.asarray(ground_truth[i])}"
                _close(g_psi, np.zeros_like(g_psi), tol, f"{what}: psi")
                _close(g_loss, 0.0, tol, f"{what}: loss")
                _close(g_score, 0.0, tol, f"{what}: score")
    if problem is not None:
        return
    for t, w in enumerate(weights):
        for i in range(mo.n_blocks):
            if labellings is None:
                refs = list(found[i].values())
            else:
                refs = labellings(i) if callable(labellings) else labellings[i]
            labels, psi, loss, score = answers[t, i]
            for ref in refs:
                r_psi, r_loss, r_score = mo.evaluate_py(i, ref, w)
                tol = _tol(atol, w, psi, loss, r_psi, r_loss)
                what = f"block {i}, weights #{t}, labelling {np.asarray(ref)}"
                if not r_loss >= 0:
                    raise AssertionError(f"{what}: evaluate loss {r_loss} < 0")
                _close(r_score, r_loss - float(w @ r_psi), tol,
                       f"{what}: evaluate score vs loss - <w, psi>")
                if score < nu * r_score - tol:
                    raise AssertionError(f"{what}: scores {r_score}, more than solve's "
                                         f"{score} {'' if nu == 1 else f'/ nu = {nu} '}"
                                         f"(solve returned {labels}): solve is not a max")
            _check_nonnegative(score, _tol(atol, w, psi, loss), labels,
                               f"block {i}, weights #{t}")


def _check_compact_block(mo, i: int, w: np.ndarray, answer: tuple, truth, rng, tol: float,
                         where: str, same_answers: bool = True) -> None:
    """The block-basis identities of a compact oracle at block i and weights w.

    ``answer`` is ``solve_py``'s ``(labels, psi, loss, score)``.  With
    ``same_answers`` (an exact, deterministic oracle) ``solve`` must answer the
    same with and without the coordinate buffers, and with ``coords_only``;
    otherwise (an approximate oracle may answer differently on each call) each
    compact answer is checked against its own psi.  Each failure names the
    identity.
    """
    labels, psi, loss, score = answer
    c_labels, c_psi, q, theta, c_loss, c_score = mo.solve_coords_py(i, w)
    if same_answers:
        if labelling_key(c_labels) != labelling_key(labels):
            raise AssertionError(f"{where}: compact solve returned {c_labels}, plain solve "
                                 f"{labels} (solve with coordinate buffers must give the "
                                 "same answer)")
        _close(c_psi, psi, tol, f"{where}: compact solve psi vs plain solve psi")
        _close((c_loss, c_score), (loss, score), tol,
               f"{where}: compact solve (loss, score) vs plain solve")
    labels, psi, loss, score = c_labels, c_psi, c_loss, c_score
    _close(mo.coord_expand_py(i, q), psi, tol,
           f"{where}: identity A_i q_i(y) = psi_i(y) (coord_expand of solve's coordinates)")
    scores = mo.coord_scores_py(i, w)
    _close(theta, scores, tol, f"{where}: identity theta = A_i^T w (solve's theta vs "
                               "coord_scores)")
    o_labels, _, o_q, o_theta, o_loss, o_score = mo.solve_coords_py(i, w, psi=False)
    _close(o_theta, theta, tol, f"{where}: coords_only: theta differs from the full answer")
    if same_answers:
        if labelling_key(o_labels) != labelling_key(labels):
            raise AssertionError(f"{where}: solve with coords_only returned {o_labels}, "
                                 f"not {labels}")
        _close(o_q, q, tol, f"{where}: coords_only: coordinates differ from the full answer")
        _close((o_loss, o_score), (loss, score), tol,
               f"{where}: coords_only: (loss, score) differ from the full answer")
    e_psi, e_q, _, _ = mo.evaluate_coords_py(i, labels, w)
    _close(mo.coord_expand_py(i, e_q), e_psi, tol,
           f"{where}: identity A_i q_i(y) = psi_i(y) (coord_expand of evaluate's coordinates)")
    m = q.shape[0]
    e = rng.normal(size=m) * (rng.random(m) < 0.3)
    e[rng.integers(m)] = rng.normal()                  # at least one nonzero
    Ae = mo.coord_expand_py(i, e)
    e_tol = _tol(tol, w, e, Ae)
    _close(float(e @ scores), float(Ae @ w), e_tol,
           f"{where}: identity <e, A_i^T w> = <A_i e, w> (coord_scores vs coord_expand)")
    _close(mo.coord_sqnorm_py(i, e), float(Ae @ Ae), e_tol * (1.0 + float(np.abs(Ae).sum())),
           f"{where}: identity coord_sqnorm(e) = ||A_i e||^2")
    _close(mo.coord_dot_py(i, e, w), float(Ae @ w), e_tol,
           f"{where}: identity coord_dot(e, w) = <A_i e, w>")
    out, out2 = np.ones(mo.n_features), np.zeros(mo.n_features)
    mo.coord_add_py(i, e, out, out2, -0.5)
    _close(out, 1.0 + Ae, e_tol, f"{where}: identity coord_add: out += A_i e")
    _close(out2, -0.5 * Ae, e_tol, f"{where}: identity coord_add: out2 += c2 A_i e")
    if truth is not None:
        _, t_q, _, _ = mo.evaluate_coords_py(i, truth, w)
        _close(t_q, np.zeros_like(t_q), tol,
               f"{where}: identity q_i(y_i) = 0 (the ground truth's coordinates are empty)")


def _check_nonnegative(score, tol, labels, where):
    if score < -tol:
        raise AssertionError(f"{where}: solve returned {labels} with score {score} < 0, "
                             "but the ground truth scores 0")


def _check_against_enumeration(mo, problem, i, w, labels, psi, loss, score, nu, check_labels,
                               atol, where):
    H = problem.scores(i, w)
    tol = atol * max(1.0, float(np.abs(H).max()), float(np.abs(w).max(initial=0.0)))
    try:
        k = problem.index(i, labels)
    except KeyError:
        raise AssertionError(f"{where}: solve returned {labels}, not a candidate "
                             "of the enumeration") from None
    if nu == 1.0:
        if check_labels and k != int(np.argmax(H)):
            raise AssertionError(f"{where}: solve returned {labels}, enumeration "
                                 f"{problem.candidates[i][int(np.argmax(H))]}")
        _close(score, H.max(), tol, f"{where}: solve score")
    elif score < nu * H.max() - tol:
        raise AssertionError(f"{where}: solve returned {labels} with score {score}, "
                             f"below nu = {nu} times the max {H.max()}")
    _close(score, H[k], tol, f"{where}: solve score of its own labelling")
    _close(loss, problem.loss[i][k], tol, f"{where}: solve loss")
    _close(psi, problem.psi[i][k], tol, f"{where}: solve psi")
    if np.any(problem.loss[i] < 0):
        raise AssertionError(f"block {i}: the enumeration has negative losses")
    for k, cand in enumerate(problem.candidates[i]):
        e_psi, e_loss, e_score = mo.evaluate_py(i, cand, w)
        what = f"{where}, labelling {cand}"
        _close(e_psi, problem.psi[i][k], tol, f"{what}: evaluate psi")
        _close(e_loss, problem.loss[i][k], tol, f"{what}: evaluate loss")
        _close(e_score, H[k], tol, f"{what}: evaluate score")


def _tol(atol: float, w: np.ndarray, *values) -> float:
    """``atol`` scaled by the largest |w_j| and the l1 norms of ``values``."""
    return atol * max(1.0, float(np.abs(w).max(initial=0.0)),
                      *(float(np.abs(np.asarray(v, dtype=float)).sum()) for v in values))


def _close(got, expected, tol, what):
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if got.shape != expected.shape or not np.all(np.abs(got - expected) <= tol):
        raise AssertionError(f"{what}: got {got}, expected {expected} (tol {tol:.1e})")

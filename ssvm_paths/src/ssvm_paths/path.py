"""The epsilon-approximate regularization path of the SSVM.

Osokin et al. (2016), Sec. 4, Alg. 6-7 and App. K.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from ssvm_core import duality_gap, solve
from ssvm_core.options import DEFAULTS, needs_active_sets
from ssvm_paths._common import check_eps_kappa, resolve_problem, solver_options
from ssvm_paths._init import check_ground_truth, initial_point
from ssvm_paths.result import RegularizationPath


def regularization_path(model_or_oracle, X=None, Y=None, *, eps: float = 0.1,
                        kappa: float | None = None, lam_min: float = 2.0 ** -15,
                        max_breakpoints: int = 10_000, heuristic: bool = False,
                        certify: bool = True, step: str = "pairwise", sampling: str = "gap",
                        cache: bool = True, box="auto", max_passes: int = 1000,
                        gap_check_every: int = 10, random_state=0,
                        n_jobs: int | None = None,
                        callback: Callable[[dict], None] | None = None,
                        **solver_kwargs) -> RegularizationPath:
    """An epsilon-approximate regularization path (Osokin et al. (2016), Alg. 7 with the init of
    Alg. 6).

    The result gives, for every lambda >= its lower end, a w with
    P_lambda(w) - min P_lambda <= eps: ``(lambda_1 / lambda) w_1`` above the
    first breakpoint lambda_1 = lambda_inf, and ``w_j`` on
    ``[lambda_{j+1}, lambda_j]``.

    Parameters
    ----------
    model_or_oracle : StructuredModel or oracle
        A model with training data ``X, Y`` (it is bound with ``model.bind``),
        or an oracle already bound to its data (``MaxOracle`` or Python oracle).
    X, Y : sequences, optional
        Training set, with a model.
    eps : float
        Target suboptimality epsilon > 0 of every point of the path.
    kappa : float in (0, 1), optional
        Each breakpoint is optimised to a gap <= kappa eps (exact gap; default
        0.9), or, for the heuristic path, until the block gap estimates sum to
        <= kappa eps (default 0.7, Osokin et al. (2016), App. K).  Smaller kappa means more work
        per breakpoint and longer steps in lambda.
    lam_min : float
        Stop once the next breakpoint would be <= lam_min (the last piece then
        reaches it); default 2^-15, the end of Osokin et al. (2016)'s grid.  Small lambdas are
        slow (the dual's curvature grows as 1 / lambda).  The path also stops when rho <= 0 (Osokin
        et al. (2016), eq. 13): its last
        w is then eps-approximate for every smaller lambda.
    max_breakpoints : int
        Stop after this many breakpoints (the last piece still reaches the next
        breakpoint's lambda).
    heuristic : bool
        The heuristic path of Osokin et al. (2016), App. K: each breakpoint's solver stops on the
        stale gap estimates (their sum <= kappa eps, with exact gap passes every
        ``gap_check_every`` passes as for gap sampling) and the next lambda is
        chosen with that sum in place of the exact gap.  No guarantee.
    certify : bool
        For the heuristic path, compute the exact gap at every breakpoint (one
        oracle pass each, not counted in the path's cost) so that
        ``gap_bounds`` tells where the path is really eps-approximate.
    step, sampling, cache : solver variant
        Passed to ``ssvm_core.solve``.  The default, BCPFW with gap sampling and
        caching, is Osokin et al. (2016)'s recommendation for expensive oracles; for cheap
        oracles (e.g. OCR's Viterbi) ``step="fw", cache=False`` (BCFW with gap
        sampling) is usually faster.
    box : "auto", "model", (lower, upper) or None, default "auto"
        Sign constraints on w (bounds 0 or infinite only); by default the
        bounds the oracle or model declares (``weight_bounds()``, e.g. graph
        cuts' w_P >= 0), else none (see ``ssvm_core.solve``).
    max_passes : int
        Solver passes allowed per breakpoint; a breakpoint that does not reach
        its tolerance within them ends the path (status ``"max_passes"``), the
        previous piece staying valid.
    gap_check_every, random_state, n_jobs, **solver_kwargs :
        Passed to ``ssvm_core.solve`` (e.g. ``cache_size``).  Iterates are not
        averaged: the path continues from the dual iterate itself.
    callback : callable, optional
        Called with a dict per breakpoint (``lam``, ``gap``, ``gap_estimate``,
        ``delta``, ``effective_passes``, ``time``).

    Returns
    -------
    RegularizationPath

    Notes
    -----
    Prop. 1 of Osokin et al. (2016) requires ``L_i(y_i) = 0`` (with psi_i(y_i) = 0 by
    definition), which every ssvm oracle guarantees and
    ``ssvm_core.testing.check_oracle`` checks; the solver's bookkeeping gives
    the ground truth loss 0.  Given a model, the path checks it on up to 20
    blocks (the oracle's ``evaluate`` of ``Y[i]``); a bare oracle is trusted.
    After each dual rescaling the solver's first exact gap must equal
    g_old + (1 - rho) Delta, and the initial point's exact gap must be
    <= kappa eps (``RuntimeError`` otherwise: an inexact oracle or a bug).

    A breakpoint makes no start-of-solve gap pass when the gaps were exact
    before the rescaling: ``SolverState.shrink_duals`` updates the block gaps
    by eq. 12 (Prop. 1) and ``solve(..., initial_gap_pass=False)`` starts
    from them, as the paper does; after a heuristic stop between checks the
    solver pays one gap pass.  Cumulative ``effective_passes`` count every
    oracle call (the initial decodings included) and ``times`` are wall-clock
    seconds of the whole computation (certification passes of the heuristic
    path excluded).

    Examples
    --------
    A path on a toy multiclass problem down to lambda = 0.05; its w at lambda = 0.2
    is eps-optimal there, as a solve to a gap of 1e-8 confirms:

    >>> import numpy as np
    >>> from ssvm_core import primal_objective, solve
    >>> from ssvm_core.testing import ToyMulticlassModel, random_multiclass_data
    >>> from ssvm_paths import regularization_path
    >>> X, Y = random_multiclass_data(np.random.default_rng(0), n=20, n_features=3, n_classes=3)
    >>> model = ToyMulticlassModel(n_classes=3, n_features=3)
    >>> path = regularization_path(model, X, Y, eps=0.1, lam_min=0.05)
    >>> path.status, bool(path.lam_end <= 0.05), bool(path.gaps.max() <= 0.1)
    ('lam_min', True, True)
    >>> oracle = model.bind(X, Y)
    >>> best = solve(oracle, 0.2, step="pairwise", tol=1e-8, max_passes=2000, random_state=0)
    >>> excess = (primal_objective(oracle, 0.2, path.w_at(0.2))
    ...           - primal_objective(oracle, 0.2, best.w))
    >>> bool(excess <= 0.1)
    True
    """
    if kappa is None:
        kappa = 0.7 if heuristic else 0.9
    eps, kappa = check_eps_kappa(eps, kappa)
    lam_min = float(lam_min)
    if not (math.isfinite(lam_min) and lam_min > 0):
        raise ValueError(f"lam_min must be a finite positive number, got {lam_min}")
    if int(max_breakpoints) != max_breakpoints or max_breakpoints < 1:
        raise ValueError(f"max_breakpoints must be a positive integer, got {max_breakpoints}")
    options = solver_options(step, sampling, cache, max_passes, gap_check_every,
                             random_state, n_jobs, solver_kwargs)
    problem = resolve_problem(model_or_oracle, X, Y, box, cone=True)
    check_ground_truth(problem, Y)
    oracle, n = problem.oracle, problem.n
    tol = kappa * eps

    def stop_on_estimates(record: dict) -> bool:
        estimate = record["gap_estimate"]
        return estimate is not None and estimate <= tol

    clock = time.perf_counter()
    excluded = 0.0                       # seconds of certification passes
    init = initial_point(problem, eps, kappa,
                         active_sets=needs_active_sets(
                             step, cache, options.get("n_samples", DEFAULTS["n_samples"])),
                         cache_size=options.get("cache_size", DEFAULTS["cache_size"]))
    state = init.state
    # Certify the initial point: one exact gap pass, no optimisation (alpha must stay
    # at Alg. 6's point for the rule (lambda_1 / lambda) w_1 above lambda_1).
    first = solve(oracle, init.lam, state=state, tol=tol, averaging=False, box=problem.box,
                  callback=lambda record: True, **options)
    if first.status != "converged":
        raise RuntimeError(f"the initial point's exact gap {first.gap:.6g} exceeds kappa eps = "
                           f"{tol:.6g} (Osokin et al. (2016), eq. 11): is the oracle or "
                           "model.predict inexact?")
    exact_gap = first.gap
    rows = []
    status = "complete"
    lam_end = 0.0
    while True:
        delta = state.total_delta()
        estimate = float(np.sum(state.block_gap_estimates))
        if heuristic and certify and exact_gap is None:
            start = time.perf_counter()
            exact_gap = duality_gap(oracle, state, n_jobs=n_jobs)
            excluded += time.perf_counter() - start
        g = estimate if heuristic else exact_gap
        row = {"lam": state.lam, "w": state.w.copy(),
               "gap": math.nan if exact_gap is None else exact_gap,
               "gap_estimate": estimate, "delta": delta,
               "effective_passes": (init.oracle_calls + state.oracle_calls) / n,
               "time": time.perf_counter() - clock - excluded}
        rows.append(row)
        if callback is not None:
            callback({k: v for k, v in row.items() if k != "w"})
        tau = eps - g
        if delta <= tau:                                  # rho <= 0: the path is complete
            break
        rho = 1.0 - tau / delta
        lam_next = rho * state.lam
        if lam_next <= lam_min or len(rows) >= max_breakpoints:
            lam_end = lam_next
            status = "lam_min" if lam_next <= lam_min else "max_breakpoints"
            break
        # Prop. 1 gives the exact gaps at lam_next when they were exact at lam: the
        # solve then starts without a gap pass.
        state.shrink_duals(lam_next)
        result = solve(oracle, lam_next, state=state, averaging=False, box=problem.box,
                       tol=0.0 if heuristic else tol, initial_gap_pass=False,
                       callback=stop_on_estimates if heuristic else None, **options)
        if result.status not in ("converged", "callback"):
            lam_end, status = lam_next, result.status
            break
        # NaN when the heuristic stopped between exact gap checks
        exact_gap = None if math.isnan(result.gap) else result.gap
    return RegularizationPath(
        lams=np.array([r["lam"] for r in rows]), weights=np.array([r["w"] for r in rows]),
        gaps=np.array([r["gap"] for r in rows]),
        gap_estimates=np.array([r["gap_estimate"] for r in rows]),
        deltas=np.array([r["delta"] for r in rows]),
        effective_passes=np.array([r["effective_passes"] for r in rows]),
        times=np.array([r["time"] for r in rows]), lam_end=lam_end, eps=eps, kappa=kappa,
        heuristic=heuristic, status=status, theta_exact=init.theta_exact,
        model=problem.model)

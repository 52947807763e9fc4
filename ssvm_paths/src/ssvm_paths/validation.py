"""Cross-validation over a grid of lambdas: folds x lambdas, scored on the held-out folds."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ssvm_core.executors import DaskExecutor
from ssvm_core.problems import map_problems, problem_executor, problem_workers
from ssvm_paths._chain import check_random_state, join_chains, solve_chain, warn_inexact
from ssvm_paths._common import Problem, check_grid, check_tol, resolve_problem, solver_options

__all__ = ["ValidationCurve", "validation_curve"]


def mean_loss_score(model, w: np.ndarray, X: Sequence, Y: Sequence) -> float:
    """1 - the mean task loss of ``model.predict(X, w)`` on ``(X, Y)`` (higher is better,
    as ``FrankWolfeSSVM.score``)."""
    return 1.0 - model.mean_loss(Y, model.predict(X, w))


@dataclass
class ValidationCurve:
    """Held-out scores and training certificates of every fold at every lambda.

    Attributes
    ----------
    lams : ndarray (m,)
        The grid.
    test_scores : ndarray (m, k)
        Score of fold j's solution at lambda_i on fold j's held-out examples
        (the layout of scikit-learn's ``validation_curve``).
    gaps, duals : ndarray (m, k)
        Exact duality gap and dual objective of each solve on its training folds.
    exact : ndarray of bool (m, k)
        Whether each solve's oracle stayed exact.
    effective_passes, times : ndarray (m, k)
        Oracle calls / n_train and seconds of fold j's solves up to lambda_i, cumulative in
        grid order (as ``GridSearchResult``).
    statuses : list of list of str
        ``statuses[i][j]``: the solver status at lambda_i on fold j.
    folds : list of (ndarray, ndarray)
        The (train, test) indices of each fold.
    warm_start : str
    tol : float
        The gap tolerance of every solve.
    """

    lams: np.ndarray
    test_scores: np.ndarray
    gaps: np.ndarray
    duals: np.ndarray
    exact: np.ndarray
    effective_passes: np.ndarray
    times: np.ndarray
    statuses: list
    folds: list = field(repr=False)
    warm_start: str
    tol: float

    @property
    def certified(self) -> np.ndarray:
        """(m, k): whether each solve's gap is exact and <= tol."""
        return self.exact & (self.gaps <= self.tol)

    @property
    def mean_test_scores(self) -> np.ndarray:
        """(m,): the mean held-out score at each lambda."""
        return self.test_scores.mean(axis=1)

    @property
    def best_index(self) -> int:
        """Index of the best mean held-out score (the first in grid order on a tie)."""
        return int(np.argmax(self.mean_test_scores))

    @property
    def best_lam(self) -> float:
        """The lambda of ``best_index``."""
        return float(self.lams[self.best_index])


@dataclass
class _Fold:
    """What a fold's solves read: the training problem and the held-out examples."""

    problem: Problem
    X_test: list
    Y_test: list

    @property
    def oracle(self):
        return self.problem.oracle


def _fold_chain(fold: _Fold, lams, warm_start, tol, options, scoring) -> list:
    """Solve a fold's chain and score each solution on its held-out examples."""
    points = solve_chain(fold.problem, lams, warm_start, tol, options)
    model = fold.problem.model
    return [(p, float(scoring(model, p.w, fold.X_test, fold.Y_test))) for p in points]


def validation_curve(model, X: Sequence, Y: Sequence, lams: Sequence[float] | None = None, *,
                     cv=5, scoring: Callable | None = None, warm_start: str = "keep-duals",
                     eps: float = 0.1, kappa: float = 0.9, tol: float | None = None,
                     step: str = "pairwise", sampling: str = "gap", cache: bool = True,
                     box="auto", max_passes: int = 1000, gap_check_every: int = 10,
                     random_state=0, executor=None, n_jobs: int | None = None,
                     **solver_kwargs) -> ValidationCurve:
    """Cross-validate lambda: solve every training fold at every lambda, score the held-out fold.

    Parameters
    ----------
    model : StructuredModel
        Bound to each training fold (``model.bind``).
    X, Y : sequence
        Examples and ground truths.
    lams : sequence of float, optional
        The grid (default ``DEFAULT_GRID``); warm starts need it strictly decreasing.
    cv : int or iterable of (train, test), default 5
        k contiguous folds (scikit-learn's ``KFold`` without shuffling; k >= 2),
        or the (train, test) index arrays of each fold, or an object with
        ``split(X, Y)`` (a scikit-learn splitter).
    scoring : callable, optional
        ``scoring(model, w, X_test, Y_test) -> float``, higher is better
        (default ``mean_loss_score``: 1 - the mean task loss).  A task metric of
        ``ssvm_data.metrics`` fits in one line, e.g. ``hamming_accuracy(Y_test,
        model.predict(X_test, w))``.  On Dask it must pickle (a module-level function).
    warm_start : {"cold", "keep-duals", "keep-primal"}, default "keep-duals"
        As for ``grid_search``; a warm-started fold is one chain along the whole
        grid, so the result does not depend on the executor.
    eps, kappa, tol, step, sampling, cache, box, max_passes, gap_check_every, random_state,
    **solver_kwargs :
        As for ``grid_search``.
    executor, n_jobs :
        Where the solves run, as for ``grid_search``: the folds (and, cold, every
        lambda of a fold) are independent problems.

    Returns
    -------
    ValidationCurve
        Equal, whatever the executor, to a serial loop of ``grid_search`` per
        training fold followed by ``scoring`` on its held-out fold.
    """
    if not hasattr(model, "bind"):
        raise TypeError(f"validation_curve needs a structured model with bind(X, Y), got "
                        f"{type(model).__name__}")
    grid = check_grid(lams, warm_start)
    tol = check_tol(tol, eps, kappa)
    options = solver_options(step, sampling, cache, max_passes, gap_check_every,
                             random_state, None, solver_kwargs)
    scoring = mean_loss_score if scoring is None else scoring
    if not callable(scoring):
        raise TypeError(f"scoring must be a callable (model, w, X, Y) -> float, got "
                        f"{type(scoring).__name__}")
    folds = _split(cv, X, Y)
    shared = []
    for train, test in folds:
        problem = resolve_problem(model, _take(X, train), _take(Y, train), box, cone=False)
        # the jobs read the bound oracle, not X: leave it out of what is sent to workers
        shared.append(_Fold(replace(problem, X=None), _take(X, test), _take(Y, test)))
    pool = problem_executor(executor, n_jobs)
    gil = any(fold.oracle.needs_gil for fold in shared)
    check_random_state(random_state, problem_workers(pool, gil) > 1
                       or isinstance(pool, DaskExecutor))
    m = grid.size
    chains = [np.arange(m)] if warm_start != "cold" else [np.array([i]) for i in range(m)]
    jobs = [(k, (grid[c], warm_start, tol, options, scoring))
            for k in range(len(folds)) for c in chains]
    with pool if pool is not executor else contextlib.nullcontext():
        results = list(map_problems(pool, _fold_chain, shared, jobs))
    by_fold = [results[k * len(chains):(k + 1) * len(chains)] for k in range(len(folds))]
    per_fold = [join_chains([[p for p, _ in chain] for chain in fold_chains], fold.problem.n)
                for fold, fold_chains in zip(shared, by_fold)]
    scores = np.array([[s for chain in fold_chains for _, s in chain]
                       for fold_chains in by_fold]).T
    if isinstance(pool, DaskExecutor):
        warn_inexact([p for fold in per_fold for p in fold])

    def table(name: str) -> np.ndarray:
        return np.array([[getattr(fold[i], name) for fold in per_fold] for i in range(m)])

    return ValidationCurve(grid, scores, table("gap"), table("dual"), table("exact"),
                           table("passes"), table("time"),
                           [[fold[i].status for fold in per_fold] for i in range(m)],
                           folds, warm_start, tol)


def _split(cv, X, Y) -> list[tuple[np.ndarray, np.ndarray]]:
    n = len(X)
    if len(Y) != n:
        raise ValueError(f"X has {n} examples but Y has {len(Y)}")
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        if not 2 <= cv <= n:
            raise ValueError(f"cv must be at least 2 folds and at most the {n} examples, "
                             f"got {cv}")
        tests = np.array_split(np.arange(n), int(cv))
        return [(np.setdiff1d(np.arange(n), test), test) for test in tests]
    splits = cv.split(X, Y) if hasattr(cv, "split") else cv
    try:
        folds = [(np.asarray(train, dtype=np.intp), np.asarray(test, dtype=np.intp))
                 for train, test in splits]
    except (TypeError, ValueError) as exc:
        raise TypeError("cv must be an int, an iterable of (train, test) index arrays or a "
                        f"splitter with split(X, Y): {exc}") from exc
    if not folds:
        raise ValueError("cv gave no folds")
    for j, (train, test) in enumerate(folds):
        if train.size == 0 or test.size == 0 or min(train.min(), test.min()) < 0 \
                or max(train.max(), test.max()) >= n:
            raise ValueError(f"fold {j}: train and test must be nonempty indices in [0, {n})")
    return folds


def _take(data: Sequence, indices: np.ndarray) -> list:
    return [data[i] for i in indices]

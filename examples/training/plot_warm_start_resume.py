"""
Warm starts, saving and resuming
================================

Everything a run needs to continue lives in its :class:`ssvm_core.SolverState`
(``svm.state_``): the dual point, the block gap estimates, the averaged iterate,
the counters and the random stream. It is saved to ``.npz`` without pickle
(:meth:`ssvm_core.SolverState.save`) and read back with
:meth:`ssvm_core.SolverState.load`.

- **Resuming**: ``warm_start=True`` continues from ``state_``, with a fresh budget
  (``max_passes`` counts the passes of this call). Ctrl-C stops a fit after the
  current pass and keeps the model, so an interrupted run resumes the same way.
- **Warm starts along lambda**: a different ``lam`` rescales the state, keeping
  the dual variables alpha (:meth:`ssvm_core.SolverState.rescale`).
"""

# %%
# Stop after 10 passes, save, load, continue
# ------------------------------------------
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ssvm_core import FrankWolfeSSVM, SolverState
from ssvm_data import ocr_like
from ssvm_oracles import ChainModel

X, Y = ocr_like(200, random_state=0)
options = dict(lam=0.01, tol=0.0, gap_check_every=5, random_state=0)

first = FrankWolfeSSVM(ChainModel(26), max_passes=10, **options).fit(X, Y)
folder = Path(tempfile.mkdtemp())
first.state_.save(folder / "state.npz")
print(f"after {first.n_passes_} passes: gap {first.gap_:.3e}; saved "
      f"{(folder / 'state.npz').stat().st_size / 1e6:.1f} MB")

# a new process would start here: a new estimator, the state read from disk
resumed = FrankWolfeSSVM(ChainModel(26), max_passes=10, warm_start=True, **options)
resumed.state_ = SolverState.load(folder / "state.npz")
resumed.fit(X, Y)

straight = FrankWolfeSSVM(ChainModel(26), max_passes=20, **options).fit(X, Y)
print(f"resumed to {resumed.n_passes_} passes: gap {resumed.gap_:.6e}")
print(f"20 passes in one go:    gap {straight.gap_:.6e}")
print("same weights:", np.allclose(resumed.w_, straight.w_))

# %%
# The resumed run continues the same random block order, so it reproduces the
# uninterrupted run; its history starts with a gap check at the loaded state.
fig, ax = plt.subplots(figsize=(7, 3.5))
for name, history, style in (("20 passes in one go", straight.history_, "o-"),
                             ("10 passes", first.history_, "s--"),
                             ("resumed from state.npz", resumed.history_, "^:")):
    checks = [r for r in history if r["gap_avg"] is not None]
    ax.semilogy([r["pass"] for r in checks], [r["gap_avg"] for r in checks], style,
                label=name)
ax.set(xlabel="solver passes", ylabel="duality gap (averaged iterate)")
ax.legend()
fig.tight_layout()

# %%
# Warm starts along lambda
# ------------------------
# Solving a decreasing sequence of ``lam`` from the previous state is cheaper
# than starting each one cold (the regularization-path example goes further and
# certifies every lambda in between).
lams = [0.1, 0.03, 0.01, 0.003]
for warm in (False, True):
    svm = FrankWolfeSSVM(ChainModel(26), tol=1e-2, max_passes=200, gap_check_every=2,
                         warm_start=warm, random_state=0)
    passes = []
    for lam in lams:
        svm.set_params(lam=lam).fit(X, Y)
        passes.append(svm.history_[-1]["effective_passes"]
                      - (svm.history_[0]["effective_passes"] if warm else 0))
    print(f"{'warm' if warm else 'cold'} starts: effective passes per lambda to gap 1e-2:",
          [round(p, 1) for p in passes])

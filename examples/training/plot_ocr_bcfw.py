"""
Handwritten words with block-coordinate Frank-Wolfe
===================================================

Train a linear-chain structured SVM on OCR words with BCFW, the solver of
|LacosteJulien2013|, and watch its certificate: the exact duality gap
``P(w) - D(alpha)``, which bounds how far the primal objective of the returned
weights is from its minimum.

The words are Taskar's OCR data set (split "small": 626 training words, 6,251
test words) when ``$SSVM_DATA_HOME/ocr/`` holds it, otherwise OCR-like synthetic
words from :func:`ssvm_data.ocr_like` (600 training and 200 test words), so the
example runs anywhere.
"""

# %%
# Load the data
# -------------
# :func:`ssvm_data.available_datasets` says what can be loaded without a
# download; :func:`ssvm_data.load_dataset` returns ``X, Y, X_test, Y_test``.
# Each ``X[i]`` is a ``(T_i, 128)`` array of binary pixels (one 16 x 8 image per
# letter) and ``Y[i]`` the ``T_i`` letters (0-25).
import matplotlib.pyplot as plt
import numpy as np

from ssvm_core import FrankWolfeSSVM
from ssvm_data import available_datasets, load_dataset
from ssvm_oracles import ChainModel

found = {d["name"]: d["available"] for d in available_datasets()}
dataset = "ocr-small" if found["ocr-small"] else "synthetic-ocr"
X, Y, X_test, Y_test = load_dataset(dataset, random_state=0)
print(f"{dataset}: {len(X)} training words, {len(X_test)} test words, "
      f"{sum(len(y) for y in Y)} training letters")

fig, axes = plt.subplots(1, 8, figsize=(8, 1.6))
for ax, pixels, letter in zip(axes, X[0], Y[0], strict=False):
    ax.imshow(pixels.reshape(16, 8), cmap="gray_r")
    ax.set_title(chr(ord("a") + letter))
    ax.axis("off")
for ax in axes[len(Y[0]):]:
    ax.axis("off")
fig.suptitle("the first training word")
fig.tight_layout()

# %%
# Train
# -----
# ``lam`` is the regularisation of the primal
# ``P(w) = lam/2 ||w||^2 + (1/n) sum_i max_y H_i(y; w)``. The solver checks the
# exact gap every ``gap_check_every`` passes (one oracle call per word, two with
# averaging) and stops when it is below ``tol`` or the budget is spent.
svm = FrankWolfeSSVM(ChainModel(n_states=26), lam=0.01, tol=1e-3, max_passes=40,
                     gap_check_every=2, random_state=0)
svm.fit(X, Y)
print(f"stopped: {svm.status_} after {svm.n_passes_} passes, duality gap {svm.gap_:.2e}")
print(f"train accuracy {svm.score(X, Y):.3f}, test accuracy {svm.score(X_test, Y_test):.3f}")

# %%
# Read the certificate
# --------------------
# Every pass appends a record to ``svm.history_``. On gap checks it holds the
# exact primal and gap of the current iterate (``primal``, ``gap``) and, with
# the default ``averaging="average"``, of the weighted average (``primal_avg``,
# ``dual_avg``, ``gap_avg``), the iterate ``fit`` returns (``iterate`` says
# which; ``averaging="best"`` returns the one with the smaller gap).
# ``dual`` is D(alpha), known at
# every pass; ``effective_passes`` counts oracle calls / n, gap checks included.
checks = [r for r in svm.history_ if r["gap"] is not None]
passes = [r["effective_passes"] for r in checks]

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.5))
ax0.semilogy(passes, [r["gap"] for r in checks], "o-", label="iterate")
ax0.semilogy(passes, [r["gap_avg"] for r in checks], "s-", label="weighted average")
ax0.set(xlabel="effective passes", ylabel="duality gap P(w) - D(alpha)",
        title="the certificate")
ax0.legend()
ax1.plot(passes, [r["primal_avg"] for r in checks], "s-", label="primal P(w_avg)")
ax1.plot(passes, [r["dual_avg"] for r in checks], "^-", label="dual D(alpha_avg)")
ax1.set(xlabel="effective passes", ylabel="objective", title="primal above, dual below",
        ylim=(0, 1.2 * checks[1]["primal_avg"]))
ax1.legend()
fig.tight_layout()

# %%
# The primal never goes below the dual, and the returned weights (the iterate
# that ``iterate`` names) are within ``svm.gap_`` of the best possible primal
# value (in the primal objective, not in accuracy: the test accuracy settles long
# before the gap is small).
last = svm.history_[-1]
print({key: last[key] for key in ("pass", "effective_passes", "oracle_calls", "time",
                                  "dual", "gap", "gap_avg", "iterate")})
suffix = "_avg" if last["iterate"] == "average" else ""
assert np.isclose(last["primal" + suffix] - last["dual" + suffix], svm.gap_)

# %%
# The gap is a sum of block gaps
# ------------------------------
# ``gap = sum_i g_i`` with ``g_i = (1/n) (max_y H_i(y; w) - sum_y alpha_i(y) H_i(y; w))``
# >= 0, the gap of word i. Right after a gap check the state holds them exactly
# (``state_.exact_gaps``); gap sampling draws words in proportion to them.
block_gaps = svm.state_.block_gap_estimates
print(f"{block_gaps.size} block gaps, sum {block_gaps.sum():.6f} = gap of the iterate "
      f"{last['gap']:.6f}; the largest 10% of the words hold "
      f"{np.sort(block_gaps)[-len(block_gaps) // 10:].sum() / block_gaps.sum():.0%} of it")
assert svm.state_.exact_gaps and np.isclose(block_gaps.sum(), last["gap"])

"""
An epsilon-approximate regularization path
==========================================

Which ``lam`` to train with is usually chosen on held-out data, by solving on a
grid of values. |Osokin2016| (Sec. 4) compute instead a *path*: breakpoints
``lambda_1 > lambda_2 > ...`` and weights such that, for **every** lambda down to
the path's end, the piecewise weights ``path.w_at(lam)`` are eps-approximate:
``P_lam(w) - min P_lam <= eps``. Between breakpoints the duals are rescaled (the
primal stays, the gap grows exactly as their Prop. 1 predicts) and the solver
re-optimises to an exact gap ``<= kappa eps``.

This example reproduces the comparison of their Fig. 4 on HorseSeg-like
graph-cut problems (:func:`ssvm_data.horseseg_like`, smaller features than the
real data to keep it fast): the cumulative cost to reach each lambda for the
eps-path and for grid search (``2^15 ... 2^-3``) without and with warm starts.
"""

# %%
# The path and the grids
# ----------------------
import matplotlib.pyplot as plt
import numpy as np

from ssvm_data import horseseg_like
from ssvm_oracles import GraphCutModel
from ssvm_paths import grid_search, plot_costs, regularization_path

X, Y = horseseg_like(25, n_nodes=100, n_unary=100, n_pairwise=10, random_state=0)
X_train, Y_train, X_test, Y_test = X[:15], Y[:15], X[15:], Y[15:]
model = GraphCutModel()
eps, lam_min = 0.1, 2.0 ** -3
solver = dict(step="pairwise", sampling="gap", cache=True, box="model")  # the paper's advice

path = regularization_path(model, X_train, Y_train, eps=eps, lam_min=lam_min, **solver)
print(path)
# status "complete": the step rho of Prop. 1 reached 0, so the last weights are
# eps-approximate for every smaller lambda too (lam_end = 0).
print(f"{path.n_breakpoints} breakpoints from {path.lams[0]:.4g} to {path.lams[-1]:.4g}, "
      f"status {path.status!r}, lower end {path.lam_end:.4g}; largest certified gap on any "
      f"piece {path.gap_bounds.max():.3f}")

grid = 2.0 ** np.arange(15, -4, -1)
results = {"eps-path": path}
for warm_start in ("cold", "keep-duals", "keep-primal"):
    results[f"grid, {warm_start}"] = grid_search(model, X_train, Y_train, lams=grid,
                                                 warm_start=warm_start, eps=eps, **solver)
for name, result in results.items():
    print(f"{name:>17}: {result.effective_passes[-1]:7.1f} effective passes, "
          f"{result.times[-1]:5.2f} s")

# %%
# Cumulative cost along lambda (Fig. 4)
# -------------------------------------
# The path certifies every lambda, not only the grid points, at a cost
# comparable with the grid search.
fig = plot_costs(results, title=f"HorseSeg-like, n = {len(X_train)}, eps = {eps}")

# %%
# Choosing lambda on held-out images
# ----------------------------------
# ``path.score(X, Y, lam)`` scores the path's weights at any lambda of its range.
lams = np.geomspace(path.lams[0], max(path.lam_end, grid[-1]), 40)
scores = [path.score(X_test, Y_test, lam, model=model) for lam in lams]
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.semilogx(lams, scores)
ax.invert_xaxis()
best = lams[int(np.argmax(scores))]
ax.axvline(best, color="gray", ls=":")
ax.set(xlabel="lambda", ylabel="test score (1 - loss)",
       title=f"best held-out score at lambda = {best:.3g}")
fig.tight_layout()

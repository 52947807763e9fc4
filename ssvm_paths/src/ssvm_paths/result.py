"""``RegularizationPath``: breakpoints, weights, certificates and costs of a path."""

from __future__ import annotations

import json
import math
import os
from typing import BinaryIO

import numpy as np

from ssvm_core.files import save_npz

_FORMAT_VERSION = 1
_ARRAYS = ("lams", "weights", "gaps", "gap_estimates", "deltas", "effective_passes", "times")
_SCALARS = ("lam_end", "eps", "kappa", "heuristic", "status", "theta_exact")


class RegularizationPath:
    """A piecewise epsilon-approximate regularization path (Osokin et al. (2016), Sec. 4).

    Attributes
    ----------
    lams : ndarray (J,)
        Breakpoints lambda_1 > lambda_2 > ... > lambda_J (lambda_1 = lambda_inf).
    weights : ndarray (J, d)
        w_j, the solution kept at lambda_j (w_1 is Alg. 6's psi~ / lambda_inf,
        clipped to the box if any).
    gaps : ndarray (J,)
        Exact duality gap of w_j at lambda_j (NaN where a heuristic path did
        not compute it).
    gap_estimates : ndarray (J,)
        Sum of the block gap estimates at lambda_j (exact after a gap pass).
    deltas : ndarray (J,)
        Delta_j = sum_i delta_i at lambda_j (Osokin et al. (2016), eq. 13): the gap of w_j grows
        by (1 - lambda / lambda_j) Delta_j as lambda decreases.
    effective_passes, times : ndarray (J,)
        Cumulative oracle calls / n and seconds to reach each breakpoint.
    lam_end : float
        Lower end of the path: 0 when it is complete (rho <= 0), else the
        lambda the last piece reaches.
    eps, kappa : float
        Target suboptimality and the optimisation factor of the breakpoints.
    heuristic : bool
        Whether breakpoints stopped on stale gap estimates (Osokin et al. (2016), App. K).
    status : str
        ``"complete"``, ``"lam_min"``, ``"max_breakpoints"`` or the solver
        status that ended the path (e.g. ``"max_passes"``).
    theta_exact : bool
        Whether lambda_inf used exact theta_i (a model) or their upper bound.
    model : StructuredModel or None
        For ``predict`` and ``score`` (not saved).
    """

    def __init__(self, lams, weights, gaps, gap_estimates, deltas, effective_passes, times,
                 lam_end: float, eps: float, kappa: float, heuristic: bool, status: str,
                 theta_exact: bool, model=None):
        self.lams = np.asarray(lams, dtype=float)
        self.weights = np.atleast_2d(np.asarray(weights, dtype=float))
        self.gaps = np.asarray(gaps, dtype=float)
        self.gap_estimates = np.asarray(gap_estimates, dtype=float)
        self.deltas = np.asarray(deltas, dtype=float)
        self.effective_passes = np.asarray(effective_passes, dtype=float)
        self.times = np.asarray(times, dtype=float)
        self.lam_end = float(lam_end)
        self.eps, self.kappa = float(eps), float(kappa)
        self.heuristic, self.status = bool(heuristic), str(status)
        self.theta_exact = bool(theta_exact)
        self.model = model
        self._check()

    def _check(self) -> None:
        J = self.lams.shape[0]
        if J == 0 or self.lams.ndim != 1:
            raise ValueError("a path needs at least one breakpoint (1-D lams)")
        for name in _ARRAYS[2:]:
            if getattr(self, name).shape != (J,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({J},)")
        if self.weights.shape[0] != J or not np.all(np.isfinite(self.weights)):
            raise ValueError(f"weights must be a finite ({J}, d) array")
        if not (np.all(np.isfinite(self.lams)) and np.all(self.lams > 0)
                and np.all(np.diff(self.lams) < 0)):
            raise ValueError("breakpoints must be positive, finite and strictly decreasing")
        if not 0 <= self.lam_end < self.lams[-1]:
            raise ValueError(f"lam_end {self.lam_end} must be in [0, {self.lams[-1]})")

    @property
    def n_breakpoints(self) -> int:
        return int(self.lams.shape[0])

    @property
    def lam_inf(self) -> float:
        """lambda_inf = lambda_1, the first breakpoint (Alg. 6)."""
        return float(self.lams[0])

    @property
    def lower_ends(self) -> np.ndarray:
        """Lower end of each piece: lambda_{j+1}, and ``lam_end`` for the last one."""
        return np.append(self.lams[1:], self.lam_end)

    @property
    def gap_bounds(self) -> np.ndarray:
        """Certified gap bound of w_j over its piece [lower end, lambda_j].

        The gap of w_j (with Osokin et al. (2016)'s Prop. 1 rescaled duals) is
        linear in lambda: gaps_j + (1 - lambda / lambda_j) Delta_j, so its
        largest value over the piece is at the lower end when Delta_j >= 0 and
        at lambda_j itself (gaps_j) when Delta_j < 0 (active labellings scoring
        below the ground truth).  It is <= eps for an eps-path; for a heuristic
        path it tells where the path holds (NaN where the exact gap is
        unknown).  Above lambda_1 the bound is gaps_1 (see ``w_at``).
        """
        at_lower_end = self.gaps + (1.0 - self.lower_ends / self.lams) * self.deltas
        return np.maximum(self.gaps, at_lower_end)

    def piece(self, lam: float) -> int:
        """Index j of the piece holding ``lam`` (-1 above lambda_1).

        At a breakpoint lambda_j itself, piece j (w_j was optimised there).
        """
        lam = float(lam)
        if not (math.isfinite(lam) and lam > 0):
            raise ValueError(f"lam must be a finite positive number, got {lam}")
        if lam < self.lam_end:
            raise ValueError(f"lam = {lam:.6g} is below the path's lower end "
                             f"{self.lam_end:.6g} (status {self.status!r})")
        # number of breakpoints >= lam, minus one
        return int(np.searchsorted(-self.lams, -lam, side="right")) - 1

    def w_at(self, lam: float) -> np.ndarray:
        """The path's weights at ``lam``.

        ``(lambda_1 / lam) w_1`` for lam > lambda_1 (Osokin et al. (2016), Sec. 4: Alg. 6's dual
        point is kept, so w scales as 1 / lam; its gap is at most
        ``(lambda_1 / lam) gaps_1``, being convex in 1 / lam and 0 at 1 / lam = 0),
        and ``w_j`` on [lambda_{j+1}, lambda_j].
        """
        j = self.piece(lam)
        if j < 0:
            return self.weights[0] * (self.lams[0] / float(lam))
        return self.weights[j].copy()

    def predict(self, X, lam: float, model=None) -> list:
        """``model.predict(X, w_at(lam))`` (the path's model unless given)."""
        return self._model(model).predict(X, self.w_at(lam))

    def score(self, X, Y, lam: float, model=None) -> float:
        """1 - mean task loss of ``predict(X, lam)`` (as ``FrankWolfeSSVM.score``)."""
        model = self._model(model)
        return 1.0 - model.mean_loss(Y, model.predict(X, self.w_at(lam)))

    def _model(self, model):
        model = self.model if model is None else model
        if model is None:
            raise ValueError("this path has no model (built from an oracle, or loaded): "
                             "pass model=")
        return model

    def summary(self) -> dict:
        """JSON-ready description: scalars and per-breakpoint arrays (no weights)."""
        out = {name: getattr(self, name) for name in _SCALARS}
        out["n_breakpoints"] = self.n_breakpoints
        for name in _ARRAYS:
            if name != "weights":
                out[name] = [None if math.isnan(x) else float(x) for x in getattr(self, name)]
        out["gap_bounds"] = [None if math.isnan(x) else float(x) for x in self.gap_bounds]
        return out

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write an ``.npz`` archive (no pickle) to a path or an open binary file.

        A path is written atomically (``ssvm_core.files.save_npz``): it holds
        either its old content or the whole new archive, never a part.
        """
        meta = {name: getattr(self, name) for name in _SCALARS}
        meta["format_version"] = _FORMAT_VERSION
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        if hasattr(path, "write"):
            np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
            return
        save_npz(path, meta=np.array(json.dumps(meta)), **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike | BinaryIO, model=None) -> RegularizationPath:
        """Read a path written by ``save`` (``model`` re-attaches a model)."""
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in ("meta",) + _ARRAYS if k not in data.files]
            if missing:
                raise ValueError(f"{path}: not a regularization path (missing {missing})")
            meta = json.loads(str(data["meta"]))
            arrays = {name: data[name] for name in _ARRAYS}
        if meta.get("format_version") != _FORMAT_VERSION:
            raise ValueError(f"{path}: unsupported path format {meta.get('format_version')}")
        return cls(**arrays, **{name: meta[name] for name in _SCALARS}, model=model)

    def plot(self, out=None, label: str | None = None):
        """Cumulative time and effective passes along lambda (Osokin et al. (2016), Fig. 4 / App.
        K).

        See ``ssvm_paths.plot_costs``; returns the matplotlib figure.
        """
        from ssvm_paths.plotting import plot_costs

        name = label or ("heuristic path" if self.heuristic else "eps-path")
        return plot_costs({name: self}, out=out)

    def __repr__(self) -> str:
        kind = "heuristic" if self.heuristic else "eps"
        return (f"RegularizationPath({kind}, eps={self.eps:g}, kappa={self.kappa:g}, "
                f"{self.n_breakpoints} breakpoints from {self.lams[0]:.4g} to "
                f"{self.lams[-1]:.4g}, lam_end={self.lam_end:.4g}, status={self.status!r})")

"""A small bounded minimiser for a few parameters of a model that is not linear in them:
the whole-iteration calibration (:mod:`sim.predict.runcal`) fits two or three efficiency
factors through the predictor (roofline maxima, the pipeline schedule's max-plus
recurrences, TCCL's NVLink/RoCE split), so no closed-form least squares applies and
scipy is not a dependency of this project (its few lines here do not earn one).

:func:`minimise_mape` minimises the mean absolute relative error
``mean |model(x)_i / measured_i − 1|`` (what ``sim.model.error_pct`` reports) over a box:

1. Levenberg–Marquardt on the relative residuals (forward-difference Jacobian, the step
   clipped to the box): smooth, converges in a few iterations when the model is close to
   linear in ``x``, and exactly onto the truth when the data come from the model;
2. Nelder–Mead on the mean absolute relative error itself, started there (a sum of
   absolute values has kinks, where a gradient method stalls and a simplex does not);

and keeps the best point seen. Each model call evaluates every measurement at once.

Example (``t = a·x0 + b/x1``, recovered from exact data)::

    >>> a = np.array([1.0, 2.0, 3.0, 1.0]); b = np.array([1.0, 1.0, 0.5, 3.0])
    >>> model = lambda x: a * x[0] + b / x[1]
    >>> got = minimise_mape(model, model(np.array([0.7, 0.4])), np.array([1.0, 1.0]),
    ...                     np.array([0.01, 0.01]), np.array([10.0, 1.0]))
    >>> np.round(got.x, 6).tolist(), got.error_pct < 1e-6
    ([0.7, 0.4], True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

Model = Callable[[np.ndarray], np.ndarray]


@dataclass(slots=True)
class FitResult:
    """The best point, its mean absolute relative error in %, and the model calls spent."""

    x: np.ndarray
    error_pct: float
    evaluations: int


class _Objective:
    """Relative residuals and their mean absolute value, memoised per point."""

    def __init__(self, model: Model, measured: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        self.model, self.measured, self.lo, self.hi = model, measured, lo, hi
        self.calls = 0
        self._memo: dict[bytes, np.ndarray] = {}
        self.best_x, self.best_err = lo.copy(), float("inf")

    def resid(self, x: np.ndarray) -> np.ndarray:
        x = np.clip(x, self.lo, self.hi)
        key = x.tobytes()
        if key not in self._memo:
            self.calls += 1
            r = np.asarray(self.model(x), np.float64) / self.measured - 1.0
            self._memo[key] = r
            err = float(np.mean(np.abs(r)) * 100)
            if err < self.best_err:
                self.best_x, self.best_err = x.copy(), err
        return self._memo[key]

    def mape(self, x: np.ndarray) -> float:
        return float(np.mean(np.abs(self.resid(x))) * 100)


def _levenberg_marquardt(obj: _Objective, x: np.ndarray, iterations: int, step: float) -> np.ndarray:
    r = obj.resid(x)
    lam = 1e-3
    for _ in range(iterations):
        cols = []
        for k in range(len(x)):
            h = step if x[k] + step <= obj.hi[k] else -step
            e = x.copy()
            e[k] += h
            cols.append((obj.resid(e) - r) / h)
        J = np.stack(cols, axis=1)
        A, g = J.T @ J, J.T @ r
        moved = False
        while lam < 1e8:
            delta = np.linalg.solve(A + lam * np.diag(np.diag(A)) + 1e-12 * np.eye(len(x)), -g)
            xn = np.clip(x + delta, obj.lo, obj.hi)
            rn = obj.resid(xn)
            if rn @ rn < r @ r:
                moved = np.max(np.abs(xn - x)) > 1e-9
                x, r, lam = xn, rn, max(lam / 4, 1e-9)
                break
            lam *= 8
        if not moved or r @ r < 1e-24:
            break
    return x


def _nelder_mead(obj: _Objective, x: np.ndarray, evaluations: int, size: float) -> np.ndarray:
    n = len(x)
    simplex = [x] + [np.clip(x + size * np.eye(n)[k] * (1 if x[k] + size <= obj.hi[k] else -1), obj.lo, obj.hi)
                     for k in range(n)]
    f = [obj.mape(p) for p in simplex]
    start = obj.calls
    while obj.calls - start < evaluations:
        order = np.argsort(f)
        simplex, f = [simplex[i] for i in order], [f[i] for i in order]
        if f[-1] - f[0] < 1e-9 and max(np.max(np.abs(p - simplex[0])) for p in simplex) < 1e-7:
            break
        centre = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        xr = np.clip(centre + (centre - worst), obj.lo, obj.hi)
        fr = obj.mape(xr)
        if fr < f[0]:
            xe = np.clip(centre + 2.0 * (centre - worst), obj.lo, obj.hi)
            fe = obj.mape(xe)
            simplex[-1], f[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < f[-2]:
            simplex[-1], f[-1] = xr, fr
        else:
            xc = np.clip(centre + 0.5 * (worst - centre), obj.lo, obj.hi)
            fc = obj.mape(xc)
            if fc < f[-1]:
                simplex[-1], f[-1] = xc, fc
            else:                                   # shrink towards the best point
                simplex = [simplex[0]] + [simplex[0] + 0.5 * (p - simplex[0]) for p in simplex[1:]]
                f = [f[0]] + [obj.mape(p) for p in simplex[1:]]
    return simplex[int(np.argmin(f))]


def minimise_mape(model: Model, measured: np.ndarray, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  polish_evaluations: int = 60, lm_iterations: int = 25) -> FitResult:
    """Minimise the mean absolute relative error of ``model(x)`` against ``measured``
    over ``lo <= x <= hi`` from ``x0`` (module docstring)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    measured = np.asarray(measured, np.float64)
    obj = _Objective(model, measured, lo, hi)
    x = np.clip(np.asarray(x0, np.float64), lo, hi)
    obj.resid(x)
    if len(x):
        _levenberg_marquardt(obj, x, iterations=lm_iterations, step=1e-5)
        if obj.best_err > 1e-4:                     # not already exact (1 ppm): polish
            _nelder_mead(obj, obj.best_x.copy(), polish_evaluations, size=0.02)
    return FitResult(obj.best_x, obj.best_err, obj.calls)


__all__ = ["FitResult", "minimise_mape"]

"""Evaluating a grid's points: one ``sim.predict`` per point, on a local process pool or
on an existing Dask cluster.

* **Local** (default): ``concurrent.futures.ProcessPoolExecutor`` with ``workers``
  processes (default: the machine's cores); ``workers=1`` runs in this process.
* **Dask** (``address="tcp://HOST:PORT"``): ``distributed.Client(address)`` submits
  :func:`evaluate_point` for every point to the scheduler already running there (started
  by whoever owns the cluster: ``dask scheduler`` / ``dask worker``, or a
  ``distributed.LocalCluster``); the client is closed afterwards, the cluster is left as
  it was. Dask was chosen over Ray because it is pure Python and installs into the
  project's venv beside p4runtime-shell's protobuf 3.20.3 and grpcio without moving any
  pin (Ray's wheels carry a large native runtime and themselves depend on protobuf and
  grpcio, the packages p4runtime-shell pins).

Every point is evaluated by the same function with the same inputs wherever it runs, so
a local run and a Dask run give the same numbers (``tests/sim/test_sweep.py`` checks it
on a real ``LocalCluster``). A point that cannot run is a row with ``status`` =
``infeasible`` and the reason in ``error``.

Example::

    >>> from sim.sweep.grid import grid_from_dict
    >>> g = grid_from_dict({"job": {"model": {"layers": 4, "hidden": 256, "heads": 8,
    ...     "seq_length": 128, "vocab": 1000}, "training": {"global_batch": 16},
    ...     "gpu": {"preset": "H800"}}, "parallel": [{"tp": 2}, {"tp": 3}], "gpus": [8]})
    >>> rows = run_grid(g, workers=1)
    >>> [(r["tp"], r["dp"], r["status"]) for r in rows]
    [(2, 4, 'ok'), (3, 0, 'infeasible')]
    >>> rows[1]["error"]
    'gpus: 8 is not a multiple of tp x pp x cp (3)'
"""
from __future__ import annotations

import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Optional

from sim.sweep.grid import Grid, Point
from sim.topology import SimInputError

COLUMNS = ("point", "label", "tp", "pp", "cp", "dp", "ep", "zero", "schedule", "policy", "gpus", "seed",
           "status", "iteration_s", "tokens_per_s", "tflops_per_gpu", "mfu", "memory_GiB", "bottleneck",
           "error")


def evaluate_point(base: dict[str, Any], point: Point) -> dict[str, Any]:
    """Predict one point (picklable: runs in a pool process or a Dask worker)."""
    from sim.predict.breakdown import bottleneck  # noqa: PLC0415
    from sim.predict.job import job_from_dict  # noqa: PLC0415
    from sim.predict.predict import predict  # noqa: PLC0415

    job = point.job_dict(base)
    par = job["parallel"]
    tp, pp, cp = (int(par.get(k, 1)) for k in ("tp", "pp", "cp"))
    row: dict[str, Any] = {"point": point.index, "label": point.label, "tp": tp, "pp": pp, "cp": cp, "dp": 0,
                           "ep": int(par.get("ep", 1)), "zero": int(par.get("zero", 0)),
                           "schedule": str(par.get("schedule", "1f1b")), "policy": point.policy,
                           "gpus": point.gpus, "seed": point.seed, "status": "infeasible",
                           "iteration_s": math.nan, "tokens_per_s": math.nan, "tflops_per_gpu": math.nan,
                           "mfu": math.nan, "memory_GiB": math.nan, "bottleneck": "", "error": ""}
    if point.gpus % (tp * pp * cp):
        row["error"] = f"gpus: {point.gpus} is not a multiple of tp x pp x cp ({tp * pp * cp})"
        return row
    par["dp"] = point.gpus // (tp * pp * cp)
    source = "point"
    try:
        r = predict(job_from_dict(job, source))
    except SimInputError as exc:
        row["error"] = str(exc).removeprefix(f"{source}: ")
        return row
    row.update(dp=par["dp"], status="ok", iteration_s=r.iteration_s, tokens_per_s=r.tokens_per_s,
               tflops_per_gpu=r.hardware_tflops_per_gpu, mfu=r.mfu,
               memory_GiB=max(m.total_GiB for m in r.memory), bottleneck=bottleneck(r))
    return row


def run_grid(grid: Grid, workers: Optional[int] = None, address: Optional[str] = None) -> list[dict[str, Any]]:
    """Every point's row, in point order (module docstring for ``workers``/``address``)."""
    points = grid.points()
    if address is not None:
        return _dask(grid, points, address)
    n = workers if workers is not None else (os.cpu_count() or 1)
    if n < 1:
        raise SimInputError(f"--workers: must be at least 1, got {n}")
    if n == 1:
        return [evaluate_point(grid.job, p) for p in points]
    with ProcessPoolExecutor(max_workers=min(n, len(points))) as pool:
        rows = list(pool.map(evaluate_point, [grid.job] * len(points), points))
    return rows


def _dask(grid: Grid, points: list[Point], address: str) -> list[dict[str, Any]]:
    """The points on the Dask scheduler at ``address`` (a bounded connection timeout)."""
    from distributed import Client  # noqa: PLC0415

    if not address.startswith(("tcp://", "tls://", "inproc://", "ws://", "wss://")):
        raise SimInputError(f"--address: {address!r}: a Dask scheduler address such as tcp://HOST:PORT")
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise SimInputError(f"--address: no Dask scheduler answers at {address}: {exc}") from None
    try:
        base = client.scatter(grid.job, broadcast=True)
        futures = client.map(evaluate_point, [base] * len(points), points, pure=False)
        return list(client.gather(futures))
    finally:
        client.close()


def timed_run(grid: Grid, workers: Optional[int] = None, address: Optional[str] = None
              ) -> tuple[list[dict[str, Any]], float]:
    """``run_grid`` and its wall time in seconds."""
    t0 = time.perf_counter()
    rows = run_grid(grid, workers, address)
    return rows, time.perf_counter() - t0


__all__ = ["COLUMNS", "evaluate_point", "run_grid", "timed_run"]

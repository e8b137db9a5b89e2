"""Time a job's own kernels on this machine's GPU and write the CSV ``sim calibrate-ops`` reads.

Run on a GPU machine with PyTorch (not a dependency of this project; not run in CI)::

    python -m sim.tools.time_kernels sim/jobs/llama2-70b-h800-1024.yaml --out kernels.csv
    python -m sim calibrate-ops kernels.csv --gpu H800 --table h800-table.csv --write kernels.yaml
    # then, in the job file:   kernels: {table: h800-table.csv}

Which kernels: every distinct GEMM of one transformer layer and the LM head as the predictor
builds them (:mod:`sim.predict.graph`: forward, data-gradient and weight-gradient shapes, with
the job's tensor-parallel split; grouped expert GEMMs as one GEMM of the per-expert shape),
the flash attention forward and backward at the job's sequence, heads and head dimension
(``torch.nn.functional.scaled_dot_product_attention``, causal), and the memory-bound
kernels of the layer (norm, activation, residual add: timed as the copies of their bytes).
``--precision fp8`` times the GEMMs with ``torch._scaled_mm`` on FP8 (e4m3) inputs, and the
per-tensor cast (amax + scale + cast) as memory-bound rows. Each kernel: ``--warmup`` runs,
then the median of ``--repeats`` CUDA-event timings. Every 5th row is marked held out, so
``calibrate-ops`` reports the error on kernels it did not fit.

The shapes are plain Python (:func:`kernel_shapes`, tested in CI without a GPU); only
:func:`main` imports torch.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from sim.predict import graph
from sim.predict.job import TrainingJob, load_job
from sim.topology import SimInputError

COLUMNS = ("kind", "name", "M", "N", "K", "flops", "bytes", "phase", "measured_us", "heldout", "seq", "head_dim",
           "causal", "impl", "heads", "batch")


@dataclass(frozen=True, slots=True)
class KernelShape:
    """One kernel to time: a GEMM (M, N, K), an attention (batch, heads, seq, head_dim,
    phase) or a memory-bound kernel (bytes)."""

    kind: str
    name: str
    dims: tuple[int, int, int] = (0, 0, 0)
    bytes: float = 0.0
    phase: str = "fwd"
    batch: int = 0
    heads: int = 0
    seq: int = 0
    head_dim: int = 0

    @property
    def flops(self) -> float:
        """FLOPs as ``calibrate-ops`` counts them (attention causal: half of 4·b·h·s²·d;
        backward 2.5×)."""
        if self.kind == "gemm":
            m, n, k = self.dims
            return 2.0 * m * n * k
        if self.kind == "attention":
            f = 4.0 * self.batch * self.heads * self.seq * self.seq * self.head_dim / 2
            return f * (2.5 if self.phase == "bwd" else 1.0)
        return 0.0


def kernel_shapes(j: TrainingJob) -> list[KernelShape]:
    """The distinct kernels of one layer (forward and backward) and the LM head of ``j``.

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 2048,
    ...                              "vocab": 32000}, "parallel": {"tp": 2},
    ...                    "training": {"global_batch": 4}, "gpu": {"preset": "H800"}}, "j.yaml")
    >>> [s.name for s in kernel_shapes(j) if s.kind == "gemm"][:3]
    ['qkv', 'out_proj', 'fc1']
    >>> [(s.name, s.dims) for s in kernel_shapes(j) if s.name == "qkv.wgrad"]
    [('qkv.wgrad', (1024, 1536, 2048))]
    """
    moe = j.model.experts > 0
    ks = graph.layer_forward(j, moe) + graph.layer_backward(j, moe) + graph.head_forward(j) + graph.head_backward(j)
    out: list[KernelShape] = []
    seen: set[tuple] = set()
    m = j.model
    for k in ks:
        if k.kind == "comm":
            continue
        if k.kind == "gemm":
            key = ("gemm", k.dims)
            shape = KernelShape("gemm", k.name, k.dims, phase=k.phase)
        elif k.kind == "attention":
            key = ("attention", k.phase)
            shape = KernelShape("attention", k.name, phase=k.phase, batch=j.training.micro_batch,
                                heads=m.heads // j.parallel.tp, seq=k.seq, head_dim=k.head_dim)
        else:
            key = ("memory", round(k.bytes))
            shape = KernelShape("memory", k.name, bytes=k.bytes, phase=k.phase)
        if key not in seen:
            seen.add(key)
            out.append(shape)
    return out


def write_csv(rows: Sequence[tuple[KernelShape, float]], out: Path, heldout_every: int = 5) -> None:
    """The ``calibrate-ops`` CSV of measured kernels (seconds → µs)."""
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i, (s, sec) in enumerate(rows):
            held = int(heldout_every > 1 and i % heldout_every == heldout_every - 1)
            m, n, k = s.dims if s.kind == "gemm" else ("", "", "")
            w.writerow([s.kind, s.name, m, n, k, f"{s.flops:.6g}" if s.kind == "attention" else "",
                        f"{s.bytes:.6g}" if s.kind == "memory" else "", s.phase, f"{sec * 1e6:.3f}", held,
                        s.seq or "", s.head_dim or "", 1 if s.kind == "attention" else "",
                        "sdpa" if s.kind == "attention" else "", s.heads or "", s.batch or ""])


def _timer(torch, warmup: int, repeats: int) -> Callable[[Callable[[], object]], float]:
    def run(fn: Callable[[], object]) -> float:
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeats):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        return statistics.median(times)
    return run


def time_shapes(shapes: Sequence[KernelShape], precision: str, warmup: int = 10,
                repeats: int = 50) -> list[tuple[KernelShape, float]]:  # pragma: no cover - needs a GPU
    """Time every shape on ``cuda:0`` (module docstring)."""
    import torch  # noqa: PLC0415 — heavy: torch (a user's GPU machine only)
    import torch.nn.functional as F  # noqa: PLC0415 — heavy: torch

    dev, dt = "cuda", (torch.float16 if precision == "fp16" else torch.bfloat16)
    timed = _timer(torch, warmup, repeats)
    out: list[tuple[KernelShape, float]] = []
    for s in shapes:
        if s.kind == "gemm":
            M, N, K = s.dims
            a = torch.randn(M, K, device=dev, dtype=dt)
            b = torch.randn(N, K, device=dev, dtype=dt)
            if precision == "fp8":
                a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
                one = torch.ones((), device=dev)
                out.append((s, timed(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                                               out_dtype=torch.bfloat16))))
                cast = KernelShape("memory", f"{s.name}.fp8_cast", bytes=3.0 * M * K)
                out.append((cast, timed(lambda: (a.abs().amax(), a.to(torch.float8_e4m3fn)))))
            else:
                out.append((s, timed(lambda: a @ b.t())))
        elif s.kind == "attention":
            q = torch.randn(s.batch, s.heads, s.seq, s.head_dim, device=dev, dtype=dt, requires_grad=True)
            k, v = torch.randn_like(q, requires_grad=True), torch.randn_like(q, requires_grad=True)
            if s.phase == "fwd":
                out.append((s, timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))))
            else:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                g = torch.randn_like(o)
                both = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g))
                fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                out.append((s, max(both - fwd, 1e-7)))
        else:
            n = max(1, int(s.bytes // 4))                 # read + write of n bf16 elements
            x = torch.empty(n, device=dev, dtype=dt)
            y = torch.empty_like(x)
            out.append((s, timed(lambda: y.copy_(x))))
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:  # pragma: no cover - needs a GPU
    """Entry point (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m sim.tools.time_kernels", description=__doc__.split("\n")[0])
    ap.add_argument("job", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--precision", default=None, help="bf16 | fp16 | fp8 (default: the job's)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args(argv)
    try:
        j = load_job(args.job)
    except SimInputError as exc:
        print(f"time_kernels: {exc}", file=sys.stderr)
        return 2
    shapes = kernel_shapes(j)
    rows = time_shapes(shapes, args.precision or j.training.precision, args.warmup, args.repeats)
    write_csv(rows, args.out)
    print(f"time_kernels: {len(rows)} kernels of {j.name} timed, {args.out} written; next: "
          f"python -m sim calibrate-ops {args.out} --gpu <preset> --table <table.csv>")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

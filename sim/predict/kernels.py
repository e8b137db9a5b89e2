"""The compute kernels of one training iteration and their per-kernel time model.

A :class:`Kernel` is one GPU kernel of one micro-batch on one GPU (its FLOPs, the bytes it
moves through HBM, its GEMM shape) or one collective placed between kernels (``kind
"comm"``: tensor-parallel all-reduce/all-gather/reduce-scatter, expert all-to-all, context
parallel KV exchange), timed elsewhere (:mod:`sim.predict.comm`). Kernel lists for one
transformer layer's forward and backward, the embedding, the LM head with its loss and
the optimizer step are built by :mod:`sim.predict.graph`.

**Time of a kernel (roofline with efficiency factors)**::

    t = max(flops / (peak(precision) x eff), bytes / (HBM bandwidth x memory)) + launch_s

``eff`` is ``gemm x m / (m + gemm_half_dim)`` for a GEMM whose smallest dimension is m
(small GEMMs do not fill the GPU's tiles), ``attention_fwd`` / ``attention_bwd`` for the
flash-attention kernels, and does not apply to element-wise kernels (norms, activations,
residual adds, softmax/cross-entropy, the optimizer): they are memory-bound. Defaults (to
be calibrated on measured kernels, issue 18 item 2):

* ``gemm`` 0.70 — large bf16 GEMMs in cuBLAS reach 70-85 % of an A100's or H100's dense
  peak; training frameworks see the low end (shapes, epilogues, power capping);
* ``gemm_half_dim`` 64 — an M = 64 GEMM runs at half that rate (one tile of 128 half empty);
* ``attention_fwd`` 0.55, ``attention_bwd`` 0.45 — FlashAttention-2 reports 50-73 % of
  peak forward and less backward on A100;
* ``memory`` 0.70 of HBM bandwidth for element-wise kernels; ``launch_s`` 4 µs a kernel;
* ``nvlink`` 0.78 — nccl-tests' all-reduce bus bandwidth inside a DGX A100 is ~230-240 GB/s
  of the 300 GB/s per direction; ``nvlink_alpha_s`` 8 µs per NVLink collective (NCCL's
  small-message latency inside a server); ``roce_alpha_s`` 4 µs (TCCL's dual channel).

Example::

    >>> from sim.predict.gpus import PRESETS
    >>> k = Kernel("fc1", "gemm", flops=2.0 * 4096 * 4096 * 4096, bytes=3 * 4096 * 4096 * 2.0,
    ...            dims=(4096, 4096, 4096))
    >>> t = kernel_time_s(k, PRESETS["A100-80GB"], "bf16", KernelParams())
    >>> round(t * 1e3, 3)                       # 137 GFLOP at 0.70 x 0.985 x 312 TFLOP/s
    0.643
    >>> add = Kernel("add", "memory", bytes=3 * 2**30)
    >>> round(kernel_time_s(add, PRESETS["A100-80GB"], "bf16", KernelParams()) * 1e3, 3)
    2.261
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from sim.predict.gpus import GpuSpec
from sim.topology import SimInputError


@dataclass(slots=True)
class KernelParams:
    """Efficiency factors and latencies (the ``kernels`` section; module docstring)."""

    gemm: float = 0.70
    gemm_half_dim: float = 64.0
    attention_fwd: float = 0.55
    attention_bwd: float = 0.45
    memory: float = 0.70
    launch_s: float = 4e-6
    nvlink: float = 0.78
    nvlink_alpha_s: float = 8e-6
    roce_alpha_s: float = 4e-6

    def validate(self, source: str) -> None:
        """``SimInputError`` for an efficiency outside (0, 1] or a negative latency."""
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_s") or f.name == "gemm_half_dim":
                if v < 0:
                    raise SimInputError(f"{source}: kernels.{f.name}: must be >= 0, got {v}")
            elif not 0 < v <= 1:
                raise SimInputError(f"{source}: kernels.{f.name}: an efficiency in (0, 1], got {v}")


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel (or collective) of one micro-batch on one GPU.

    ``kind``: ``gemm`` | ``attention`` | ``memory`` | ``comm``. ``phase``: ``fwd`` |
    ``bwd`` (attention backward efficiency). A ``comm`` kernel names its ``collective``,
    its ``group`` (``tp`` | ``ep`` | ``cp``), the bytes per rank, and ``hidden_by``: the
    compute kernel it overlaps (its time is exposed only beyond that kernel's).
    """

    name: str
    kind: str
    flops: float = 0.0
    bytes: float = 0.0
    dims: tuple[int, int, int] = (0, 0, 0)
    phase: str = "fwd"
    fp8: bool = False
    collective: str = ""
    group: str = ""
    size_bytes: float = 0.0
    hidden_by: str = ""


def gemm_efficiency(k: Kernel, p: KernelParams) -> float:
    """``gemm x m / (m + gemm_half_dim)``, m the smallest GEMM dimension."""
    m = float(min(k.dims)) if min(k.dims) > 0 else 1.0
    return p.gemm * m / (m + p.gemm_half_dim)


def kernel_time_s(k: Kernel, gpu: GpuSpec, precision: str, p: KernelParams) -> float:
    """Roofline time of a compute kernel (module docstring); 0 for ``comm`` kernels."""
    if k.kind == "comm":
        return 0.0
    mem_s = k.bytes / (gpu.hbm_Bps * p.memory)
    if k.kind == "memory":
        return mem_s + p.launch_s
    prec = "fp8" if (k.fp8 and precision == "fp8") else ("fp16" if precision == "fp16" else "bf16")
    if k.kind == "gemm":
        eff = gemm_efficiency(k, p)
    else:
        eff = p.attention_fwd if k.phase == "fwd" else p.attention_bwd
    return max(k.flops / (gpu.peak_flops(prec) * eff), mem_s) + p.launch_s


__all__ = ["Kernel", "KernelParams", "gemm_efficiency", "kernel_time_s"]

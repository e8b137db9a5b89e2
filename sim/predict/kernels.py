"""The compute kernels of one training iteration and their per-kernel time model.

A :class:`Kernel` is one GPU kernel of one micro-batch on one GPU (its FLOPs, the bytes it
moves through HBM, its GEMM shape) or one collective placed between kernels (``kind
"comm"``: tensor-parallel all-reduce/all-gather/reduce-scatter, expert all-to-all, context
parallel KV exchange), timed elsewhere (:mod:`sim.predict.comm`). Kernel lists for one
transformer layer's forward and backward, the embedding, the LM head with its loss and
the optimizer step are built by :mod:`sim.predict.graph`.

**Time of a kernel (roofline)**::

    t = max(flops / (rate x compute_scale x clock), bytes / (HBM bandwidth x memory)) + launch_s

``rate`` of a GEMM or an attention kernel comes from **measurement** by default: the kernel
tables of the GPU's die (:mod:`sim.predict.kerneltable`: MAMF and DeepGEMM GEMM rows,
FlashAttention-2/3 and cuDNN attention rows, each citing its source), interpolated by shape
through the tile/wave model, and the prediction's report says which kernels came from a
measured row, from the shape model anchored on the table, or from a default
(:func:`compute_rate`). ``clock`` is the GPU's sustained clock under a power limit
(:attr:`sim.predict.gpus.GpuSpec.clock_factor`); table rates are also × the die's
``sustained`` share and flash attention × ``attention``, the two figures fitted on the
validation set's fit split (:mod:`sim.predict.calibration`); a user's own table
(``kernels.table``) is taken as it is. Given explicitly, the factors of the
simple model replace the tables: ``gemm x m / (m + gemm_half_dim)`` (m the smallest GEMM
dimension) and ``attention_fwd`` / ``attention_bwd`` × peak — what ``calibrate-ops`` fits.
Element-wise kernels (norms, activations, residual adds, softmax/cross-entropy, casts, the
optimizer) are memory-bound. Defaults without a measurement (said as ``default``):

* GEMMs on a die without a table: 0.70 of peak × the shape model; ``gemm_half_dim`` 64 for
  the simple model; attention 0.55 forward, 0.45 backward (FlashAttention-2 on A100);
* ``memory`` 0.70 of HBM bandwidth for element-wise kernels; ``launch_s`` 4 µs a kernel;
* ``nvlink`` 0.78 — nccl-tests' all-reduce bus bandwidth inside a DGX A100 is ~230-240 GB/s
  of the 300 GB/s per direction; ``nvlink_alpha_s`` 8 µs per NVLink collective (NCCL's
  small-message latency inside a server); ``roce_alpha_s`` 4 µs (TCCL's dual channel: the
  NIC's latency on top of ``nvlink_alpha_s`` for the share a split sends over RoCE).

Example::

    >>> from sim.predict.gpus import PRESETS
    >>> k = Kernel("fc1", "gemm", flops=2.0 * 4096 * 4096 * 4096, bytes=3 * 4096 * 4096 * 2.0,
    ...            dims=(4096, 4096, 4096))
    >>> a100 = PRESETS["A100-80GB"]
    >>> compute_rate(k, a100, "bf16", KernelParams()).provenance
    'shape model'
    >>> t = kernel_time_s(k, a100, "bf16", KernelParams(gemm=0.7, gemm_half_dim=64.0))
    >>> round(t * 1e3, 3)                       # 137 GFLOP at 0.70 x 0.985 x 312 TFLOP/s
    0.643
    >>> add = Kernel("add", "memory", bytes=3 * 2**30)
    >>> round(kernel_time_s(add, a100, "bf16", KernelParams()) * 1e3, 3)
    2.261
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Optional

from sim.predict import calibration
from sim.predict.gpus import GpuSpec
from sim.predict.kerneltable import DEFAULT_GEMM_EFF, TABLE_DIR, KernelTable, Rate, builtin_table, load_table
from sim.topology import SimInputError


@dataclass(slots=True)
class KernelParams:
    """Efficiency factors and latencies (the ``kernels`` section; module docstring).

    ``gemm`` / ``gemm_half_dim`` / ``attention_fwd`` / ``attention_bwd`` left ``None`` (the
    default) take the measured tables of the GPU's die (:mod:`sim.predict.kerneltable`);
    given, they are the efficiency factors of the simple model (``calibrate-ops`` fits them).
    ``compute_scale`` multiplies every compute rate (``calibrate-run`` fits it), ``table`` is
    a user's own kernel table (CSV, ``sim calibrate-ops --table``), used before the shipped one.
    """

    gemm: Optional[float] = None
    gemm_half_dim: Optional[float] = None
    attention_fwd: Optional[float] = None
    attention_bwd: Optional[float] = None
    memory: float = 0.70
    launch_s: float = 4e-6
    nvlink: float = 0.78
    nvlink_alpha_s: float = 8e-6
    roce_alpha_s: float = 4e-6
    compute_scale: float = 1.0
    table: str = ""

    def validate(self, source: str) -> None:
        """``SimInputError`` for an efficiency outside (0, 1], a negative latency or a
        kernel table that does not load."""
        for f in fields(self):
            v = getattr(self, f.name)
            if v is None or f.name == "table":
                continue
            if f.name.endswith("_s") or f.name == "gemm_half_dim":
                if v < 0:
                    raise SimInputError(f"{source}: kernels.{f.name}: must be >= 0, got {v}")
            elif f.name == "compute_scale":
                if not 0 < v <= 2:
                    raise SimInputError(f"{source}: kernels.compute_scale: a factor in (0, 2], got {v}")
            elif not 0 < v <= 1:
                raise SimInputError(f"{source}: kernels.{f.name}: an efficiency in (0, 1], got {v}")
        if self.table:
            try:
                user_table(self.table)
            except SimInputError as exc:
                raise SimInputError(f"{source}: kernels.table: {exc}") from None


@lru_cache(maxsize=32)
def user_table(path: str) -> KernelTable:
    """A user's kernel table (cached by path)."""
    return load_table(Path(path))


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel (or collective) of one micro-batch on one GPU.

    ``kind``: ``gemm`` | ``attention`` | ``memory`` | ``comm``. ``phase``: ``fwd`` |
    ``bwd`` (attention backward efficiency). A ``comm`` kernel names its ``collective``,
    its ``group`` (``tp`` | ``ep`` | ``cp``), the bytes per rank, and ``hidden_by``: the
    compute kernel it overlaps (its time is exposed only beyond that kernel's). An
    attention kernel carries its sequence, head dimension, mask and implementation
    (``fa2`` | ``fa3`` | ``cudnn``) for the kernel tables; ``groups`` > 1: a grouped GEMM.
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
    seq: int = 0
    head_dim: int = 0
    causal: bool = True
    impl: str = "cudnn"
    groups: int = 1


def padded_head_dim(impl: str, head_dim: int) -> int:
    """The head dimension a flash-attention kernel computes on: each implementation is
    compiled for a few head dimensions and runs a smaller one on the next kernel up, its
    tiles padded (the extra columns masked on load, computed, thrown away), so the kernel
    takes the padded kernel's time for ``head_dim / padded`` of its FLOPs.

    * ``fa2`` (FlashAttention-2, ``csrc/flash_attn/flash_api.cpp``:
      ``head_size_rounded = round_multiple(head_size, 32)`` up to 192, else 256; kernels
      instantiated for 32, 64, …, 256): the next multiple of 32;
    * ``triton`` (the Triton FlashAttention of ``flash_attn_triton.py``, as LLM Foundry
      ships it: ``BLOCK_HEADDIM = max(triton.next_power_of_2(d), 16)``, loads masked by
      ``offs_d < headdim``): the next power of two;
    * ``fa3`` (FlashAttention-3, ``hopper/flash_api.cpp`` ``round_up_headdim``): 64, 96,
      128, 192 or 256;
    * ``cudnn`` and anything else: as given (cuDNN's fused attention takes any multiple of 8).

    >>> [padded_head_dim(i, 112) for i in ("fa2", "triton", "fa3", "cudnn")]
    [128, 128, 128, 112]
    >>> padded_head_dim("fa2", 80), padded_head_dim("triton", 80), padded_head_dim("fa3", 80)
    (96, 128, 96)
    """
    d = max(1, int(head_dim))
    if impl == "fa2":
        return 256 if d > 192 else -(-d // 32) * 32
    if impl == "triton":
        return max(16, 1 << (d - 1).bit_length())
    if impl == "fa3":
        return next((x for x in (64, 96, 128, 192, 256) if d <= x), d)
    return d


def gemm_efficiency(k: Kernel, p: KernelParams) -> float:
    """The simple model's ``gemm x m / (m + gemm_half_dim)``, m the smallest GEMM dimension
    (defaults 0.70 and 64 when the factors are not given)."""
    m = float(min(k.dims)) if min(k.dims) > 0 else 1.0
    g = p.gemm if p.gemm is not None else DEFAULT_GEMM_EFF
    h = p.gemm_half_dim if p.gemm_half_dim is not None else 64.0
    return g * m / (m + h)


def _tables(gpu: GpuSpec, p: KernelParams) -> list[KernelTable]:
    out = [user_table(p.table)] if p.table else []
    return out + [builtin_table(gpu.chip)]


def _shipped(t: KernelTable) -> bool:
    """A table shipped here (public microbenchmarks: the fitted sustained share applies),
    not a user's own measurement (taken as it is)."""
    return t.path.startswith(str(TABLE_DIR)) or not t.path


def compute_rate(k: Kernel, gpu: GpuSpec, precision: str, p: KernelParams) -> Rate:
    """FLOP/s of a GEMM or attention kernel (before ``compute_scale`` and the clock) and
    where the figure came from: ``measured``, ``shape model``, ``derived ...`` (the tables)
    or ``default`` / ``factors`` (the simple model's defaults or given factors)."""
    prec = "fp8" if (k.fp8 and precision in ("fp8", "fp8_block")) else ("fp16" if precision == "fp16" else "bf16")
    tag = precision if prec == "fp8" else prec
    peak = gpu.peak_flops(prec)
    if k.kind == "gemm":
        if p.gemm is not None and p.gemm_half_dim is not None:
            return Rate(peak * gemm_efficiency(k, p), "factors")
        M, N, K = (max(1, x) for x in k.dims)
        sustained = calibration.current().sustained_for(gpu.chip)
        for t in _tables(gpu, p):
            r = t.gemm_tflops(tag, M, N, K, gpu.sms)
            if r.tflops > 0:
                rate = min(r.tflops * 1e12, peak) * (sustained if _shipped(t) else 1.0)
                if p.gemm is not None:            # a level given, the tables' shape dependence kept
                    rate = peak * p.gemm * rate / max(t.gemm_tflops(tag, 8192, 8192, 8192, gpu.sms).tflops * 1e12, 1.0)
                return Rate(rate, r.provenance)
        return Rate(peak * gemm_efficiency(k, p), "default")
    factor = p.attention_fwd if k.phase == "fwd" else p.attention_bwd
    if factor is not None:
        return Rate(peak * factor, "factors")
    tables = _tables(gpu, p)
    other = builtin_table("H100" if gpu.chip != "H100" else "A100")
    cal = calibration.current()
    dh = k.head_dim or 128
    padded = padded_head_dim(k.impl, dh)
    useful = dh / padded                    # the padded columns are computed and thrown away
    for impl in dict.fromkeys((k.impl, "fa2")):
        for t in tables:
            r = t.attention_tflops(impl, prec, k.seq or 2048, padded, k.causal, k.phase, other)
            if r.tflops > 0:
                note = r.provenance if impl == k.impl else f"{r.provenance}, {impl} for {k.impl}"
                if padded != dh:
                    note += f", head dim {dh} run as {padded}"
                scale = cal.sustained_for(gpu.chip) * cal.attention_for(k.impl)
                return Rate(min(r.tflops * 1e12, peak) * useful * (scale if _shipped(t) else 1.0), note)
    return Rate(peak * (0.55 if k.phase == "fwd" else 0.45), "default")


def kernel_time_s(k: Kernel, gpu: GpuSpec, precision: str, p: KernelParams, efficiency: float = 1.0) -> float:
    """Roofline time of a compute kernel (module docstring); 0 for ``comm`` kernels;
    ``efficiency`` scales the GEMM and attention rates (the framework's fitted share,
    :attr:`sim.predict.framework.Framework.efficiency`), never the memory-bound kernels."""
    if k.kind == "comm":
        return 0.0
    mem_s = k.bytes / (gpu.hbm_Bps * p.memory)
    if k.kind == "memory":
        return mem_s + p.launch_s
    rate = compute_rate(k, gpu, precision, p).tflops * p.compute_scale * gpu.clock_factor * efficiency
    return max(k.flops / rate, mem_s) + p.launch_s


__all__ = ["Kernel", "KernelParams", "compute_rate", "gemm_efficiency", "kernel_time_s", "user_table"]

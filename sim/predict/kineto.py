"""Measured kernels from a PyTorch-profiler (Kineto) trace JSON, for ``python -m sim
calibrate-ops``: every GPU kernel linked to the ATen operator that launched it, with the
FLOPs and bytes of the operator's shapes.

The trace (``prof.export_chrome_trace``, profiled with ``record_shapes=True``; ``.json``
or ``.json.gz``) has complete events (``"ph": "X"``, ``ts``/``dur`` in µs); CPU
operators (``"cat": "cpu_op"``) carry ``args["Input Dims"]`` and ``args["External
id"]``, GPU kernels (``"cat": "kernel"``) the same ``External id``. A kernel's measured
time is the sum of its operator's kernels. Operators understood:

* GEMMs — ``aten::mm`` ``[[M,K],[K,N]]``, ``aten::addmm`` ``[[bias],[M,K],[K,N]]``,
  ``aten::bmm`` ``[[B,M,K],[B,K,N]]`` (B GEMMs), ``aten::linear`` ``[[...,K],[N,K]]``;
* memory-bound — element-wise, norms, softmax, dropout, casts (:data:`MEMORY_OPS`):
  bytes = every input tensor once plus an output the size of the largest input, at the
  element size of ``args["Input type"]`` (2 bytes when absent).

* attention — ``aten::scaled_dot_product_attention``, ``aten::_scaled_dot_product_flash_attention``
  (forward) and ``aten::_scaled_dot_product_flash_attention_backward`` (backward), query
  ``[B, H, Sq, D]`` and key ``[B, Hk, Sk, D]``: FLOPs and bytes as
  :mod:`sim.predict.graph` counts them (forward ``4·B·H·Sq·Sk·D``, half when causal; the
  backward 2.5× the FLOPs and 2× the bytes), the causal flag read from
  ``args["Concrete Inputs"]`` (what PyTorch records for scalar arguments with
  ``record_shapes=True``; :data:`ATTENTION_OPS` gives its position).

Other operators (an attention without its causal flag; collectives) are skipped and
counted.

Example::

    >>> ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 9,
    ...        "args": {"External id": 7, "Input Dims": [[128, 256], [256, 512]]}},
    ...       {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "ts": 1, "dur": 5.0, "args": {"External id": 7}}]
    >>> ops, skipped = kernels_from_trace({"traceEvents": ev})
    >>> (ops[0].kind, ops[0].dims, ops[0].measured_s, skipped)
    ('gemm', (128, 512, 256), 5e-06, 0)
"""
from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.topology import SimInputError

MEMORY_OPS = frozenset({
    "aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::sub", "aten::div", "aten::gelu",
    "aten::gelu_backward", "aten::silu", "aten::silu_backward", "aten::layer_norm", "aten::native_layer_norm",
    "aten::native_layer_norm_backward", "aten::rms_norm", "aten::_fused_rms_norm", "aten::softmax",
    "aten::_softmax", "aten::_softmax_backward_data", "aten::dropout", "aten::native_dropout",
    "aten::native_dropout_backward", "aten::copy_", "aten::to", "aten::_to_copy", "aten::fill_",
    "aten::zero_", "aten::cat", "aten::_log_softmax", "aten::_log_softmax_backward_data",
    "aten::nll_loss_forward", "aten::nll_loss_backward", "aten::embedding_dense_backward",
    "aten::index_select", "aten::embedding"})
#: attention operators: name -> (phase, position of ``is_causal`` in the ATen signature,
#: position of the query among the tensor inputs)
ATTENTION_OPS = {
    "aten::scaled_dot_product_attention": ("fwd", 5, 0),
    "aten::_scaled_dot_product_flash_attention": ("fwd", 4, 0),
    "aten::_scaled_dot_product_flash_attention_backward": ("bwd", 11, 1),
}
ELEMENT_BYTES = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8, "long int": 8, "int": 4,
                 "bool": 1, "unsigned char": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1}


@dataclass(frozen=True, slots=True)
class MeasuredKernel:
    """One measured operator: its kind (``gemm`` | ``attention`` | ``memory``), FLOPs,
    bytes, GEMM shape (M, N, K), phase, measured seconds, and whether it is held out."""

    name: str
    kind: str
    flops: float
    bytes: float
    dims: tuple[int, int, int]
    phase: str
    measured_s: float
    heldout: bool = False


def _numel(shape: list) -> int:
    return math.prod(int(x) for x in shape) if shape else 0


def gemm_kernel(name: str, m: int, n: int, k: int, count: int, elem: float, measured_s: float) -> MeasuredKernel:
    """A GEMM (``count`` of them) with the FLOPs and bytes of :mod:`sim.predict.graph`."""
    return MeasuredKernel(name, "gemm", 2.0 * m * n * k * count, (m * k + k * n + m * n) * elem * count,
                          (m, n, k), "fwd", measured_s)


def attention_kernel(name: str, q: list, k: list, causal: bool, phase: str, elem: float,
                     measured_s: float) -> MeasuredKernel:
    """A flash-attention kernel of query ``q`` ``[B, H, Sq, D]`` and key ``k`` ``[B, Hk, Sk,
    D]`` with the FLOPs and bytes of :mod:`sim.predict.graph`.

    >>> a = attention_kernel("sdpa", [2, 16, 1024, 128], [2, 4, 1024, 128], True, "fwd", 2.0, 1e-3)
    >>> a.flops == 4 * 2 * 16 * 1024 * 1024 * 128 * 0.5, a.bytes == (2 * 2 * 16 + 2 * 2 * 4) * 1024 * 128 * 2
    (True, True)
    """
    b, h, sq, d = (int(x) for x in q)
    hk, sk = int(k[1]), int(k[2])
    flops = 4.0 * b * h * sq * sk * d * (0.5 if causal else 1.0)
    nbytes = (2 * b * h * sq * d + 2 * b * hk * sk * d) * elem        # q, out; k, v
    if phase == "bwd":
        flops, nbytes = 2.5 * flops, 2.0 * nbytes
    return MeasuredKernel(name, "attention", flops, nbytes, (0, 0, 0), phase, measured_s)


def _causal(concrete: list, at: int) -> bool | None:
    """The ``is_causal`` argument as the trace recorded it, None when it did not."""
    value = str(concrete[at]).strip().lower() if at < len(concrete) else ""
    return {"true": True, "1": True, "false": False, "0": False}.get(value)


def _operator(name: str, dims: list, types: list, measured_s: float,
              concrete: list | None = None) -> MeasuredKernel | None:
    elem = float(ELEMENT_BYTES.get(types[0], 2)) if types else 2.0
    shapes = [d for d in dims if isinstance(d, list)]
    if name in ATTENTION_OPS:
        phase, at, qpos = ATTENTION_OPS[name]
        causal = _causal(concrete or [], at)
        tensors = [s for s in shapes if len(s) == 4]
        if causal is None or len(tensors) < qpos + 2:
            return None
        if types and qpos < len(types):
            elem = float(ELEMENT_BYTES.get(types[qpos], 2))
        return attention_kernel(name, tensors[qpos], tensors[qpos + 1], causal, phase, elem, measured_s)
    try:
        if name == "aten::mm":
            (m, k), (_, n) = shapes[0], shapes[1]
            return gemm_kernel(name, m, n, k, 1, elem, measured_s)
        if name == "aten::addmm":
            (m, k), (_, n) = shapes[1], shapes[2]
            return gemm_kernel(name, m, n, k, 1, elem, measured_s)
        if name == "aten::bmm":
            (b, m, k), (_, _, n) = shapes[0], shapes[1]
            return gemm_kernel(name, m, n, k, b, elem, measured_s)
        if name == "aten::linear":
            x, (n, k) = shapes[0], shapes[1]
            return gemm_kernel(name, _numel(x[:-1]), n, k, 1, elem, measured_s)
    except (ValueError, IndexError, TypeError):
        return None
    if name in MEMORY_OPS and shapes:
        sizes = [_numel(s) for s in shapes]
        return MeasuredKernel(name, "memory", 0.0, (sum(sizes) + max(sizes)) * elem, (0, 0, 0), "fwd", measured_s)
    return None


def kernels_from_trace(doc: Any, source: str = "trace") -> tuple[list[MeasuredKernel], int]:
    """(measured kernels, operators skipped) of a parsed trace (module docstring)."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise SimInputError(f"{source}: traceEvents: missing (not a Chrome/Kineto trace)")
    ops: dict[Any, dict] = {}
    gpu_s: dict[Any, float] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        ext = (e.get("args") or {}).get("External id")
        if ext is None:
            continue
        if e.get("cat") == "cpu_op":
            ops.setdefault(ext, e)
        elif e.get("cat") == "kernel":
            gpu_s[ext] = gpu_s.get(ext, 0.0) + float(e.get("dur", 0.0)) / 1e6
    out, skipped = [], 0
    for ext, seconds in gpu_s.items():
        op = ops.get(ext)
        k = None
        if op is not None and seconds > 0:
            args = op.get("args") or {}
            k = _operator(str(op.get("name")), args.get("Input Dims") or [], args.get("Input type") or [],
                          seconds, args.get("Concrete Inputs") or [])
        if k is None:
            skipped += 1
        else:
            out.append(k)
    return out, skipped


def load_trace(path: Path) -> tuple[list[MeasuredKernel], int]:
    """Read a trace file (``.json`` or ``.json.gz``)."""
    try:
        raw = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
        doc = json.loads(raw)
    except OSError as exc:
        raise SimInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SimInputError(f"{path}: not a JSON trace: {exc}") from None
    return kernels_from_trace(doc, str(path))


__all__ = ["ATTENTION_OPS", "MEMORY_OPS", "MeasuredKernel", "attention_kernel", "gemm_kernel",
           "kernels_from_trace", "load_trace"]

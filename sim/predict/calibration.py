"""The few figures of the predictor that no public microbenchmark gives, fitted on the fit
split of the validation set (``python -m sim validate --fit``, :mod:`sim.validation.fit`)
and never on its held-out runs; stored in ``sim/predict/calibration.yaml`` with the fit's
errors, read by every prediction (absent file: the defaults below).

* ``sustained`` — per die, the tensor-core rate a training run sustains relative to the
  microbenchmarks of the kernel tables (power and clock under a long load, the SMs NCCL
  takes while it overlaps compute, the GEMM epilogues a framework adds);
* ``attention`` — per implementation (``fa2``: the flash-attn package or PyTorch's SDPA;
  ``cudnn``: Transformer Engine's fused attention), flash-attention kernels in a training
  step relative to their isolated benchmarks (layout copies, variable-length paths);
  ``triton`` (the FlashAttention algorithm in Triton, run on FA2's tables) is fitted as a
  share of ``fa2`` within :data:`TRITON_SHARE` — the FlashAttention-2 paper (Dao 2023,
  arXiv:2307.08691, §4.1) measures FA2 1.3-2.5× faster than FlashAttention in Triton on
  A100 — and, unfitted, is ``fa2 / 1.3``;
* ``power_exponent`` — a power-limited GPU's sustained clock goes as ``(limit/TDP)^e``;
  not fitted since the eighth round: held at the cube-root law, 1/3
  (:data:`sim.validation.fit.HELD`: fitted, it was confounded with the torchtitan share);
* ``overheads`` — per framework family (``megatron``: Megatron-LM/Core, NeMo,
  Megatron-Bridge, Megatron-DeepSpeed, Llama 3's stack; ``pytorch``: FSDP, Composer,
  torchtitan, DeepSpeed): fixed seconds per micro-batch and per iteration — what the model
  has no mechanism for yet; the optimizer step (:mod:`sim.predict.optimizer`: fused,
  foreach or a per-tensor loop with its launches and syncs), FSDP's copies around its
  collectives and the trainer's training metrics (:mod:`sim.predict.stages`) are timed
  apart from them;
* ``straggler_sigma`` — relative jitter of one GPU's step: a synchronous step of N GPUs
  waits for the slowest, ``1 + σ·√(2 ln N)`` (:func:`sim.predict.predict.straggler_factor`);
* ``framework_efficiency`` — per framework profile (``megatron-core``, ``nemo``,
  ``composer-fsdp``, ...), the share of the sustained GEMM and attention rates that stack
  reaches (its own kernels, launch pattern, memory layout); fitted only by ``python -m sim
  validate --fit --free`` and only for profiles with enough fit-split runs
  (:data:`sim.validation.fit.FREE_MIN_RUNS`); absent: 1.0;
* ``eager_traffic`` — bytes of the memory-bound kernels of eager PyTorch stacks relative to
  fused ones (unfused norms, activations, rotary embeddings, residual adds).

Example::

    >>> c = Calibration()
    >>> c.sustained_for("H100"), c.overhead("pytorch", "microbatch_s") >= 0
    (1.0, True)
    >>> with use(Calibration(sustained={"H100": 0.8})):
    ...     current().sustained_for("H100")
    0.8
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

from sim.topology import SimInputError

PATH = Path(__file__).resolve().parent / "calibration.yaml"
FAMILIES = ("megatron", "pytorch")
#: the Triton flash-attention kernel's rate as a share of FA2's: 1/2.5 .. 1/1.3 (module docstring)
TRITON_SHARE = (1.0 / 2.5, 1.0 / 1.3)


@dataclass(slots=True)
class Calibration:
    """The fitted figures (module docstring); defaults: nothing fitted."""

    sustained: dict[str, float] = field(default_factory=dict)
    attention: dict[str, float] = field(default_factory=dict)
    power_exponent: float = 1.0 / 3.0
    overheads: dict[str, dict[str, float]] = field(default_factory=dict)
    eager_traffic: float = 2.0
    straggler_sigma: float = 0.0
    framework_efficiency: dict[str, float] = field(default_factory=dict)
    fitted_on: str = ""

    def sustained_for(self, chip: str) -> float:
        """The die's sustained share of its microbenchmarks (1.0 when not fitted)."""
        return float(self.sustained.get(chip, 1.0))

    def attention_for(self, impl: str) -> float:
        """Flash attention of implementation ``impl`` in training over its benchmark (1.0
        when not fitted; ``triton`` unfitted: ``fa2`` / 1.3, :data:`TRITON_SHARE`)."""
        if impl == "triton" and "triton" not in self.attention:
            return self.attention_for("fa2") * TRITON_SHARE[1]
        return float(self.attention.get(impl, 1.0))

    def framework_efficiency_for(self, name: str) -> float:
        """The fitted efficiency share of framework profile ``name`` (1.0 when not fitted)."""
        return float(self.framework_efficiency.get(name, 1.0))

    def overhead(self, family: str, what: str) -> float:
        """Seconds per ``microbatch_s`` or ``iteration_s`` of a framework family."""
        return float(self.overheads.get(family, {}).get(what, 0.0))

    def to_dict(self) -> dict[str, Any]:
        """The YAML document."""
        return {"sustained": {k: round(v, 4) for k, v in self.sustained.items()},
                "attention": {k: round(v, 4) for k, v in self.attention.items()},
                "power_exponent": round(self.power_exponent, 4),
                "overheads": {f: {k: round(v, 6) for k, v in d.items()} for f, d in self.overheads.items()},
                "eager_traffic": round(self.eager_traffic, 4), "straggler_sigma": round(self.straggler_sigma, 5),
                **({"framework_efficiency": {k: round(v, 4) for k, v in sorted(self.framework_efficiency.items())}}
                   if self.framework_efficiency else {}),
                "fitted_on": self.fitted_on}


def load(path: Path = PATH) -> Calibration:
    """Read a calibration file (``SimInputError`` naming the field when malformed)."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise SimInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SimInputError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SimInputError(f"{path}: a mapping of {', '.join(Calibration.__dataclass_fields__)}")
    known = set(Calibration.__dataclass_fields__)
    for k in data:
        if k not in known:
            raise SimInputError(f"{path}: {k}: unknown field (known: {', '.join(sorted(known))})")
    c = Calibration(**data)
    for chip, v in c.sustained.items():
        if not isinstance(v, (int, float)) or not 0 < v <= 1.5:
            raise SimInputError(f"{path}: sustained.{chip}: a factor in (0, 1.5], got {v!r}")
    for f, d in c.overheads.items():
        if f not in FAMILIES or not isinstance(d, dict):
            raise SimInputError(f"{path}: overheads.{f}: a family ({', '.join(FAMILIES)}) of seconds")
        for k, v in d.items():
            if k not in ("microbatch_s", "iteration_s") or not isinstance(v, (int, float)) or v < 0:
                raise SimInputError(f"{path}: overheads.{f}.{k}: microbatch_s or iteration_s, seconds >= 0")
    if isinstance(c.attention, (int, float)):
        c.attention = {"fa2": float(c.attention), "cudnn": float(c.attention), "fa3": float(c.attention)}
    if not isinstance(c.attention, dict) or not all(isinstance(v, (int, float)) and 0 < v <= 1.5
                                                     for v in c.attention.values()):
        raise SimInputError(f"{path}: attention: a factor in (0, 1.5] per implementation (fa2, fa3, cudnn, triton)")
    if not isinstance(c.framework_efficiency, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and 0 < v <= 1.5 for k, v in c.framework_efficiency.items()):
        raise SimInputError(f"{path}: framework_efficiency: a factor in (0, 1.5] per framework profile name")
    if not isinstance(c.straggler_sigma, (int, float)) or not 0 <= c.straggler_sigma < 0.5:
        raise SimInputError(f"{path}: straggler_sigma: a relative jitter in [0, 0.5), got {c.straggler_sigma!r}")
    for k in ("power_exponent", "eager_traffic"):
        if not isinstance(getattr(c, k), (int, float)) or getattr(c, k) <= 0:
            raise SimInputError(f"{path}: {k}: must be a positive number, got {getattr(c, k)!r}")
    return c


_ACTIVE: Optional[Calibration] = None


def current() -> Calibration:
    """The calibration predictions use: the one set by :func:`use`, else the file's."""
    global _ACTIVE
    if _ACTIVE is None:
        _ACTIVE = load() if PATH.exists() else Calibration()
    return _ACTIVE


@contextlib.contextmanager
def use(c: Calibration) -> Iterator[Calibration]:
    """Predict under ``c`` inside the block (the fit tries many)."""
    global _ACTIVE
    before = _ACTIVE
    _ACTIVE = c
    try:
        yield c
    finally:
        _ACTIVE = before


__all__ = ["Calibration", "FAMILIES", "PATH", "TRITON_SHARE", "current", "load", "use"]

"""The validation set: published, fully specified training runs (``sim/validation/runs.yaml``).

The file has three sections (its header documents the schema): ``sources`` (citation of every
table), ``models`` (architectures, each citing where its shape comes from) and ``runs`` (one
measured run each: model, GPU, parallelism, batch, precision, framework, the measured figure).
:func:`load_dataset` validates every row and refuses a bad one naming its index and field,
like the job files (``runs.yaml: runs[3].gpus: must be a positive integer, got 0``).

A run's *measured iteration time* is derived from what its source printed, with the source's
own FLOP convention when it printed FLOPs (:func:`measured_iteration_s`):

* ``tokens_per_s_per_gpu``: ``gbs · seq / (v · gpus)``; ``tokens_per_s``: ``gbs · seq / v``;
* ``tflops_per_gpu`` / ``mfu`` (× the GPU's dense peak at the run's precision):
  ``FLOPs(convention) / (v · gpus)``, with ``megatron`` = 3 × the forward's matrix FLOPs with
  full (not causal) attention and the LM head (Megatron-LM's ``num_floating_point_operations``,
  Korthikanti et al.'s MFU) and ``narayanan21`` = ``96·B·s·l·h²·(1 + s/6h + V/16lh)`` (the
  SC21 paper's count, with the recomputed forward).

Example::

    >>> ds = load_dataset()
    >>> r = ds.run("nemo2407-llama3-8b-8")
    >>> r.gpus, r.model.hidden, round(measured_iteration_s(r, ds), 3)
    (8, 4096, 10.68)
    >>> r = ds.run("narayanan21-1008b-3072")
    >>> round(measured_iteration_s(r, ds), 1)          # 1T on 3,072 A100s at 163 TFLOP/s
    102.6
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from sim.predict.framework import MOE_DISPATCHERS
from sim.predict.gpus import PRESETS
from sim.predict.tp_overlap import CONFIGS as TP_OVERLAP_CONFIGS
from sim.topology import SimInputError

DATA = Path(__file__).resolve().parent / "runs.yaml"
PRECISIONS = ("bf16", "fp16", "fp8")
RECOMPUTE = ("none", "selective", "full")
SHARDING = ("none", "zero1", "zero2", "zero3", "fsdp_full", "fsdp_grad_op", "hsdp")
METRICS = ("tokens_per_s_per_gpu", "tokens_per_s", "tflops_per_gpu", "mfu", "iteration_s")
CONVENTIONS = ("megatron", "narayanan21")
#: a run's attention kernels when its source names them ('': the framework profile's)
ATTENTION_KERNELS = ("", "unfused", "fa2", "fa3", "cudnn", "triton")


@dataclass(frozen=True, slots=True)
class ModelShape:
    """One architecture of the ``models`` section."""

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    kv_heads: Optional[int] = None
    ffn_hidden: Optional[int] = None
    head_dim: Optional[int] = None
    mlp: str = "gelu"
    norm: str = "layernorm"
    position: str = "learned"
    bias: bool = True
    tied_embeddings: bool = True
    experts: int = 0
    top_k: int = 2
    moe_ffn_hidden: Optional[int] = None
    source: str = ""

    @property
    def ffn(self) -> int:
        """FFN width (default 4 × hidden)."""
        return self.ffn_hidden or 4 * self.hidden

    @property
    def d(self) -> int:
        """Head dimension."""
        return self.head_dim or self.hidden // self.heads

    @property
    def kv(self) -> int:
        """KV heads."""
        return self.kv_heads or self.heads


@dataclass(frozen=True, slots=True)
class Run:
    """One published run (the ``runs`` section; schema in the file's header)."""

    id: str
    source: str
    ref: str
    model: ModelShape
    gpu: str
    gpus: int
    precision: str
    framework: str
    tp: int
    pp: int
    dp: int
    seq: int
    mbs: int
    gbs: int
    recompute: str
    measured: dict[str, Any]
    cp: int = 1
    ep: int = 1
    vp: int = 1
    sequence_parallel: bool = False
    sharding: str = "none"
    zero: int = 0
    compile: bool = False
    async_tp: bool = False
    fsdp_mixed_precision: str = ""
    attention: str = ""
    moe_dispatcher: str = ""
    tp_comm_overlap: Optional[bool] = None
    tp_overlap_config: str = ""
    moe_a2a_overlap: bool = False
    nic_gbps: float = 400.0
    assumed: tuple[str, ...] = ()

    @property
    def framework_name(self) -> str:
        """The profile part of ``framework`` (``nemo-24.07`` → ``nemo``)."""
        head = self.framework.split("-")
        out = []
        for part in head:
            if part[:1].isdigit():
                break
            out.append(part)
        return "-".join(out)

    @property
    def framework_version(self) -> str:
        """The version part of ``framework`` ('' when none)."""
        return self.framework[len(self.framework_name) + 1:]


@dataclass(slots=True)
class Dataset:
    """Sources, models and runs of the validation file."""

    sources: dict[str, dict[str, Any]]
    models: dict[str, ModelShape]
    runs: list[Run] = field(default_factory=list)
    path: str = str(DATA)

    def run(self, run_id: str) -> Run:
        """The run with this id (``KeyError`` when none)."""
        for r in self.runs:
            if r.id == run_id:
                return r
        raise KeyError(run_id)


def _err(src: str, where: str, why: str) -> SimInputError:
    return SimInputError(f"{src}: {where}: {why}")


def _int(v: Any, src: str, where: str, minimum: int = 1) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise _err(src, where, f"must be an integer >= {minimum}, got {v!r}")
    return v


def _model(name: str, d: Any, src: str) -> ModelShape:
    where = f"models.{name}"
    if not isinstance(d, dict):
        raise _err(src, where, "must be a mapping")
    known = set(ModelShape.__dataclass_fields__) - {"name"}
    for k in d:
        if k not in known:
            raise _err(src, f"{where}.{k}", f"unknown field (known: {', '.join(sorted(known))})")
    for k in ("layers", "hidden", "heads", "vocab"):
        if k not in d:
            raise _err(src, f"{where}.{k}", "missing")
        _int(d[k], src, f"{where}.{k}")
    for k in ("kv_heads", "ffn_hidden", "head_dim", "moe_ffn_hidden", "top_k"):
        if d.get(k) is not None:
            _int(d[k], src, f"{where}.{k}")
    if d.get("mlp", "gelu") not in ("gelu", "swiglu"):
        raise _err(src, f"{where}.mlp", f"gelu or swiglu, got {d.get('mlp')!r}")
    if d.get("norm", "layernorm") not in ("layernorm", "rmsnorm"):
        raise _err(src, f"{where}.norm", f"layernorm or rmsnorm, got {d.get('norm')!r}")
    if d.get("position", "learned") not in ("learned", "rope", "none"):
        raise _err(src, f"{where}.position", f"learned, rope or none, got {d.get('position')!r}")
    return ModelShape(name, **d)


def _run(i: int, d: Any, ds: Dataset, src: str) -> Run:
    where = f"runs[{i}]"
    if not isinstance(d, dict):
        raise _err(src, where, "must be a mapping")
    known = set(Run.__dataclass_fields__)
    for k in d:
        if k not in known:
            raise _err(src, f"{where}.{k}", f"unknown field (known: {', '.join(sorted(known))})")
    for k in ("id", "source", "ref", "model", "gpu", "gpus", "precision", "framework", "tp", "pp", "dp", "seq",
              "mbs", "gbs", "recompute", "measured"):
        if k not in d:
            raise _err(src, f"{where}.{k}", "missing")
    rid = d["id"]
    where = f"runs[{i}] ({rid})"
    if d["source"] not in ds.sources:
        raise _err(src, f"{where}.source", f"unknown source {d['source']!r} (known: {', '.join(ds.sources)})")
    if d["model"] not in ds.models:
        raise _err(src, f"{where}.model", f"unknown model {d['model']!r}")
    if d["gpu"] not in PRESETS:
        raise _err(src, f"{where}.gpu", f"unknown GPU {d['gpu']!r} (known: {', '.join(PRESETS)})")
    for k in ("gpus", "tp", "pp", "dp", "seq", "mbs", "gbs", "cp", "ep", "vp"):
        if k in d:
            _int(d[k], src, f"{where}.{k}")
    if d["precision"] not in PRECISIONS:
        raise _err(src, f"{where}.precision", f"one of {', '.join(PRECISIONS)}, got {d['precision']!r}")
    if d["recompute"] not in RECOMPUTE:
        raise _err(src, f"{where}.recompute", f"one of {', '.join(RECOMPUTE)}, got {d['recompute']!r}")
    if d.get("sharding", "none") not in SHARDING:
        raise _err(src, f"{where}.sharding", f"one of {', '.join(SHARDING)}, got {d.get('sharding')!r}")
    if d.get("attention", "") not in ATTENTION_KERNELS:
        raise _err(src, f"{where}.attention", f"one of {', '.join(a for a in ATTENTION_KERNELS if a)}, "
                                              f"got {d.get('attention')!r}")
    if d.get("moe_dispatcher", "") not in ("",) + MOE_DISPATCHERS:
        raise _err(src, f"{where}.moe_dispatcher", f"one of {', '.join(MOE_DISPATCHERS)}, "
                                                   f"got {d.get('moe_dispatcher')!r}")
    if d.get("tp_overlap_config", "") not in ("",) + tuple(TP_OVERLAP_CONFIGS):
        raise _err(src, f"{where}.tp_overlap_config", f"unknown userbuffers config {d.get('tp_overlap_config')!r} "
                                                      f"(known: {', '.join(TP_OVERLAP_CONFIGS)})")
    for k in ("tp_comm_overlap", "moe_a2a_overlap"):
        if k in d and not isinstance(d[k], bool):
            raise _err(src, f"{where}.{k}", f"true or false, got {d[k]!r}")
    if d["tp"] * d["pp"] * d.get("cp", 1) * d["dp"] != d["gpus"]:
        raise _err(src, f"{where}.gpus", f"{d['gpus']} != tp x pp x cp x dp "
                                         f"({d['tp']} x {d['pp']} x {d.get('cp', 1)} x {d['dp']})")
    m = d["measured"]
    if not isinstance(m, dict) or sum(k in m for k in METRICS) != 1:
        raise _err(src, f"{where}.measured", f"exactly one of {', '.join(METRICS)}")
    metric = next(k for k in METRICS if k in m)
    if not isinstance(m[metric], (int, float)) or m[metric] <= 0:
        raise _err(src, f"{where}.measured.{metric}", f"must be a positive number, got {m[metric]!r}")
    if metric in ("tflops_per_gpu", "mfu") and m.get("convention") not in CONVENTIONS:
        raise _err(src, f"{where}.measured.convention", f"one of {', '.join(CONVENTIONS)} for a FLOP figure, "
                                                        f"got {m.get('convention')!r}")
    kw = dict(d)
    kw["model"] = ds.models[d["model"]]
    kw["assumed"] = tuple(d.get("assumed", ()))
    return Run(**kw)


def _read(p: Path) -> Any:
    """The YAML document (libyaml's loader when there is one: the file has 170+ rows)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(p.read_text(), Loader=loader)  # noqa: S506 - a safe loader
    except OSError as exc:
        raise SimInputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(p)
        raise SimInputError(f"{where}: not valid YAML: {' '.join(str(getattr(exc, 'problem', None) or exc).split())}") \
            from None


def load_dataset(path: Union[str, Path] = DATA) -> Dataset:
    """Read and validate the validation file (module docstring)."""
    src = str(path)
    data = _read(Path(path))
    if not isinstance(data, dict):
        raise SimInputError(f"{src}: the file is a mapping of sources, models, runs")
    for k in ("sources", "models", "runs"):
        if not isinstance(data.get(k), (dict if k != "runs" else list)):
            raise _err(src, k, "missing or of the wrong type")
    ds = Dataset(dict(data["sources"]), {n: _model(n, v, src) for n, v in data["models"].items()}, path=src)
    seen: set[str] = set()
    for i, d in enumerate(data["runs"]):
        r = _run(i, d, ds, src)
        if r.id in seen:
            raise _err(src, f"runs[{i}].id", f"duplicate id {r.id!r}")
        seen.add(r.id)
        ds.runs.append(r)
    return ds


def forward_flops_per_token(m: ModelShape, seq: int) -> float:
    """Matrix FLOPs of one token's forward with full attention and the LM head (the
    ``megatron`` convention; the experts a token visits for MoE)."""
    d, a, g = m.d, m.heads, m.kv
    attn = m.hidden * (a + 2 * g) * d + a * d * m.hidden
    mats = 3 if m.mlp == "swiglu" else 2
    mlp = (m.top_k * m.hidden * (m.moe_ffn_hidden or m.ffn) * mats + m.hidden * m.experts) if m.experts \
        else m.hidden * m.ffn * mats
    return m.layers * (2.0 * (attn + mlp) + 4.0 * seq * a * d) + 2.0 * m.hidden * m.vocab


def iteration_flops(r: Run, convention: str) -> float:
    """FLOPs of one iteration of ``r`` as its source counted them."""
    m, B, s = r.model, r.gbs, r.seq
    if convention == "narayanan21":
        h, l, V = m.hidden, m.layers, m.vocab
        return 96.0 * B * s * l * h * h * (1 + s / (6.0 * h) + V / (16.0 * l * h))
    return 3.0 * B * s * forward_flops_per_token(m, s)


def measured_iteration_s(r: Run, ds: Optional[Dataset] = None) -> float:  # noqa: ARG001
    """The measured iteration time of ``r`` in seconds (module docstring)."""
    m = r.measured
    tokens = float(r.gbs * r.seq)
    if "iteration_s" in m:
        return float(m["iteration_s"])
    if "tokens_per_s_per_gpu" in m:
        return tokens / (float(m["tokens_per_s_per_gpu"]) * r.gpus)
    if "tokens_per_s" in m:
        return tokens / float(m["tokens_per_s"])
    tflops = float(m["tflops_per_gpu"]) if "tflops_per_gpu" in m else \
        float(m["mfu"]) * PRESETS[r.gpu].peak_flops("fp8" if r.precision == "fp8" else "bf16") / 1e12
    return iteration_flops(r, m["convention"]) / (tflops * 1e12 * r.gpus)


__all__ = ["DATA", "Dataset", "ModelShape", "Run", "forward_flops_per_token", "iteration_flops", "load_dataset",
           "measured_iteration_s"]

"""The job file of ``python -m sim predict JOB.yaml``: schema, defaults, validation.

Sections (defaults shown; ``REQUIRED`` fields have none). An unknown or mistyped field, a
parallelism that cannot run (TP not dividing the heads, PP not dividing the layers, a
batch that does not split into micro-batches ...), an unknown GPU preset, a precision
the GPU lacks: all refused as ``SimInputError`` naming the file, the field and the
reason, like the scenario files (:mod:`sim.scenario`)::

    name: gpt3-175b
    model:
      layers: 96                 # REQUIRED
      hidden: 12288              # REQUIRED
      heads: 96                  # REQUIRED
      seq_length: 2048           # REQUIRED (tokens per sample)
      vocab: 51200               # REQUIRED
      ffn_hidden: null           # default 4 x hidden
      kv_heads: null             # default = heads (fewer: grouped-query attention)
      mlp: gelu                  # gelu | swiglu (three matrices, Llama)
      norm: layernorm            # layernorm | rmsnorm
      dropout: true              # dropout masks after attention and MLP (GPT); false: Llama
      tied_embeddings: true      # LM head shares the embedding (a copy on the last stage)
      experts: 0                 # MoE: experts per MoE layer (0: dense)
      top_k: 2
      moe_ffn_hidden: null       # default ffn_hidden
      moe_every: 1               # every n-th layer is MoE
    parallel:
      tp: 1                      # tensor parallel (NVLink inside a server)
      pp: 1                      # pipeline stages
      dp: 1                      # data parallel; GPUs = tp x pp x cp x dp
      cp: 1                      # context parallel (sequence split over cp GPUs, ring attention)
      ep: 1                      # expert parallel (carved out of dp)
      schedule: 1f1b             # 1f1b | interleaved
      virtual_stages: 1          # interleaved: model chunks per GPU (>= 2)
      zero: 0                    # ZeRO stage 0..3 (1: optimizer, 2: + grads, 3: + weights sharded over dp)
      sequence_parallel: false   # Megatron SP: norms/dropouts split over tp, AG/RS instead of AR
      overlap_grad_reduce: true  # DP gradient reduction overlapped with the last backward
      overlap_param_gather: true # ZeRO 1/2 parameter all-gather hidden in the next forward
      bucket_MiB: 160.0          # gradient bucket (Megatron: 40M fp32 grads)
    training:
      global_batch: 1536         # REQUIRED (samples per iteration)
      micro_batch: 1
      precision: bf16            # bf16 | fp16 | fp8 (fp8 GEMMs, bf16 elsewhere)
      recompute: none            # none | selective | full
      grad_bytes: 4              # fp32 main gradients (Megatron)
      optimizer_bytes: 12        # Adam: fp32 master weights, m, v
      reserved_GiB: 2.0          # CUDA context, NCCL buffers, allocator slack
    gpu:                         # REQUIRED section
      preset: H800               # A100-40GB | A100-80GB | H100-SXM | H800 | H20 | H200
      # or every figure (over the preset): tflops_bf16, tflops_fp16, tflops_fp8,
      # hbm_GBps, hbm_GiB, nvlink_GBps (per direction)
    fabric:                      # as in scenario files: topo.spec.FabricSpec fields
      spec_file: topo/specs/pod64k.yaml
      blocks: null               # default: the fewest blocks of the spec that hold the job
    network:
      policy: tccl_gor           # random_ecmp | tccl | tccl_gor | ideal
      order: tccl                # ring order of the planner: tccl | rank
      dual_channel: true         # TCCL's NVLink/RoCE split of intra-server collectives (tccl*)
      placement: contiguous      # the job's servers: contiguous | fragmented | random (sim.workloads)
      seed: 1                    # random placement and random ECMP ports
    kernels: {}                  # efficiency factors, sim.predict.kernels.KernelParams

Example::

    >>> j = job_from_dict({"model": {"layers": 4, "hidden": 256, "heads": 8, "seq_length": 128,
    ...                              "vocab": 1000},
    ...                    "parallel": {"tp": 2, "pp": 2, "dp": 2},
    ...                    "training": {"global_batch": 8}, "gpu": {"preset": "H800"}}, "j.yaml")
    >>> (j.gpus, j.microbatches, j.model.ffn, j.layers_per_stage)
    (8, 4, 1024, 2)
    >>> job_from_dict({"model": {"layers": 4, "hidden": 256, "heads": 8, "seq_length": 128,
    ...                          "vocab": 1000}, "parallel": {"tp": 3},
    ...                "training": {"global_batch": 8}, "gpu": {"preset": "H20"}}, "j.yaml")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: j.yaml: parallel.tp: 3 does not divide model.heads (8)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Union

from sim.policies import POLICIES
from sim.predict.fields import parse_section
from sim.predict.gpus import PRECISIONS, PRESETS, GpuSpec
from sim.predict.kernels import KernelParams
from sim.scenario import read_yaml
from sim.topology import SimInputError
from sim.workloads import PLACEMENTS


@dataclass(slots=True)
class ModelSpec:
    """The ``model`` section (module docstring)."""

    REQUIRED = ("layers", "hidden", "heads", "seq_length", "vocab")
    layers: int = 0
    hidden: int = 0
    heads: int = 0
    seq_length: int = 0
    vocab: int = 0
    ffn_hidden: Optional[int] = None
    kv_heads: Optional[int] = None
    mlp: str = "gelu"
    norm: str = "layernorm"
    dropout: bool = True
    tied_embeddings: bool = True
    experts: int = 0
    top_k: int = 2
    moe_ffn_hidden: Optional[int] = None
    moe_every: int = 1

    @property
    def ffn(self) -> int:
        """FFN width (default 4 x hidden)."""
        return self.ffn_hidden or 4 * self.hidden

    @property
    def kv(self) -> int:
        """KV heads (default: every head)."""
        return self.kv_heads or self.heads

    @property
    def head_dim(self) -> int:
        """hidden / heads."""
        return self.hidden // self.heads

    @property
    def moe_ffn(self) -> int:
        """FFN width of one expert."""
        return self.moe_ffn_hidden or self.ffn

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) has experts instead of a dense MLP."""
        return self.experts > 0 and (layer + 1) % self.moe_every == 0


@dataclass(slots=True)
class ParallelSpec:
    """The ``parallel`` section (module docstring)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    zero: int = 0
    sequence_parallel: bool = False
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    bucket_MiB: float = 160.0


@dataclass(slots=True)
class TrainingSpec:
    """The ``training`` section (module docstring)."""

    REQUIRED = ("global_batch",)
    global_batch: int = 0
    micro_batch: int = 1
    precision: str = "bf16"
    recompute: str = "none"
    grad_bytes: int = 4
    optimizer_bytes: int = 12
    reserved_GiB: float = 2.0


@dataclass(slots=True)
class GpuSection:
    """The ``gpu`` section: a preset and/or figures over it."""

    preset: Optional[str] = None
    tflops_bf16: Optional[float] = None
    tflops_fp16: Optional[float] = None
    tflops_fp8: Optional[float] = None
    hbm_GBps: Optional[float] = None
    hbm_GiB: Optional[float] = None
    nvlink_GBps: Optional[float] = None


@dataclass(slots=True)
class NetworkSpec:
    """The ``network`` section: the fabric policy and TCCL's options."""

    policy: str = "tccl_gor"
    order: str = "tccl"
    dual_channel: bool = True
    placement: str = "contiguous"
    seed: int = 1


@dataclass(slots=True)
class TrainingJob:
    """A validated job; the derived sizes below are what the predictor uses."""

    name: str
    model: ModelSpec
    parallel: ParallelSpec
    training: TrainingSpec
    gpu: GpuSpec
    network: NetworkSpec
    kernels: KernelParams
    fabric: dict[str, Any] = field(default_factory=dict)
    source: str = "job"

    @property
    def gpus(self) -> int:
        """tp x pp x cp x dp."""
        p = self.parallel
        return p.tp * p.pp * p.cp * p.dp

    @property
    def microbatches(self) -> int:
        """Micro-batches per iteration and pipeline: global / (micro x dp)."""
        return self.training.global_batch // (self.training.micro_batch * self.parallel.dp)

    @property
    def chunks(self) -> int:
        """Model chunks per GPU (virtual pipeline stages; 1 for 1F1B)."""
        return self.parallel.virtual_stages if self.parallel.schedule == "interleaved" else 1

    @property
    def layers_per_stage(self) -> int:
        """Transformer layers per pipeline stage (all chunks of one GPU)."""
        return self.model.layers // self.parallel.pp

    @property
    def tokens_per_iteration(self) -> int:
        """global_batch x seq_length."""
        return self.training.global_batch * self.model.seq_length


def _err(source: str, where: str, why: str) -> SimInputError:
    return SimInputError(f"{source}: {where}: {why}")


def _one_of(value: str, known: tuple[str, ...], source: str, where: str) -> None:
    if value not in known:
        raise _err(source, where, f"unknown value {value!r} (known: {', '.join(known)})")


def _gpu(sec: GpuSection, source: str) -> GpuSpec:
    over = {k: getattr(sec, k) for k in ("tflops_bf16", "tflops_fp16", "tflops_fp8", "hbm_GBps",
                                         "hbm_GiB", "nvlink_GBps") if getattr(sec, k) is not None}
    if sec.preset is not None:
        if sec.preset not in PRESETS:
            raise _err(source, "gpu.preset", f"unknown GPU {sec.preset!r} (known: {', '.join(PRESETS)})")
        base = PRESETS[sec.preset]
    else:
        for k in ("tflops_bf16", "hbm_GBps", "hbm_GiB", "nvlink_GBps"):
            if k not in over:
                raise _err(source, f"gpu.{k}", f"missing (no gpu.preset; known presets: {', '.join(PRESETS)})")
        base = GpuSpec("custom", over["tflops_bf16"], over["tflops_bf16"], None, 1.0, 1.0, 1.0, "custom")
    for k, v in over.items():
        if v <= 0:
            raise _err(source, f"gpu.{k}", f"must be > 0, got {v}")
    return replace(base, **over)


def _positive(obj: Any, names: tuple[str, ...], section: str, source: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if v is not None and v < 1:
            raise _err(source, f"{section}.{n}", f"must be at least 1, got {v}")


def _check_model(m: ModelSpec, s: str) -> None:
    _positive(m, ("layers", "hidden", "heads", "seq_length", "vocab", "ffn_hidden", "kv_heads",
                  "top_k", "moe_ffn_hidden", "moe_every"), "model", s)
    if m.hidden % m.heads:
        raise _err(s, "model.heads", f"{m.heads} does not divide model.hidden ({m.hidden})")
    if m.heads % m.kv:
        raise _err(s, "model.kv_heads", f"{m.kv} does not divide model.heads ({m.heads})")
    _one_of(m.mlp, ("gelu", "swiglu"), s, "model.mlp")
    _one_of(m.norm, ("layernorm", "rmsnorm"), s, "model.norm")
    if m.experts < 0:
        raise _err(s, "model.experts", f"must be >= 0, got {m.experts}")
    if m.experts and m.top_k > m.experts:
        raise _err(s, "model.top_k", f"{m.top_k} is more than model.experts ({m.experts})")


def _check_parallel(j: TrainingJob) -> None:
    m, p, t, s = j.model, j.parallel, j.training, j.source
    _positive(p, ("tp", "pp", "dp", "cp", "ep", "virtual_stages"), "parallel", s)
    for what, n in (("model.heads", m.heads), ("model.kv_heads", m.kv), ("model.ffn_hidden", m.ffn),
                    ("model.vocab", m.vocab)):
        if n % p.tp:
            raise _err(s, "parallel.tp", f"{p.tp} does not divide {what} ({n})")
    _one_of(p.schedule, ("1f1b", "interleaved"), s, "parallel.schedule")
    if p.schedule == "1f1b" and p.virtual_stages != 1:
        raise _err(s, "parallel.virtual_stages", "only the interleaved schedule has virtual stages")
    if p.schedule == "interleaved" and (p.pp < 2 or p.virtual_stages < 2):
        raise _err(s, "parallel.schedule", "interleaved needs pp >= 2 and virtual_stages >= 2")
    if m.layers % (p.pp * j.chunks):
        what = f"pp x virtual_stages ({p.pp} x {j.chunks})" if j.chunks > 1 else str(p.pp)
        raise _err(s, "parallel.pp", f"{what} does not divide model.layers ({m.layers})")
    if not 0 <= p.zero <= 3:
        raise _err(s, "parallel.zero", f"ZeRO stage must be 0..3, got {p.zero}")
    if p.ep > 1 and not m.experts:
        raise _err(s, "parallel.ep", f"{p.ep} experts groups for a dense model (model.experts: 0)")
    if m.experts and m.experts % p.ep:
        raise _err(s, "parallel.ep", f"{p.ep} does not divide model.experts ({m.experts})")
    if p.dp % p.ep:
        raise _err(s, "parallel.ep", f"{p.ep} does not divide parallel.dp ({p.dp}): EP is carved out of DP")
    if m.seq_length % (2 * p.cp) and p.cp > 1:
        raise _err(s, "parallel.cp", f"model.seq_length ({m.seq_length}) is not a multiple of 2 x cp")
    if p.sequence_parallel and (m.seq_length // p.cp) % p.tp:
        raise _err(s, "parallel.sequence_parallel", f"the sequence per GPU is not a multiple of tp ({p.tp})")
    if p.bucket_MiB <= 0:
        raise _err(s, "parallel.bucket_MiB", f"must be > 0, got {p.bucket_MiB}")
    _positive(t, ("global_batch", "micro_batch", "grad_bytes"), "training", s)
    for name in ("optimizer_bytes", "reserved_GiB"):
        if getattr(t, name) < 0:
            raise _err(s, f"training.{name}", f"must be >= 0, got {getattr(t, name)}")
    if t.global_batch % (t.micro_batch * p.dp):
        raise _err(s, "training.global_batch", f"{t.global_batch} is not a multiple of micro_batch x dp "
                                               f"({t.micro_batch} x {p.dp} = {t.micro_batch * p.dp})")
    if p.schedule == "interleaved" and j.microbatches % p.pp:
        raise _err(s, "training.global_batch", f"interleaved: {j.microbatches} micro-batches per pipeline "
                                               f"is not a multiple of pp ({p.pp})")
    _one_of(t.precision, PRECISIONS, s, "training.precision")
    _one_of(t.recompute, ("none", "selective", "full"), s, "training.recompute")
    if j.gpu.peak_flops(t.precision) <= 0:
        raise _err(s, "training.precision", f"{t.precision}: {j.gpu.name} has no {t.precision} tensor cores")
    _one_of(j.network.policy, POLICIES, s, "network.policy")
    _one_of(j.network.order, ("tccl", "rank"), s, "network.order")
    _one_of(j.network.placement, PLACEMENTS, s, "network.placement")


TOP_LEVEL = ("fabric", "gpu", "kernels", "model", "name", "network", "parallel", "training")


def job_from_dict(data: Any, source: str = "job") -> TrainingJob:
    """Validate a parsed job (module docstring); ``SimInputError`` names the field."""
    if not isinstance(data, dict):
        raise SimInputError(f"{source}: a job is a mapping of sections ({', '.join(TOP_LEVEL)})")
    for key in data:
        if key not in TOP_LEVEL:
            raise _err(source, key, f"unknown field (known: {', '.join(TOP_LEVEL)})")
    for key in ("model", "training", "gpu"):
        if key not in data:
            raise _err(source, key, "missing section")
    fabric = data.get("fabric") or {}
    if not isinstance(fabric, dict):
        raise _err(source, "fabric", "must be a mapping")
    model = parse_section(data.get("model"), "model", ModelSpec, source)
    _check_model(model, source)
    gpu = _gpu(parse_section(data.get("gpu"), "gpu", GpuSection, source), source)
    kernels = parse_section(data.get("kernels"), "kernels", KernelParams, source)
    kernels.validate(source)
    j = TrainingJob(str(data.get("name", Path(source).stem)), model,
                    parse_section(data.get("parallel"), "parallel", ParallelSpec, source),
                    parse_section(data.get("training"), "training", TrainingSpec, source),
                    gpu, parse_section(data.get("network"), "network", NetworkSpec, source),
                    kernels, dict(fabric), source)
    _check_parallel(j)
    return j


def load_job(path: Union[str, Path]) -> TrainingJob:
    """Read and validate a job YAML file."""
    return job_from_dict(read_yaml(path), str(path))


__all__ = ["GpuSection", "ModelSpec", "NetworkSpec", "ParallelSpec", "TrainingJob", "TrainingSpec",
           "job_from_dict", "load_job"]

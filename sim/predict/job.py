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
      head_dim: null             # default hidden / heads (Qwen3: 128 with hidden 2048 and 32 heads)
      mlp: gelu                  # gelu | swiglu (three matrices, Llama)
      norm: layernorm            # layernorm | rmsnorm
      position: learned          # learned | rope (rotary on Q and K: Llama, Qwen, Nemotron) | none
      dropout: true              # dropout masks after attention and MLP (GPT); false: Llama
      tied_embeddings: true      # LM head shares the embedding (a copy on the last stage)
      experts: 0                 # MoE: experts per MoE layer (0: dense)
      top_k: 2
      moe_ffn_hidden: null       # default ffn_hidden
      moe_every: 1               # every n-th layer is MoE
      moe_imbalance: 1.0         # tokens of the busiest expert / the mean (1.0: force-balanced routing)
      moe_capacity_factor: null  # token dropping: an expert takes at most this x the mean (null: dropless)
    parallel:
      tp: 1                      # tensor parallel (NVLink inside a server)
      pp: 1                      # pipeline stages
      dp: 1                      # data parallel; GPUs = tp x pp x cp x dp
      cp: 1                      # context parallel (sequence split over cp GPUs, ring attention)
      ep: 1                      # expert parallel (carved out of dp)
      schedule: 1f1b             # 1f1b | interleaved | zb-h1 (zero bubble, B and W split) | custom
      schedule_file: null        # custom: a YAML file of each stage's order (sim/predict/schedule.py)
      virtual_stages: 1          # interleaved: model chunks per GPU (>= 2)
      first_stage_layers: null   # uneven pipeline: layers of the first / last (virtual) stage; by default
      last_stage_layers: null    #   even, or one layer less each for the embedding and loss when that divides
      zero: 0                    # ZeRO stage 0..3 (1: optimizer, 2: + grads, 3: + weights sharded over dp)
      sequence_parallel: false   # Megatron SP: norms/dropouts split over tp, AG/RS instead of AR
      cp_comm: null              # context parallel: ring (KV passed round, each step under that step's
                                 # attention: Megatron/TE) | allgather (KV gathered first, exposed: Llama 3,
                                 # torch's default rotate method) | null: the framework's
      overlap_grad_reduce: null  # DP gradient reduction overlapped with the last backward (null: the framework's)
      overlap_param_gather: null # ZeRO 1/2 parameter all-gather hidden in the next forward (null: the framework's)
      bucket_MiB: null           # gradient bucket (null: the framework's; Megatron: 40M fp32 grads)
    training:
      global_batch: 1536         # REQUIRED (samples per iteration)
      micro_batch: 1
      precision: bf16            # bf16 | fp16 | fp8 (fp8 GEMMs, bf16 elsewhere)
      recompute: none            # none | selective | full
      grad_bytes: null           # main gradients' bytes (null: the framework's grad_reduce_dtype: fp32 4, bf16 2)
      optimizer_bytes: 12        # Adam: fp32 master weights, m, v
      reserved_GiB: 2.0          # CUDA context, NCCL buffers, allocator slack
      attention_mask: causal     # causal | full | document (packed documents, attention inside each)
      document_tokens: null      # document: mean document length in tokens (required then)
    gpu:                         # REQUIRED section
      preset: H800               # A100-40GB | A100-80GB | H100-SXM | H800 | H20 | H200 | H100-96GB-500W,
                                 # or the vendor's name: H100, H100 SXM5, A100 80GB ... (gpus.resolve_gpu)
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
      nvls: true                 # NCCL's NVLink SHARP all-reduce inside a Hopper server (NCCL_NVLS_ENABLE, NCCL >= 2.17)
    kernels: {}                  # efficiency factors, sim.predict.kernels.KernelParams
    energy: {}                   # pue, nic_W, switch_W, server_W, gpu_idle_W, gpu_busy_W (sim.predict.energy)
    framework:                   # the software stack, sim.predict.framework (profiles and fields)
      name: megatron-core        # megatron-lm | megatron-core | nemo | megatron-bridge | megatron-deepspeed |
                                 # deepspeed | pytorch-fsdp | composer-fsdp | torchtitan | llama3-meta
      version: ""                # reported; any profile field may follow (tp_comm_overlap: 0.5, ...)

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
from sim.predict.energy import EnergySpec
from sim.predict.fields import parse_section
from sim.predict.framework import Framework, resolve_framework
from sim.predict.gpus import PRECISIONS, PRESETS, GpuSpec, resolve_gpu
from sim.predict.kernels import KernelParams
from sim.predict.schedule import parse_orders, validate_orders
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
    head_dim: Optional[int] = None
    mlp: str = "gelu"
    norm: str = "layernorm"
    position: str = "learned"
    dropout: bool = True
    tied_embeddings: bool = True
    experts: int = 0
    top_k: int = 2
    moe_ffn_hidden: Optional[int] = None
    moe_every: int = 1
    moe_imbalance: float = 1.0
    moe_capacity_factor: Optional[float] = None

    @property
    def ffn(self) -> int:
        """FFN width (default 4 x hidden)."""
        return self.ffn_hidden or 4 * self.hidden

    @property
    def kv(self) -> int:
        """KV heads (default: every head)."""
        return self.kv_heads or self.heads

    @property
    def d_head(self) -> int:
        """``head_dim``, default hidden / heads."""
        return self.head_dim or self.hidden // self.heads

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
    schedule_file: Optional[str] = None
    virtual_stages: int = 1
    first_stage_layers: Optional[int] = None
    last_stage_layers: Optional[int] = None
    zero: int = 0
    sequence_parallel: bool = False
    cp_comm: Optional[str] = None
    overlap_grad_reduce: Optional[bool] = None
    overlap_param_gather: Optional[bool] = None
    bucket_MiB: Optional[float] = None


@dataclass(slots=True)
class TrainingSpec:
    """The ``training`` section (module docstring)."""

    REQUIRED = ("global_batch",)
    global_batch: int = 0
    micro_batch: int = 1
    precision: str = "bf16"
    recompute: str = "none"
    grad_bytes: Optional[int] = None
    optimizer_bytes: int = 12
    reserved_GiB: float = 2.0
    attention_mask: str = "causal"
    document_tokens: Optional[int] = None


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
    nvls: bool = True


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
    framework: Framework = field(default_factory=Framework)
    orders: Optional[list] = None
    energy: EnergySpec = field(default_factory=EnergySpec)

    @property
    def cp_comm(self) -> str:
        """``parallel.cp_comm``, else the framework's."""
        return self.parallel.cp_comm or self.framework.cp_comm

    @property
    def expert_tp(self) -> int:
        """Tensor parallelism of the experts: the job's tp, or 1 when EP spans TP x DP
        (Megatron-Core's expert_tensor_parallel_size 1: ``ep`` > ``dp``)."""
        return 1 if self.parallel.ep > self.parallel.dp else self.parallel.tp

    @property
    def expert_dp(self) -> int:
        """Replicas of each expert over DP: dp / ep, or dp·tp / ep when EP spans TP."""
        p = self.parallel
        return max(1, p.dp * (p.tp // self.expert_tp) // p.ep)

    @property
    def grad_bytes(self) -> float:
        """Bytes of a stored gradient: ``training.grad_bytes``, else the framework's."""
        g = self.training.grad_bytes
        return float(g) if g is not None else self.framework.grad_wire_bytes

    @property
    def weight_bytes(self) -> float:
        """Bytes of a stored weight: 1 for FP8 jobs of a framework with ``fp8_param_gather``, else 2."""
        return 1.0 if self.training.precision == "fp8" and self.framework.fp8_param_gather else 2.0

    @property
    def overlap_grad_reduce(self) -> bool:
        """``parallel.overlap_grad_reduce``, else the framework's."""
        v = self.parallel.overlap_grad_reduce
        return self.framework.overlap_grad_reduce if v is None else v

    @property
    def overlap_param_gather(self) -> bool:
        """``parallel.overlap_param_gather``, else the framework's."""
        v = self.parallel.overlap_param_gather
        return self.framework.overlap_param_gather if v is None else v

    @property
    def bucket_MiB(self) -> float:
        """``parallel.bucket_MiB``, else the framework's."""
        v = self.parallel.bucket_MiB
        return self.framework.bucket_MiB if v is None else v

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
        if self.parallel.schedule == "custom" and self.orders:
            return 1 + max((c for o in self.orders for _, c, _ in o), default=0)
        return self.parallel.virtual_stages if self.parallel.schedule == "interleaved" else 1

    @property
    def layers_per_stage(self) -> int:
        """Transformer layers per pipeline stage (all chunks of one GPU; the most loaded)."""
        return -(-self.model.layers // self.parallel.pp)

    @property
    def tokens_per_iteration(self) -> int:
        """global_batch x seq_length."""
        return self.training.global_batch * self.model.seq_length


def _err(source: str, where: str, why: str) -> SimInputError:
    return SimInputError(f"{source}: {where}: {why}")


#: position encodings (``model.position``)
POSITIONS = ("learned", "rope", "none")


def _one_of(value: str, known: tuple[str, ...], source: str, where: str) -> None:
    if value not in known:
        raise _err(source, where, f"unknown value {value!r} (known: {', '.join(known)})")


def _gpu(sec: GpuSection, source: str) -> GpuSpec:
    over = {k: getattr(sec, k) for k in ("tflops_bf16", "tflops_fp16", "tflops_fp8", "hbm_GBps",
                                         "hbm_GiB", "nvlink_GBps") if getattr(sec, k) is not None}
    if sec.preset is not None:
        base = resolve_gpu(str(sec.preset), "gpu.preset", source)
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
                  "top_k", "moe_ffn_hidden", "moe_every", "head_dim"), "model", s)
    if m.hidden % m.heads and not m.head_dim:
        raise _err(s, "model.heads", f"{m.heads} does not divide model.hidden ({m.hidden}); or give model.head_dim")
    if m.heads % m.kv:
        raise _err(s, "model.kv_heads", f"{m.kv} does not divide model.heads ({m.heads})")
    _one_of(m.mlp, ("gelu", "swiglu"), s, "model.mlp")
    _one_of(m.norm, ("layernorm", "rmsnorm"), s, "model.norm")
    _one_of(m.position, POSITIONS, s, "model.position")
    if m.experts < 0:
        raise _err(s, "model.experts", f"must be >= 0, got {m.experts}")
    if m.moe_imbalance < 1.0:
        raise _err(s, "model.moe_imbalance", f"the busiest expert's load over the mean is >= 1, got {m.moe_imbalance}")
    if m.moe_capacity_factor is not None and m.moe_capacity_factor <= 0:
        raise _err(s, "model.moe_capacity_factor", f"must be > 0, got {m.moe_capacity_factor}")
    if m.experts and m.top_k > m.experts:
        raise _err(s, "model.top_k", f"{m.top_k} is more than model.experts ({m.experts})")


def _check_parallel(j: TrainingJob) -> None:
    m, p, t, s = j.model, j.parallel, j.training, j.source
    _positive(p, ("tp", "pp", "dp", "cp", "ep", "virtual_stages"), "parallel", s)
    for what, n in (("model.heads", m.heads), ("model.kv_heads", m.kv), ("model.ffn_hidden", m.ffn),
                    ("model.vocab", m.vocab)):
        if n % p.tp:
            raise _err(s, "parallel.tp", f"{p.tp} does not divide {what} ({n})")
    _one_of(p.schedule, ("1f1b", "interleaved", "zb-h1", "custom"), s, "parallel.schedule")
    if p.schedule == "custom" and not p.schedule_file:
        raise _err(s, "parallel.schedule_file", "missing (schedule: custom needs the stages' orders)")
    if p.schedule != "custom" and p.schedule_file:
        raise _err(s, "parallel.schedule_file", f"only for schedule: custom (schedule is {p.schedule})")
    if p.schedule in ("1f1b", "zb-h1") and p.virtual_stages != 1:
        raise _err(s, "parallel.virtual_stages", "only the interleaved schedule has virtual stages")
    if p.schedule == "interleaved" and (p.pp < 2 or p.virtual_stages < 2):
        raise _err(s, "parallel.schedule", "interleaved needs pp >= 2 and virtual_stages >= 2")
    n = p.pp * j.chunks
    what = f"pp x virtual_stages ({p.pp} x {j.chunks})" if j.chunks > 1 else str(p.pp)
    for name in ("first_stage_layers", "last_stage_layers"):
        v = getattr(p, name)
        if v is not None and not 0 <= v <= m.layers:
            raise _err(s, f"parallel.{name}", f"must be in 0..model.layers ({m.layers}), got {v}")
    fixed = sum(x for x in (p.first_stage_layers, p.last_stage_layers) if x is not None)
    free = n - sum(x is not None for x in (p.first_stage_layers, p.last_stage_layers))
    if fixed > m.layers or (free == 0 and fixed != m.layers):
        raise _err(s, "parallel.first_stage_layers", f"the first and last stages' layers ({fixed}) do not "
                                                     f"add up with model.layers ({m.layers})")
    auto = p.first_stage_layers is None and p.last_stage_layers is None
    if auto and m.layers % n and ((m.layers + 2) % n or n < 2):
        raise _err(s, "parallel.pp", f"{what} does not divide model.layers ({m.layers}), nor model.layers + 2 "
                                     f"(a layer less on the first and last stage); set parallel.first_stage_layers "
                                     f"/ last_stage_layers")
    if m.layers < n:
        raise _err(s, "parallel.pp", f"{what} virtual stages for {m.layers} layers")
    if not 0 <= p.zero <= 3:
        raise _err(s, "parallel.zero", f"ZeRO stage must be 0..3, got {p.zero}")
    if p.ep > 1 and not m.experts:
        raise _err(s, "parallel.ep", f"{p.ep} experts groups for a dense model (model.experts: 0)")
    if m.experts and m.experts % p.ep:
        raise _err(s, "parallel.ep", f"{p.ep} does not divide model.experts ({m.experts})")
    if p.dp % p.ep and (p.ep % p.tp or p.dp % (p.ep // p.tp)):
        raise _err(s, "parallel.ep", f"{p.ep} does not divide parallel.dp ({p.dp}) nor is it tp x a divisor of dp "
                                     f"(tp {p.tp}): EP is carved out of DP, or of TP x DP with unsplit experts")
    if m.seq_length % (2 * p.cp) and p.cp > 1:
        raise _err(s, "parallel.cp", f"model.seq_length ({m.seq_length}) is not a multiple of 2 x cp")
    if p.sequence_parallel and (m.seq_length // p.cp) % p.tp:
        raise _err(s, "parallel.sequence_parallel", f"the sequence per GPU is not a multiple of tp ({p.tp})")
    if p.bucket_MiB is not None and p.bucket_MiB <= 0:
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
    _one_of(t.attention_mask, ("causal", "full", "document"), s, "training.attention_mask")
    if p.cp_comm is not None:
        _one_of(p.cp_comm, ("ring", "allgather"), s, "parallel.cp_comm")
    if p.cp > 1 and j.framework.cp_attention == "per_step":
        # torch's ring attention: "Load balancing requires `is_causal=True`" and "CP only
        # supports flash attention and memory efficient attention" (_attention.py)
        if t.attention_mask != "causal":
            raise _err(s, "framework.cp_attention", f"per_step (torch's load-balanced ring attention) needs "
                                                    f"training.attention_mask causal, got {t.attention_mask}")
        if j.framework.attention_impl(j.gpu.chip) == "unfused":
            raise _err(s, "framework.cp_attention", "per_step runs flash attention (SDPA); framework.attention "
                                                    "is unfused")
    if j.framework.moe_a2a_overlap:
        # Megatron-Core's checks (TransformerConfig.__post_init__, 0d8e0714cd): EP > 1,
        # virtual stages when PP > 1, no full recomputation; and its own schedules only
        if not m.experts or p.ep < 2:
            raise _err(s, "framework.moe_a2a_overlap", "overlaps the expert-parallel all-to-all: needs "
                                                       "model.experts and parallel.ep >= 2")
        if p.schedule not in ("1f1b", "interleaved") or (p.pp > 1 and p.schedule != "interleaved"):
            raise _err(s, "framework.moe_a2a_overlap", f"with pp > 1 Megatron-Core needs virtual stages "
                                                       f"(parallel.schedule: interleaved), got {p.schedule}")
        if t.recompute == "full":
            raise _err(s, "framework.moe_a2a_overlap", "Megatron-Core refuses full recomputation with it")
    if t.attention_mask == "document":
        if t.document_tokens is None:
            raise _err(s, "training.document_tokens", "missing (attention_mask: document needs the mean document length)")
        if not 1 <= t.document_tokens <= m.seq_length:
            raise _err(s, "training.document_tokens", f"must be in 1..model.seq_length ({m.seq_length}), "
                                                      f"got {t.document_tokens}")
    if j.gpu.peak_flops(t.precision) <= 0:
        raise _err(s, "training.precision", f"{t.precision}: {j.gpu.name} has no {t.precision} tensor cores")
    _one_of(j.network.policy, POLICIES, s, "network.policy")
    _one_of(j.network.order, ("tccl", "rank"), s, "network.order")
    _one_of(j.network.placement, PLACEMENTS, s, "network.placement")


TOP_LEVEL = ("energy", "fabric", "framework", "gpu", "kernels", "model", "name", "network", "parallel", "training")


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
    par = parse_section(data.get("parallel"), "parallel", ParallelSpec, source)
    j = TrainingJob(str(data.get("name", Path(source).stem)), model,
                    par, parse_section(data.get("training"), "training", TrainingSpec, source),
                    gpu, parse_section(data.get("network"), "network", NetworkSpec, source),
                    kernels, dict(fabric), source, resolve_framework(data.get("framework"), source))
    if j.framework.grad_reduce_dtype == "auto":      # Megatron's rule: fp16 gradients stay fp16, bf16 → fp32
        j.framework = replace(j.framework, grad_reduce_dtype="fp16" if j.training.precision == "fp16" else "fp32")
    if par.schedule == "custom" and par.schedule_file:
        j.orders = _custom_orders(par.schedule_file, source)
    j.energy = parse_section(data.get("energy"), "energy", EnergySpec, source)
    j.energy.validate(source)
    _check_parallel(j)
    if j.orders is not None:
        try:
            validate_orders(j.orders, par.pp, j.microbatches, j.chunks)
        except ValueError as exc:
            raise _err(source, "parallel.schedule_file", f"{par.schedule_file}: {exc}") from None
    return j


def _custom_orders(path: str, source: str) -> list:
    """The stages' orders of a custom schedule file (``stages: [[F0, B0, ...], ...]``)."""
    p = Path(path)
    if not p.is_absolute() and source not in ("job",) and Path(source).parent.exists():
        cand = Path(source).parent / p
        p = cand if cand.exists() else p
    data = read_yaml(p)
    if not isinstance(data, dict) or not isinstance(data.get("stages"), list) or \
            not all(isinstance(x, list) for x in data["stages"]):
        raise _err(source, "parallel.schedule_file", f"{path}: a mapping with stages: a list of each stage's passes")
    try:
        return parse_orders(data["stages"])
    except ValueError as exc:
        raise _err(source, "parallel.schedule_file", f"{path}: {exc}") from None


def load_job(path: Union[str, Path]) -> TrainingJob:
    """Read and validate a job YAML file."""
    return job_from_dict(read_yaml(path), str(path))


__all__ = ["GpuSection", "ModelSpec", "NetworkSpec", "ParallelSpec", "TrainingJob", "TrainingSpec",
           "job_from_dict", "load_job"]

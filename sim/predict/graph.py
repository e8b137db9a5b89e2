"""The operator graph of one micro-batch on one GPU: the kernels of a transformer layer's
forward and backward (dense or MoE), the embedding, the LM head with its loss, and the
optimizer step, with the collectives between them, per Megatron-LM's tensor, sequence,
context and expert parallelism.

Notation: micro-batch b, sequence s (s/cp per GPU), tokens T = b·s/cp, hidden h, heads a,
KV heads g, head dim d, FFN f (2f inputs for SwiGLU), tensor parallel t, e bytes per
element (2). Norms, dropouts and residual adds work on T tokens, or T/t with sequence
parallelism. Per layer and micro-batch:

* forward: norm, [SP all-gather], QKV GEMM (T × (a+2g)d/t × h), flash attention
  (4·b·(s/cp)·s·(a/t)·d FLOPs × the mask's share: 1/2 causal, 1 full, l/2s for packed
  documents of l tokens), [CP: K,V passed round the ring under the attention, or gathered
  first and exposed (``parallel.cp_comm: allgather``, Llama 3); torch's ring attention
  (``framework.cp_attention: per_step``, torchtitan) instead runs one SDPA per CP step with
  fp32 merges: :mod:`sim.predict.cp_ring`], output GEMM, TP all-reduce (or SP reduce-scatter) of T·h·e bytes, residual
  add (+ dropout mask), norm, [SP all-gather], FC1, activation, FC2, TP all-reduce / RS,
  residual add. MoE layers: router GEMM, EP all-to-all dispatch of T·k·h·e bytes, the
  local experts' FC1/activation/FC2 on T·k tokens (widths / t) as grouped GEMMs, EP
  all-to-all combine;
* backward: the mirror, every GEMM twice (data and weight gradient), attention 2.5× its
  forward FLOPs, element-wise kernels 2× their bytes; the TP all-reduces move to the
  inputs of QKV and FC1 (SP: reduce-scatter of the input gradient plus the all-gather of
  the saved input for the weight gradient);
* full recomputation runs the layer's forward again before its backward; selective
  recomputes the norms and the activation function.

Example::

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 2048,
    ...                              "vocab": 32000}, "parallel": {"tp": 2},
    ...                    "training": {"global_batch": 4}, "gpu": {"preset": "H800"}}, "j.yaml")
    >>> f = layer_forward(j, moe=False)
    >>> [k.name for k in f if k.kind == "comm"]
    ['tp.allreduce.attn', 'tp.allreduce.mlp']
    >>> gemm_fwd = sum(k.flops for k in f if k.kind == "gemm")
    >>> gemm_fwd == 24 * 2048 * 1024 ** 2 / 2           # Megatron's 24·b·s·h² per layer, / t
    True
    >>> sum(k.flops for k in layer_backward(j, moe=False) if k.kind == "gemm") == 2 * gemm_fwd
    True
"""
from __future__ import annotations

from dataclasses import replace

from sim.predict import cp_ring
from sim.predict.job import TrainingJob
from sim.predict.kernels import Kernel

E = 2.0                      # bytes per bf16/fp16 element
OPTIMIZER_BYTES_PER_PARAM = 34.0   # fused Adam (sim.predict.optimizer): fp32 master, m, v read+written, fp32 grad read twice, bf16 weight written


def _gemm(name: str, m: int, n: int, k: int, fp8: bool, phase: str = "fwd") -> Kernel:
    in_b = 1.0 if fp8 else E
    return Kernel(name, "gemm", flops=2.0 * m * n * k, bytes=(m * k + k * n) * in_b + m * n * E,
                  dims=(m, n, k), phase=phase, fp8=fp8)


def _mem(name: str, nbytes: float, phase: str = "fwd") -> Kernel:
    return Kernel(name, "memory", bytes=nbytes, phase=phase)


def _comm(name: str, collective: str, group: str, size: float, hidden_by: str = "") -> Kernel:
    return Kernel(name, "comm", collective=collective, group=group, size_bytes=size, hidden_by=hidden_by)


class _Dims:
    """The sizes of one micro-batch on one GPU."""

    def __init__(self, j: TrainingJob) -> None:
        m, p = j.model, j.parallel
        self.t, self.b, self.h = p.tp, j.training.micro_batch, m.hidden
        self.s_local = m.seq_length // p.cp
        self.T = self.b * self.s_local
        self.sp = p.sequence_parallel and p.tp > 1
        self.Tn = self.T // p.tp if self.sp else self.T
        self.qkv = (m.heads + 2 * m.kv) * m.d_head // p.tp
        self.a_t = m.heads // p.tp
        self.fp8 = j.training.precision == "fp8"
        #: bytes an element of a sequence-parallel all-gather (FP8 when the stack gathers FP8)
        self.tp_gather_e = 1.0 if self.fp8 and j.framework.fp8_tp_gather else E
        self.swiglu = m.mlp == "swiglu"
        self.cp = p.cp
        self.ep = p.ep
        self.impl = j.framework.attention_impl(j.gpu.chip)


def _tp_in(d: _Dims, name: str, fp8: bool = True) -> list[Kernel]:
    e = d.tp_gather_e if fp8 else E          # the LM head's input stays BF16
    return [_comm(f"tp.allgather.{name}", "allgather", "tp", d.T * d.h * e)] if d.sp else []


def _tp_out(d: _Dims, name: str) -> list[Kernel]:
    if d.t == 1:
        return []
    kind = "reducescatter" if d.sp else "allreduce"
    return [_comm(f"tp.{kind}.{name}", kind, "tp", d.T * d.h * E)]


def _residual(j: TrainingJob, d: _Dims, name: str) -> Kernel:
    return _mem(name, d.Tn * d.h * (3 * E + (1.0 if j.model.dropout else 0.0)))


def _mlp_forward(j: TrainingJob, d: _Dims, moe: bool) -> list[Kernel]:
    m = j.model
    width = m.moe_ffn if moe else m.ffn
    f_t = width // (j.expert_tp if moe else d.t)
    n1 = 2 * f_t if d.swiglu else f_t
    act_bytes = (3 if d.swiglu else 2) * f_t * E
    if not moe:
        return [_gemm("fc1", d.T, n1, d.h, d.fp8), _mem("activation", d.T * act_bytes),
                _gemm("fc2", d.T, d.h, f_t, d.fp8)]
    local = m.experts // d.ep
    load = moe_load_factor(j)                       # the busiest expert's tokens over the mean
    tokens = (d.Tn if j.expert_tp == 1 and d.t > 1 else d.T) * m.top_k * load
    per_expert = max(1, int(tokens // local))
    a2a = d.Tn * m.top_k * d.h * E * load

    def grouped(name: str, n: int, k: int) -> Kernel:
        g = _gemm(name, per_expert, n, k, d.fp8)
        return replace(g, flops=g.flops * local, bytes=g.bytes * local, groups=local)

    dispatch, combine = moe_permutations(j, d.ep, local, a2a)
    return [_gemm("router", d.Tn, m.experts, d.h, False), _mem("router.topk", d.Tn * m.experts * 4.0 * 3),
            *dispatch, grouped("experts.fc1", n1, d.h), _mem("experts.activation", tokens * act_bytes),
            grouped("experts.fc2", d.h, f_t), *combine]


def moe_permutations(j: TrainingJob, ep: int, local: int, a2a: float) -> tuple[list[Kernel], list[Kernel]]:
    """The token movement of an MoE layer before its experts (dispatch) and after them
    (combine), as Megatron-Core's token dispatchers run it; each local copy reads and writes
    the routed tokens once (``2·a2a`` bytes, ``a2a`` = T·k·h·e, the bytes each all-to-all
    moves):

    * EP 1: ``permute`` (tokens grouped by expert) and ``unpermute`` (weighted back), no
      all-to-all;
    * ``alltoall`` dispatcher (``MoEAlltoAllTokenDispatcher``): permutation 1 (``permute``
      by destination rank), the all-to-all, then permutation 2 (``sort_chunks_by_idxs``:
      the chunks from every rank regrouped by local expert, when a GPU holds more than one
      expert); the combine undoes both around its all-to-all;
    * ``deepep`` / ``deepep_ll`` (``MoEFlexTokenDispatcher``, ``_DeepepManager``): the
      dispatch kernel permutes while it sends, then ``get_permuted_hidden_states_by_experts``
      runs ``permute`` on the received tokens; ``get_restored_hidden_states_by_experts``
      runs ``unpermute`` before the combine kernel.

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 2048,
    ...                              "vocab": 32000, "experts": 8, "top_k": 2, "moe_ffn_hidden": 512},
    ...                    "parallel": {"ep": 4, "dp": 4}, "training": {"global_batch": 8},
    ...                    "gpu": {"preset": "H100-SXM"}}, "j.yaml")
    >>> [[k.name for k in ks] for ks in moe_permutations(j, 4, 2, 1e6)]
    [['moe.permute', 'ep.alltoall.dispatch', 'moe.sort_chunks'], ['moe.unsort_chunks', 'ep.alltoall.combine', 'moe.unpermute']]
    >>> [[k.name for k in ks] for ks in moe_permutations(j, 1, 8, 1e6)]
    [['moe.permute'], ['moe.unpermute']]
    """
    copy = 2.0 * a2a
    if ep == 1:
        return [_mem("moe.permute", copy)], [_mem("moe.unpermute", copy)]
    send = _comm("ep.alltoall.dispatch", "alltoall", "ep", a2a)
    back = _comm("ep.alltoall.combine", "alltoall", "ep", a2a)
    if j.framework.moe_dispatcher != "alltoall":
        return [send, _mem("moe.permute", copy)], [_mem("moe.unpermute", copy), back]
    sort = [_mem("moe.sort_chunks", copy)] if local > 1 else []
    unsort = [_mem("moe.unsort_chunks", copy)] if local > 1 else []
    return [_mem("moe.permute", copy), send, *sort], [*unsort, back, _mem("moe.unpermute", copy)]


def moe_load_factor(j: TrainingJob) -> float:
    """Tokens of the busiest expert over the mean: ``model.moe_imbalance`` (1.0: balanced,
    as the NeMo/Megatron-Bridge benchmarks force it), capped by ``moe_capacity_factor``
    when tokens beyond capacity are dropped."""
    m = j.model
    cf = m.moe_capacity_factor
    return min(m.moe_imbalance, cf) if cf is not None else m.moe_imbalance


UNFUSED = ("attention.qk", "attention.softmax", "attention.av")
#: backward bytes over forward bytes where they are not the element-wise rule of thumb (2):
#: the fused softmax + dropout of unfused attention reads the gradient, the mask and the
#: probabilities and writes one gradient (2 + 1 + 2 + 2 + 2 + 2 = 11 bytes a score against
#: the forward's 9)
BWD_BYTES = {"attention.softmax": 11.0 / 9.0, "rope": 1.0, "repeat_kv": 1.0}

#: Eager PyTorch: bytes a memory-bound block moves when every primitive of it is its own
#: kernel, over the fused kernel's bytes (forward, backward), counted per element from the
#: code the stacks run. RMSNorm written in PyTorch (torchtitan ``models/norms.py``
#: ``RMSNorm``, the default ``norm_type`` of its Llama configs; ``torch.rms_norm``'s composite
#: is the same chain): ``x.float()`` 2+4, ``pow`` 4+4, ``mean`` 4, ``x * rsqrt`` 4+4,
#: ``type_as`` 4+2, ``* weight`` 2+2 = 36 bytes against a fused kernel's 2+2 (9×); autograd
#: runs each primitive's backward (≈ 70 against 8). Rotary as complex numbers (torchtitan
#: ``apply_rotary_emb``): ``float()`` 2+4, complex multiply 4+4, ``type_as`` 4+2 = 20 against
#: 4 (5×), the backward alike. SwiGLU as ``silu(a) * b``: silu 2+2, multiply 2+2+2 = 10 per
#: output against 6 fused; backward: the multiply's two gradients 12 + ``silu_backward`` 6 =
#: 18 against 12. LayerNorm, GeLU, the residual add and the loss are single ATen kernels
#: (``native_layer_norm``, ``gelu``, ``add``): 1×.
EAGER_BYTES = {"norm.rmsnorm": (9.0, 70.0 / 8.0), "rope": (5.0, 5.0), "activation.swiglu": (10.0 / 6.0, 1.5)}


def eager_factor(j: TrainingJob, name: str) -> float:
    """Bytes of the memory-bound kernel ``name`` as eager PyTorch runs it, over its fused
    bytes (:data:`EAGER_BYTES`; 1.0 for a kernel that is one ATen kernel either way).

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 2048,
    ...                              "vocab": 32000, "norm": "rmsnorm", "mlp": "swiglu", "position": "rope"},
    ...                    "training": {"global_batch": 4}, "gpu": {"preset": "H100-SXM"}}, "j.yaml")
    >>> eager_factor(j, "recompute.norm.mlp"), eager_factor(j, "rope.bwd"), eager_factor(j, "residual.attn")
    (9.0, 5.0, 1.0)
    """
    base = name.removeprefix("recompute.")
    bwd = base.endswith(".bwd")
    base = base.removesuffix(".bwd")
    if base.startswith("norm."):
        key = f"norm.{j.model.norm}"
    elif base in ("activation", "experts.activation"):
        key = f"activation.{j.model.mlp}"
    else:
        key = base
    f = EAGER_BYTES.get(key)
    return 1.0 if f is None else f[1 if bwd else 0]


def _repeat_kv(j: TrainingJob, d: _Dims) -> list[Kernel]:
    """GQA's K and V copied to every local query head before the attention
    (``framework.repeat_kv``): torchtitan's Llama (``models/llama/model.py`` at 9dec370,
    2024-12) calls ``repeat_kv(xk, n_rep)`` and ``repeat_kv(xv, n_rep)`` —
    ``unsqueeze(3).expand(...).reshape(...)``, and ``reshape`` of an expanded tensor is a copy
    — then SDPA on a/t heads. The copy reads the KV heads and writes a/t heads, K and V; its
    backward (the gradient of ``expand``: a sum over the n_rep copies) reads a/t heads of dK
    and dV and writes the KV heads: the same bytes (:data:`BWD_BYTES`). Nothing without GQA
    (n_rep 1: ``repeat_kv`` returns its input).

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 4096, "heads": 32, "kv_heads": 8,
    ...                              "seq_length": 8192, "vocab": 128256, "position": "rope"},
    ...                    "training": {"global_batch": 8}, "gpu": {"preset": "H100-SXM"},
    ...                    "framework": {"name": "torchtitan", "compile": True, "repeat_kv": True}}, "j.yaml")
    >>> [(k.name, k.bytes / 2**20) for k in _repeat_kv(j, _Dims(j))]   # 2 x 8192 x (32 + 8) x 128 x 2 B
    [('repeat_kv', 160.0)]
    """
    m = j.model
    if not j.framework.repeat_kv or m.kv >= m.heads:
        return []
    return [_mem("repeat_kv", 2.0 * d.T * (d.a_t + m.kv // d.t) * m.d_head * E)]


def mask_fraction(j: TrainingJob) -> float:
    """Share of the s² query-key pairs the attention computes: 1 (full), 1/2 (causal),
    ``document_tokens / 2s`` (causal inside packed documents of that mean length: Σ lᵢ²/2
    over documents filling s tokens is s·l/2)."""
    mask = j.training.attention_mask
    if mask == "full":
        return 1.0
    if mask == "document":
        return 0.5 * j.training.document_tokens / j.model.seq_length
    return 0.5


def _attention(j: TrainingJob, d: _Dims, flops: float, nbytes: float) -> list[Kernel]:
    """A flash-attention kernel, or (``unfused``, Megatron-LM before flash attention) QKᵀ and
    AV as batched GEMMs over b·a/t heads with the s² scores through a fused scale-mask-
    softmax (2 bytes read, 2 written per score) and, with dropout, its mask (1) and output (2)."""
    m = j.model
    sq, sk, dh = d.s_local, m.seq_length, m.d_head
    mask = j.training.attention_mask
    if d.impl != "unfused":
        seq = min(sq, j.training.document_tokens) if mask == "document" else sq
        return [Kernel("attention", "attention", flops, nbytes, seq=seq, head_dim=dh, causal=mask != "full",
                       impl=d.impl)]
    heads = d.b * d.a_t
    scores = float(heads) * sq * sk
    qk = Kernel("attention.qk", "gemm", 2.0 * scores * dh, heads * (2.0 * sq * dh * E + scores / heads * E),
                (sq, sk, dh), groups=heads)
    av = Kernel("attention.av", "gemm", 2.0 * scores * dh, heads * (scores / heads * E + 2.0 * sq * dh * E),
                (sq, dh, sk), groups=heads)
    soft = _mem("attention.softmax", scores * (2 * E + (1.0 + 2 * E if m.dropout else 0.0)))
    return [qk, soft, av]


#: GEMMs whose input comes straight from a kernel that can write FP8 itself (a norm, the
#: activation function): Transformer Engine's LayerNormLinear / LayerNormMLP. Not the
#: experts: Megatron-Core's ``TEGroupedMLP`` feeds TE's ``GroupedLinear`` the dispatcher's
#: permuted tokens (FC1) and the output of its own ``weighted_bias_swiglu_impl`` (FC2), both
#: BF16, and ``GroupedLinear`` quantizes its input itself: a full cast of each. FC2 only
#: where the stack's MLP is TE's ``LayerNormMLP`` (``framework.fp8_fc2_fused``): Megatron-Core's
#: ``MLP`` runs its own BF16 ``bias_swiglu_impl`` and a TE ``Linear`` for FC2, which casts
FP8_FUSED_INPUT = ("qkv", "fc1", "fc2")


#: the GEMMs whose FP8 input a sequence-parallel layer all-gathers (column-parallel: QKV, FC1)
#: and those whose output gradient it all-gathers in the backward (row-parallel: the
#: attention's output projection, FC2), when the stack gathers FP8 (``fp8_tp_gather``)
FP8_TP_GATHERED_INPUT = ("qkv", "fc1")
FP8_TP_GATHERED_GRAD = ("out_proj", "fc2")
#: inputs whose producer is a norm (TE's LayerNormLinear / LayerNormMLP's FC1)
FP8_NORM_INPUT = ("qkv", "fc1")
#: the recipes Transformer Engine runs (per-recipe bookkeeping below); the others are torchao's
TE_RECIPES = ("delayed", "current")
#: the recipes whose one scale per tensor needs the amax of the whole (gathered) tensor before
#: the cast, so a tensor cast on its sequence-parallel shard all-reduces its amax over TP:
#: TE 2.x current scaling (``with_amax_reduction``, the TP group) and torchao's tensorwise
#: dynamic scaling (``tensor_to_amax``: ``torch.max(torch.abs(x))`` on the sharded DTensor
#: that ``Float8ColwiseParallel`` / ``PrepareFloat8ModuleInput`` cast, which DTensor reduces
#: across the TP mesh). Delayed scaling's amax comes from the history (reduced once a pass:
#: :func:`fp8_scale_update`), row-wise scales from each row's own shard.
FP8_TP_AMAX_REDUCE = ("current", "tensorwise")


def fp8_input_bytes(recipe: str, fused: bool, gathered_tp: int, sequence_parallel: bool) -> float:
    """Bytes per element of a GEMM input (M × K, as the GEMM reads it, gathered) that its
    FP8 quantization moves, for Hopper's FP8 GEMM, which takes both operands K-major (TN
    only): the forward reads X, the weight gradient X's transpose, so both FP8 layouts are
    written. ``fused``: a norm or the activation writes the input (TE's LayerNormLinear /
    LayerNormMLP); ``gathered_tp``: the TP size when the input is all-gathered in FP8, else 1.

    * ``delayed`` (Transformer Engine 1.x, ``DelayedScaling``; v1.8 ``module/layernorm_linear.py``,
      ``module/linear.py``): a fused producer writes FP8 itself (one byte less than the BF16
      output its kernel is charged, on its local rows), and the backward transposes the
      (gathered) FP8 input for the weight gradient (``fp8_transpose``: 2 bytes); a standalone
      input is cast and transposed in one kernel (``fp8_cast_transpose_fused``: 4 bytes), or
      under sequence parallelism cast (3) and transposed in the backward (2);
    * ``current`` (TE 2.x, ``Float8CurrentScalingQuantizer``; v2.8 ``csrc/quantizer.cpp``,
      ``csrc/extensions/normalization.cpp``, ``distributed.py``): a standalone input runs an
      amax pass (2) then the quantize kernel (read 2, write FP8 and FP8ᵀ: 4); after a norm the
      norm kernel computes the amax itself (``FUSED_NORM_AMAX_FP8``) and only the quantize
      runs (4); an input gathered in FP8 is quantized row-wise on the local shard (3/t) and
      the gathered FP8 tensor transposed (``_create_transpose``: 2);
    * ``tensorwise`` / ``rowwise`` (torchao, compiled): 1 or 4, plus an amax pass and the
      cast the fused writer can no longer do (+4; thirteenth round); ``blockwise``: 1 or 4.

    >>> fp8_input_bytes("current", False, 1, False), fp8_input_bytes("current", True, 1, False)
    (6.0, 4.0)
    >>> fp8_input_bytes("current", True, 8, True), fp8_input_bytes("delayed", True, 8, True)
    (2.375, 1.875)
    >>> fp8_input_bytes("delayed", False, 1, True), fp8_input_bytes("tensorwise", True, 1, False)
    (5.0, 5.0)
    """
    if recipe == "delayed":
        if fused:
            return 2.0 - 1.0 / gathered_tp
        return 5.0 if sequence_parallel else 4.0
    if recipe == "current":
        if gathered_tp > 1:
            return 3.0 / gathered_tp + 2.0
        return 4.0 if fused else 6.0
    return (1.0 if fused else 4.0) + (4.0 if recipe in ("tensorwise", "rowwise") else 0.0)


def fp8_grad_bytes(recipe: str, gathered_tp: int) -> float:
    """Bytes per element of a GEMM's output gradient dY (M × N, gathered) that its FP8
    quantization moves: ``delayed`` cast-transpose 4 (TE 1.8 ``grad_output_preprocess``;
    gathered under sequence parallelism: cast the local shard, 3/t, gather FP8, transpose
    2); ``current`` amax 2 + quantize 4 (gathered: 5/t + 2, ``_all_gather_fp8``);
    ``tensorwise`` / ``rowwise`` 6; ``blockwise`` 4.

    >>> fp8_grad_bytes("delayed", 1), fp8_grad_bytes("delayed", 4), fp8_grad_bytes("current", 4)
    (4.0, 2.75, 3.25)
    """
    if recipe == "delayed":
        return 3.0 / gathered_tp + 2.0 if gathered_tp > 1 else 4.0
    if recipe == "current":
        return 5.0 / gathered_tp + 2.0 if gathered_tp > 1 else 6.0
    return 6.0 if recipe in ("tensorwise", "rowwise") else 4.0


def fp8_casts(j: TrainingJob, kernels: list[Kernel], phase: str) -> list[Kernel]:
    """``kernels`` with the quantization kernels FP8 GEMMs need (FP8 jobs; identity
    otherwise). Per FP8 GEMM ``M × N × K`` (input X: M × K, weight W: K × N):

    * forward, X: :func:`fp8_input_bytes` by recipe (FC2's input is fused only with
      ``framework.fp8_fc2_fused``: Megatron-Core's MLP casts it by itself);
    * forward, W: cast and transpose, 4 bytes a weight (2 with ``fp8_param_gather``: the
      weights are FP8 already), once a step when the framework caches FP8 weights
      (``fp8_weight_cache``: 1/m of it per micro-batch), every micro-batch otherwise;
    * backward, the output gradient dY (M × N): :func:`fp8_grad_bytes`;
    * the scales, by recipe: ``delayed`` (TE 1.x) none per GEMM — the cast kernels write
      the amax as a by-product, and the scales are updated once a pass for all of them
      (:func:`fp8_scale_update`); ``current`` (TE 2.x) per quantized tensor (X, dY) an amax
      kernel (not after a norm: the norm computes it) and a scale kernel, and, where the
      tensor is all-gathered in FP8 (sequence parallelism), an all-reduce (max) of its amax
      over the TP group before the scale (``with_amax_reduction``: LayerNormLinear's input,
      a row-parallel Linear's output gradient; TE 2.8 ``_customize_quantizers_float8_current_scaling``);
      torchao's recipes two launches per GEMM and pass (amax, scale), and the same TP
      all-reduce for a tensorwise tensor cast on its shard (:data:`FP8_TP_AMAX_REDUCE`).
    Attention, embedding, LM head and router stay in BF16 (no casts).

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 2048,
    ...                              "vocab": 32000}, "training": {"global_batch": 4, "precision": "fp8"},
    ...                    "gpu": {"preset": "H100-SXM"}}, "j.yaml")
    >>> [k.name for k in layer_forward(j, False) if k.name.startswith("fp8.")][:3]
    ['fp8.cast.qkv.x', 'fp8.cast.qkv.w', 'fp8.cast.out_proj.x']
    """
    if j.training.precision != "fp8":
        return kernels
    fw, m, d = j.framework, j.microbatches, _Dims(j)
    recipe = fw.fp8_recipe
    w_bytes = (2.0 if fw.fp8_param_gather else 4.0) / (m if fw.fp8_weight_cache else 1)
    fused = FP8_FUSED_INPUT if fw.fp8_fc2_fused else tuple(n for n in FP8_FUSED_INPUT if n != "fc2")
    gather = d.sp and fw.fp8_tp_gather
    out: list[Kernel] = []
    for k in kernels:
        if k.kind == "gemm" and k.fp8:
            M, N, K = k.dims
            g = k.groups
            quantized = ""                       # the tensor this GEMM quantizes in this pass
            tg = 1
            if phase == "fwd":
                tg = d.t if gather and k.name in FP8_TP_GATHERED_INPUT else 1
                x = fp8_input_bytes(recipe, k.name in fused, tg, d.sp)
                out.append(_mem(f"fp8.cast.{k.name}.x", x * M * K * g))
                out.append(_mem(f"fp8.cast.{k.name}.w", w_bytes * K * N * g))
                quantized = "x"
            elif k.name.endswith(".dgrad"):
                tg = d.t if gather and k.name[:-len(".dgrad")] in FP8_TP_GATHERED_GRAD else 1
                out.append(_mem(f"fp8.cast.{k.name}.dy", fp8_grad_bytes(recipe, tg) * M * K * g, "bwd"))
                quantized = "dy"
            if tg > 1 and recipe in FP8_TP_AMAX_REDUCE:     # before the cast, so before the gather
                _before_tp_gather(out, _comm(f"fp8.amax_reduce.{k.name}", "allreduce", "tp", 4.0))
            if recipe == "current" and quantized:
                if not (quantized == "x" and k.name in FP8_NORM_INPUT):
                    out.append(_mem(f"fp8.amax.{k.name}", 0.0, phase))
                out.append(_mem(f"fp8.scale.{k.name}", 0.0, phase))
            elif recipe not in TE_RECIPES:
                out.append(_mem(f"fp8.scale.{k.name}", 0.0, phase))
                out.append(_mem(f"fp8.amax.{k.name}", 0.0, phase))
        out.append(k)
    return out


def _before_tp_gather(out: list[Kernel], k: Kernel) -> None:
    """Insert ``k`` before the TP all-gather that feeds the next GEMM (the last all-gather
    after the last GEMM of ``out``), or append it: the scale must be known before the shard
    is cast and gathered, and the gather keeps its GEMM as its overlap neighbour."""
    for i in range(len(out) - 1, -1, -1):
        o = out[i]
        if o.kind == "gemm":
            break
        if o.kind == "comm" and o.group == "tp" and o.collective == "allgather":
            out.insert(i, k)
            return
    out.append(k)


def fp8_scale_update(j: TrainingJob, phase: str, layers: int) -> list[Kernel]:
    """Delayed scaling's bookkeeping once a pass (forward or backward) of a model chunk of
    ``layers`` layers, per micro-batch; empty for other recipes and BF16 jobs. Transformer
    Engine 1.x (v1.8 ``fp8.py``: ``FP8GlobalStateManager.reduce_and_update_fp8_tensors``,
    called when the outermost ``fp8_autocast`` exits and from the backward of the autocast's
    first module) concatenates the pass's amaxes (``torch.cat``), all-reduces them (max) over
    the ``fp8_group`` (``framework.fp8_amax_group``) when it has more than one rank —
    ``async_op=False``: the compute stream waits — and updates every amax history and scale
    in one fused kernel. Three FP8 tensors a GEMM forward (input, weight, output), two
    backward (output and input gradients), 4 bytes each. Megatron-Core enters one autocast
    per model chunk's forward (``TransformerBlock.forward`` at core_r0.8.0), Composer one
    per micro-batch.

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 2048,
    ...                              "vocab": 32000}, "parallel": {"tp": 2},
    ...                    "training": {"global_batch": 4, "precision": "fp8"},
    ...                    "gpu": {"preset": "H100-SXM"}}, "j.yaml")
    >>> [(k.name, k.group, k.size_bytes) for k in fp8_scale_update(j, "fwd", 2) if k.kind == "comm"]
    [('fp8.amax_reduce.fwd', 'tp_cp', 96.0)]
    """
    if j.training.precision != "fp8" or j.framework.fp8_recipe != "delayed" or layers < 1:
        return []
    gemms = 4                                    # QKV, output projection, FC1, FC2 a layer
    tensors = gemms * (3 if phase == "fwd" else 2) * layers
    return [_mem(f"fp8.amax_cat.{phase}", 2 * 4.0 * tensors, phase),
            _comm(f"fp8.amax_reduce.{phase}", "allreduce", j.framework.fp8_amax_group, 4.0 * tensors),
            _mem(f"fp8.scale_update.{phase}", 0.0, phase)]


def layer_forward(j: TrainingJob, moe: bool) -> list[Kernel]:
    """The forward kernels of one layer for one micro-batch (module docstring)."""
    d, m = _Dims(j), j.model
    attn_flops = 4.0 * d.b * d.s_local * m.seq_length * d.a_t * m.d_head * mask_fraction(j)
    attn_bytes = d.T * (d.qkv + d.a_t * m.d_head) * E
    out: list[Kernel] = [_mem("norm.attn", 2 * d.Tn * d.h * E), *_tp_in(d, "attn"),
                         _gemm("qkv", d.T, d.qkv, d.h, d.fp8)]
    if m.position == "rope":        # rotary on Q and K: read and write them once (fused)
        out.append(_mem("rope", 2.0 * d.T * (m.heads + m.kv) * m.d_head // d.t * E))
    out += _repeat_kv(j, d)
    if d.cp > 1 and j.framework.cp_attention == "per_step":       # torch's ring attention, step by step
        out += cp_ring.forward(j)
    elif d.cp > 1:
        kv = 2.0 * d.T * (m.kv // d.t) * m.d_head * E * d.cp     # gathered: every rank's K and V
        ring = j.cp_comm == "ring"
        out.append(_comm("cp.allgather.kv", "allgather", "cp", kv, hidden_by="attention" if ring else ""))
    if not (d.cp > 1 and j.framework.cp_attention == "per_step"):
        out += _attention(j, d, attn_flops, attn_bytes)
    out += [_gemm("out_proj", d.T, d.h, d.a_t * m.d_head, d.fp8),
            *_tp_out(d, "attn"), _residual(j, d, "residual.attn"),
            _mem("norm.mlp", 2 * d.Tn * d.h * E), *_tp_in(d, "mlp"), *_mlp_forward(j, d, moe),
            *_tp_out(d, "mlp"), _residual(j, d, "residual.mlp")]
    return fp8_casts(j, out, "fwd")


def _backward_of(k: Kernel, d: _Dims) -> list[Kernel]:
    """The backward kernels of one forward kernel (in backward order)."""
    name = f"{k.name}.bwd"
    if k.kind == "gemm":
        m, n, kk = k.dims
        dgrad = _gemm(f"{k.name}.dgrad", m, kk, n, k.fp8, "bwd")
        wgrad = _gemm(f"{k.name}.wgrad", kk, n, m, k.fp8, "bwd")
        scale = k.flops / (2.0 * m * n * kk)          # grouped GEMMs: several experts
        return [replace(x, flops=x.flops * scale, bytes=x.bytes * scale, groups=k.groups) for x in (dgrad, wgrad)]
    if k.kind == "attention":
        return [replace(k, name=name, flops=2.5 * k.flops, bytes=2.0 * k.bytes, phase="bwd")]
    if k.kind == "memory":
        return [_mem(name, BWD_BYTES.get(k.name, 2.0) * k.bytes, "bwd")]
    if k.group == "tp" and k.collective == "allgather":        # SP: RS of the input gradient
        return [_comm(f"tp.reducescatter.{k.name.split('.')[-1]}.bwd", "reducescatter", "tp", k.size_bytes)]
    if k.group == "tp" and k.collective == "reducescatter":    # SP: AG of the output gradient
        return [_comm(f"tp.allgather.{k.name.split('.')[-1]}.bwd", "allgather", "tp", k.size_bytes * d.tp_gather_e / E)]
    if k.group == "tp":                                        # the 'g' all-reduce: identity backward
        return []
    if k.group == "cp":
        return [_comm("cp.reducescatter.dkv", "reducescatter", "cp", k.size_bytes,
                      hidden_by="attention.bwd" if k.hidden_by else "")]
    return [_comm(f"{k.name}.bwd", k.collective, k.group, k.size_bytes)]


def layer_backward(j: TrainingJob, moe: bool) -> list[Kernel]:
    """The backward kernels of one layer (without recomputation; module docstring)."""
    d = _Dims(j)
    fwd = [k for k in layer_forward(j, moe) if not k.name.startswith("fp8.")]
    out: list[Kernel] = []
    for k in reversed(fwd):
        if k.name.startswith("cp.") and j.framework.cp_attention == "per_step":
            if k.name == "cp.merge.casts":                  # the forward's last CP kernel: its mirror here
                out += cp_ring.backward(j)
            continue
        out += _backward_of(k, d)
        if k.kind == "gemm" and k.name in ("qkv", "fc1", "router") and d.t > 1 and not d.sp:
            out.append(_comm(f"tp.allreduce.{k.name}.dgrad", "allreduce", "tp", d.T * d.h * E))
        if k.kind == "comm" and k.group == "tp" and k.collective == "allgather":
            out.append(_comm(f"tp.allgather.{k.name.split('.')[-1]}.regather", "allgather", "tp", k.size_bytes))
    return fp8_casts(j, out, "bwd")


def sac_gemm_shares(j: TrainingJob) -> dict[str, float]:
    """The share of each forward GEMM of a dense block that torchtitan's per-op selective
    activation checkpointing (``selective_ac_option = 'op'``) recomputes, on average over
    passes. Its policy (``_apply_ac_to_transformer_block``, torchtitan 9dec370 (2024-12) and
    6f6a897 (2025-06): "Saves output of all compute ops, except every second mm") counts the
    block's ``aten.mm`` calls in forward order — ``wq``, ``wk``, ``wv``, ``wo``, then ``w1``,
    ``w3``, ``w2`` (SwiGLU) or ``w1``, ``w2`` — in a counter that lives as long as the block,
    so with an odd count (7) the recomputed half alternates from pass to pass and every GEMM
    is recomputed every other pass (½ each); with an even count the even-numbered ones always.
    Our ``qkv`` GEMM holds ``wq``/``wk``/``wv`` by their widths and ``fc1`` SwiGLU's two.

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 256,
    ...                              "vocab": 1000, "mlp": "gelu"}, "training": {"global_batch": 4},
    ...                    "gpu": {"preset": "H100-SXM"}}, "j.yaml")
    >>> sac_gemm_shares(j)       # 6 mms: wk (1/3 of qkv), wo and w2 always
    {'qkv': 0.3333333333333333, 'out_proj': 1.0, 'fc1': 0.0, 'fc2': 1.0}
    """
    m = j.model
    part = m.kv / (m.heads + 2 * m.kv)
    mms = [("qkv", m.heads / (m.heads + 2 * m.kv)), ("qkv", part), ("qkv", part), ("out_proj", 1.0)]
    mms += [("fc1", 0.5), ("fc1", 0.5), ("fc2", 1.0)] if m.mlp == "swiglu" else [("fc1", 1.0), ("fc2", 1.0)]
    shares: dict[str, float] = {}
    for i, (name, share) in enumerate(mms, start=1):
        p = 0.5 if len(mms) % 2 else (1.0 if i % 2 == 0 else 0.0)
        shares[name] = shares.get(name, 0.0) + share * p
    return shares


def op_sac_recompute(j: TrainingJob, fwd: list[Kernel]) -> list[Kernel]:
    """What torchtitan's per-op selective checkpointing replays before a block's backward:
    every op outside its save list (``aten.mm``, the SDPA attention kernels,
    ``reduce_scatter_tensor``, ``max``) — every memory-bound kernel of the block (norms,
    rotary, activation, residual adds, FP8 casts) — and the GEMMs of :func:`sac_gemm_shares`
    at their share; never the attention. Its all-gathers are replayed too: the sequence-
    parallel re-gather the backward already holds (``layer_backward``). Compiled blocks
    replay the same: the policy marks the rest ``PREFER_RECOMPUTE``, which the compiler's
    partitioner treats as must-recompute (``torch/_functorch/partitioners.py``,
    ``must_recompute``)."""
    shares = sac_gemm_shares(j)
    out = []
    for k in fwd:
        if k.kind == "memory":
            out.append(k)
        elif k.kind == "gemm" and shares.get(k.name, 0.0) > 0.0:
            f = shares[k.name]
            out.append(replace(k, flops=k.flops * f, bytes=k.bytes * f))
    return out


def recompute_forward(j: TrainingJob, moe: bool) -> list[Kernel]:
    """What the backward of a layer recomputes first: the whole forward (``full``), the
    norms and the activation function (``selective``) or nothing."""
    mode = j.training.recompute
    if mode == "none":
        return []
    fwd = layer_forward(j, moe)
    if mode == "selective" and j.framework.selective_ac == "op" and not moe:
        return [replace(k, name=f"recompute.{k.name}", hidden_by="") for k in op_sac_recompute(j, fwd)]
    if mode == "selective":          # Korthikanti et al.: the attention core (unfused: its s² tensors)
        fwd = [k for k in fwd if k.name.startswith("norm.") or k.name.endswith("activation") or k.name in UNFUSED]
    return [replace(k, name=f"recompute.{k.name}", hidden_by=f"recompute.{k.hidden_by}" if k.hidden_by else "")
            for k in fwd]


def embedding_forward(j: TrainingJob) -> list[Kernel]:
    """Vocab-parallel embedding look-up (+ its TP all-reduce)."""
    d = _Dims(j)
    ks = [_mem("embedding", 2 * d.T * d.h * E)]
    if d.t > 1:
        ks.append(_comm("tp.reducescatter.embedding" if d.sp else "tp.allreduce.embedding",
                        "reducescatter" if d.sp else "allreduce", "tp", d.T * d.h * E))
    return ks


#: Transformer Engine's fused cross entropy (``framework.cross_entropy_fusion: te``): passes
#: over the BF16 logits, (forward, backward). Forward: ``online_softmax_kernel`` reads them
#: for each token's max and sum, then ``cross_entropy_kernel`` reads them again, writes the
#: loss and overwrites them with the gradient (softmax − one-hot); backward:
#: ``element_mul_kernel`` scales that gradient by the incoming one in place, read and write
#: (skipped only for a scalar 1.0; Megatron-Core passes per-token losses, so it runs).
#: transformer_engine/pytorch/triton/cross_entropy.py at v2.8 and v2.9, common/triton/ at
#: v2.10-v2.12: the same kernels.
TE_CE_PASSES = (3, 2)

#: what each loss implementation (``framework.cross_entropy_fusion``) moves per logit of the
#: LM head's BF16/FP16 output (``E`` bytes), forward and backward, each from its kernels' code:
#:
#: * ``none``: Megatron's ``vocab_parallel_cross_entropy`` (megatron/mpu/cross_entropy.py at
#:   a8d172b31e, 2021-04, and 2e90a342f5, 2022-05, byte-identical; megatron/core/
#:   tensor_parallel/cross_entropy.py at 986019ee11, 2023-08, and core_r0.8.0; Megatron-
#:   DeepSpeed's ``CrossEntropy`` calls it on ``output.float()``): the logits cast to fp32
#:   (read E, write 4), then on the fp32 copy the max (read), ``-= max`` (read, write), ``exp``
#:   in place (read, write), the sum (read) and ``div_`` by it (read, write), the softmax kept
#:   for the backward: E + 36 bytes. Backward: ``grad_input.mul_(grad_output)`` on the kept
#:   softmax (read, write) and autograd's cast of the fp32 gradient to the logits' dtype (read
#:   4, write E): 12 + E.
#: * ``te``: :data:`TE_CE_PASSES` over the BF16 logits.
#: * ``flash_attn``: flash-attn's ``CrossEntropyLoss`` (flash_attn/ops/triton/cross_entropy.py
#:   at v2.4.2): ``cross_entropy_fwd_kernel`` reads each row once (one block up to 64K columns,
#:   the max and the sum of exponentials in registers) and writes the loss and log-sum-exp per
#:   row; ``cross_entropy_bwd_kernel`` reads the saved logits and writes their gradient into a
#:   new tensor (``inplace_backward`` off by default): E forward, 2E backward.
#: * ``torch``: ``torch.nn.functional.cross_entropy`` on the logits cast to fp32, eager
#:   (torchtitan's loss at 9dec370 and later). Without TP, ATen's ``log_softmax`` (read E write
#:   4 for the cast; ``cunn_SoftMaxForward``: the max and the sum read the row, the output
#:   written from a third read: 16) and ``nll_loss`` (a gather); backward, ``nll_loss_backward``
#:   fills a zero gradient (write 4), ``cunn_SoftMaxBackward`` sums it (read) and writes
#:   ``grad − exp(out)·sum`` (read two, write one: 16), the cast back (read 4, write E):
#:   E + 20 forward, E + 24 backward. Under TP, torch's ``loss_parallel`` (torchtitan's default
#:   with TP: the output layer stays sharded on the vocabulary): ``_log_softmax``'s amax (read),
#:   ``x − max`` (read, write), ``exp`` (read, write), the sum (read), ``shifted − lse`` (read,
#:   write) after the cast: E + 36; ``_nll_loss_and_log_softmax_backward``: ``zeros_like``
#:   (write), ``exp(x)`` (read, write), ``+`` (read two, write one), ``* grad`` (read, write),
#:   the cast back: E + 36 (torch/distributed/tensor/parallel/loss.py).
#: * ``inductor``: that loss under ``torch.compile`` (torchtitan's ``build_cross_entropy_loss``
#:   compiles it with ``training.compile`` from 2025: components/loss.py at e7c0cae and 820504e;
#:   at 9dec370 the compile is commented out): inductor fuses the cast into its loads and runs
#:   the softmax's max and sum as two loops of one reduction kernel over the BF16 logits
#:   (pytorch#127011's description), and the backward as one kernel that reads the saved BF16
#:   logits and writes their gradient: 2E forward, 2E backward. Not read from generated code;
#:   a job override, in no profile (sim/README, nineteenth round).
CE_BYTES_PER_LOGIT: dict[str, tuple[float, float]] = {
    "none": (E + 36.0, 12.0 + E),
    "te": (TE_CE_PASSES[0] * E, TE_CE_PASSES[1] * E),
    "flash_attn": (E, 2 * E),
    "torch": (E + 20.0, E + 24.0),
    "inductor": (2 * E, 2 * E),
}
#: ``torch`` under tensor parallelism: torch's ``loss_parallel`` (above)
CE_BYTES_PER_LOGIT_LOSS_PARALLEL = (E + 36.0, E + 36.0)


def cross_entropy_bytes(j: TrainingJob) -> tuple[float, float]:
    """Bytes the loss moves over one micro-batch's logits on one TP rank, (forward, backward)
    (:data:`CE_BYTES_PER_LOGIT`).

    >>> from sim.predict.job import job_from_dict
    >>> spec = {"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 1024, "vocab": 32000},
    ...         "training": {"global_batch": 8}, "gpu": {"preset": "H100-SXM"}, "framework": {"name": "megatron-core"}}
    >>> [b / (1024 * 32000) for b in cross_entropy_bytes(job_from_dict(spec, "j.yaml"))]
    [38.0, 14.0]
    >>> spec["framework"]["cross_entropy_fusion"] = "flash_attn"
    >>> [b / (1024 * 32000) for b in cross_entropy_bytes(job_from_dict(spec, "j.yaml"))]
    [2.0, 4.0]
    """
    d, v_t = _Dims(j), j.model.vocab // j.parallel.tp
    impl = j.framework.cross_entropy_fusion
    fwd, bwd = CE_BYTES_PER_LOGIT_LOSS_PARALLEL if impl == "torch" and d.t > 1 else CE_BYTES_PER_LOGIT[impl]
    return fwd * d.T * v_t, bwd * d.T * v_t


def head_forward(j: TrainingJob) -> list[Kernel]:
    """Final norm, vocab-parallel LM head GEMM and the loss (:func:`cross_entropy_bytes`).

    >>> from sim.predict.job import job_from_dict
    >>> spec = {"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 1024, "vocab": 32000},
    ...         "training": {"global_batch": 8}, "gpu": {"preset": "H100-SXM"}, "framework": {"name": "megatron-core"}}
    >>> [k.bytes / 2**20 for k in head_forward(job_from_dict(spec, "j.yaml")) if k.name == "cross_entropy"]
    [1187.5]
    >>> spec["framework"]["cross_entropy_fusion"] = "te"          # 3 x 1024 x 32000 x 2 B
    >>> [k.bytes / 2**20 for k in head_forward(job_from_dict(spec, "j.yaml")) if k.name == "cross_entropy"]
    [187.5]
    """
    d, v_t = _Dims(j), j.model.vocab // j.parallel.tp
    ce = cross_entropy_bytes(j)[0]
    ks = [_mem("norm.final", 2 * d.Tn * d.h * E), *_tp_in(d, "head", fp8=False), _gemm("lm_head", d.T, v_t, d.h, False),
          _mem("cross_entropy", ce)]
    if d.t > 1:
        ks.append(_comm("tp.allreduce.loss", "allreduce", "tp", d.T * 8.0))
    return ks


def train_metrics(j: TrainingJob) -> list[Kernel]:
    """The trainer's training metrics after a micro-batch's backward
    (``framework.train_metrics``), each a cross entropy over the logits as the loss's
    (:func:`head_forward`); none for a stack that only logs the loss.

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 1024,
    ...                              "vocab": 32000}, "training": {"global_batch": 8},
    ...                    "gpu": {"preset": "H100-SXM"}, "framework": {"name": "composer-fsdp"}}, "j.yaml")
    >>> [(k.name, k.bytes) for k in train_metrics(j)]
    [('train_metrics.cross_entropy', 786432000.0)]
    """
    n = j.framework.train_metrics
    if n <= 0:
        return []
    d = _Dims(j)
    return [_mem("train_metrics.cross_entropy", n * 3 * d.T * (j.model.vocab // j.parallel.tp) * 4.0)]


def head_backward(j: TrainingJob) -> list[Kernel]:
    """The LM head's backward (never recomputed)."""
    d = _Dims(j)
    out: list[Kernel] = []
    for k in reversed(head_forward(j)):
        if k.name == "tp.allreduce.loss":
            continue
        if k.name == "cross_entropy":
            out.append(_mem("cross_entropy.bwd", cross_entropy_bytes(j)[1], "bwd"))
            continue
        out += _backward_of(k, d)
        if k.name == "lm_head" and d.t > 1 and not d.sp:
            out.append(_comm("tp.allreduce.lm_head.dgrad", "allreduce", "tp", d.T * d.h * E))
    return out


def embedding_backward(j: TrainingJob) -> list[Kernel]:
    """Scatter-add of the embedding gradient."""
    d = _Dims(j)
    return [_mem("embedding.bwd", 2 * d.T * d.h * E, "bwd")]


__all__ = ["CE_BYTES_PER_LOGIT", "CE_BYTES_PER_LOGIT_LOSS_PARALLEL", "EAGER_BYTES", "TE_CE_PASSES", "cross_entropy_bytes", "eager_factor",
           "fp8_casts", "fp8_grad_bytes", "fp8_input_bytes", "fp8_scale_update", "embedding_backward", "embedding_forward", "head_backward", "head_forward", "layer_backward",
           "layer_forward", "op_sac_recompute", "recompute_forward", "train_metrics",
           "sac_gemm_shares"]

"""Context-parallel attention as torch runs it (``framework.cp_attention: per_step``): the
ring attention of ``torch.distributed.tensor.experimental.context_parallel`` — one SDPA
call per CP step on a block of the sequence, its partial outputs merged in fp32 — which
torchtitan uses (2024-12, 9dec370: ``utils.create_context_parallel_ctx`` →
``context_parallel`` + ``set_rotate_method``).

What torch's ``torch/distributed/tensor/experimental/_attention.py`` does (the version with
``set_rotate_method`` that torchtitan 9dec370 imports; ``_ContextParallelOptions`` defaults
``convert_to_f32=True``, ``enable_load_balance=True``, ``rotate_method=ALL_GATHER``), per
layer, at CP degree c, sequence s, each rank holding s/c tokens as two chunks of s/2c
(round-robin load balance: rank r holds chunks r and 2c−1−r):

* **forward** (``_templated_ring_attention``): step 0 runs SDPA on the local query and key
  (s/c × s/c, causal); step i ≥ 1 on rank r runs it non-causal on the local query against
  the first chunk of the KV from rank r−i (i ≤ r: s/c × s/2c) or on the second query chunk
  against all of it (i > r: s/2c × s/c) — each step s²/2c² query-key pairs, so the sum is
  the causal s²/2c of one kernel; every step's output and log-sum-exp are merged into an
  fp32 accumulator (``_SDPAMerger``: ``out.to(float32)``, then
  ``out − sigmoid(lse_b − lse)·(out − out_b)`` and ``lse − logsigmoid(lse − lse_b)``; the
  i > r steps merge half the rows and ``torch.cat`` the accumulator back together), cast to
  bf16 at the end;
* **KV exchange**: ``_AllGatherRotater`` all-gathers the local K and V once at step 0
  (under step 0's SDPA; the later steps wait for it), ``_AllToAllRotater``
  (``set_rotate_method('alltoall')``) passes them round the ring, step i's transfer under
  step i's SDPA; every step but the last also ``torch.cat``\\ s K and V into the send buffer.
  torchtitan's Llama repeats the KV heads before SDPA (``repeat_kv`` in
  ``models/llama/model.py``), so K and V carry the query's a/t heads;
* **backward** (``_templated_ring_attention_backward``): the KV is gathered again (the same
  rotater), each step runs the SDPA backward on the same blocks, and the K/V gradients
  travel the ring in **fp32** (``accum_dtype``; ``dkv_rotater`` is always all-to-all):
  step i's fp32 dK/dV accumulator goes to the next rank under step i+1's backward, the
  last one is waited for at the end; dQ/dK/dV are accumulated in fp32 (``+=`` of the bf16
  block gradients, ``_partial_update`` + ``torch.cat`` for the half-chunk steps) and cast
  back to bf16.

The slowest rank is c−1 (every step i ≤ r: full merges and full-q blocks), so the kernels
below are rank c−1's. Memory traffic per element of the local attention output
(N = b·(s/c)·(a/t)·d), counted from the code: forward merge 38 B a step eager (cast 6,
``out − out_b`` 12, the scaled difference 8, the subtraction 12; the log-sum-exp's are per
row, /d), the first step's cast 6 and the final cast 6; backward accumulation 52 B a step
(dK/dV half-chunk ``+=`` and re-``cat`` 2 × 13, the send buffer's ``cat`` 16, dQ ``+=`` 10),
46 at step 0, the fp32 zero-inits 12 and the final casts 18. A compiled block
(``framework.compile``: torch.compile traces the DTensor dispatch into the block's graph)
fuses each step's merge or accumulation into one pass over its fp32 accumulators: 10 B a
merge step (read fp32 4 + bf16 2, write 4), 30 B a backward step (dQ, dK, dV), and drops
the send-buffer copies the all-gather rotater never reads.

>>> from sim.predict.job import job_from_dict
>>> j = job_from_dict({"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq_length": 8192,
...                              "vocab": 32000}, "parallel": {"cp": 4, "dp": 2},
...                    "training": {"global_batch": 8}, "gpu": {"preset": "H100-SXM"},
...                    "framework": {"name": "torchtitan"}}, "j.yaml")
>>> [(k.name, k.seq, k.causal) for k in forward(j) if k.kind == "attention"]
[('cp.attention.0', 2048, True), ('cp.attention.1', 1024, False), ('cp.attention.2', 1024, False), ('cp.attention.3', 1024, False)]
>>> [k.name for k in forward(j) if k.kind == "comm"], [k.hidden_by for k in forward(j) if k.kind == "comm"]
(['cp.allgather.kv'], ['cp.attention.0'])
"""
from __future__ import annotations

from sim.predict.job import TrainingJob
from sim.predict.kernels import Kernel

E = 2.0                      # bytes of a bf16 element
F32 = 4.0                    # bytes of an fp32 element
#: forward merge bytes per output element: eager (each primitive its own kernel), compiled
MERGE_STEP_B = {"eager": 38.0, "compiled": 10.0}
#: fp32 cast of step 0's output and the final cast back to bf16 (read + write)
MERGE_CASTS_B = 2 * (E + F32)
#: backward accumulation bytes per element of a step i >= 1, of step 0, and once a layer
#: (zero-inits of dQ/dK/dV in fp32 and the final casts of dQ and dK/dV to bf16)
ACCUM_STEP_B = {"eager": 52.0, "compiled": 30.0}
ACCUM_STEP0_B = {"eager": 46.0, "compiled": 30.0}
ACCUM_ONCE_B = {"eager": 3 * F32 + 3 * (E + F32), "compiled": 3 * (E + F32)}
#: the K and V send buffer (``torch.cat`` of the bf16 K and V: read + write each)
SEND_CAT_B = 2 * (E + E)


def _mode(j: TrainingJob) -> str:
    return "compiled" if j.framework.compile else "eager"


def _sizes(j: TrainingJob) -> tuple[int, int, int, float]:
    """(local tokens s/c per sequence, micro-batch b, heads per GPU a/t, N output elements)."""
    m, p = j.model, j.parallel
    s_local = m.seq_length // p.cp
    b, a_t = j.training.micro_batch, m.heads // p.tp
    return s_local, b, a_t, float(b * s_local * a_t * m.d_head)


def _block(j: TrainingJob, i: int) -> Kernel:
    """Step ``i``'s SDPA on rank c−1: s/c × s/c causal (i = 0), s/c × s/2c otherwise."""
    m = j.model
    s_local, b, a_t, n = _sizes(j)
    sk = s_local if i == 0 else s_local // 2
    pairs = s_local * sk * (0.5 if i == 0 else 1.0)
    flops = 4.0 * b * a_t * m.d_head * pairs
    nbytes = (2.0 * n + 2.0 * n * sk / s_local) * E       # Q and O; K and V of the block
    return Kernel(f"cp.attention.{i}", "attention", flops, nbytes, seq=sk, head_dim=m.d_head, causal=i == 0,
                  impl=j.framework.attention_impl(j.gpu.chip))


def kv_bytes(j: TrainingJob) -> float:
    """Bytes of the gathered K and V of one layer (c ranks × the local K and V, a/t heads
    each after ``repeat_kv``)."""
    return j.parallel.cp * 2.0 * _sizes(j)[3] * E


def buffer_bytes(j: TrainingJob) -> float:
    """Bytes the ring attention holds on a GPU while one layer's attention backward runs, the
    larger of its two passes (:func:`sim.predict.memory.stage_memory` adds it to the stage):
    the exchanged K and V at a/t heads — all c ranks' with the all-gather rotater
    (:func:`kv_bytes`), the local block and the one arriving with the all-to-all rotater —
    plus the backward's fp32 buffers (``accum_dtype``): dQ's accumulator (4 B an element of
    the local output, N) and dK/dV's, the one being accumulated and the one in flight to the
    next rank (2 × 2 × 4 B a K/V element). The forward holds the same K and V and a 4 B fp32
    output accumulator (``_SDPAMerger``), less. Nothing at c = 1 or with ``one_kernel``.

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 2, "hidden": 4096, "heads": 32, "kv_heads": 8,
    ...                              "seq_length": 262144, "vocab": 128256}, "parallel": {"cp": 8},
    ...                    "training": {"global_batch": 1}, "gpu": {"preset": "H100-SXM"},
    ...                    "framework": {"name": "torchtitan"}}, "j.yaml")
    >>> n = 32768 * 32 * 128                      # s/c x a/t x d
    >>> buffer_bytes(j) == 8 * 2 * n * 2 + 20 * n, round(buffer_bytes(j) / 2**30, 2)
    (True, 6.5)
    """
    if j.parallel.cp <= 1 or j.framework.cp_attention != "per_step":
        return 0.0
    n = _sizes(j)[3]
    kv = kv_bytes(j) if j.cp_comm == "allgather" else 2.0 * 2.0 * n * E
    return kv + F32 * n + 2.0 * 2.0 * F32 * n


def forward(j: TrainingJob) -> list[Kernel]:
    """The attention of one layer's forward at CP degree c > 1 (module docstring): the
    KV exchange, c SDPA blocks and the merges, in order."""
    c, mode = j.parallel.cp, _mode(j)
    n = _sizes(j)[3]
    out: list[Kernel] = []
    if j.cp_comm == "allgather":
        out.append(Kernel("cp.allgather.kv", "comm", collective="allgather", group="cp", size_bytes=kv_bytes(j),
                          hidden_by="cp.attention.0"))
    for i in range(c):
        if i < c - 1 and (mode == "eager" or i == 0 or j.cp_comm == "ring"):
            out.append(Kernel(f"cp.sendbuf.{i}", "memory", bytes=SEND_CAT_B * n))
        if i < c - 1 and j.cp_comm == "ring":     # torch's all-to-all rotater: under this step's SDPA
            out.append(Kernel(f"cp.permute.kv.{i}", "comm", collective="alltoall", group="cp",
                              size_bytes=2.0 * n * E * c / (c - 1), hidden_by=f"cp.attention.{i}"))
        out.append(_block(j, i))
        if i > 0:
            out.append(Kernel(f"cp.merge.{i}", "memory", bytes=MERGE_STEP_B[mode] * n))
    out.append(Kernel("cp.merge.casts", "memory", bytes=MERGE_CASTS_B * n))
    return out


def backward(j: TrainingJob) -> list[Kernel]:
    """The attention of one layer's backward (module docstring): the KV exchange again,
    c SDPA backward blocks (2.5× their forward FLOPs, as every flash backward here), the
    fp32 dK/dV passed round the ring and the fp32 accumulations."""
    c, mode = j.parallel.cp, _mode(j)
    n = _sizes(j)[3]
    out: list[Kernel] = [Kernel("cp.bwd.accum.once", "memory", bytes=ACCUM_ONCE_B[mode] * n, phase="bwd")]
    if j.cp_comm == "allgather":
        out.append(Kernel("cp.bwd.allgather.kv", "comm", collective="allgather", group="cp", size_bytes=kv_bytes(j),
                          hidden_by="cp.attention.0.bwd"))
    for i in range(c):
        f = _block(j, i)
        if i < c - 1 and (mode == "eager" or i == 0 or j.cp_comm == "ring"):
            out.append(Kernel(f"cp.bwd.sendbuf.{i}", "memory", bytes=SEND_CAT_B * n, phase="bwd"))
        if i < c - 1 and j.cp_comm == "ring":
            out.append(Kernel(f"cp.bwd.permute.kv.{i}", "comm", collective="alltoall", group="cp",
                              size_bytes=2.0 * n * E * c / (c - 1), hidden_by=f"cp.attention.{i}.bwd"))
        out.append(Kernel(f"{f.name}.bwd", "attention", 2.5 * f.flops, 2.0 * f.bytes, phase="bwd", seq=f.seq,
                          head_dim=f.head_dim, causal=f.causal, impl=f.impl))
        step = ACCUM_STEP0_B if i == 0 else ACCUM_STEP_B
        out.append(Kernel(f"cp.bwd.accum.{i}", "memory", bytes=step[mode] * n, phase="bwd"))
        # step i's fp32 dK/dV to the next rank, under step i+1's backward; the last one exposed
        out.append(Kernel(f"cp.permute.dkv.{i}", "comm", collective="alltoall", group="cp",
                          size_bytes=2.0 * n * F32 * c / (c - 1),
                          hidden_by=f"cp.attention.{i + 1}.bwd" if i < c - 1 else ""))
    return out


__all__ = ["ACCUM_ONCE_B", "ACCUM_STEP0_B", "ACCUM_STEP_B", "MERGE_CASTS_B", "MERGE_STEP_B", "SEND_CAT_B",
           "backward", "buffer_bytes", "forward", "kv_bytes"]

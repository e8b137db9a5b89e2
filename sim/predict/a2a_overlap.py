"""Megatron-Core's MoE all-to-all overlap (``framework.moe_a2a_overlap``): the combined
1F1B step, where one micro-batch's forward and another's backward run together so that
each one's expert-parallel all-to-alls hide under the other's compute.

What Megatron-Core runs (``overlap_moe_expert_parallel_comm`` with ``delay_wgrad_compute``,
as Megatron-Bridge's ``moe_a2a_overlap`` preset flag sets them: ``set_moe_a2a_overlap_overrides``,
``scripts/performance/utils/helpers.py`` v0.2.0, ``utils/overrides.py`` v0.4.1; Megatron-LM
0d8e0714cd, the submodule of Megatron-Bridge v0.2.0):

* the steady phase of the pipeline schedule calls ``combined_1f1b_schedule_for_*`` with a
  forward and a backward micro-batch at once; the warm-up runs **one more forward**
  (``get_pp_rank_microbatches``: "we schedule one extra micro-batch forward step before the
  1f1b stages", ``megatron/core/pipeline_parallel/schedules.py``);
* inside a model chunk, forward layer i is paired with backward layer n−1−i
  (``TransformerModelChunkSchedulePlan.run``) and each pair runs on two CUDA streams
  (``TransformerLayerSchedulePlan.run``, ``megatron/core/models/common/model_chunk_schedule_plan.py``)::

      comm stream: combine_bwd          | dispatch_fwd -> dispatch_bwd  | combine_fwd
      comp stream: attn_fwd (+post_attn) | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | post_attn_bwd -> attn_bwd

  with the data dependencies of the layer (the expert backward waits for the combine's
  backward, the dispatch for the attention, …); ``delay_wgrad_compute`` runs the experts'
  weight gradients (``mlp_bwd_dw``) after the dispatch backward is issued, under it.

Modelled here: one layer pair as that two-stream schedule over the pass's timed ops
(:func:`pair_s`), a chunk's forward and backward as their paired layers plus what is not a
layer (embedding, LM head, host costs) run one after the other (:func:`combined_pass_s`);
:func:`sim.predict.schedule.simulate_pipeline` runs a steady-phase F and B as one op of
that length. The all-to-alls keep their own time (the streams do not slow each other).

Example::

    >>> from sim.predict.stages import TimedOp
    >>> def op(name, s, stream="compute"):
    ...     return TimedOp(name, stream, "comm" if stream != "compute" else "gemm", s, s, 0.0)
    >>> f = [op("L0.attn", 3.0), op("L0.ep.alltoall.dispatch", 1.0, "ep"), op("L0.experts", 2.0),
    ...      op("L0.ep.alltoall.combine", 1.0, "ep")]
    >>> b = [op("L1.ep.alltoall.combine.bwd", 1.0, "ep"), op("L1.experts.dgrad", 2.0),
    ...      op("L1.experts.wgrad", 2.0), op("L1.ep.alltoall.dispatch.bwd", 1.0, "ep"), op("L1.attn.bwd", 6.0)]
    >>> sum(o.seconds for o in f + b), combined_pass_s(f, b)     # every all-to-all hidden
    (19.0, 15.0)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from sim.predict.stages import TimedOp

_LAYER = re.compile(r"^L(\d+)\.")
DISPATCH = "ep.alltoall.dispatch"
COMBINE = "ep.alltoall.combine"


@dataclass(slots=True)
class LayerSegments:
    """One layer's pass cut at its two all-to-alls: compute before the first (``head``),
    the first all-to-all, compute between (``middle``; ``middle_dw``: the weight gradients
    ``delay_wgrad_compute`` moves after the second all-to-all is issued), the second
    all-to-all, compute after (``tail``); ``a2a`` false: a dense layer (all in ``head``)."""

    head: float = 0.0
    first: float = 0.0
    middle: float = 0.0
    middle_dw: float = 0.0
    second: float = 0.0
    tail: float = 0.0
    a2a: bool = False

    @property
    def total_s(self) -> float:
        """The pass without overlap."""
        return self.head + self.first + self.middle + self.middle_dw + self.second + self.tail


@dataclass(slots=True)
class _Pass:
    layers: list[LayerSegments] = field(default_factory=list)
    other_s: float = 0.0


def _split(ops: Sequence[TimedOp], backward: bool) -> _Pass:
    """The pass's layers in the order it runs them, and the seconds of what is not a layer."""
    out = _Pass()
    first, second = (COMBINE + ".bwd", DISPATCH + ".bwd") if backward else (DISPATCH, COMBINE)
    cur_id = None
    seg = LayerSegments()
    where = "head"
    for o in ops:
        mt = _LAYER.match(o.name)
        if mt is None:
            out.other_s += o.seconds
            continue
        if mt.group(1) != cur_id:
            cur_id, seg, where = mt.group(1), LayerSegments(), "head"
            out.layers.append(seg)
        name = o.name[mt.end():]
        if name == first:
            seg.first, seg.a2a, where = seg.first + o.seconds, True, "middle"
        elif name == second:
            seg.second, where = seg.second + o.seconds, "tail"
        elif where == "middle" and backward and name.endswith(".wgrad"):
            seg.middle_dw += o.seconds
        else:
            setattr(seg, where, getattr(seg, where) + o.seconds)
    return out


def pair_s(f: LayerSegments, b: LayerSegments) -> float:
    """One forward layer and one backward layer run together (module docstring): the
    backward's ops before its combine and the forward's after its combine stay on the
    compute stream at the pair's ends.

    >>> f = LayerSegments(head=3.0, first=1.0, middle=2.0, second=1.0, a2a=True)
    >>> b = LayerSegments(first=1.0, middle=2.0, middle_dw=2.0, second=1.0, tail=6.0, a2a=True)
    >>> pair_s(f, b), f.total_s + b.total_s
    (15.0, 19.0)
    """
    if not (f.a2a and b.a2a):
        return f.total_s + b.total_s
    comp = b.head                                  # the backward's gradient into its combine
    comm = comp + b.first                          # combine_bwd, under attn_fwd
    attn_f = comp + f.head
    mlp_b = max(attn_f, comm) + b.middle           # the experts' backward waits for combine_bwd
    disp_f = max(comm, attn_f) + f.first           # dispatch_fwd waits for attn_fwd
    dw = mlp_b + b.middle_dw
    disp_b = max(disp_f, mlp_b) + b.second         # dispatch_bwd waits for the experts' dgrad
    mlp_f = max(dw, disp_f) + f.middle
    comb_f = max(disp_b, mlp_f) + f.second
    attn_b = max(mlp_f, disp_b) + b.tail
    return max(attn_b, comb_f) + f.tail            # the forward's residual after its combine


def combined_pass_s(fwd_ops: Sequence[TimedOp], bwd_ops: Sequence[TimedOp]) -> float:
    """One chunk's forward and another's backward as one combined step: layer i of the
    forward with layer i of the backward's order (n−1−i of the chunk), the rest in turn."""
    f, b = _split(fwd_ops, False), _split(bwd_ops, True)
    n = min(len(f.layers), len(b.layers))
    paired = sum(pair_s(x, y) for x, y in zip(f.layers[:n], b.layers[:n]))
    rest = sum(x.total_s for x in f.layers[n:]) + sum(y.total_s for y in b.layers[n:])
    return f.other_s + b.other_s + paired + rest


__all__ = ["LayerSegments", "combined_pass_s", "pair_s"]

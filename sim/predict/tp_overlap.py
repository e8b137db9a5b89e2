"""Tensor-parallel communication overlap as Transformer Engine's userbuffers run it, per GEMM.

With sequence parallelism each TP layer of a transformer block gathers its input before a
GEMM or reduce-scatters a GEMM's output. Megatron-Core's ``--tp-comm-overlap`` hands these
to Transformer Engine (TE), which overlaps each with its GEMM by one of three methods, chosen
per GEMM by a *userbuffers config* (Megatron-Bridge ``src/megatron/bridge/training/
comm_overlap.py``: ``TransformerLayerTPOverlapCfg``, one entry for each of the ten slots
``qkv_fprop``, ``proj_fprop``, ``fc1_fprop``, ``fc2_fprop``, ``proj_dgrad``, ``fc2_dgrad``,
``qkv_dgrad``, ``qkv_wgrad``, ``fc1_dgrad``, ``fc1_wgrad``). What each method does is read
from TE's ``transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp`` (TE main,
d0067d0, 2026-08; the methods' structure is the one of the 2.x releases the rows ran):

* ``ring_exchange`` (``CommOverlapP2PBase``). All-gather + GEMM (``split_overlap_ag``,
  ``aggregate`` false): the GEMM runs in ``tp`` chunks of M/tp rows; chunk i computes while
  the ring's p2p step i (one chunk, S/tp bytes, to the next rank) runs on the copy engines,
  and chunk i+1 waits for that step: ``(tp−1)·max(g, p) + g``. GEMM + reduce-scatter
  (``split_overlap_rs``): chunk 0 alone, then chunk i under the send of chunk i−1, then
  ``reduce_bf16`` / ``reduce_fp8_in_bf16_out`` sums the tp received chunks:
  ``g + (tp−1)·max(g, p) + reduce``. With ``set_sm_margin`` the GEMM runs on
  ``sms − num_sm`` SMs (``_math_sms``).
* ``bulk`` (``CommOverlapBase::bulk_overlap``): the whole collective on ``num_sm`` SMs of a
  side stream while the GEMM runs (TE's backward: the input's re-gather under dgrad, the
  input gradient's reduce-scatter under wgrad). The GEMM loses those SMs while both run;
  with times linear in SMs, ``c ≥ g·sms/(sms−n)``: ``c``; else ``g + c·n/sms``.
* ``pipeline`` (``CommOverlapBase::split_overlap_rs``): the GEMM in ``num_splits`` chunks,
  chunk i's reduce-scatter on ``num_sm`` SMs under chunk i+1's GEMM, the last one exposed:
  ``g + (n−1)·max(g, r) + r``, the GEMM on ``sms − num_sm`` SMs with ``set_sm_margin``.

``g`` is a chunk's GEMM at its own (smaller-M) kernel-table rate; ``p`` / ``r`` the ring
collective's time (:class:`sim.predict.comm.CommModel`) for one chunk: a ring step moves
S/tp bytes, one (tp−1)-th of the ring all-gather's time. The exposed time of the pair is
what exceeds the unchunked GEMM's own time; an overlap whose chunks run faster than the
whole GEMM exposes nothing. Not modelled: a bulk collective's rate on its few SMs (taken at
the collective's own rate), ``aggregate`` rings (two chunks a step), atomic GEMMs, CGA size.

A job names a config (``framework.tp_overlap_config``: a name of :data:`CONFIGS`, or a
mapping of slots to methods); without one, ``framework.tp_comm_overlap`` (a share of the
neighbouring GEMM) stays the model (:mod:`sim.predict.stages`).

Example::

    >>> cfg = parse_config("userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192", "j.yaml")
    >>> cfg.qkv_fprop.method, cfg.qkv_wgrad.method, cfg.qkv_wgrad.num_sm
    ('ring_exchange', 'bulk', 24)
    >>> ring_exchange_s(gemm_chunk_s=1e-3, step_s=0.5e-3, tp=4)
    0.004
    >>> round(bulk_s(gemm_s=1e-3, comm_s=0.5e-3, num_sm=24, sms=132), 6)
    0.001091
    >>> parse_config({"qkv_fprop": {"method": "ring", "num_sm": 1}}, "j.yaml")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: j.yaml: framework.tp_overlap_config.qkv_fprop.method: unknown value 'ring' (known: ring_exchange, bulk, pipeline)
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Optional

from sim.topology import SimInputError

METHODS = ("ring_exchange", "bulk", "pipeline")
#: the GEMM slots of a transformer layer (Megatron-Bridge ``TransformerLayerTPOverlapCfg``)
SLOTS = ("qkv_fprop", "proj_fprop", "fc1_fprop", "fc2_fprop", "proj_dgrad", "fc2_dgrad",
         "qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad")


@dataclass(frozen=True, slots=True)
class GemmOverlap:
    """How one GEMM overlaps its TP collective (module docstring)."""

    method: str
    num_sm: int = 1
    cga_size: int = 1
    num_splits: int = 4
    set_sm_margin: bool = False
    aggregate: bool = False
    atomic_gemm: bool = False
    fp8_buf: bool = False


@dataclass(frozen=True, slots=True)
class LayerOverlap:
    """A userbuffers config: one :class:`GemmOverlap` per slot."""

    name: str
    qkv_fprop: GemmOverlap
    proj_fprop: GemmOverlap
    fc1_fprop: GemmOverlap
    fc2_fprop: GemmOverlap
    proj_dgrad: GemmOverlap
    fc2_dgrad: GemmOverlap
    qkv_dgrad: GemmOverlap
    qkv_wgrad: GemmOverlap
    fc1_dgrad: GemmOverlap
    fc1_wgrad: GemmOverlap

    def slot(self, name: str) -> GemmOverlap:
        """The entry of slot ``name``."""
        return getattr(self, name)


def _ring(**kw: Any) -> GemmOverlap:
    return GemmOverlap("ring_exchange", **kw)


def _bulk(num_sm: int) -> GemmOverlap:
    return GemmOverlap("bulk", num_sm=num_sm, cga_size=2)


def _pipe(num_sm: int, **kw: Any) -> GemmOverlap:
    return GemmOverlap("pipeline", num_sm=num_sm, cga_size=2, num_splits=4, set_sm_margin=True, **kw)


def _layer(name: str, bulk: tuple[int, int, int, int], proj: GemmOverlap, fc2: GemmOverlap) -> LayerOverlap:
    qd, qw, fd, fw = bulk
    return LayerOverlap(name, qkv_fprop=_ring(), proj_fprop=proj, fc1_fprop=_ring(), fc2_fprop=fc2,
                        proj_dgrad=_ring(), fc2_dgrad=_ring(), qkv_dgrad=_bulk(qd), qkv_wgrad=_bulk(qw),
                        fc1_dgrad=_bulk(fd), fc1_wgrad=_bulk(fw))


_RING_MARGIN = _ring(num_sm=1, set_sm_margin=True)

#: userbuffers configs as Megatron-Bridge publishes them (``src/megatron/bridge/training/
#: comm_overlap.py``; identical at v0.2.0, v0.3.0 and v0.4.1). The Llama 3 70B and Llama 3.1
#: 405B H100 FP8 presets pass the two FP8 H100 ones (``scripts/performance/configs/llama3/
#: llama3_llm_pretrain.py`` ``llama3_70b_h100_config``, ``llama31/llama31_llm_pretrain.py``
#: ``llama31_405b_h100_config`` at v0.2.0; ``configs/llama/`` at v0.3.0 / v0.4.1)
CONFIGS: dict[str, LayerOverlap] = {c.name: c for c in (
    _layer("userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192", (4, 24, 2, 4),
           _pipe(24), _pipe(16)),
    _layer("userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192", (4, 24, 2, 4), _RING_MARGIN, _RING_MARGIN),
    _layer("userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192", (2, 24, 2, 2),
           _pipe(24), _pipe(8)),
    _layer("userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192", (2, 24, 2, 2), _RING_MARGIN, _RING_MARGIN),
    _layer("userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048", (4, 4, 2, 4), _pipe(24), _RING_MARGIN),
    _layer("userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048", (4, 4, 2, 4), _RING_MARGIN, _RING_MARGIN),
    _layer("userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048", (8, 16, 4, 16), _pipe(16), _pipe(24)),
    _layer("userbuffers_fp8_h100_h6144_tp2_mbs2_seqlen2048", (8, 16, 4, 16),
           _pipe(16, fp8_buf=True), _pipe(24, fp8_buf=True)),
)}

_FIELD_TYPES = {f.name: f.type for f in fields(GemmOverlap)}


def _gemm_overlap(d: Any, default: GemmOverlap, where: str, source: str) -> GemmOverlap:
    if not isinstance(d, dict):
        raise SimInputError(f"{source}: {where}: must be a mapping, got {type(d).__name__}")
    for k in d:
        if k not in _FIELD_TYPES:
            raise SimInputError(f"{source}: {where}.{k}: unknown field (known: {', '.join(_FIELD_TYPES)})")
    if d.get("method", default.method) not in METHODS:
        raise SimInputError(f"{source}: {where}.method: unknown value {d['method']!r} (known: {', '.join(METHODS)})")
    for k, v in d.items():
        if k == "method":
            continue
        want = bool if _FIELD_TYPES[k] == "bool" else int
        if not isinstance(v, want) or (want is int and (isinstance(v, bool) or v < 1)):
            raise SimInputError(f"{source}: {where}.{k}: must be {'true or false' if want is bool else 'an integer >= 1'}, "
                                f"got {v!r}")
    return replace(default, **d)


def te_default(slot: str, tp: int = 8) -> GemmOverlap:
    """TE's own config of a slot when the user's names none (``initialize_ub``,
    ``transformer_engine/pytorch/module/base.py``, ``get_default_config``): ring exchange for
    the fprop all-gathers and the dgrad all-gathers, pipeline for the fprop reduce-scatters,
    bulk for the backward's dgrad / wgrad pairs; ``num_sm`` 1 for a ring, else 16; the SM
    margin on except for rings.

    >>> te_default("proj_fprop")
    GemmOverlap(method='pipeline', num_sm=16, cga_size=2, num_splits=4, set_sm_margin=True, aggregate=False, atomic_gemm=False, fp8_buf=False)
    """
    method = ("ring_exchange" if slot in ("qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad") else
              "pipeline" if slot in ("proj_fprop", "fc2_fprop") else "bulk")
    ring = method == "ring_exchange"
    return GemmOverlap(method, num_sm=1 if ring else 16, cga_size=1 if ring else 2, num_splits=tp if ring else 4,
                       set_sm_margin=not ring)


#: TE's defaults in every slot: Megatron-LM's ``--tp-comm-overlap`` without ``--tp-comm-overlap-cfg``
CONFIGS["te_default"] = LayerOverlap("te_default", **{s: te_default(s) for s in SLOTS})


def parse_config(data: Any, source: str) -> LayerOverlap:
    """``framework.tp_overlap_config``: a name of :data:`CONFIGS` or a mapping of slots to
    ``{method, num_sm, num_splits, set_sm_margin, ...}``, each laid over TE's default of
    that slot as ``initialize_ub`` does (``ub_cfg.update(user_ub_cfg[name])``); slots not
    named keep TE's default. ``SimInputError`` names the field."""
    where = "framework.tp_overlap_config"
    if isinstance(data, str):
        if data not in CONFIGS:
            raise SimInputError(f"{source}: {where}: unknown userbuffers config {data!r} (known: {', '.join(CONFIGS)})")
        return CONFIGS[data]
    if not isinstance(data, dict):
        raise SimInputError(f"{source}: {where}: a config name or a mapping of GEMM slots, got {data!r}")
    out = replace(CONFIGS["te_default"], name="custom")
    for slot, d in data.items():
        if slot not in SLOTS:
            raise SimInputError(f"{source}: {where}.{slot}: unknown GEMM slot (known: {', '.join(SLOTS)})")
        out = replace(out, **{slot: _gemm_overlap(d, te_default(slot), f"{where}.{slot}", source)})
    return out


#: our graph's TP collectives (:mod:`sim.predict.graph`) → the slot whose GEMM overlaps them,
#: and that GEMM's name: the forward all-gathers feed qkv / fc1 and the reduce-scatters follow
#: out_proj / fc2; the backward's all-gathers of the output gradient feed out_proj / fc2's
#: dgrad; the input's re-gather runs under qkv / fc1's dgrad and the input gradient's
#: reduce-scatter under their wgrad (TE ``LayerNormLinear`` backward: ``ub_bulk_dgrad``,
#: ``ub_bulk_wgrad``)
COLLECTIVE_SLOT: dict[str, tuple[str, str]] = {
    "tp.allgather.attn": ("qkv_fprop", "qkv"),
    "tp.reducescatter.attn": ("proj_fprop", "out_proj"),
    "tp.allgather.mlp": ("fc1_fprop", "fc1"),
    "tp.reducescatter.mlp": ("fc2_fprop", "fc2"),
    "tp.allgather.attn.bwd": ("proj_dgrad", "out_proj.dgrad"),
    "tp.allgather.mlp.bwd": ("fc2_dgrad", "fc2.dgrad"),
    "tp.allgather.attn.regather": ("qkv_dgrad", "qkv.dgrad"),
    "tp.reducescatter.attn.bwd": ("qkv_wgrad", "qkv.wgrad"),
    "tp.allgather.mlp.regather": ("fc1_dgrad", "fc1.dgrad"),
    "tp.reducescatter.mlp.bwd": ("fc1_wgrad", "fc1.wgrad"),
}


def margin(gemm_s: float, num_sm: int, sms: int) -> float:
    """A GEMM's time on ``sms − num_sm`` SMs (time linear in SMs).

    >>> margin(1.0, 2, 132)
    1.0153846153846153
    """
    return gemm_s * sms / (sms - num_sm)


def ring_exchange_s(gemm_chunk_s: float, step_s: float, tp: int) -> float:
    """A ring-exchange all-gather + GEMM: tp chunks, tp−1 p2p steps each under one chunk."""
    return (tp - 1) * max(gemm_chunk_s, step_s) + gemm_chunk_s


def bulk_s(gemm_s: float, comm_s: float, num_sm: int, sms: int, sm_margin: bool = False) -> float:
    """A bulk overlap: the collective on ``num_sm`` SMs beside the GEMM (module docstring);
    with ``sm_margin`` the GEMM runs on ``sms − num_sm`` SMs throughout (TE's ``_math_sms``).

    >>> bulk_s(1.0, 0.5, 16, 128, sm_margin=True)
    1.1428571428571428
    """
    slowed = margin(gemm_s, num_sm, sms)
    if sm_margin:
        return max(comm_s, slowed)
    return comm_s if comm_s >= slowed else gemm_s + comm_s * num_sm / sms


def pipeline_s(gemm_chunk_s: float, rs_chunk_s: float, splits: int) -> float:
    """A pipelined GEMM + reduce-scatter: ``splits`` chunks, each one's collective under the next.

    >>> pipeline_s(1e-3, 0.5e-3, 4)
    0.0045000000000000005
    """
    return gemm_chunk_s + (splits - 1) * max(gemm_chunk_s, rs_chunk_s) + rs_chunk_s


__all__ = ["COLLECTIVE_SLOT", "CONFIGS", "GemmOverlap", "LayerOverlap", "METHODS", "SLOTS", "bulk_s", "margin",
           "parse_config", "pipeline_s", "ring_exchange_s", "te_default"]

"""Published measurements the predictor is checked against: Table 1 of the Megatron-LM
paper (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC 2021, arXiv:2104.04473): GPT models of 1.7B to 1T parameters on
32 to 3,072 A100-80GB GPUs of NVIDIA's Selene (DGX A100: NVLink/NVSwitch inside a server,
eight 200 Gb/s HDR InfiniBand NICs per server), sequence 2048, vocabulary 51,200, fp16,
full activation recomputation, 1F1B schedule; the figure is *achieved teraFLOP/s per
GPU* counted with recomputation (``96·B·s·l·h²·(1 + s/6h + V/16lh)`` FLOPs per
iteration), so it compares with :attr:`Prediction.hardware_tflops_per_gpu`.

Assumptions where the table is silent: micro-batch 1 (the paper's Figure 9 shows larger
micro-batches buy little for these sizes), gradient all-reduce not overlapped with the
backward (Megatron's own DDP of 2021; the ``megatron-lm`` framework profile: unfused
attention, fused bias-GeLU, fp32 gradient all-reduce), the Selene fabric approximated by blocks of
``topo/specs/pod64k.yaml`` at 200 Gb/s with random ECMP (NCCL, no TCCL).

Example::

    >>> r = MEGATRON_TABLE1[-1]
    >>> r.params_B, r.gpus, r.tflops_per_gpu, r.tp * r.pp * r.dp == r.gpus
    (1008.0, 3072, 163.0, True)
    >>> megatron_job(MEGATRON_TABLE1[0])["parallel"]
    {'tp': 1, 'pp': 1, 'dp': 32, 'schedule': '1f1b', 'overlap_grad_reduce': False}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MegatronRow:
    """One row of Table 1: size, shape, parallelism, batch and achieved TFLOP/s per GPU."""

    params_B: float
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    gpus: int
    batch: int
    tflops_per_gpu: float
    pct_of_peak: float

    @property
    def dp(self) -> int:
        """Data-parallel size: GPUs / (tp x pp)."""
        return self.gpus // (self.tp * self.pp)


MEGATRON_TABLE1: tuple[MegatronRow, ...] = (
    MegatronRow(1.7, 24, 2304, 24, 1, 1, 32, 512, 137.0, 44.0),
    MegatronRow(3.6, 32, 3072, 30, 2, 1, 64, 512, 138.0, 44.0),
    MegatronRow(7.5, 32, 4096, 36, 4, 1, 128, 512, 142.0, 46.0),
    MegatronRow(18.4, 48, 6144, 40, 8, 1, 256, 1024, 135.0, 43.0),
    MegatronRow(39.1, 64, 8192, 48, 8, 2, 512, 1536, 138.0, 44.0),
    MegatronRow(76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140.0, 45.0),
    MegatronRow(145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148.0, 47.0),
    MegatronRow(310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155.0, 50.0),
    MegatronRow(529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163.0, 52.0),
    MegatronRow(1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163.0, 52.0),
)


def megatron_job(row: MegatronRow, policy: str = "random_ecmp") -> dict[str, Any]:
    """The job (as a parsed YAML dict) of one Table 1 row (module docstring's assumptions)."""
    return {"name": f"megatron-{row.params_B:g}b-{row.gpus}",
            "model": {"layers": row.layers, "hidden": row.hidden, "heads": row.heads, "seq_length": 2048,
                      "vocab": 51200},
            "parallel": {"tp": row.tp, "pp": row.pp, "dp": row.dp, "schedule": "1f1b",
                         "overlap_grad_reduce": False},
            "training": {"global_batch": row.batch, "micro_batch": 1, "precision": "fp16", "recompute": "full"},
            "gpu": {"preset": "A100-80GB"},
            # 2021's ColumnParallelLinear all-reduces its input gradient synchronously
            # (copy_to_tensor_model_parallel_region; the async one came in 2022-02)
            "framework": {"name": "megatron-lm", "version": "2021", "tp_bwd_overlap": False},
            "fabric": {"spec_file": "topo/specs/pod64k.yaml", "link_gbps": 200},
            "network": {"policy": policy}}


__all__ = ["MEGATRON_TABLE1", "MegatronRow", "megatron_job"]

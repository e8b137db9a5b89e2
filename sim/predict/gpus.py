"""GPU presets for ``python -m sim predict``: peak dense tensor-core TFLOP/s per precision,
HBM bandwidth and size, NVLink bandwidth, from the vendors' public datasheets.

Every figure is the *dense* one (the datasheets also print 2x "with sparsity"). NVLink is
given per direction and GPU (the datasheets print the bidirectional total: A100 600 GB/s,
H100 900 GB/s, H800 400 GB/s). HBM sizes are binary (an "80GB" part shows 81,920 MiB in
``nvidia-smi``). Sources (one line each, next to each preset):

* A100: NVIDIA A100 Tensor Core GPU datasheet (SXM4 columns): BF16/FP16 312 TFLOP/s,
  HBM2 1,555 GB/s (40GB) / HBM2e 2,039 GB/s (80GB), NVLink 600 GB/s; no FP8.
* H100 SXM5: NVIDIA H100 Tensor Core GPU datasheet: BF16/FP16 989 TFLOP/s, FP8 1,979
  TFLOP/s, HBM3 3.35 TB/s, 80GB, NVLink 900 GB/s.
* H800 SXM5: NVIDIA H800 product brief (export variant of H100 SXM5): the H100's compute
  and memory, NVLink 400 GB/s.
* H20: NVIDIA H20 specification (HGX H20): BF16/FP16 148 TFLOP/s, FP8 296 TFLOP/s, HBM3
  96GB at 4.0 TB/s, NVLink 900 GB/s.
* H200 SXM: NVIDIA H200 datasheet: H100's compute, HBM3e 141GB at 4.8 TB/s, NVLink 900 GB/s.
* H100-96GB-500W: the H100 of Meta's Grand Teton servers as torchtitan's benchmark pages
  describe it (benchmarks/llama3_h100_202412_torchtitan.md): 96GB HBM2e at 2.4 TB/s, the
  default 500 W power limit (``power_limit_W``; :attr:`GpuSpec.clock_factor`).

``chip`` names the compute die whose kernel tables apply (:mod:`sim.predict.kerneltable`:
H800, H200 and the Grand Teton part are H100 dies), ``sms`` its streaming multiprocessors
(A100 108, H100 SXM 132, H20 78: the tile/wave shape model), ``tdp_W`` the board power of
the datasheet (A100 SXM 400 W, H100/H200 SXM 700 W, H20 400 W) and ``idle_W`` the power of a
GPU waiting (energy, :mod:`sim.predict.energy`).

Example::

    >>> g = PRESETS["H100-SXM"]
    >>> g.peak_flops("bf16") / 1e12, g.peak_flops("fp8") / 1e12, g.nvlink_Bps / 1e9
    (989.0, 1979.0, 450.0)
    >>> PRESETS["A100-80GB"].peak_flops("fp8")
    0.0
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sim.predict import calibration
from sim.topology import SimInputError

PRECISIONS = ("bf16", "fp16", "fp8")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU model: dense peak TFLOP/s per precision (None: not supported), HBM GB/s
    (decimal) and GiB, NVLink GB/s per direction."""

    name: str
    tflops_bf16: float
    tflops_fp16: float
    tflops_fp8: Optional[float]
    hbm_GBps: float
    hbm_GiB: float
    nvlink_GBps: float
    chip: str = "H100"
    sms: int = 132
    tdp_W: float = 700.0
    power_limit_W: Optional[float] = None
    idle_W: float = 90.0

    @property
    def clock_factor(self) -> float:
        """Sustained tensor-core clock relative to the datasheet's, under a power limit
        below the TDP: dynamic power goes as f·V² and V tracks f, so f ∝ P^(1/3)
        (1.0 without a limit): ``(limit/TDP)^e`` with e = 1/3 by that argument (T. Mudge,
        "Power: a first-class architectural design constraint", IEEE Computer 34(4), 2001),
        the calibration's ``power_exponent``, which the fit holds there
        (:data:`sim.validation.fit.HELD`: every power-limited run of the validation set is a
        torchtitan run, so a fitted exponent could not be told from that stack's share).
        torchtitan's Grand Teton H100s at 500 W of 700: (500/700)^(1/3) = 0.894."""
        if self.power_limit_W is None or self.power_limit_W >= self.tdp_W:
            return 1.0
        return (self.power_limit_W / self.tdp_W) ** calibration.current().power_exponent

    def peak_flops(self, precision: str) -> float:
        """Dense tensor-core FLOP/s at ``precision`` (0.0 when the GPU has none)."""
        tf = {"bf16": self.tflops_bf16, "fp16": self.tflops_fp16, "fp8": self.tflops_fp8}[precision]
        return float(tf or 0.0) * 1e12

    @property
    def hbm_Bps(self) -> float:
        """HBM bandwidth in bytes/s."""
        return self.hbm_GBps * 1e9

    @property
    def hbm_bytes(self) -> float:
        """HBM capacity in bytes."""
        return self.hbm_GiB * 2**30

    @property
    def nvlink_Bps(self) -> float:
        """NVLink bandwidth per direction in bytes/s."""
        return self.nvlink_GBps * 1e9


PRESETS: dict[str, GpuSpec] = {g.name: g for g in (
    GpuSpec("A100-40GB", 312.0, 312.0, None, 1555.0, 40.0, 300.0, "A100", 108, 400.0),   # A100 datasheet, SXM4 40GB
    GpuSpec("A100-80GB", 312.0, 312.0, None, 2039.0, 80.0, 300.0, "A100", 108, 400.0),   # A100 datasheet, SXM4 80GB
    GpuSpec("H100-SXM", 989.0, 989.0, 1979.0, 3350.0, 80.0, 450.0, "H100", 132, 700.0),  # H100 datasheet, SXM5
    GpuSpec("H800", 989.0, 989.0, 1979.0, 3350.0, 80.0, 200.0, "H100", 132, 700.0),      # H800 product brief, SXM5
    GpuSpec("H20", 148.0, 148.0, 296.0, 4000.0, 96.0, 450.0, "H20", 78, 400.0),          # HGX H20 specification
    GpuSpec("H200", 989.0, 989.0, 1979.0, 4800.0, 141.0, 450.0, "H100", 132, 700.0),     # H200 datasheet, SXM
    # Meta's Grand Teton H100 (torchtitan's benchmarks): 96GB HBM2e at 2.4 TB/s, run at 500 W of 700
    GpuSpec("H100-96GB-500W", 989.0, 989.0, 1979.0, 2400.0, 96.0, 450.0, "H100", 132, 700.0, 500.0),
)}


def _key(name: str) -> str:
    """A GPU name as compared: upper case, without the vendor's and the server's words
    (NVIDIA, HGX, DGX), the form factor (SXM, SXM4, SXM5: every preset is the SXM part) and
    separators. ``_key("NVIDIA H100 SXM5 80GB") == "H10080GB"``."""
    s = name.upper()
    for word in ("NVIDIA", "HGX", "DGX"):
        s = s.replace(word, " ")
    s = "".join(ch for ch in s if ch.isalnum())
    for ff in ("SXM5", "SXM4", "SXM"):
        s = s.replace(ff, "")
    return s


#: The vendor's common names (as :func:`_key` reduces them) of each preset: the part number
#: alone where one preset has it ("H100" is the SXM5 part of HGX/DGX H100 servers; the PCIe
#: and NVL cards are not presets), with the memory size where that is what tells them apart
#: (A100 40GB / 80GB; the bare "A100" is ambiguous and refused with both).
ALIASES: dict[str, tuple[str, ...]] = {
    "A100": ("A100-40GB", "A100-80GB"),
    "A10040GB": ("A100-40GB",), "A10080GB": ("A100-80GB",),
    "H100": ("H100-SXM",), "H10080GB": ("H100-SXM",),
    "H800": ("H800",), "H80080GB": ("H800",),
    "H20": ("H20",), "H2096GB": ("H20",),
    "H200": ("H200",), "H200141GB": ("H200",),
}


def resolve_gpu(name: str, where: str, source: str = "") -> GpuSpec:
    """The preset a user's GPU name means: a preset's own name, or one of the vendor's
    common names for it (:data:`ALIASES`, case, spaces, dashes and "SXM"/"NVIDIA"/"HGX"
    ignored). ``SimInputError`` naming ``source`` and ``where`` for an ambiguous name (with
    its choices) or an unknown one (with every preset).

    >>> resolve_gpu("H100", "gpu.preset").name, resolve_gpu("nvidia a100 sxm4 80gb", "--gpu").name
    ('H100-SXM', 'A100-80GB')
    >>> resolve_gpu("A100", "gpu.preset", "j.yaml")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: j.yaml: gpu.preset: 'A100' is ambiguous: say A100-40GB, A100-80GB
    """
    at = f"{source}: {where}" if source else where
    if name in PRESETS:
        return PRESETS[name]
    exact = [p for p in PRESETS if _key(p) == _key(name)]
    choices = tuple(dict.fromkeys(exact)) or ALIASES.get(_key(name), ())
    if len(choices) == 1:
        return PRESETS[choices[0]]
    if choices:
        raise SimInputError(f"{at}: {name!r} is ambiguous: say {', '.join(choices)}")
    raise SimInputError(f"{at}: unknown GPU {name!r} (known: {', '.join(PRESETS)}); "
                        "the vendor's names of these (H100, H100 SXM5, A100 80GB ...) are accepted too")


__all__ = ["ALIASES", "GpuSpec", "PRECISIONS", "PRESETS", "resolve_gpu"]

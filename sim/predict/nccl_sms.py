"""The SMs an NCCL collective takes from the compute it overlaps (issue 31, twentieth round).

An NCCL collective runs as one kernel with one CTA (thread block) per channel, and an NCCL
CTA does not share its SM with another kernel's blocks: NCCL's maintainer, "NCCL CTAs won't
share an SM with compute kernels" and "If you are on DGX with 8 NICs ... it would use 16
SMs" (NVIDIA/nccl#689, 2023); one block of up to 640 threads a channel
(``NCCL_MAX_NTHREADS``, ``src/include/device.h``). So while a collective runs beside a
GEMM or an attention kernel on another stream, that kernel has ``sms − ctas`` SMs: a
kernel of ``compute_s`` alone that overlaps a collective of ``comm_s`` finishes
``min(comm_s, compute_s·S/(S−C))·C/S`` later (:func:`contention_s`): the work it could
not do on the C SMs while they were NCCL's. The collective's own time is unchanged (it is
bound by the link, not by the SMs it holds).

How many channels (CTAs) a ring collective gets, read from NCCL's code at the releases the
validation rows ran (v2.18.1 to v2.27; ``src/graph/search.cc`` ``ncclTopoCompute``,
``src/graph/connect.cc`` ``ncclTopoPostset``, ``src/enqueue.cc``
``getChannnelThreadInfo``):

* **Across servers** (:func:`net_ring_ctas`): the ring search finds one channel per NIC
  of the server's members of the communicator (k members, one NIC each: k channels) at
  the first per-channel speed of ``speedArrayInter`` (``sm90SpeedArrayInter`` on Hopper)
  the NIC carries: 24 GB/s on a 200 Gb/s NIC, 48 GB/s on a 400 Gb/s one. The search
  doubles them (halving the speed) unless the speed is under 25 GB/s, or the die is newer
  than sm80 with a speed under 50 GB/s and more than 4 channels; ``ncclTopoPostset``
  doubles them again ("Duplication should be complete now"); on Hopper across nodes with a
  ring speed over 45 GB/s it doubles them once more, up to 32 channels at v2.18–v2.20
  (``2*nChannels <= MAXCHANNELS``) and only while under 16 from v2.21 (``nChannels <
  16``). An A100 DGX (8 HDR NICs): 8 → 16 CTAs, the maintainer's figure; an H100 server
  with 8 NDR NICs: 8 → 16 → 32 at v2.18–v2.20, 16 from v2.21; one member a server on a
  400 Gb/s NIC: 1 → 2 → 4.
* **Inside a server** (:data:`NVLINK_RING_CTAS`): an NVSwitch server's ring search finds
  6 channels (A100: 12 NVLinks × ``SM80_NVLINK_BW`` 20 GB/s at 40 GB/s a channel; H100:
  18 × 20 at 60), doubled by the search (speed ≥ 25 GB/s) and by ``ncclTopoPostset``:
  24 CTAs, as the 24-block ``ncclAllGather`` of an FSDP run on an H100 shows (NVIDIA
  developer forum, "Compute-communication overlap causes severe GEMM performance
  degradation because of tail effect", 2025). An NVLS all-reduce: 16
  (:data:`sim.predict.comm.NVLS_CHANNELS`).
* **Small messages** (:func:`message_ctas`): a ring/tree collective of n bytes drops
  channels while ``n < nc · 512 · 64`` (``NCCL_SIMPLE_MAX_NTHREADS`` × 
  ``NCCL_SIMPLE_THREAD_THRESHOLD``): below 32 KiB a channel.

The published measurement this mechanism stands for: overlapping GEMM-heavy training
compute with collectives slows the compute by 18.9 % on average, 40 % at most, on A100 and
H100 (Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
Distributed Deep Learning", arXiv 2507.03114, 2025); 16 of 108 SMs is 14.8 %, 32 of 132
is 24.2 %. Not modelled: the wave quantisation of a GEMM sized to the SM count (the forum
post's GEMM of 132 tiles took a second wave: ~2×), and HBM bandwidth the collective's copies
take (a 400 Gb/s ring moves ~100 GB/s of HBM of 2–3.35 TB/s).

Example::

    >>> net_ring_ctas("A100", 8, 25e9, (2, 18)), net_ring_ctas("H100", 8, 50e9, (2, 18))
    (16, 32)
    >>> net_ring_ctas("H100", 8, 50e9, (2, 21)), net_ring_ctas("H100", 1, 50e9, (2, 21))
    (16, 4)
    >>> round(contention_s(10e-3, 4e-3, 16, 108) * 1e3, 3)     # 4 ms of a ring beside 10 ms of GEMMs
    0.593
"""
from __future__ import annotations

from typing import Optional

from sim.topology import SimInputError

#: ``speedArrayInter`` and ``sm90SpeedArrayInter`` (GB/s a channel; ``src/graph/search.cc``,
#: the same at v2.18.1 and v2.21.5): the search starts at the first speed the NIC carries
SPEEDS_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24,
                0.12)
SPEEDS_INTER_SM90 = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
#: NCCL's channel limit (``MAXCHANNELS``, ``src/include/device.h``)
MAX_CHANNELS = 32
#: CTAs of a ring collective inside an NVSwitch server (module docstring)
NVLINK_RING_CTAS = 24
#: CTAs of an NVLS all-reduce (``NVLS_NCHANNELS_SM90``, ``src/transport/nvls.cc``)
NVLS_CTAS = 16
#: ``NCCL_SIMPLE_MAX_NTHREADS`` × ``NCCL_SIMPLE_THREAD_THRESHOLD``: bytes a channel needs to stay
SIMPLE_BYTES_PER_CHANNEL = 512 * 64
#: dies NCCL treats as compute capability 9.0 (Hopper)
SM90_CHIPS = ("H100", "H20")


def parse_version(v: str, source: str = "") -> tuple[int, int]:
    """``"2.21"`` or ``"2.21.5"`` → (2, 21); ``SimInputError`` naming ``framework.nccl_version``.

    >>> parse_version("2.18.1")
    (2, 18)
    """
    parts = str(v).split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise SimInputError(f"{source}: framework.nccl_version: a release like '2.21', got {v!r}") from None
    return major, minor


def net_ring_ctas(chip: str, local: int, nic_Bps: float, version: tuple[int, int]) -> int:
    """CTAs of a ring collective across servers whose communicator has ``local`` members
    in a server, one NIC of ``nic_Bps`` each, under NCCL ``version`` (module docstring)."""
    sm90 = chip in SM90_CHIPS
    speeds = SPEEDS_INTER_SM90 if sm90 else SPEEDS_INTER
    nic_GBps = nic_Bps / 1e9
    speed = next((s for s in speeds if s <= nic_GBps), speeds[-1])
    nc = max(1, local)
    if speed >= 25.0 and not (sm90 and speed < 50.0 and nc > 4):      # ncclTopoCompute's duplication
        nc, speed = min(2 * nc, MAX_CHANNELS // 2), speed / 2.0
    nc = min(MAX_CHANNELS, 2 * nc)                                    # ncclTopoPostset
    if sm90 and speed > 45.0 and version >= (2, 18):                  # 4 compute channels per search channel
        if (version < (2, 21) and 2 * nc <= MAX_CHANNELS) or (version >= (2, 21) and nc < 16):
            nc = 2 * nc
    return nc


def message_ctas(ctas: int, size_bytes: float) -> int:
    """The channels a ring/tree collective of ``size_bytes`` keeps of ``ctas``
    (``getChannnelThreadInfo``: one fewer while the bytes are under 32 KiB a channel).

    >>> message_ctas(16, 64 * 2**20), message_ctas(16, 128 * 2**10)
    (16, 4)
    """
    nc = ctas
    while nc >= 2 and size_bytes < nc * SIMPLE_BYTES_PER_CHANNEL:
        nc -= 1
    return nc


def contention_s(compute_s: float, comm_s: float, ctas: int, sms: int) -> float:
    """What ``compute_s`` of kernels (timed alone on ``sms`` SMs) lose while a collective of
    ``comm_s`` holding ``ctas`` SMs runs beside them: they run on ``sms − ctas`` SMs for
    ``min(comm_s, compute_s·sms/(sms−ctas))`` and finish that long × ``ctas/sms`` later."""
    if compute_s <= 0 or comm_s <= 0 or ctas <= 0 or sms <= 0:
        return 0.0
    c = min(ctas, sms - 1)
    return min(comm_s, compute_s * sms / (sms - c)) * c / sms


def collective_ctas(chip: str, medium: str, note: str, local: int, nic_Bps: float, size_bytes: float,
                    version: tuple[int, int], override: Optional[int] = None) -> int:
    """CTAs a collective that ran on ``medium`` (``nvlink`` | ``fabric``, with its
    :class:`sim.predict.comm.CommTime` ``note``) holds; ``override``: the job's
    ``framework.nccl_ctas``.

    >>> collective_ctas("H100", "nvlink", "", 8, 50e9, 2**30, (2, 21))
    24
    >>> collective_ctas("H100", "nvlink", "NCCL NVLS (NVLink SHARP)", 8, 50e9, 2**30, (2, 21))
    16
    >>> collective_ctas("A100", "fabric", "", 8, 25e9, 2**30, (2, 18), override=8)
    8
    """
    if medium not in ("nvlink", "fabric"):
        return 0
    if override is not None:
        return override
    if medium == "nvlink":
        return NVLS_CTAS if "NVLS" in note else message_ctas(NVLINK_RING_CTAS, size_bytes)
    return message_ctas(net_ring_ctas(chip, local, nic_Bps, version), size_bytes)


__all__ = ["MAX_CHANNELS", "NVLINK_RING_CTAS", "NVLS_CTAS", "collective_ctas", "contention_s", "message_ctas",
           "net_ring_ctas", "parse_version"]

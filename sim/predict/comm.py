"""Communication of a training job: its process groups (Megatron-LM's rank order) and the
time of each collective, on NVLink inside a server or simulated on the fabric.

**Groups.** Global rank ``r = tp + TP·(cp + CP·(dp + DP·pp))`` (Megatron's default order
tp-cp-ep-dp-pp: tensor parallel innermost, so a TP group is one server's NVLink domain);
the EP group is ``ep`` consecutive DP ranks, the expert-DP group the others. Ranks are
placed server-major on the fabric (``sim.workloads.place_job``, contiguous): rank r is GPU
``r mod G`` of server ``r // G`` (G GPUs per server: every rail, or the whole job when it
is smaller than one server), on rail ``r mod G``.

**Inside a server** (every group of the kind within one server): ``α + factor·S/(B·eff)``
with the GPU's NVLink bandwidth per direction B, ``kernels.nvlink`` eff and α
``kernels.nvlink_alpha_s``; factor ``2(n−1)/n`` for all-reduce, ``(n−1)/n`` for
all-gather, reduce-scatter and all-to-all. An all-reduce on a Hopper server
(NVSwitch with NVLink SHARP; ``network.nvls``) runs as NCCL chooses between its ring and its
NVLS algorithm: the one of least modelled time (:func:`nvls_allreduce_s`). Under the ``tccl`` / ``tccl_gor`` policies with
``network.dual_channel`` the all-reduce / all-gather / reduce-scatter are split between
NVLink and the GPU's RoCE NIC by TCCL's own planner (``host.tccl.dualchannel.DualChannel``;
an all-gather of S is an all-reduce of S/2 on the wire); the NIC is assumed free. The RoCE
share's latency is NVLink's plus ``kernels.roce_alpha_s`` (the collective's own latency is
paid on either channel), so a latency-bound message stays wholly on NVLink.

**Across servers**: every group of the kind at once (the worst case: in the real run the
stages' reductions are staggered by the pipeline's cool-down), over NCCL's channels (a group
with k members in a server runs k rings on k NICs, each carrying 1/k) — TCCL's planner
(``sim.workloads.collective_phases``) gives each group's ring or All-to-All rounds, the
groups' flows are merged per phase and simulated on the fabric under the job's policy
(``sim.policies.run_phase``: hash-model routing, TCCL ports, GOR), and the time is the
simulator's calibrated prediction (``sim.model.predict``). An all-reduce across servers runs
as NCCL chooses between its ring and its tree (:func:`tree_features`): the one of least
modelled time. Pipeline send/receive is one
phase of every stage boundary's transfers.

Example::

    >>> from sim.predict.job import job_from_dict
    >>> j = job_from_dict({"model": {"layers": 4, "hidden": 256, "heads": 8, "seq_length": 128,
    ...                              "vocab": 1000}, "parallel": {"tp": 2, "pp": 2, "dp": 4},
    ...                    "training": {"global_batch": 8}, "gpu": {"preset": "H800"}}, "j.yaml")
    >>> groups(j, "tp")[:2], groups(j, "dp")[0], pp_pairs(j)[0]
    ([[0, 1], [2, 3]], [0, 2, 4, 6], (0, 8))
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from host.tccl.dualchannel import ChannelEstimate, DualChannel
from sim.model import Features, ModelParams, features_of, predict
from sim.policies import GorOptions, run_phase
from sim.predict.job import TrainingJob
from sim.topology import TIER, SimFabric, SimInputError
from sim.workloads import Job, Phase, collective_phases

FACTOR = {"allreduce": lambda n: 2.0 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
          "reducescatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n}


#: NCCL's NVLink SHARP model (``src/graph/tuning.cc``, ``ncclTopoTuneModel``): an NVLS
#: all-reduce channel runs at the ring channel's NVLink bandwidth × ``nvlsEfficiency`` (Hopper
#: 0.85; Ampere 0: no NVLS) × 2 ("AllReduce pipelines two operations": the switch reduces and
#: multicasts, so a GPU sends and receives its data once instead of 2(n−1)/n times) ×
#: (c − 1)/c over its c channels (``src/transport/nvls.cc``: ``NVLS_NCHANNELS_SM90`` 16),
#: with a latency of 25 µs (``hwLatencies`` NVLINK, NVLS/Simple) against the ring's; NCCL runs
#: the algorithm of least modelled time (``ncclTopoGetAlgoTime``). Reduce-scatter and
#: all-gather stay on the ring inside a server (there NVLS is modelled ×(n−1)/n instead of
#: ×2, below the ring), as does everything on an A100.
NVLS_EFFICIENCY = {"H100": 0.85, "H20": 0.85}
NVLS_CHANNELS = 16
NVLS_LATENCY_S = 25e-6


def nvls_allreduce_s(chip: str, n: int, size_bytes: float, ring_Bps: float) -> Optional[float]:
    """Time of an NVLS all-reduce of ``size_bytes`` per rank over ``n`` GPUs of one server
    whose ring runs at ``ring_Bps`` (NVLink per direction × ``kernels.nvlink``), or None where
    NCCL has no NVLS (module constants).

    >>> t = nvls_allreduce_s("H100", 8, 256e6, 450e9 * 0.78)
    >>> round(t * 1e3, 3), nvls_allreduce_s("A100", 8, 256e6, 300e9 * 0.78)
    (0.826, None)
    """
    eff = NVLS_EFFICIENCY.get(chip, 0.0)
    if eff <= 0.0 or n < 2:
        return None
    gain = 2.0 * eff * (NVLS_CHANNELS - 1) / NVLS_CHANNELS
    return NVLS_LATENCY_S + FACTOR["allreduce"](n) * size_bytes / (ring_Bps * gain)


#: NCCL's tree all-reduce against its ring (``src/graph/tuning.cc``, ``ncclTopoTuneModel``):
#: the tree's bus bandwidth is the ring's × 0.92 ("busBw * .92" for Tree/AllReduce) and its
#: algorithm bandwidth half of that (ratio .5), against the ring's busBw·n/(2(n−1)); its
#: latency is ``2·((ppn − 1)·intraLat + log2(nNodes)·interLat)`` against the ring's
#: ``2(n − 1)`` steps. Only all-reduce has a tree; reduce-scatter and all-gather run on rings.
TREE_BUS_SHARE = 0.92


def tree_features(ring: Features, n: int, nodes: int) -> Features:
    """The features of NCCL's tree all-reduce over ``n`` ranks on ``nodes`` servers, from
    those of the simulated ring (the same flows' bandwidth; NCCL's step counts).

    >>> f = tree_features(Features(1.0, 2 * 63, 3 * 2 * 63), 64, 64)
    >>> round(f.transfer_s, 3), f.steps, f.hop_steps
    (1.104, 12.0, 36.0)
    """
    ppn = max(1, n // max(1, nodes))
    steps = 2.0 * ((ppn - 1) + math.ceil(math.log2(max(nodes, 2))))
    hops = ring.hop_steps / ring.steps if ring.steps else 0.0
    return Features(ring.transfer_s * n / ((n - 1) * TREE_BUS_SHARE), steps, steps * hops)


def _coords(j: TrainingJob) -> tuple[int, int, int, int]:
    p = j.parallel
    return p.tp, p.cp, p.dp, p.pp


def groups(j: TrainingJob, kind: str) -> list[list[int]]:
    """Global ranks of every group of ``kind``: ``tp`` | ``cp`` | ``dp`` (the gradients'
    group: DP × CP ranks, as Megatron's and torchtitan's) | ``ep`` | ``edp`` |
    ``dps`` (HSDP's shard groups: ``framework.hybrid_shard`` consecutive DP ranks) | ``dpr``
    (its replica groups) | ``tp_cp`` (TP × CP ranks: Megatron-Core's FP8 amax-reduction
    group) | ``world`` (every rank)."""
    TP, CP, DP, PP = _coords(j)
    if kind == "world":
        return [list(range(TP * CP * DP * PP))]
    EP = j.parallel.ep
    HS = j.framework.hybrid_shard if 0 < j.framework.hybrid_shard < DP and DP % j.framework.hybrid_shard == 0 else DP
    out: list[list[int]] = []
    for pp in range(PP):
        for dp in range(DP):
            for cp in range(CP):
                for tp in range(TP):
                    base = tp + TP * (cp + CP * (dp + DP * pp))
                    if kind == "tp" and tp == 0:
                        out.append([base + i for i in range(TP)])
                    elif kind == "tp_cp" and tp == 0 and cp == 0:
                        out.append([base + i for i in range(TP * CP)])
                    elif kind == "cp" and cp == 0:
                        out.append([base + TP * i for i in range(CP)])
                    elif kind == "dp" and dp == 0 and cp == 0:          # gradients: over DP x CP
                        out.append([base + TP * i for i in range(CP * DP)])
                    elif kind == "ep" and EP <= DP and dp % EP == 0:
                        out.append([base + TP * CP * i for i in range(EP)])
                    elif kind == "ep" and EP > DP and tp == 0 and dp % (EP // TP) == 0:   # EP over TP x DP
                        out.append([base + t + TP * CP * i for i in range(EP // TP) for t in range(TP)])
                    elif kind == "edp" and EP <= DP and dp < EP and cp == 0:
                        out.append([base + TP * (c + CP * EP * i) for i in range(DP // EP) for c in range(CP)])
                    elif kind == "edp" and EP > DP and dp < EP // TP and cp == 0:
                        out.append([base + TP * (c + CP * (EP // TP) * i) for i in range(DP * TP // EP)
                                    for c in range(CP)])
                    elif kind == "dps" and dp % HS == 0 and cp == 0:
                        out.append([base + TP * i for i in range(CP * HS)])
                    elif kind == "dpr" and dp < HS:
                        out.append([base + TP * CP * HS * i for i in range(DP // HS)])
    return out


def pp_pairs(j: TrainingJob) -> list[tuple[int, int]]:
    """(sender, receiver) of every pipeline boundary (stage s → s+1) of every replica."""
    TP, CP, DP, PP = _coords(j)
    stride = TP * CP * DP
    return [(r, r + stride) for r in range(stride * (PP - 1))]


@dataclass(frozen=True, slots=True)
class CommTime:
    """A collective's time, where it ran (``nvlink`` | ``fabric`` | ``none``), its note."""

    seconds: float
    medium: str
    note: str = ""


class CommModel:
    """Times the job's collectives (module docstring); results cached per (kind, size).

    ``fabric_times``: a dict shared by the models of one job that differ only in its
    ``kernels`` section (``sim calibrate-run`` predicts a job under many efficiency
    factors): the collectives simulated on the fabric depend on the fabric, the placement
    and the network policy, not on the kernels, and are simulated once.
    """

    def __init__(self, j: TrainingJob, sf: SimFabric, job_ranks: Job,
                 model: Optional[ModelParams] = None,
                 fabric_times: Optional[dict[tuple[str, str, float], CommTime]] = None) -> None:
        self.j, self.sf, self.ranks = j, sf, job_ranks.ranks
        self.per_server = job_ranks.gpus_per_server
        self.model = model or ModelParams()
        self.nic_Bps = float(sf.capacity_Bps[sf.tier == TIER["nic_up"]].max())
        kp = j.kernels
        self.nvlink = ChannelEstimate(kp.nvlink_alpha_s, j.gpu.nvlink_Bps * kp.nvlink)
        # A collective pays NCCL's in-server latency (``nvlink_alpha_s``: launch and the GPUs'
        # handshake) whichever channel carries its bytes; the RoCE share adds the NIC's own
        # (``roce_alpha_s``). With the RoCE channel at 4 µs against NVLink's 8 µs, a small
        # message went wholly to the NIC ("0 % on NVLink" for a group inside one server).
        self.roce = ChannelEstimate(kp.nvlink_alpha_s + kp.roce_alpha_s, self.nic_Bps)
        self.dual = j.network.dual_channel and j.network.policy in ("tccl", "tccl_gor")
        self.fabric_wall_s = 0.0
        self._cache: dict[tuple[str, str, float], CommTime] = {}
        self._local: dict[str, int] = {}
        self._fabric_times = {} if fabric_times is None else fabric_times

    @property
    def timed(self) -> dict[tuple[str, str, float], CommTime]:
        """Every collective timed so far: (kind, collective, bytes per rank) → time."""
        return dict(self._cache)

    def local_members(self, kind: str) -> int:
        """Members of a ``kind`` group in its first rank's server (NCCL's channels across
        servers follow them: :func:`sim.predict.nccl_sms.net_ring_ctas`)."""
        if kind not in self._local:
            g = groups(self.j, kind)[0]
            self._local[kind] = sum(1 for r in g if self._server(r) == self._server(g[0]))
        return self._local[kind]

    def _server(self, r: int) -> int:
        return r // self.per_server

    def _intra(self, gs: list[list[int]]) -> bool:
        return all(len({self._server(r) for r in g}) == 1 for g in gs)

    def _nvlink(self, collective: str, n: int, size: float) -> CommTime:
        if collective != "alltoall" and self.dual:
            s = size if collective == "allreduce" else size / 2.0
            split = DualChannel(self.nvlink, self.roce, tp_size=max(2, n)).split(int(s))
            return CommTime(split.time_s, "nvlink", f"dual channel: {100 * split.nvlink_fraction:.0f} % on NVLink")
        ring = self.nvlink.alpha_s + FACTOR[collective](n) * size / self.nvlink.bytes_per_s
        if collective == "allreduce" and self.j.network.nvls:
            nvls = nvls_allreduce_s(self.j.gpu.chip, n, size, self.nvlink.bytes_per_s)
            if nvls is not None and nvls < ring:
                return CommTime(nvls, "nvlink", "NCCL NVLS (NVLink SHARP)")
        return CommTime(ring, "nvlink")

    def _simulate(self, phases: list[Phase]) -> float:
        return predict(self._features(phases), self.model)

    def _features(self, phases: list[Phase]) -> Features:
        t0 = time.perf_counter()
        per = []
        for ph in phases:
            r = run_phase(self.sf, ph, self.j.network.policy, None, self.j.network.seed, GorOptions())
            if r.undeliverable:
                raise SimInputError(f"{self.j.source}: fabric: {r.undeliverable} flows of {ph.name} undeliverable")
            slow = int(np.argmax(r.fct_s)) if len(r.fct_s) else 0
            per.append((ph.repeat, float(r.fct_s[slow]) if len(r.fct_s) else 0.0,
                        int(r.hops.max()) if len(r.hops) else 0))
        self.fabric_wall_s += time.perf_counter() - t0
        return features_of(per)

    def collective(self, kind: str, collective: str, size_bytes: float) -> CommTime:
        """Time of one ``collective`` of ``size_bytes`` per rank in every ``kind`` group."""
        key = (kind, collective, round(size_bytes))
        if key in self._cache:
            return self._cache[key]
        if key in self._fabric_times:
            self._cache[key] = self._fabric_times[key]
            return self._cache[key]
        gs = groups(self.j, kind)
        n = len(gs[0])
        if n == 1 or size_bytes <= 0:
            out = CommTime(0.0, "none")
        elif kind == "ep" and collective == "alltoall" and self.j.framework.moe_dispatcher != "alltoall":
            out = self.moe_dispatch(gs[0], size_bytes)
        elif self._intra(gs):
            out = self._nvlink(collective, n, size_bytes)
        else:
            merged: list[list[Phase]] = []
            for g in gs:
                sub = [dataclasses.replace(self.ranks[r], rank=i) for i, r in enumerate(g)]
                job = Job(list(dict.fromkeys(r.server for r in sub)), sub, 1)
                ph = collective_phases(self.sf, job, collective, int(size_bytes), "ring", self.j.network.order, 1)
                merged.append(self._channels(ph, sub) if collective != "alltoall" else ph)
            phases = [Phase(parts[0].name, np.concatenate([p.src_nic for p in parts]),
                            np.concatenate([p.dst_nic for p in parts]),
                            np.concatenate([p.size_bytes for p in parts]), parts[0].repeat)
                      for parts in zip(*merged)]
            note = f"{len(gs)} groups of {n} simulated at once"
            local_s = 0.0
            if collective == "alltoall":
                phases, local_s = self._alltoall_local(phases, gs[0], n, size_bytes)
                note += f", server-local peers on NVLink ({1e3 * local_s:.2f} ms)"
            feats = self._features(phases)
            t = max(predict(feats, self.model), local_s)
            if collective == "allreduce":
                nodes = len({self._server(r) for r in gs[0]})
                tree = predict(tree_features(feats, n, nodes), self.model)
                if tree < t:
                    t, note = tree, note + ", NCCL tree"
            out = CommTime(t, "fabric", note)
            self._fabric_times[key] = out
        self._cache[key] = out
        return out

    def _alltoall_local(self, phases: list[Phase], group: list[int], n: int, size_bytes: float
                        ) -> tuple[list[Phase], float]:
        """An all-to-all across servers as NCCL runs it: a rank's chunk for a peer in its
        own server goes by the P2P transport (CUDA peer access over NVLink: NCCL's
        ``NCCL_P2P_LEVEL`` / ``NCCL_P2P_DISABLE``, user guide, "Environment Variables"),
        not through its NIC; those flows leave the fabric's phases and take
        ``α + L·(S/n)/B`` on NVLink for L server-local peers, concurrently with the network
        part (the sends of one ``ncclGroupStart/End``). NCCL posts every peer's send at once,
        so a NIC carries its n−1−L remote chunks back to back: the pairwise rounds (each NIC
        one chunk a round) count n−1−L rounds of network time, not n−1. Returns the remote
        phases and the NVLink seconds."""
        rails = self.sf.rails
        local = len([r for r in group if self._server(r) == self._server(group[0])]) - 1
        share = (n - 1 - local) / (n - 1)
        out = [Phase(ph.name, ph.src_nic[keep], ph.dst_nic[keep], ph.size_bytes[keep], ph.repeat * share)
               for ph in phases for keep in [ph.src_nic // rails != ph.dst_nic // rails]]
        nvl = self.nvlink.alpha_s + local * size_bytes / n / self.nvlink.bytes_per_s if local else 0.0
        return out, nvl

    def moe_dispatch(self, group: list[int], size_bytes: float) -> CommTime:
        """One MoE dispatch or combine by DeepEP (``framework.moe_dispatcher``), a rank's
        ``size_bytes`` being its tokens × the experts each picks × hidden × bytes.

        Normal kernels (``deepep``): a token crosses the network once per remote server
        holding one of its k experts — with experts spread evenly over N servers, each
        remote server is hit with probability ``1 − (1 − 1/N)^k`` — and is then forwarded
        over NVLink to each GPU it goes to (``n·(1 − (1 − 1/n)^k)`` distinct GPUs of the
        group). Time ``max(RDMA bytes / (NIC × η), NVLink bytes / (NVLink × 0.95)) + 30 µs``
        with η = ``0.92 (1 − e^(−QPs))``: DeepEP's README measures 43-46 GB/s of the CX7's
        ~50 on RDMA and 153-158 of ~160 GB/s on NVLink (H800, EP 8-64); one queue pair per
        channel is ECMP-bound on RoCE, several spread the channel (Tencent's multi-QP DeepEP).
        Low-latency kernels (``deepep_ll``): every (token, expert) pair to a remote GPU goes
        over RDMA by itself, plus the kernel's latency (163-194 µs from EP 8 to 256 in the
        same README)."""
        j, fw = self.j, self.j.framework
        n = len(group)
        servers = {self._server(r) for r in group}
        N = len(servers)
        k = max(1, j.model.top_k)
        unique = size_bytes / k                                 # this rank's tokens, once each
        eta = 0.92 * (1.0 - float(np.exp(-fw.moe_qps_per_channel)))
        nic = self.nic_Bps * eta
        if fw.moe_dispatcher == "deepep_ll":
            remote = size_bytes * (n - n / max(N, 1)) / n
            lat = float(np.interp(np.log2(max(n, 8)), [3, 4, 5, 6, 7, 8], [163, 173, 182, 186, 192, 194])) * 1e-6
            t = lat + remote / nic
            return CommTime(t, "fabric", f"DeepEP low-latency, {N} servers, {remote / 1e6:.1f} MB over RDMA")
        hit = 1.0 - (1.0 - 1.0 / N) ** k if N > 1 else 0.0
        rdma = unique * (N - 1) * hit
        gpus = n * (1.0 - (1.0 - 1.0 / n) ** k)
        nvl = unique * gpus
        t = 30e-6 + max(rdma / nic, nvl / (self.j.gpu.nvlink_Bps * 0.95))
        return CommTime(t, "fabric" if N > 1 else "nvlink",
                        f"DeepEP normal, {N} servers: {rdma / 1e6:.1f} MB RDMA, {nvl / 1e6:.1f} MB NVLink")

    def _channels(self, phases: list[Phase], sub: list) -> list[Phase]:
        """NCCL's channels: a group with k members in a server runs k rings, ring c with
        every member moved to the c-th next member of its server, each ring on its own NICs
        and carrying 1/k of the data (so a DP group of whole servers uses every NIC of them,
        and one GPU per server — a TP-8 job's DP group — only its own)."""
        rails = self.sf.rails
        by_server: dict[int, list[int]] = {}
        for r in sub:
            nic = self.sf.host_index[r.server] * rails + r.rail
            by_server.setdefault(nic // rails, []).append(nic)
        k = min(len(v) for v in by_server.values())
        if k <= 1:
            return phases
        succ = {}
        for nics in by_server.values():
            nics = sorted(nics)
            for i, nic in enumerate(nics):
                succ[nic] = [nics[(i + c) % len(nics)] for c in range(k)]
        out = []
        for ph in phases:
            src = np.concatenate([np.array([succ[int(x)][c] for x in ph.src_nic], np.int64) for c in range(k)])
            dst = np.concatenate([np.array([succ[int(x)][c] for x in ph.dst_nic], np.int64) for c in range(k)])
            out.append(Phase(ph.name, src, dst, np.concatenate([ph.size_bytes / k] * k), ph.repeat))
        return out

    def p2p(self, size_bytes: float) -> CommTime:
        """Time of one pipeline send (every stage boundary at once)."""
        key = ("pp", "sendrecv", round(size_bytes))
        if key in self._cache:
            return self._cache[key]
        if key in self._fabric_times:
            self._cache[key] = self._fabric_times[key]
            return self._cache[key]
        pairs = pp_pairs(self.j)
        if not pairs or size_bytes <= 0:
            out = CommTime(0.0, "none")
        elif self._intra([list(p) for p in pairs]):
            out = CommTime(self.nvlink.alpha_s + size_bytes / self.nvlink.bytes_per_s, "nvlink")
        else:
            nic = np.array([self.sf.host_index[r.server] * self.sf.rails + r.rail for r in self.ranks], np.int64)
            src = np.array([a for a, _ in pairs], np.int64)
            dst = np.array([b for _, b in pairs], np.int64)
            ph = Phase("pp-sendrecv", nic[src], nic[dst], np.full(len(src), float(size_bytes)), 1.0)
            out = CommTime(self._simulate([ph]), "fabric", f"{len(pairs)} stage-boundary transfers at once")
            self._fabric_times[key] = out
        self._cache[key] = out
        return out


__all__ = ["CommModel", "CommTime", "NVLS_EFFICIENCY", "groups", "nvls_allreduce_s", "pp_pairs", "tree_features"]

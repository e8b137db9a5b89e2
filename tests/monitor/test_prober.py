"""The prober's parts without a network (monitor.probeframe, monitor.prober,
monitor.probestats): probe frames and their ICRC, counting by send epoch, the files it
writes, the window statistics read back, and its bad-input exits."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from host.nic.frames import verify_icrc
from host.nic.qp import Receiver
from monitor.probeframe import ProbeTemplate, parse_probe
from monitor.prober import Prober, ProberError, plan_id_of
from monitor.probeplan import ProbePlan
from monitor.probes import plan_probes
from monitor.probestats import ProbeStatsReader
from topo.model import build_fabric

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plan() -> ProbePlan:
    return plan_probes(build_fabric())


def _frame(plan: ProbePlan, name: str, seq: int, send_s: float, plan_id: int = -1) -> bytes:
    p = next(p for p in plan.paths if p.name == name)
    nic = plan.nics[p.src_nic]
    t = ProbeTemplate(nic.gateway_mac, nic.mac, p.src_ip, p.dst_ip, p.sport)
    index = [q.name for q in plan.paths].index(name)
    return t.frame(plan_id_of(plan) if plan_id < 0 else plan_id, index, seq, int(send_s * 1e9))


def test_probe_frame_is_rocev2_with_a_valid_icrc(plan: ProbePlan) -> None:
    fr = _frame(plan, "p0", 7, 12.5)
    assert verify_icrc(fr)                       # the NIC emulator's own ICRC check agrees
    info = parse_probe(fr)
    assert info is not None and info.seq == 7 and info.send_ns == 12_500_000_000
    assert info.ecn == 2 and info.sport == plan.paths[0].sport
    assert fr[0:6] == bytes.fromhex(plan.nics[plan.paths[0].src_nic].gateway_mac.replace(":", ""))


def test_the_nic_emulator_ignores_a_probe(plan: ProbePlan) -> None:
    """A UD SEND to the probe QP is not an RC data opcode: no flow, no reply, no count."""
    rx = Receiver()
    assert rx.on_frame(_frame(plan, "p0", 0, 1.0), 1.0) == [] and rx.flows == {}


def _receiver(plan: ProbePlan, tmp_path: Path) -> tuple[Prober, str]:
    name = plan.paths_to("b1s0")[0].name
    return Prober(plan, "b1s0", tmp_path, interval_s=1.0, grace_s=0.5), name


def test_counts_good_corrupted_late_and_stray_probes(plan: ProbePlan, tmp_path: Path) -> None:
    pr, name = _receiver(plan, tmp_path)
    pr.on_frame(_frame(plan, name, 0, 10.2), 10.201)
    pr.on_frame(_frame(plan, name, 1, 10.3), 10.302)
    bad = bytearray(_frame(plan, name, 2, 10.4))
    bad[70] ^= 0x10                              # a bit error in the payload
    pr.on_frame(bytes(bad), 10.401)
    pr.on_frame(_frame(plan, name, 3, 10.5, plan_id=1234), 10.501)    # another plan's probe
    pr.on_frame(_frame(plan, plan.paths_to("b0s0")[0].name, 0, 10.5), 10.5)  # not for b1s0
    pr.write(pr.counters.close_epochs(11))
    pr.on_frame(_frame(plan, name, 4, 10.9), 11.6)                    # later than the grace
    pr.write(pr.counters.close_epochs(12))
    snap = json.loads((tmp_path / "probe-b1s0.json").read_text())
    assert snap["epoch"] == 12 and snap["host"] == "b1s0"
    assert (snap["received"][name], snap["corrupted"][name], snap["late"][name]) == (2, 1, 1)
    assert snap["stray"] == 1
    prom = (tmp_path / "probe-b1s0.prom").read_text()
    assert f'astral_probe_received_total{{dst_nic="b1s0-eth' in prom
    assert f'path="{name}"' in prom and "astral_probe_latency_seconds_bucket" in prom


class QueuedFrames:
    """A socket's receive queue as ``recvfrom`` sees it: frames the kernel took while
    the prober was busy (``addr[2]`` is the packet type: 0, to this host)."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = list(frames)

    def recvfrom(self, _size: int) -> tuple[bytes, tuple[str, int, int]]:
        if not self.frames:
            raise BlockingIOError
        return self.frames.pop(0), ("b1s0-eth0", 0x0800, 0)


def test_probes_queued_while_the_prober_was_late_are_not_late(plan: ProbePlan,
                                                               tmp_path: Path) -> None:
    """The prober's loop wakes 0.9 s after epoch 10 ended (a busy CPU): 300 probes of
    epoch 10 wait in the socket. They arrived in time: counted received, none late."""
    pr, name = _receiver(plan, tmp_path)
    queued = QueuedFrames([_frame(plan, name, i, 10.0 + i / 1000) for i in range(300)])
    pr.socks = {"b1s0-eth0": queued}                     # type: ignore[dict-item]
    assert pr.close_due(11.9) == 12.5                    # epoch 11 is due at 12 + grace
    snap = json.loads((tmp_path / "probe-b1s0.json").read_text())
    assert snap["epoch"] == 11 and queued.frames == []
    assert (snap["received"][name], snap["late"][name]) == (300, 0)
    pr.socks = {}


def _snap(tmp: Path, host: str, epoch: int, sent: dict[str, int], received: dict[str, int]) -> None:
    (tmp / f"probe-{host}.json").write_text(json.dumps({
        "epoch": epoch, "interval_s": 1.0, "sent": sent, "received": received,
        "corrupted": {k: 0 for k in received}, "ce": {k: 0 for k in received},
        "late": {k: 0 for k in received}, "latency_ms_p50": {k: 1.5 for k in received}}))


def test_window_statistics_pair_sender_and_receiver_epochs(plan: ProbePlan, tmp_path: Path) -> None:
    reader = ProbeStatsReader(plan, tmp_path, window_s=2.0)
    hosts = plan.hosts()
    for epoch, n in ((10, 100), (11, 110), (12, 120)):
        for h in hosts:
            sent = {p.name: n for p in plan.paths_from(h)}
            got = {p.name: (n if h != "b1s1" else 100) for p in plan.paths_to(h)}
            _snap(tmp_path, h, epoch, sent, got)
        out = reader.poll()
    assert out is not None
    t, stats = out
    assert t == 12.0 and len(stats) == len(plan.paths)
    for p in plan.paths:
        s = stats[p.name]
        assert s.sent == 20 and s.window_s == 2.0
        assert s.received == (0 if plan.nics[p.dst_nic].host == "b1s1" else 20)
        assert s.latency_ms_p50 == 1.5


def test_a_snapshot_missed_at_one_host_never_pairs_different_epochs(plan: ProbePlan,
                                                                    tmp_path: Path) -> None:
    """The reader polls slower than the probers write: it saw the senders' epoch 11 but
    not the receivers'. Counts still come from epochs both ends have (10 → 12), so a
    lossless fabric shows no loss."""
    reader = ProbeStatsReader(plan, tmp_path, window_s=1.0)
    senders = {plan.nics[p.src_nic].host for p in plan.paths}
    for epoch in (9, 10, 11, 12):
        for h in plan.hosts():
            if epoch == 11 and h != sorted(senders)[0]:
                continue                       # only one host's epoch 11 was seen
            n = epoch * 10
            _snap(tmp_path, h, epoch, {p.name: n for p in plan.paths_from(h)},
                  {p.name: n for p in plan.paths_to(h)})
        reader.poll()
    _, stats = reader.poll() or (0.0, {})
    assert len(stats) == len(plan.paths)
    for s in stats.values():
        assert s.loss == 0.0 and s.sent == s.received and s.sent in (10, 20), s


def test_a_stale_sender_is_left_out_and_a_stale_receiver_counts_loss(plan: ProbePlan,
                                                                     tmp_path: Path) -> None:
    reader = ProbeStatsReader(plan, tmp_path, window_s=1.0, stale_epochs=3)
    for epoch in range(1, 9):
        for h in plan.hosts():
            if h == "b0s0" and epoch > 2:
                continue                         # b0s0's prober died after epoch 2
            n = epoch * 10
            _snap(tmp_path, h, epoch, {p.name: n for p in plan.paths_from(h)},
                  {p.name: n for p in plan.paths_to(h)})
        reader.poll()
    _, stats = reader.poll() or (0.0, {})
    assert not any(p.name in stats for p in plan.paths_from("b0s0"))
    into = [p for p in plan.paths_to("b0s0") if p not in plan.paths_from("b0s0")]
    assert into
    for p in into:
        assert stats[p.name].sent == 10 and stats[p.name].received == 0


def test_bad_input_exits_2_with_a_clear_error(plan: ProbePlan, tmp_path: Path) -> None:
    with pytest.raises(ProberError, match="not in the probe plan"):
        Prober(plan, "b7s7", tmp_path)
    path = plan.save(tmp_path / "plan.json")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args, want in (
        (["--plan", str(path), "--host", "b9s9"], "not in the probe plan"),
        (["--plan", str(tmp_path / "none.json"), "--host", "b0s0"], "cannot read the probe plan"),
        (["--plan", str(path), "--host", "b0s0"], "interface b0s0-eth0"),   # no such interface here
    ):
        res = subprocess.run([sys.executable, "-m", "monitor.prober", *args, "--out", str(tmp_path),
                              "--duration-s", "0.1"], capture_output=True, text=True, timeout=60,
                             cwd=REPO, env=env)
        assert res.returncode == 2, (args, res.stderr)
        assert want in res.stderr and "Traceback" not in res.stderr, res.stderr

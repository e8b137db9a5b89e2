"""GOR at millisecond scale on a live testbed (root + Mininet; skipped otherwise), p4sim's
or, with ``python -m bench gor.fast_loop --target bmv2``, BMv2's:
many runs of the default story, each with its own seed, on one fabric brought up with
packet captures.

``gor.fast_loop`` — ``RUNS`` runs of :func:`scenarios.story.run_story` (seeds 100, 101, …):

* ``gor.detect_ms.p50`` / ``.p99`` — the first CE-marked packet leaving the hot uplink
  (the uplink of GOR's first alarm; its time from the switch's own capture
  ``<leaf>-eth<port>_out.pcap``, wall clock) → that alarm handled by GOR (the decision
  log's ``alarm_raised``, wall clock); split, for alarms a switch reported, into
  ``gor.detect_wire_ms.p50`` (that packet → the alarm digest's arrival at GOR, the
  record's ``received_ts``: the switch's decision, its P4Runtime server, gRPC, GOR's
  decoding) and ``gor.detect_gor_ms.p50`` (arrival → handled: the reaction thread's
  wait for the loop and the handling); the wire leg split again by the digest list's
  own timestamp: ``gor.detect_switch_ms.p50`` (that packet → the list stamped by the
  switch's P4Runtime server) and ``gor.detect_stream_ms.p50`` (stamped → arrival);
* ``gor.loop_ms.p50`` / ``.p99`` — that alarm → the last moved flow seen on its new
  uplink (the story's ``loop_s``);
* ``gor.elephants_exact`` — the fraction of runs whose first round's elephants (its
  ``flows_chosen``) are exactly the flows the hash model put on the hot uplink (all of
  them, or ``top_n`` of them when more share it);
* where the loop's time goes, for the move confirmed last (the one that ends
  ``loop_ms``; the three add up to it): ``gor.loop_order_ms.p50`` — the alarm → its
  ``order_sent`` (GOR waiting for data and deciding); ``gor.loop_wire_ms.p50`` — the
  order → the first packet of the new 5-tuple leaving the leaf on the new uplink (the
  capture ``<leaf>-eth<port>_out.pcap``: the agent call, the NIC's message boundary and
  its pacing); ``gor.loop_confirm_ms.p50`` — that packet → ``order_confirmed`` (the
  sample digest and GOR's reaction).

A run that measured nothing for a figure (no alarm, no CE packet captured, no move) is
left out of that figure and said so; a figure with no run at all is not written.

The testbed's elephants send ~60 packets/s, so one flow's packets are ~17 ms apart: the
confirmation step (the moved flow's first packet on its new uplink) is bounded by the
emulation's own rate, not by GOR (bench/README.md).

>>> percentile([3.0, 1.0, 2.0, 10.0], 50), percentile([3.0, 1.0, 2.0, 10.0], 99)
(2.5, 9.79)
"""
from __future__ import annotations

import math
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from bench.results import BenchConfig, Benchmark, Figure
from scenarios.common import ScenarioOptions
from scenarios.story import run_story
from testbed.traffic import testbed_unavailable, testbed_up

RUNS = 20
FIRST_SEED = 100
TOP_N = 4
FIGURES = ("gor.detect_ms.p50", "gor.detect_ms.p99", "gor.loop_ms.p50", "gor.loop_ms.p99",
           "gor.elephants_exact", "gor.loop_order_ms.p50", "gor.loop_wire_ms.p50",
           "gor.loop_confirm_ms.p50", "gor.detect_wire_ms.p50", "gor.detect_gor_ms.p50",
           "gor.detect_switch_ms.p50", "gor.detect_stream_ms.p50")
LEGS = ("order", "wire", "confirm")


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (numpy's default method), rounded to 0.01."""
    xs = sorted(values)
    if not xs:
        raise ValueError("no values")
    k = (len(xs) - 1) * pct / 100
    lo, hi = math.floor(k), math.ceil(k)
    return round(xs[lo] + (xs[hi] - xs[lo]) * (k - lo), 2)


def first_alarm(events: Iterable[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The first ``alarm_raised`` record of a decision log."""
    return next((e for e in events if e.get("event") == "alarm_raised"), None)


def detect_split(alarm: Mapping[str, Any], ce_ts: float, clock_offset_s: float = 0.0
                 ) -> Optional[dict[str, float]]:
    """Detection in legs (ms) for an alarm a switch reported: the first CE packet → its
    digest's arrival at GOR (``wire``) and arrival → handled (``gor``); with the digest
    list's own timestamp (``digest_ts_ns`` + ``clock_offset_s`` = wall clock), ``wire``
    split again: that packet → the list stamped by the target's P4Runtime server
    (``switch``: the data plane, the carrier of the report, the server's digest path) and
    stamped → arrival (``stream``: gRPC, TLS, GOR's reader). None for an alarm from the
    polls (no ``received_ts``).

    >>> detect_split({"ts": 10.020, "received_ts": 10.012}, 10.000)
    {'wire': 12.0, 'gor': 8.0}
    >>> detect_split({"ts": 10.020, "received_ts": 10.012, "digest_ts_ns": 10_009_000_000}, 10.0)
    {'wire': 12.0, 'gor': 8.0, 'switch': 9.0, 'stream': 3.0}
    >>> detect_split({"ts": 10.020, "source": "counters"}, 10.000) is None
    True
    """
    received = alarm.get("received_ts")
    if received is None:
        return None
    out = {"wire": round(1000 * (float(received) - ce_ts), 3),
           "gor": round(1000 * (float(alarm["ts"]) - float(received)), 3)}
    stamped_ns = alarm.get("digest_ts_ns")
    if stamped_ns:
        stamped = int(stamped_ns) / 1e9 + clock_offset_s
        out["switch"] = round(1000 * (stamped - ce_ts), 3)
        out["stream"] = round(1000 * (float(received) - stamped), 3)
    return out


def digest_clock_offset_s(target: str) -> float:
    """What turns a target's DigestList timestamp into wall-clock seconds: 0 for p4sim
    (wall clock, as the P4Runtime spec says); BMv2's PI server stamps with
    ``steady_clock`` (CLOCK_MONOTONIC, shared by the processes of one machine), so
    wall minus monotonic now.

    >>> digest_clock_offset_s("p4sim")
    0.0
    """
    return time.time() - time.monotonic() if target == "bmv2" else 0.0


def first_ce_ts(pcap: Path, since: float = 0.0) -> Optional[float]:
    """Wall-clock time (s) of the first IPv4 packet with ECN CE in ``pcap`` at or after
    ``since`` (the switch writes its captures unbuffered, one file for the whole bench)."""
    from scapy.utils import RawPcapReader  # noqa: PLC0415 — heavy: scapy
    if not pcap.is_file():
        return None
    with RawPcapReader(str(pcap)) as rd:
        for data, meta in rd:
            ts = meta.sec + meta.usec / 1e6
            # Ethernet (14 bytes, or 18 with one 802.1Q tag), IPv4 ToS byte: ECN in bits 0-1
            off = 18 if data[12:14] == b"\x81\x00" else 14
            if (ts >= since and len(data) > off + 1 and data[off - 2:off] == b"\x08\x00"
                    and data[off + 1] & 3 == 3):
                return ts
    return None


def first_flow_ts(pcap: Path, src: str, dst: str, sport: int, since: float) -> Optional[float]:
    """Wall-clock time (s) of the first IPv4/UDP packet from ``src`` to ``dst`` with UDP
    source port ``sport`` in ``pcap`` at or after ``since``."""
    from scapy.utils import RawPcapReader  # noqa: PLC0415 — heavy: scapy
    if not pcap.is_file():
        return None
    want = socket.inet_aton(src) + socket.inet_aton(dst)
    with RawPcapReader(str(pcap)) as rd:
        for data, meta in rd:
            ts = meta.sec + meta.usec / 1e6
            off = 18 if data[12:14] == b"\x81\x00" else 14
            if ts < since or data[off - 2:off] != b"\x08\x00" or len(data) < off + 20:
                continue
            udp = off + (data[off] & 15) * 4
            if (data[off + 9] == 17 and data[off + 12:off + 20] == want and len(data) >= udp + 2
                    and int.from_bytes(data[udp:udp + 2], "big") == sport):
                return ts
    return None


def loop_legs(events: Sequence[Mapping[str, Any]],
              wire_ts: Callable[[Mapping[str, Any]], Optional[float]]) -> Optional[dict[str, float]]:
    """The loop of one run split in three (ms; see the module docstring) for the move
    confirmed last; ``wire_ts(order_sent)`` finds its first packet on the new uplink.
    None when the run has no alarm, no confirmed move or no such packet.

    >>> ev = [{"event": "alarm_raised", "ts": 10.0},
    ...       {"event": "order_sent", "order_id": "move-1", "ts": 10.002},
    ...       {"event": "order_confirmed", "order_id": "move-1", "ts": 10.060}]
    >>> loop_legs(ev, lambda sent: 10.050)
    {'order': 2.0, 'wire': 48.0, 'confirm': 10.0}
    """
    alarm = first_alarm(events)
    confirmed = [e for e in events if e.get("event") == "order_confirmed"]
    if alarm is None or not confirmed:
        return None
    last = max(confirmed, key=lambda e: float(e["ts"]))
    sent = next((e for e in reversed(events) if e.get("event") == "order_sent"
                 and e.get("order_id") == last.get("order_id")
                 and float(e["ts"]) <= float(last["ts"])), None)
    wire = wire_ts(sent) if sent is not None else None
    if sent is None or wire is None:
        return None
    t_alarm, t_sent, t_done = float(alarm["ts"]), float(sent["ts"]), float(last["ts"])
    return {"order": round(1000 * (t_sent - t_alarm), 3), "wire": round(1000 * (wire - t_sent), 3),
            "confirm": round(1000 * (t_done - wire), 3)}


def order_wire_ts(fabric: Any, pcap_dir: Path, sent: Mapping[str, Any]) -> Optional[float]:
    """The first packet of an ``order_sent``'s new 5-tuple leaving its new path's first
    link (the flow ``"10.0.0.1:49152->10.1.0.1:4791/17"`` under ``sport``, or under its
    own port for an override)."""
    flow, path = str(sent.get("flow", "")), sent.get("new_path") or []
    try:
        src, rest = flow.split(":", 1)
        sport = int(sent.get("sport") or rest.split("->")[0])
        dst = rest.split("->")[1].split(":")[0]
    except (ValueError, IndexError):
        return None
    if len(path) < 2:
        return None
    return first_flow_ts(uplink_pcap(fabric, pcap_dir, f"{path[0]}->{path[1]}"), src, dst, sport,
                         float(sent["ts"]))


def uplink_pcap(fabric: Any, pcap_dir: Path, link: str) -> Path:
    """The capture of the packets leaving ``link`` (``"b0r0l0->s1"``) at its switch."""
    switch, peer = link.split(":")[0].split("->")[0], link.split("->")[1]
    port = next(p for p, info in sorted(fabric.switch(switch).ports.items())
                if info.peer_node == peer)
    return pcap_dir / f"{switch}-eth{port}_out.pcap"


def exact_elephants(events: Iterable[Mapping[str, Any]], predicted: Mapping[str, str],
                    top_n: int = TOP_N) -> Optional[bool]:
    """Whether the first round's elephants are the flows the hash model put on its link
    (None when no round ran)."""
    chosen = next((e for e in events if e.get("event") == "flows_chosen"), None)
    if chosen is None:
        return None
    link = str(chosen.get("link"))
    on_link = {f for f, up in predicted.items() if up == link}
    got = {str(x.get("flow")) for x in chosen.get("flows", [])}
    return got <= on_link and len(got) == min(top_n, len(on_link))


def bench_fast_loop(config: BenchConfig) -> dict[str, Figure]:
    """``RUNS`` runs of the story on one fabric of ``config.target`` with captures; the
    figures above."""
    why = testbed_unavailable()
    if why:
        print(f"gor.fast_loop: skipped, {why}; {FIGURES} not written", file=sys.stderr)
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="gor-fast-loop-"))
    detect_ms: list[float] = []
    detect_legs: dict[str, list[float]] = {"wire": [], "gor": [], "switch": [], "stream": []}
    clock_offset_s = digest_clock_offset_s(config.target)
    loop_ms: list[float] = []
    exact: list[bool] = []
    legs: dict[str, list[float]] = {leg: [] for leg in LEGS}
    with testbed_up(log_dir=tmp / "logs", state_path=tmp / "state.json",
                    pcap_dir=tmp / "pcaps", target=config.target) as tb:
        for i in range(RUNS):
            started = time.time()
            res = run_story(tb.fabric, tb.programmer, tb.state, tb.save_state,
                            ScenarioOptions(seed=FIRST_SEED + i, runs_root=tmp / "runs"),
                            say=lambda _line: None)
            alarm = first_alarm(res.events)
            if alarm is None:
                print(f"gor.fast_loop: run {i}: no alarm", file=sys.stderr)
                continue
            ce = first_ce_ts(uplink_pcap(tb.fabric, tmp / "pcaps", str(alarm["link"])), started)
            if ce is not None:
                detect_ms.append(round(1000 * (float(alarm["ts"]) - ce), 3))
                for leg, ms in (detect_split(alarm, ce, clock_offset_s) or {}).items():
                    detect_legs[leg].append(ms)
            if res.loop_s is not None:
                loop_ms.append(1000 * res.loop_s)
            split = loop_legs(res.events, lambda sent: order_wire_ts(tb.fabric, tmp / "pcaps", sent))
            for leg, ms in (split or {}).items():
                legs[leg].append(ms)
            ok = exact_elephants(res.events, res.predicted)
            if ok is not None:
                exact.append(ok)
    out: dict[str, Figure] = {}
    for name, values in (("gor.detect_ms", detect_ms), ("gor.loop_ms", loop_ms)):
        if values:
            out[f"{name}.p50"] = Figure(percentile(values, 50), "ms")
            out[f"{name}.p99"] = Figure(percentile(values, 99), "ms")
        else:
            print(f"gor.fast_loop: no run measured {name}", file=sys.stderr)
    for leg, values in legs.items():
        if values:
            out[f"gor.loop_{leg}_ms.p50"] = Figure(percentile(values, 50), "ms")
    for leg, values in detect_legs.items():
        if values:
            out[f"gor.detect_{leg}_ms.p50"] = Figure(percentile(values, 50), "ms")
    if exact:
        out["gor.elephants_exact"] = Figure(round(sum(exact) / len(exact), 3), "fraction")
    print(f"gor.fast_loop: {RUNS} runs; detect measured in {len(detect_ms)}, loop in "
          f"{len(loop_ms)} (split in {len(legs['order'])}), elephants judged in {len(exact)}",
          file=sys.stderr)
    return out


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("fast_loop", "gor", bench_fast_loop,
                                               targets=("p4sim", "bmv2")),)

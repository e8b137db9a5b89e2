"""The frames campaign at ``make test`` size (fuzz/frames.py) into a live p4sim switch
over veth pairs (root and iproute2; skipped otherwise): the switch lives, every probe
came through, the counters add up at every checkpoint. The accounting check is tested
on its own: each equation fails when its counters disagree."""
from __future__ import annotations

import copy

import pytest

from fuzz.frames import SIZES, Reading, check_accounting, dropped_by_kernel, pfc_in_pipeline, run_frames
from fuzz.veths import veths_available


@pytest.mark.skipif(veths_available() is not None, reason=str(veths_available()))
def test_small_campaign_finds_nothing(tmp_path) -> None:
    result = run_frames(1, SIZES["small"], work_dir=tmp_path, size="small")
    assert result.ok, [(f.kind, f.what, f.index, f.message[:400]) for f in result.findings]
    c = result.counts
    assert c["switch_alive_at_end"] == 1
    assert c["probes"] == c["batches"] > 0
    assert c["checkpoints"] >= 2
    assert result.inputs >= SIZES["small"]                # frames the kernel took
    assert result.rate_per_s > 0


def _reading() -> Reading:
    ports = {p: {"rx_frames": 0, "rx_dropped": 0, "tx_frames": 0, "tx_errors": 0} for p in (1, 2)}
    stats = {"pfc_frames": 0, "packet_in": 0, "no_port": 0, "tm_drops": 0, "errors": 0}
    p4 = {k: {1: 0, 2: 0, 255: 0} for k in ("rx", "drops", "tx")}
    return Reading({1: 0, 2: 0}, 0, ports, stats, p4)


def _consistent() -> Reading:
    """10 frames in port 1: 1 PFC consumed by the MAC, 9 into the pipeline, 2 dropped
    there, 7 out of port 2."""
    r = _reading()
    r.kernel_rx[1] = 10
    r.ports[1]["rx_frames"] = 10
    r.stats["pfc_frames"] = 1
    r.p4["rx"][1], r.p4["drops"][1], r.p4["tx"][2] = 9, 2, 7
    r.ports[2]["tx_frames"] = 7
    return r


def test_consistent_counters_pass() -> None:
    assert check_accounting(_reading(), _consistent(), pfc_pipeline=0) == []


@pytest.mark.parametrize("break_it, equation", [
    (lambda r: r.kernel_rx.__setitem__(1, 11), "(1)"),
    (lambda r: r.p4["rx"].__setitem__(1, 8), "(2)"),
    (lambda r: r.ports[2].__setitem__("tx_frames", 6), "(3)"),
    (lambda r: (r.p4["tx"].__setitem__(2, 6), r.ports[2].__setitem__("tx_frames", 6)), "(4)"),
    (lambda r: r.stats.__setitem__("errors", 1), "(5)"),
])
def test_each_equation_catches_its_own_disagreement(break_it, equation: str) -> None:
    after = copy.deepcopy(_consistent())
    break_it(after)
    problems = check_accounting(_reading(), after, pfc_pipeline=0)
    assert any(p.startswith(equation) for p in problems), problems


def test_frames_the_kernel_frees_and_pfc_seen_by_the_parser() -> None:
    tag = bytes(12) + bytes.fromhex("8100")
    assert dropped_by_kernel(tag + bytes(5)) and not dropped_by_kernel(tag + bytes(6))
    pause = bytes.fromhex("0180c2000001") + bytes(6) + bytes.fromhex("88080101") + bytes(50)
    assert not pfc_in_pipeline(pause)                       # the MAC consumes it
    assert pfc_in_pipeline(bytes(12) + bytes.fromhex("8808") + bytes(20))

"""Differential fuzz of the native path against the Python engine: the repository's own P4
programs (p4src/fabric.p4, the bench programs, the labs, the test programs) each get
random table entries, action profiles and selector groups, register contents, multicast
groups and clone sessions, then random frames (mostly well-formed Ethernet/802.1Q/IPv4/
UDP/RoCE/ARP/PFC with field values drawn from the same small pools as the entries, so
that entries match; some cut short, some garbage), on both engines with the same seed
and clock; frames out, counts, errors and the final state must be equal. Also through
the switch process's two halves (run_ingress / run_egress with queue metadata).

Each program's C is compiled once (cached); the test takes a few seconds warm.
"""
from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest

from native_equiv import REPO, StepClock, diff_snapshots, load_pair, prebuild, state_snapshot
from p4sim.native import compiler_status, make_switch
from p4sim.runtime.tables import ActionCall, Exact, GroupRef, Lpm, MemberRef, Optional_, Range, Ternary
from p4sim.v1model.switch import QueueMeta

PROGRAMS = [
    ("p4src/fabric.p4", ["p4src", "p4src/include"]),
    ("bench/programs/ipv4_lpm.p4", []),
    ("bench/programs/ecmp_ecn.p4", []),
    ("bench/programs/port_fwd.p4", []),
    ("labs/01-ecmp-hashing/solution/ecmp.p4", []),
    ("labs/02-ecn-dcqcn/solution/ecn.p4", []),
    ("labs/03-pfc/solution/pfc.p4", []),
    ("tests/p4src/programs/mini_fabric.p4", []),
    ("tests/controller/probe.p4", []),
    ("tests/p4sim/p4runtime/bmv2_probe.p4", []),
    ("tests/p4sim/integration/e2e.p4", []),
    ("tests/p4sim/tutorials/ipv4_routes.p4", []),
    ("tests/p4sim/switchd/qfwd.p4", []),
]
FRAMES = 600
pytestmark = pytest.mark.skipif(not compiler_status()[0], reason=compiler_status()[1])

POOL = {
    8: [0, 1, 2, 6, 17, 64, 255], 9: [0, 1, 2, 3, 4, 9, 12, 255, 511], 16: [0, 1, 0x800, 0x806, 0x8100, 0x8808, 4791, 0x12b7, 0xffff],
    32: [0, 1, 0x0a000001, 0x0a000102, 0x0a010203, 0xc0a80001, 0xffffffff], 48: [0, 1, 0x020000000001, 0xffffffffffff],
}


def _value(rng: random.Random, width: int) -> int:
    pool = POOL.get(width)
    if pool is not None and rng.random() < 0.7:
        return rng.choice(pool) & ((1 << width) - 1)
    if rng.random() < 0.5:
        return rng.randrange(min(1 << width, 8))
    return rng.getrandbits(width)


def _match(rng: random.Random, kf: Any) -> Any:
    w = kf.width
    v = _value(rng, w)
    if kf.match_kind == "exact":
        return Exact(v)
    if kf.match_kind == "lpm":
        plen = rng.choice([0, w // 2, w - w // 4, w, rng.randrange(w + 1)])
        mask = ((1 << w) - 1) ^ ((1 << (w - plen)) - 1)
        return Lpm(v & mask, plen)
    if kf.match_kind == "ternary":
        mask = rng.choice([0, (1 << w) - 1, rng.getrandbits(w)])
        return Ternary(v & mask, mask)
    if kf.match_kind == "range":
        a, b = sorted((v, _value(rng, w)))
        return Range(a, b)
    return Optional_(None if rng.random() < 0.4 else v)


def _call(rng: random.Random, spec: Any) -> ActionCall:
    return ActionCall(spec.name, tuple(_value(rng, w) for _, w in spec.params))


def program_state(prog: Any, rng: random.Random) -> None:
    """Random entries, members, groups, defaults, registers and PRE configuration."""
    st = prog.state
    for prof in {id(t.implementation): t.implementation for t in st.tables.values() if t.implementation is not None}.values():
        specs = [a for a in (prof.actions or {}).values() if a.scope != "default_only"]
        for mid in range(1, 1 + rng.randrange(1, 6)):
            if specs:
                prof.insert_member(mid, _call(rng, rng.choice(specs)))
        if prof.has_selector:
            for gid in range(1, 4):
                ids = list(prof.members)
                prof.insert_group(gid, rng.sample(ids, rng.randrange(0, len(ids) + 1)))
    for t in st.tables.values():
        specs = [a for a in t.actions.values() if a.scope != "default_only"]
        if not t.is_const and t.mode != "keyless" and specs:
            for _ in range(rng.randrange(4, 24)):
                matches = [_match(rng, kf) for kf in t._mkeys]
                if t.implementation is not None:
                    prof = t.implementation
                    if prof.has_selector and prof.groups and rng.random() < 0.5:
                        action: Any = GroupRef(rng.choice(list(prof.groups)))
                    elif prof.members:
                        action = MemberRef(rng.choice(list(prof.members)))
                    else:
                        continue
                else:
                    action = _call(rng, rng.choice(specs))
                prio = rng.randrange(1, 20) if t.needs_priority else 0
                try:
                    t.add_entry(matches, action, prio)
                except Exception:
                    pass                  # duplicates, full: the same on both engines
            if t.mode == "exact" and len(t._mkeys) == 1 and t.implementation is None:
                for k in range(8):        # hash-indexed member tables: every small index
                    try:
                        t.add_entry([Exact(k)], _call(rng, rng.choice(specs)))
                    except Exception:
                        pass
        defaults = [a for a in t.actions.values() if a.scope != "table_only"]
        if not t.default_is_const and defaults and t.implementation is None and rng.random() < 0.7:
            t.set_default_action(_call(rng, rng.choice(defaults)))
    for r in st.registers.values():
        for i in range(min(r.size, 64)):
            if rng.random() < 0.3:
                r.write(i, _value(rng, r.width))
    pre = st.pre
    for g in (1, 2, 7):
        pre.insert_multicast_group(g, sorted({(rng.randrange(1, 16), rng.randrange(0, 4)) for _ in range(rng.randrange(0, 4))}))
    for s in list(range(1, 10)) + [100 + p for p in range(1, 17)] + [255]:
        if rng.random() < 0.8:
            pre.insert_clone_session(s, [(rng.choice([1, 2, 3, 255]), 0)], packet_length_bytes=rng.choice([0, 0, 60]))


def _frame(rng: random.Random) -> tuple[int, bytes]:
    port = rng.choice([1, 1, 2, 3, 4, 9, 255])
    kind = rng.random()
    eth = lambda et: struct.pack("!6s6sH", _value(rng, 48).to_bytes(6, "big"), _value(rng, 48).to_bytes(6, "big"), et)  # noqa: E731
    if kind < 0.05:
        return port, rng.randbytes(rng.randrange(0, 80))
    if kind < 0.12:
        body = eth(0x0806) + struct.pack("!HHBBH6s4s6s4s", 1, 0x800, 6, 4, rng.choice([1, 2]), b"\x02" * 6,
                                          _value(rng, 32).to_bytes(4, "big"), b"\0" * 6, _value(rng, 32).to_bytes(4, "big"))
    elif kind < 0.17:
        prios = rng.getrandbits(8)
        body = struct.pack("!6s6sHHH", bytes.fromhex("0180c2000001"), b"\x02" * 6, 0x8808, 0x0101, prios) + \
            b"".join(struct.pack("!H", rng.choice([0, 1, 0xffff])) for _ in range(8)) + bytes(26)
    else:
        proto = rng.choice([17, 17, 17, 6, 1])
        ecn = rng.randrange(4)
        payload = (struct.pack("!BBHIII", 0x64, 0, 0xffff, rng.getrandbits(24), rng.getrandbits(31), 0) if rng.random() < 0.5 else b"") + rng.randbytes(rng.randrange(0, 40))
        l4 = struct.pack("!HHHH", _value(rng, 16), rng.choice([4791, 4791, _value(rng, 16)]), 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, (rng.randrange(64) << 2) | ecn, 20 + len(l4), rng.getrandbits(16),
                         rng.choice([0, 0, 0x4000, 1]), rng.choice([64, 1, 0, 2]), proto, 0,
                         _value(rng, 32).to_bytes(4, "big"), _value(rng, 32).to_bytes(4, "big"))
        if rng.random() < 0.1:
            body = eth(0x8100) + struct.pack("!HH", rng.getrandbits(16), 0x0800) + ip + l4
        else:
            body = eth(0x0800) + ip + l4
        if port == 255:
            body = struct.pack("!H", rng.getrandbits(16)) + body
    if rng.random() < 0.08:
        body = body[:rng.randrange(len(body) + 1)]
    return port, body


@pytest.fixture(scope="module")
def reasons() -> dict[str, Any]:
    return prebuild((str(Path(REPO) / p), [str(Path(REPO) / d) for d in inc] + [str((Path(REPO) / p).parent)])
                    for p, inc in PROGRAMS)


def _pair(path: str, inc: list[str], seed: int) -> tuple[Any, Any]:
    full = str(Path(REPO) / path)
    a, b = load_pair(full, [str(Path(REPO) / d) for d in inc] + [str(Path(full).parent)], seed=seed)
    program_state(a, random.Random(seed))
    program_state(b, random.Random(seed))
    return a, b


@pytest.mark.parametrize("path,inc", PROGRAMS, ids=[p for p, _ in PROGRAMS])
def test_random_packets_same_on_both_engines(path: str, inc: list[str], reasons: dict[str, Any]) -> None:
    why = reasons[str(Path(REPO) / path)].reason
    assert why is None, f"{path} falls back to the Python engine: {why}"
    seed = sum(map(ord, path))
    a, b = _pair(path, inc, seed)
    sa = make_switch(a, engine="python", cpu_port=255, clock=StepClock(), priority_queues=8)
    sb = make_switch(b, engine="native", cpu_port=255, clock=StepClock(), priority_queues=8)
    rng = random.Random(seed)
    frames = [_frame(rng) for _ in range(FRAMES)]
    for i, (port, frame) in enumerate(frames):
        oa, ob = sa.process_packet(port, frame), sb.process_packet(port, frame)
        assert oa == ob, f"frame {i} (port {port}, {frame.hex()}): python {oa} native {ob}"
    assert (sa.stats.received, sa.stats.transmitted, sa.stats.dropped, sa.stats.errors) == \
        (sb.stats.received, sb.stats.transmitted, sb.stats.dropped, sb.stats.errors)
    assert sa.stats.transmitted, "no frame came out: the fuzz exercised nothing"
    diffs = diff_snapshots(state_snapshot(a), state_snapshot(b))
    assert not diffs, "\n".join(diffs)


def test_batch_and_halves_same_as_python() -> None:
    """fabric.p4 through process_batch, and through run_ingress/run_egress with queue
    metadata (how the switch process runs it), against the Python engine."""
    path, inc = PROGRAMS[0]
    seed = 4242
    rng = random.Random(seed)
    frames = [_frame(rng) for _ in range(FRAMES)]
    a, b = _pair(path, inc, seed)
    sa = make_switch(a, engine="python", cpu_port=255, clock=StepClock())
    sb = make_switch(b, engine="native", cpu_port=255, clock=StepClock())
    want = [(i, p, f) for i, (port, frame) in enumerate(frames) for p, f in sa.process_packet(port, frame)]
    assert sb.process_batch(frames) == want
    assert not diff_snapshots(state_snapshot(a), state_snapshot(b))

    a, b = _pair(path, inc, seed)
    qa = make_switch(a, engine="python", cpu_port=255, clock=StepClock(), priority_queues=8)
    qb = make_switch(b, engine="native", cpu_port=255, clock=StepClock(), priority_queues=8)
    for i, (port, frame) in enumerate(frames):
        wa, wb = qa.run_ingress(port, frame), qb.run_ingress(port, frame)
        assert [(w.port, w.priority) for w in wa] == [(w.port, w.priority) for w in wb]
        while wa:
            qm = QueueMeta(enq_timestamp=i * 3, enq_qdepth=len(wa) + i % 5, deq_qdepth=i % 3)
            ra, rb = qa.run_egress(wa.pop(0), qm), qb.run_egress(wb.pop(0), qm)
            assert ra.frames == rb.frames, f"frame {i}"
            assert [(w.port, w.priority) for w in ra.work] == [(w.port, w.priority) for w in rb.work]
            wa += ra.work
            wb += rb.work
    assert (qa.stats.transmitted, qa.stats.dropped, qa.stats.errors) == (qb.stats.transmitted, qb.stats.dropped, qb.stats.errors)
    assert not diff_snapshots(state_snapshot(a), state_snapshot(b))

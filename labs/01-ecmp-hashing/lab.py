"""Lab 01 — ECMP hashing and polarisation: the plugin ``labs.labkit`` loads (``make run``,
``make check``). The student completes the hash in ``ecmp.p4`` and the offline
prediction in ``predict.py``; both are judged against ``p4src.hashmodel``, the model the
fabric publishes.

Switch ports: 1 = host, 2..5 = uplinks to spines 0..3 (ECMP members 0..3).
"""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable

from labs.labkit import LabSwitch, Report
from labs.labkit.packets import udp_fields, udp_frame
from labs.labkit.student import (LOAD_HINT, StudentCodeError, describe_exception,
                                 load_student_module)
from p4src.hashmodel import GroupModel, SwitchHashModel, predict_member

TITLE = "ECMP hashing and polarisation"
FILES = ("ecmp.p4", "predict.py")
LAB = "01-ecmp-hashing"
HOST_PORT = 1
UPLINKS = (2, 3, 4, 5)
SEED = 0x1234ABCD
SPINE_SEED = 0x00C0FFEE
QUIET_S = 0.5
Flow = tuple[str, str, int, int]   # src, dst, sport, dport (UDP)


def model(seed: int = SEED, algorithm: str = "crc16") -> SwitchHashModel:
    """The published hash model of the lab's leaf (group 1 over the four uplinks)."""
    return SwitchHashModel("lab-leaf", algorithm=algorithm, seed=seed,
                           groups={1: GroupModel(0, [str(p) for p in UPLINKS])})


def model_uplink(flow: Flow, seed: int = SEED, algorithm: str = "crc16") -> int:
    """The uplink the hash model predicts for ``flow``."""
    src, dst, sport, dport = flow
    return int(predict_member(model(seed, algorithm), 1, src, dst, 17, sport, dport))


def random_flows(n: int, seed: int = 1) -> list[Flow]:
    """``n`` distinct UDP flows from hosts of block 0 to other blocks (RoCEv2 dport 4791)."""
    rng = random.Random(seed)
    flows: dict[int, Flow] = {}
    while len(flows) < n:
        sport = rng.randrange(1024, 65536)
        flows[sport] = (f"10.0.0.{rng.randrange(1, 9)}",
                        f"10.{rng.randrange(1, 4)}.0.{rng.randrange(1, 9)}", sport, 4791)
    return list(flows.values())


def program(sw: LabSwitch, seed: int) -> None:
    """Seed, one route 10.0.0.0/8 -> group (base 0, size 4), members 0..3 -> ports 2..5."""
    c = sw.connection
    c.modify(c.table_entry("MyIngress.config", None, "MyIngress.set_seed", {"seed": seed},
                           is_default=True))
    c.insert(c.table_entry("MyIngress.routes", {"hdr.ipv4.dst_addr": "10.0.0.0/8"},
                           "MyIngress.select_group", {"base": 0, "size": len(UPLINKS)}))
    c.insert(*[c.table_entry("MyIngress.members", {"meta.ecmp_member": i},
                             "MyIngress.set_port", {"port": p}) for i, p in enumerate(UPLINKS)])


def set_seed(sw: LabSwitch, seed: int) -> None:
    """Re-seed the switch (the default action of ``MyIngress.config``)."""
    c = sw.connection
    c.modify(c.table_entry("MyIngress.config", None, "MyIngress.set_seed", {"seed": seed},
                           is_default=True))


def send_flows(sw: LabSwitch, flows: Iterable[Flow]) -> dict[Flow, int]:
    """Send one packet per flow into the host port; the port each one left on."""
    frames = [udp_frame(src, dst, sport, dport) for src, dst, sport, dport in flows]
    seen: dict[Flow, int] = {}
    for port, frame in sw.send_paced(HOST_PORT, frames, timeout_s=QUIET_S):
        f = udp_fields(frame)
        if f is not None:
            seen[(f.src, f.dst, f.sport, f.dport)] = port
    return seen


def load_predictor(files_dir: Path) -> Callable[[str, str, int, int, int], int]:
    """``predict_uplink`` from the student's ``predict.py`` (a fresh module each call);
    :class:`StudentCodeError` when the file does not load."""
    module = load_student_module(files_dir / "predict.py")
    return module.predict_uplink  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------ check
def check_switch(r: Report, sw: LabSwitch, flows: list[Flow]) -> dict[Flow, int]:
    """Judge ecmp.p4: every flow on the model's uplink, every uplink used."""
    seen = send_flows(sw, flows)
    lost = [f for f in flows if f not in seen]
    r.expect(not lost, f"all {len(flows)} packets came out of the switch",
             f"{len(lost)} packets were dropped, e.g. {lost[:1]}: does every route hit "
             "lead to members.apply() with a member index the members table has (0..3)?")
    wrong = [(f, seen[f]) for f in flows if f in seen and seen[f] != model_uplink(f)]
    if wrong:
        (src, dst, sport, dport), port = wrong[0]
        r.fail(f"{len(flows) - len(wrong)} of {len(flows)} flows left on the uplink the "
               "published hash model predicts",
               f"the packet {src} -> {dst} UDP sport {sport} dport {dport} left on port {port}; "
               f"the hash model says port {model_uplink(wrong[0][0])}. Did you call hash() "
               "with crc16, base = the group's base, the fields in the order seed, src, dst, "
               "protocol, sport, dport, and max = the group's size?")
    else:
        r.ok(f"all {len(seen)} flows left on the uplink the published hash model predicts")
    used = Counter(seen.values())
    r.expect(set(used) == set(UPLINKS), f"all four uplinks carry flows ({dict(sorted(used.items()))})",
             "only some uplinks are used: every flow must be hashed, not sent to the first member")
    return seen


def check_predictor(r: Report, files_dir: Path, flows: list[Flow], truth: dict[Flow, int],
                    source: str) -> None:
    """Judge predict.py against ``truth`` (the switch's ports, or the model's)."""
    try:
        predict = load_predictor(files_dir)
    except StudentCodeError as exc:
        r.fail("predict.py loads", f"{exc.message}\n{LOAD_HINT}")
        return
    try:
        guesses = {f: int(predict(f[0], f[1], f[2], f[3], SEED)) for f in flows}
    except Exception as exc:  # the student's code may raise anything
        r.fail("predict.py runs", "predict_uplink raised "
               + describe_exception(files_dir / "predict.py", exc))
        return
    wrong = [f for f in flows if guesses[f] != truth[f]]
    if wrong:
        src, dst, sport, dport = wrong[0]
        r.fail(f"predict.py got {len(flows) - len(wrong)} of {len(flows)} flows right "
               f"(compared with {source})",
               f"predict_uplink('{src}', '{dst}', {sport}, {dport}, seed={SEED:#x}) returned "
               f"{guesses[wrong[0]]}, the flow takes port {truth[wrong[0]]}. Pack seed, src, dst, "
               "protocol 17, sport, dport (32, 32, 32, 8, 16, 16 bits), crc16_arc, then % 4.")
    else:
        r.ok(f"predict.py predicts all {len(flows)} flows exactly ({source})")


def check(files_dir: Path, target: str) -> Report:
    """``make check``: the switch follows the hash model; predict.py agrees with it."""
    r = Report(TITLE)
    flows = random_flows(256)
    with LabSwitch(files_dir / "ecmp.p4", lab=LAB, ports=[HOST_PORT, *UPLINKS],
                   target=target) as sw:
        r.note(sw.banner())
        program(sw, SEED)
        seen = check_switch(r, sw, flows)
    switch_right = all(seen.get(f) == model_uplink(f) for f in flows)
    truth = seen if switch_right else {f: model_uplink(f) for f in flows}
    check_predictor(r, files_dir, flows, truth,
                    "the switch" if switch_right else "the hash model; fix ecmp.p4 too")
    return r


# -------------------------------------------------------------------------------- run
def bars(counts: Counter[int], total: int) -> list[str]:
    """One text bar per uplink."""
    return [f"    uplink port {p}: {counts.get(p, 0):5d} {'#' * round(40 * counts.get(p, 0) / max(total, 1))}"
            for p in UPLINKS]


def run(files_dir: Path, target: str) -> int:
    """``make run``: 1000 flows over the four uplinks, then the flows of one uplink through
    a second tier with the same hash (polarisation)."""
    flows = random_flows(1000)
    with LabSwitch(files_dir / "ecmp.p4", lab=LAB, ports=[HOST_PORT, *UPLINKS],
                   target=target) as sw:
        print(sw.banner())
        program(sw, SEED)
        seen = send_flows(sw, flows)
        print(f"\nTier 1 (the leaf, seed {SEED:#x}): {len(seen)} flows sent from port {HOST_PORT}")
        print("\n".join(bars(Counter(seen.values()), len(seen))))
        spine0 = [f for f, p in seen.items() if p == UPLINKS[0]]
        print(f"\nTier 2: the {len(spine0)} flows that reached spine 0 (port {UPLINKS[0]}) go through "
              "a switch hashing the same way (same program, same seed):")
        tier2 = send_flows(sw, spine0)
        print("\n".join(bars(Counter(tier2.values()), len(tier2))))
        set_seed(sw, SPINE_SEED)
        tier2b = send_flows(sw, spine0)
        print(f"\n... and with another seed ({SPINE_SEED:#x}), still crc16:")
        print("\n".join(bars(Counter(tier2b.values()), len(tier2b))))
    crc32 = Counter(model_uplink(f, SPINE_SEED, "crc32") for f in spine0)
    print("\n... and with crc32 on the second tier (the hash model, as the fabric's spines do):")
    print("\n".join(bars(crc32, len(spine0))))
    print("\n" + conclusion(Counter(seen.values())))
    return 0


def conclusion(tier1: Counter[int]) -> str:
    """What ``make run`` concludes: polarisation, unless tier 1 itself used one uplink
    (the skeleton, which does not hash yet: then tier 2 only repeats it).

    >>> conclusion(Counter({2: 1000})).startswith("Tier 1 used one uplink")
    True
    >>> conclusion(Counter({2: 250, 3: 250, 4: 250, 5: 250})).startswith("One uplink out of four")
    True
    """
    if len([p for p, n in tier1.items() if n]) <= 1:
        return ("Tier 1 used one uplink: your ecmp.p4 does not hash yet (the TODO in MyIngress), "
                "so tier 2 only repeats it.\nComplete step 3 of README.md and run again to see "
                "polarisation.")
    return ("One uplink out of four at tier 2 is polarisation: flows that share H % 4 at the leaf "
            "share it again\nat the spine, because a CRC is affine (a new seed only XORs H with a "
            "constant). See README.md.")

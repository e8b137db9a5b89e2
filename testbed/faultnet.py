"""The kernel side of the testbed's link faults: nftables tables on one interface's egress,
links taken down and up, and the flapper process (:mod:`testbed.faults` uses them).

The kernel here has no netem, so a gray or corrupting link direction is an nftables
``netdev`` table on the **egress** hook of the sending interface (a switch port
``<sw>-eth<N>`` in the root namespace, or a NIC ``<host>-eth<r>`` inside its host's
namespace). The egress hook runs in ``dev_queue_xmit``, before the packet taps, so it sees
the frames the switches (p4sim, BMv2) and the NIC emulators send on AF_PACKET sockets;
a dropped frame never reaches the peer. One side effect: the sender's ``send()`` gets
ENOBUFS for a frame the hook dropped (p4sim counts it in the port's ``tx_errors``, the
NIC emulator in ``tx_refused``; neither stops).

* loss: ``numgen random mod 1000 < N counter drop`` (N per mille);
* corruption: RoCEv2 frames (UDP 4791) get byte 20 of the UDP datagram — the first byte
  after the BTH, or the ICRC's first byte on a header-only frame — XORed with 0xFF with
  probability N per mille: the receiver's ICRC check fails, headers stay intact, so the
  switches still forward the frame;
* blackhole (data-plane form): ``ip daddr PREFIX counter drop`` on every egress port;
* a cable cut without touching the interfaces (the flapper's ``drop`` cut, what BMv2
  needs): ``counter drop`` on the egress of both ends, every frame each way lost.

A flapping cable takes its ends down (``ip link set down``: carrier lost) on p4sim. On
BMv2 it may not: a simple_switch whose own interface goes down stops processing packets,
and stays stuck after the interface is up again until a frame arrives on that interface
(p4lang/behavioral-model#1215; seen with 1.15.5 here: after the first flap of b0r1l0<->s0
both switches froze, each waiting for a frame from the other, and every later fault of
the faults scenario ran on a dead fabric). So the flapper there cuts the cable with a
drop-everything egress table on both ends (:data:`CUT_DROP`) and deletes it to mend it,
as ``scenarios/link_failure.py`` cuts a cable on BMv2 with a qdisc: no frame crosses
the cable either way while it is down, on both targets.

An :class:`Endpoint` names an interface and the namespace it lives in (``netns_pid`` 0:
the root namespace; else a process of that namespace, a Mininet host's shell), entered
with ``nsenter --net=/proc/PID/ns/net``.

Each fault's tables are named by :func:`table_name`: the fault, the injecting process's
PID and a random token, so that two runs (or a table a dead run left) never share a name;
:func:`add_table` creates a table only where none of that name exists (``create table``,
in the same transaction as its chains), and an undo deletes only the tables its fault
recorded.

>>> print(nft_table_text("astral_fault_g1", [Endpoint("s0-eth1")], loss_rule(20.0)))
create table netdev astral_fault_g1
table netdev astral_fault_g1 {
  chain e0 {
    type filter hook egress device "s0-eth1" priority 0; policy accept;
    numgen random mod 1000 < 200 counter drop
  }
}
>>> corrupt_rule(10.0)
'udp dport 4791 numgen random mod 1000 < 100 counter @th,160,8 set @th,160,8 ^ 0xff'
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Optional, Sequence

TABLE_PREFIX = "astral_fault_"
TOKEN_BYTES = 4
"""Random bytes in a fault table's name (8 hex digits): a PID is reused, a token is not."""
ROCE_DPORT = 4791
CORRUPT_BYTE_BITS = 20 * 8     # byte 20 of the UDP datagram (after UDP 8 + BTH 12)


class FaultNetError(RuntimeError):
    """A kernel step of a fault failed; the message says which command and why."""


class TableExists(FaultNetError):
    """:func:`add_table` found a table of its name: another's, not to be undone."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An interface and its namespace: ``netns_pid`` 0 is the root namespace, otherwise a
    process inside the namespace (its inode ``netns_inode`` guards against PID reuse).

    >>> Endpoint("b0s0-eth0", 4242, 99).where()
    'b0s0-eth0 (netns of pid 4242)'
    """

    iface: str
    netns_pid: int = 0
    netns_inode: int = 0

    def where(self) -> str:
        """Human form for messages."""
        return self.iface + (f" (netns of pid {self.netns_pid})" if self.netns_pid else "")

    def prefix(self) -> list[str]:
        """The command prefix that runs a command in this namespace."""
        if not self.netns_pid:
            return []
        return ["nsenter", f"--net=/proc/{self.netns_pid}/ns/net"]

    def namespace_gone(self) -> bool:
        """True when the namespace recorded is no longer that of ``netns_pid`` (the host
        shell exited: its namespace, and everything in it, is gone)."""
        if not self.netns_pid:
            return False
        try:
            return os.stat(f"/proc/{self.netns_pid}/ns/net").st_ino != self.netns_inode
        except OSError:
            return True

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Endpoint":
        """The inverse of ``dataclasses.asdict``."""
        return cls(str(raw["iface"]), int(raw.get("netns_pid", 0)), int(raw.get("netns_inode", 0)))


def nft_binary() -> str:
    """The ``nft`` command; FaultNetError with the install command when missing."""
    found = shutil.which("nft") or ("/usr/sbin/nft" if Path("/usr/sbin/nft").exists() else None)
    if found is None:
        raise FaultNetError("nft (nftables) is not installed; as root run: apt-get install -y "
                            "nftables (or `python -m testbed deps`)")
    return found


def run_in(ep: Endpoint, cmd: Sequence[str], stdin: Optional[str] = None,
           check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in ``ep``'s namespace; FaultNetError naming the command on failure."""
    full = [*ep.prefix(), *cmd]
    try:
        res = subprocess.run(full, input=stdin, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FaultNetError(f"{' '.join(full)}: {exc}") from None
    if check and res.returncode != 0:
        raise FaultNetError(f"{' '.join(full)} failed: {res.stderr.strip() or res.stdout.strip()}")
    return res


def per_mille(pct: float) -> int:
    """A percentage as the per-mille bound of ``numgen random mod 1000 < N``.

    >>> per_mille(20), per_mille(0.1), per_mille(100)
    (200, 1, 1000)
    """
    if not 0 < pct <= 100:
        raise ValueError(f"a percentage in (0, 100] is needed, got {pct:g}")
    return max(1, round(pct * 10))


def chance(pct: float) -> str:
    """The match that holds for ``pct`` % of the frames (nothing at 100 %).

    >>> chance(20), chance(100)
    ('numgen random mod 1000 < 200 ', '')
    """
    n = per_mille(pct)
    return "" if n >= 1000 else f"numgen random mod 1000 < {n} "


def loss_rule(loss_pct: float) -> str:
    """The rule that drops ``loss_pct`` % of the frames (independently, at random)."""
    return f"{chance(loss_pct)}counter drop"


def corrupt_rule(corrupt_pct: float, roce_only: bool = True) -> str:
    """The rule that flips every bit of one byte of ``corrupt_pct`` % of the frames:
    RoCEv2 frames only (``roce_only``: UDP 4791), else every UDP frame."""
    match = f"udp dport {ROCE_DPORT} " if roce_only else "meta l4proto udp "
    off = CORRUPT_BYTE_BITS
    return f"{match}{chance(corrupt_pct)}counter @th,{off},8 set @th,{off},8 ^ 0xff"


def blackhole_rule(prefix: str) -> str:
    """The rule that drops IPv4 packets to ``prefix`` (a route removed, in the data plane).

    >>> blackhole_rule("10.1.0.0/24")
    'ip daddr 10.1.0.0/24 counter drop'
    """
    net = ipaddress.ip_network(prefix, strict=False)
    return f"ip daddr {net} counter drop"


def table_name(fault_name: str, owner_pid: Optional[int] = None) -> str:
    """A new nftables table name for fault ``fault_name`` (letters, digits and ``_``
    only): the prefix, the injecting process's PID (``owner_pid``, default this one), the
    fault and a random token, so that every injection gets its own table. Before it was
    the fault's name alone (``astral_fault_gray_link_3``): a second testbed run, or a
    stale table of a dead run, took the same name, and one run's undo deleted the other's.

    >>> name = table_name("gray_link-3", 4242)
    >>> name.startswith("astral_fault_4242_gray_link_3_") and len(name) == len("astral_fault_4242_gray_link_3_") + 8
    True
    >>> table_name("gray_link-3", 4242) != table_name("gray_link-3", 4242)
    True
    """
    pid = os.getpid() if owner_pid is None else int(owner_pid)
    fault = re.sub(r"[^A-Za-z0-9_]", "_", fault_name)
    return f"{TABLE_PREFIX}{pid}_{fault}_{secrets.token_hex(TOKEN_BYTES)}"


def nft_table_text(table: str, endpoints: Sequence[Endpoint], rule: str) -> str:
    """An nftables script: create table ``table`` (failing, with nothing changed, where
    one of that name exists) with one egress chain per interface."""
    lines = [f"create table netdev {table}", f"table netdev {table} {{"]
    for i, ep in enumerate(endpoints):
        lines += [f"  chain e{i} {{",
                  f'    type filter hook egress device "{ep.iface}" priority 0; policy accept;',
                  f"    {rule}", "  }"]
    return "\n".join(lines + ["}"])


def add_table(table: str, endpoints: Sequence[Endpoint], rule: str) -> None:
    """Create ``table`` in the namespace of ``endpoints`` (all in the same one);
    FaultNetError, nothing changed, where a table of that name exists (another run's:
    its rules are not merged into it)."""
    if len({(e.netns_pid, e.netns_inode) for e in endpoints}) != 1:
        raise FaultNetError(f"table {table}: interfaces in different namespaces")
    text = nft_table_text(table, endpoints, rule)
    res = run_in(endpoints[0], [nft_binary(), "-f", "-"], stdin=text, check=False)
    if res.returncode != 0:
        if "File exists" in res.stderr:
            raise TableExists(f"nft table netdev {table} exists already in the namespace of "
                                f"{endpoints[0].where()}: not ours, left alone")
        raise FaultNetError(f"nft -f (table {table}): {res.stderr.strip()}")


def delete_table(table: str, ep: Endpoint) -> str:
    """Delete ``table`` in ``ep``'s namespace; what was done, in words (a namespace that
    is gone took the table with it)."""
    if ep.namespace_gone():
        return f"table {table}: namespace of {ep.where()} is gone"
    res = run_in(ep, [nft_binary(), "delete", "table", "netdev", table], check=False)
    if res.returncode != 0:
        if "No such file" in res.stderr:
            return f"table {table}: already gone"
        raise FaultNetError(f"nft delete table netdev {table}: {res.stderr.strip()}")
    return f"deleted nft table {table} ({ep.where()})"


def table_counter(table: str, ep: Endpoint) -> int:
    """Packets the rules of ``table`` matched so far (sum of its counters)."""
    res = run_in(ep, [nft_binary(), "list", "table", "netdev", table])
    return sum(int(n) for n in re.findall(r"counter packets (\d+)", res.stdout))


def tables(ep: Endpoint) -> list[str]:
    """The fault tables (``astral_fault_*``) present in ``ep``'s namespace."""
    res = run_in(ep, [nft_binary(), "list", "tables", "netdev"], check=False)
    return re.findall(rf"table netdev ({TABLE_PREFIX}\S+)", res.stdout)


# ----------------------------------------------------------------------- link state
def routes_of(ep: Endpoint) -> list[dict[str, Any]]:
    """IPv4 routes through ``ep`` (``ip -j route``): an admin-down drops them, so they
    are put back after every up (:func:`set_link`)."""
    res = run_in(ep, ["ip", "-j", "-4", "route", "show", "dev", ep.iface], check=False)
    try:
        return list(json.loads(res.stdout or "[]"))
    except ValueError:
        return []


def route_command(route: dict[str, Any], iface: str) -> list[str]:
    """``ip route replace`` for one route of :func:`routes_of`.

    >>> route_command({"dst": "10.1.0.0/24", "gateway": "10.0.0.254"}, "b0s0-eth0")
    ['ip', 'route', 'replace', '10.1.0.0/24', 'via', '10.0.0.254', 'dev', 'b0s0-eth0']
    """
    cmd = ["ip", "route", "replace", str(route["dst"])]
    if route.get("gateway"):
        cmd += ["via", str(route["gateway"])]
    cmd += ["dev", iface]
    if route.get("scope") and route["scope"] != "universe":
        cmd += ["scope", str(route["scope"])]
    if route.get("prefsrc"):
        cmd += ["src", str(route["prefsrc"])]
    return cmd


def set_link(ep: Endpoint, up: bool, routes: Sequence[dict[str, Any]] = ()) -> None:
    """``ip link set IFACE up|down`` in its namespace; after an up, ``routes`` are put back
    (link routes first, then those via a gateway)."""
    run_in(ep, ["ip", "link", "set", ep.iface, "up" if up else "down"])
    if up:
        for route in sorted(routes, key=lambda r: bool(r.get("gateway"))):
            run_in(ep, route_command(route, ep.iface), check=False)


def link_present(ep: Endpoint) -> bool:
    """True while the interface exists in its namespace."""
    if ep.namespace_gone():
        return False
    return run_in(ep, ["ip", "link", "show", ep.iface], check=False).returncode == 0


# ----------------------------------------------------------------------- the flapper
CUT_LINK, CUT_DROP = "link", "drop"
CUTS = (CUT_LINK, CUT_DROP)
"""How the flapper takes a cable down: ``link`` (both ends ``ip link set down``: carrier
lost; p4sim) or ``drop`` (a drop-everything egress table on both ends, the interfaces left
up; BMv2, which freezes when its own interface goes down: see the module docstring)."""


def cut_for_target(target: str) -> str:
    """The cut a flapping cable uses on a switch target.

    >>> cut_for_target("p4sim"), cut_for_target("bmv2")
    ('link', 'drop')
    """
    return CUT_DROP if target == "bmv2" else CUT_LINK


def cut_tables(table: str, ends: Sequence[Endpoint]) -> list[tuple[str, list[Endpoint]]]:
    """The drop cut's tables: one per namespace among ``ends`` (``table``, ``table_1``, …),
    each with the ends in it.

    >>> [(t, [e.iface for e in eps]) for t, eps in cut_tables("astral_fault_f", [
    ...     Endpoint("s0-eth1"), Endpoint("h-eth0", 7, 8), Endpoint("s0-eth2")])]
    [('astral_fault_f', ['s0-eth1', 's0-eth2']), ('astral_fault_f_1', ['h-eth0'])]
    """
    groups: dict[tuple[int, int], list[Endpoint]] = {}
    for ep in ends:
        groups.setdefault((ep.netns_pid, ep.netns_inode), []).append(ep)
    return [(table if i == 0 else f"{table}_{i}", eps) for i, eps in enumerate(groups.values())]


def flapper_command(ends: Sequence[Endpoint], period_s: float, down_s: float,
                    cut: str = CUT_LINK, table: str = "") -> list[str]:
    """The command line of the flapper process (``python -m testbed.faultnet flap``);
    ``cut`` ``drop`` needs the name of its nft ``table``.

    >>> flapper_command([Endpoint("s0-eth1"), Endpoint("h-eth0", 7, 8)], 2.0, 1.0)[3:]
    ['flap', '--period-s', '2', '--down-s', '1', '--end', 's0-eth1@0@0', '--end', 'h-eth0@7@8']
    >>> flapper_command([Endpoint("s0-eth1")], 2.0, 1.0, CUT_DROP, "astral_fault_f")[-4:]
    ['--cut', 'drop', '--table', 'astral_fault_f']
    """
    if cut not in CUTS:
        raise ValueError(f"cut {cut!r}: one of {', '.join(CUTS)}")
    if cut == CUT_DROP and not table:
        raise ValueError("the drop cut needs the name of its nft table")
    cmd = [sys.executable, "-m", "testbed.faultnet", "flap", "--period-s", f"{period_s:g}",
           "--down-s", f"{down_s:g}"]
    for ep in ends:
        cmd += ["--end", f"{ep.iface}@{ep.netns_pid}@{ep.netns_inode}"]
    if cut == CUT_DROP:
        cmd += ["--cut", CUT_DROP, "--table", table]
    return cmd


def mend_cut(table: str, ends: Sequence[Endpoint]) -> list[str]:
    """Delete the drop cut's tables of ``ends`` (those already gone are fine); what was
    done, in words."""
    return [delete_table(t, eps[0]) for t, eps in cut_tables(table, ends)]


def flap(ends: Sequence[Endpoint], period_s: float, down_s: float,
         stop: threading.Event, cut: str = CUT_LINK, table: str = "") -> int:
    """Take the cable down (``cut``: every end's link down, or a drop-everything egress
    table ``table`` on every end), wait ``down_s``, bring it up (routes restored, or the
    tables deleted), wait the rest of ``period_s``; again until ``stop`` is set, then leave
    it up. Ends when an interface disappears (the testbed was torn down). Returns the
    cycles done."""
    routes = {ep: routes_of(ep) for ep in ends} if cut == CUT_LINK else {}
    cycles = 0

    def down() -> None:
        if cut == CUT_DROP:
            for t, eps in cut_tables(table, ends):
                add_table(t, eps, "counter drop")
        else:
            for ep in ends:
                set_link(ep, False)

    def up() -> None:
        if cut == CUT_DROP:
            mend_cut(table, ends)
        else:
            for ep in ends:
                if link_present(ep):
                    set_link(ep, True, routes[ep])

    try:
        while not stop.is_set():
            if not all(link_present(ep) for ep in ends):
                break
            down()
            stop.wait(down_s)
            up()
            cycles += 1
            stop.wait(max(0.0, period_s - down_s))
    finally:
        up()
    return cycles


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m testbed.faultnet flap --period-s S --down-s S --end IFACE@PID@INODE ...``
    (started and stopped by :mod:`testbed.faults`; SIGTERM leaves every end up)."""
    ap = argparse.ArgumentParser(prog="python -m testbed.faultnet")
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("flap", help="take a cable's ends down and up until SIGTERM")
    f.add_argument("--period-s", type=float, required=True)
    f.add_argument("--down-s", type=float, required=True)
    f.add_argument("--end", action="append", required=True, help="IFACE@NETNS_PID@INODE")
    f.add_argument("--cut", choices=CUTS, default=CUT_LINK,
                   help="link: ends set down (default); drop: a drop-everything egress table")
    f.add_argument("--table", default="", help="the drop cut's nft table")
    args = ap.parse_args(argv)
    if args.cut == CUT_DROP and not args.table.startswith(TABLE_PREFIX):
        ap.error(f"--cut drop needs --table {TABLE_PREFIX}NAME")
    ends = []
    for raw in args.end:
        iface, pid, inode = raw.rsplit("@", 2)
        ends.append(Endpoint(iface, int(pid), int(inode)))
    stop = threading.Event()

    def on_term(_sig: int, _frame: Optional[FrameType]) -> None:
        # set from a thread, not from the handler: Event.set takes the Event's lock, which
        # this (main) thread may hold inside its own stop.wait: a deadlock (host/nic/sigflag.py)
        threading.Thread(target=stop.set, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    try:
        cycles = flap(ends, args.period_s, args.down_s, stop, args.cut, args.table)
    except FaultNetError as exc:
        print(f"testbed.faultnet: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"cycles": cycles, "ends": [asdict(e) for e in ends]}))
    return 0


__all__ = ["CUTS", "CUT_DROP", "CUT_LINK", "Endpoint", "FaultNetError", "TABLE_PREFIX",
           "add_table", "blackhole_rule", "chance", "corrupt_rule", "cut_for_target",
           "cut_tables", "delete_table", "flap", "flapper_command", "link_present", "mend_cut",
           "loss_rule", "nft_binary", "nft_table_text", "per_mille", "routes_of",
           "route_command", "run_in", "set_link", "table_counter", "table_name", "tables"]


if __name__ == "__main__":
    sys.exit(main())


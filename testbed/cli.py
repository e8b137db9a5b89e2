"""The testbed launcher: a multi-rail fabric of P4 switches in Mininet, and its teardown.

::

    python -m testbed up   [--target auto|p4sim|bmv2] [--fabric FILE | --spec FILE]
                           [--cli auto|yes|no] [--hold] [--tc-links] [--log-level L] [--p4c P4C]
                           [--insecure]
    python -m testbed down         # what `make stop` runs: only what `up` recorded
    python -m testbed ping         # all-pairs ping per rail on a running testbed
    python -m testbed status       # what of the recorded testbed still exists
    python -m testbed deps         # install the Debian packages (root) or print how
    python -m scenarios up --scenario NAME [up's options]   # up, then a scenario (make run)

``up`` does, in order: build the fabric (``topo``: the default ``FabricSpec()``, ``--spec FILE`` or
``--fabric FILE``) and write it to ``build/topology.json``; compile ``p4src/fabric.p4``
(``p4sim compile`` → ``build/fabric.p4info.txtpb`` + ``build/fabric.json``, or ``p4c-bm2-ss``
→ ``build/bmv2/`` for BMv2); start Mininet with one host per server (a NIC per rail) and
one switch process per leaf/spine (:mod:`testbed.net`), each serving P4Runtime over TLS
with client authentication, from a throw-away CA made in ``build/pki/`` (:mod:`testbed.tls`;
``--insecure``: plaintext, no PKI); program every switch with
``controller.fabric_setup.FabricProgrammer``; ping every pair of NICs on the same rail
(same leaf and across the spines) and print the result; run what the caller hands it
(``python -m scenarios up`` hands it a scenario: :mod:`scenarios`); then open the Mininet
CLI when
stdin is a terminal (``--cli auto``), or wait for Ctrl-C with ``--hold``, and tear
everything down on the way out (also on errors and SIGTERM). A crashed switch is reported
with the tail of its log.

Files: ``logs/<sw>.log`` (packet trace), ``logs/<sw>.out`` (process output),
``logs/<sw>-p4runtime-requests.txt`` (p4sim), ``pcaps/<sw>-eth<N>_in.pcap``/``_out.pcap``,
``build/testbed-state.json`` (PIDs, namespaces and interfaces created; ``down`` reads it).

Exit status: 0 when everything asked for worked, 1 when some pings failed, 2 when a step
failed (the message says which and how to fix it).
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Optional, Sequence

import topo
from controller.fabric_setup import FabricProgrammer
from controller.fabric.qos import thresholds_option
from p4src.buffermodel import DynamicThresholds
from testbed.faultcli import add_arguments as add_fault_arguments
from testbed.faultcli import cmd_fault
from testbed.faultundo import undo_recorded
from testbed.net import (APT_COMMAND, APT_PACKAGES, REPO, FabricNet, NetOptions, TestbedError,
                         TestbedState, leftovers, link_exists, load_mininet, missing_monitor_tools,
                         missing_tools, proc_cmdline, record_matches, teardown)
from testbed.tls import PKI_DIR, controller_tls
from topo import FabricSpec, build_fabric

PROGRAM = REPO / "p4src" / "fabric.p4"
BUILD = REPO / "build"
STATE_PATH = BUILD / "testbed-state.json"
TOPOLOGY_PATH = BUILD / "topology.json"
STILL_MISSING: tuple[str, ...] = ()


# ------------------------------------------------------------------------- building
def choose_target(requested: str) -> str:
    """``auto`` → bmv2 when ``simple_switch_grpc`` is on PATH, else p4sim.

    >>> choose_target("p4sim")
    'p4sim'
    """
    if requested == "auto":
        return "bmv2" if shutil.which("simple_switch_grpc") else "p4sim"
    if requested not in ("p4sim", "bmv2"):
        raise TestbedError(f"unknown target {requested!r}: use p4sim, bmv2 or auto")
    return requested


def p4sim_compile_key(cmd: Sequence[str]) -> str:
    """What a p4sim compile of fabric.p4 depends on, as one sha256: the command line, every
    file under ``p4src/`` that a P4 program can include, and the compiler itself (every
    ``.py`` and ``.p4`` file of the ``p4sim`` package). Equal keys, equal outputs.

    >>> p4sim_compile_key(["x"]) == p4sim_compile_key(["x"]) != p4sim_compile_key(["y"])
    True
    """
    h = hashlib.sha256("\0".join(cmd).encode())
    files = sorted([*PROGRAM.parent.rglob("*.p4"), *(REPO / "p4sim").rglob("*.py"),
                    *(REPO / "p4sim").rglob("*.p4")])
    for f in files:
        h.update(str(f.relative_to(REPO)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def compile_fabric(target: str, p4c: str = "p4c-bm2-ss") -> tuple[Path, Path]:
    """(P4Info text file, device config) of ``p4src/fabric.p4`` for ``target``. For p4sim
    the outputs are reused when nothing they depend on changed (:func:`p4sim_compile_key`,
    kept beside them with a hash of the outputs themselves, so a file rewritten or cut
    short since is compiled again); p4c is always run (its version is the user's)."""
    include = str(PROGRAM.parent / "include")
    key = key_path = None
    if target == "p4sim":
        p4info, config = BUILD / "fabric.p4info.txtpb", BUILD / "fabric.json"
        cmd = [sys.executable, "-m", "p4sim", "compile", str(PROGRAM), "-I", include,
               "--p4info", str(p4info), "--config", str(config)]
        key, key_path = p4sim_compile_key(cmd), BUILD / "fabric.p4sim-key"
        try:                                   # the outputs as that compile wrote them
            if key_path.read_text() == f"{key} {_outputs_sha(p4info, config)}":
                return p4info, config
        except OSError:
            pass
    else:
        if shutil.which(p4c) is None:
            raise TestbedError(f"{p4c} not found: install p4c or use TARGET=p4sim")
        p4info, config = BUILD / "bmv2" / "fabric.p4info.txtpb", BUILD / "bmv2" / "fabric.json"
        cmd = [p4c, "-I", include, "--p4runtime-files", str(p4info), "-o", str(config),
               str(PROGRAM)]
    p4info.parent.mkdir(parents=True, exist_ok=True)
    if key_path is not None:
        key_path.unlink(missing_ok=True)       # outputs being rewritten: no longer that key's
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, timeout=600)
    if res.returncode != 0:
        raise TestbedError(f"compiling {PROGRAM.name} failed ({' '.join(cmd)}):\n"
                           f"{res.stderr.decode(errors='replace')}")
    if key_path is not None and key is not None:
        key_path.write_text(f"{key} {_outputs_sha(p4info, config)}")
    return p4info, config


def _outputs_sha(*paths: Path) -> str:
    """One sha256 over the files' contents (OSError when one is missing)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def load_topology(path: Optional[Path] = None, spec_path: Optional[Path] = None,
                  write: bool = True) -> Any:
    """The fabric (``topo``): a fabric file ``path``, a spec file (YAML/JSON) ``spec_path``,
    or the default ``FabricSpec()``; written to ``build/topology.json`` for the others
    (``write=False``: only read, as a check before the testbed starts does).

    A malformed file raises TestbedError naming the field (``topo.SpecError``'s message).
    """
    try:
        if path is not None:
            fabric = topo.load_fabric(path)
        else:
            spec = topo.load_spec(spec_path) if spec_path is not None else topo.FabricSpec()
            fabric = topo.build_fabric(spec)
    except topo.SpecError as exc:
        raise TestbedError(f"bad topology: {exc}") from None
    if write and (path is None or Path(path).resolve() != TOPOLOGY_PATH.resolve()):
        TOPOLOGY_PATH.parent.mkdir(parents=True, exist_ok=True)
        TOPOLOGY_PATH.write_text(fabric.to_json())
    return fabric


def pki_dir_for(state_path: Path) -> Path:
    """Where ``up`` makes its PKI: ``pki/`` beside the state file (``build/pki`` for the
    default ``build/testbed-state.json``).

    >>> pki_dir_for(STATE_PATH) == PKI_DIR
    True
    """
    return state_path.resolve().parent / "pki"


def program_switches(fabric: Any, p4info: Path, config: Path, pki_dir: Optional[Path] = None,
                     thresholds: Optional[DynamicThresholds] = None) -> Any:
    """Push the pipeline and the fabric's entries to every switch; the programmer
    (connected over TLS with the controller's certificate of the PKI at ``pki_dir``, in
    plaintext without one). ``thresholds``: dynamic PFC/ECN thresholds instead of the
    static ones (``--thresholds``)."""
    try:
        tls = controller_tls(pki_dir) if pki_dir is not None else None
    except (OSError, KeyError) as exc:
        raise TestbedError(f"the controller's TLS credentials: {exc}") from None
    programmer = FabricProgrammer(fabric, str(p4info), str(config), tls=tls,
                                  thresholds=thresholds)
    try:
        programmer.connect_all()
        programmer.push_pipelines()
        programmer.install_all()
    except Exception as exc:  # noqa: BLE001 — any controller failure is reported as one line
        programmer.close()
        raise TestbedError(f"programming the switches failed: {exc}") from exc
    return programmer


# ----------------------------------------------------------------------------- ping
@dataclass(slots=True)
class PingResult:
    """One ping between two NICs of the same rail.

    >>> PingResult("b0s0", "10.0.0.1", "b1s0", "10.1.0.1", 0, True, 3, 3).ok
    True
    """
    src: str
    src_ip: str
    dst: str
    dst_ip: str
    rail: int
    across_blocks: bool
    sent: int
    received: int

    @property
    def ok(self) -> bool:
        """At least one reply came back."""
        return self.received > 0


def ping_pairs(fabric: Any) -> list[tuple[Any, Any, Any, Any]]:
    """(src host, src NIC, dst host, dst NIC) for every ordered pair on the same rail."""
    pairs = []
    for (h1, n1), (h2, n2) in itertools.permutations(
            [(h, n) for h in fabric.hosts for n in h.nics], 2):
        if h1.name != h2.name and n1.rail == n2.rail:
            pairs.append((h1, n1, h2, n2))
    return pairs


def ping_all(fabric: Any, state: TestbedState, count: int = 3,
             parallel: int = 16) -> list[PingResult]:
    """Ping every same-rail NIC pair from inside the hosts' namespaces (``mnexec -a``)."""
    shells = {r.name: r.pid for r in state.procs if r.kind == "host-shell"}
    todo = ping_pairs(fabric)
    results: list[PingResult] = []
    for start in range(0, len(todo), parallel):
        batch = todo[start:start + parallel]
        procs = [subprocess.Popen(
            ["mnexec", "-a", str(shells[h1.name]), "ping", "-n", "-q", "-c", str(count),
             "-i", "0.2", "-W", "2", "-I", n1.ip, n2.ip],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for h1, n1, _, n2 in batch]
        for (h1, n1, h2, n2), proc in zip(batch, procs):
            out, _ = proc.communicate(timeout=30)
            m = re.search(r"(\d+) packets transmitted, (\d+) (?:packets )?received",
                          out.decode(errors="replace"))
            sent, recv = (int(m.group(1)), int(m.group(2))) if m else (count, 0)
            results.append(PingResult(h1.name, n1.ip, h2.name, n2.ip, n1.rail,
                                      h1.block != h2.block, sent, recv))
    return results


def ping_report(results: Sequence[PingResult]) -> str:
    """A short per-rail summary, with every failed pair listed."""
    lines = []
    for rail in sorted({r.rail for r in results}):
        on = [r for r in results if r.rail == rail]
        cross = [r for r in on if r.across_blocks]
        lines.append(f"  rail {rail}: {sum(r.ok for r in on)}/{len(on)} pairs answer "
                     f"({sum(r.ok for r in cross)}/{len(cross)} across blocks via the spines)")
    lines += [f"  FAIL {r.src} {r.src_ip} -> {r.dst} {r.dst_ip} ({r.received}/{r.sent})"
              for r in results if not r.ok]
    return "\n".join(lines)


# --------------------------------------------------------------------------- commands
def preflight(state_path: Path) -> None:
    """Refuse to start without root, the Debian tools, or while a recorded testbed is up
    (TestbedError with the fix); forget the state file of a testbed that is gone."""
    if os.geteuid() != 0:
        raise TestbedError("the testbed needs root (network namespaces, veths): "
                           "run it with sudo, e.g. `sudo make run`")
    missing = missing_tools()
    if missing:
        raise TestbedError(f"missing Debian packages {' '.join(missing)}: run {APT_COMMAND}")
    old = TestbedState.load(state_path)
    if old is not None:
        left = leftovers(old)
        if any(left.values()):
            raise TestbedError(f"a testbed is already up (state {state_path}: {left}); "
                               "stop it first with `make stop`")
        state_path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def on_signal(signum: int, frame: Optional[FrameType]) -> None:  # noqa: ARG001
    """SIGTERM/SIGHUP handler: unwind like Ctrl-C so teardown in `finally` runs."""
    raise KeyboardInterrupt(f"signal {signum}")


#: what runs on the live fabric after the ping check (a scenario: :mod:`scenarios`); its
#: exit status. Arguments: the parsed command line, the fabric, the programmer, the net.
AfterPing = Callable[[argparse.Namespace, Any, Any, FabricNet], int]


def cmd_up(args: argparse.Namespace, after_ping: Optional[AfterPing] = None) -> int:
    """Bring the fabric up, program it, ping, run ``after_ping`` (if given and everything
    so far worked), CLI or hold, tear down."""
    try:
        thresholds = thresholds_option(getattr(args, "thresholds", "static"))
    except ValueError as exc:
        print(f"testbed: {exc}", flush=True)
        return 2
    preflight(args.state)
    target = choose_target(args.target)
    t0 = time.monotonic()
    fabric = load_topology(args.fabric, args.spec)
    print(f"testbed: fabric of {len(fabric.switches)} switches and {len(fabric.hosts)} "
          f"servers -> {TOPOLOGY_PATH}", flush=True)
    try:
        pcap_dir, pcap_switches = capture_options(args, fabric)
    except ValueError as exc:
        print(f"testbed: {exc}", flush=True)
        return 2
    p4info, config = compile_fabric(target, args.p4c)
    print(f"testbed: compiled {PROGRAM.relative_to(REPO)} for {target} -> {config}", flush=True)
    opts = NetOptions(target=target,
                      binary=args.simple_switch_grpc if target == "bmv2" else None,
                      log_level=args.log_level, tc_links=args.tc_links, state_path=args.state,
                      log_dir=args.logs.resolve(),
                      pcap_dir=pcap_dir, pcap_switches=pcap_switches,
                      pki_dir=None if args.insecure else pki_dir_for(args.state))
    fnet = FabricNet(fabric, opts)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    status = 0
    try:
        fnet.start()
        if fnet.port_notices:  # switches moved off busy ports: tell the other tools
            TOPOLOGY_PATH.write_text(fabric.to_json())
        print(f"testbed: {len(fnet.daemons)} {target} switches ready in "
              f"{time.monotonic() - t0:.1f} s (state in {args.state}; P4Runtime "
              + ("in plaintext: --insecure" if opts.pki_dir is None else
                 f"over TLS with client certificates, PKI in {opts.pki_dir}") + ")", flush=True)
        programmer = None
        try:
            programmer = program_switches(fabric, p4info, config, opts.pki_dir, thresholds)
            if thresholds is not None:
                print(f"testbed: dynamic PFC/ECN thresholds ({args.thresholds}): "
                      f"{thresholds.buffer.size_cells} cells of "
                      f"{1 << thresholds.buffer.cell_bytes_log2} bytes", flush=True)
            print(f"testbed: pipelines and routes installed "
                  f"({time.monotonic() - t0:.1f} s since start)", flush=True)
        except TestbedError as exc:
            print(f"testbed: {exc}", flush=True)
            status = 2
        results = ping_all(fabric, fnet.state)
        good = sum(r.ok for r in results)
        print(f"testbed: ping story — {good}/{len(results)} same-rail NIC pairs answer\n"
              f"{ping_report(results)}", flush=True)
        if good != len(results):
            status = status or 1
            for report in fnet.crashed():
                print(f"testbed: {report}", flush=True)
        if after_ping is not None and status == 0:
            status = after_ping(args, fabric, programmer, fnet)
        print(banner(target, opts.pcap_dir is not None, opts.pcap_switches), flush=True)
        if _want_cli(args.cli):
            from mininet.cli import CLI  # noqa: PLC0415 — heavy: mininet
            CLI(fnet.net)
        elif args.hold:
            print("testbed: up; Ctrl-C (or `make stop`) tears it down", flush=True)
            while all(d.alive() for d in fnet.daemons.values()):
                time.sleep(1)
            for report in fnet.crashed():
                print(f"testbed: {report}", flush=True)
        if programmer is not None:
            programmer.close()
    except KeyboardInterrupt:
        print("\ntestbed: interrupted", flush=True)
    except TestbedError as exc:
        print(f"testbed: {exc}", file=sys.stderr, flush=True)
        status = 2
    finally:
        done = fnet.stop()
        extra = [d for d in done if d.startswith("could not")]
        print(f"testbed: torn down{': ' + extra[0] if extra else ''}", flush=True)
        status = status or (2 if extra else 0)
    return status


def banner(target: str, pcaps: bool = True, pcap_switches: Optional[frozenset[str]] = None) -> str:
    """Where things are, and what `make run` does not do yet.

    >>> banner("p4sim", pcaps=False).split("; ")[0][-46:]
    'no packet captures (--pcap or PCAP=1 for them)'
    >>> "pcaps/<switch>-eth<N>_in|out.pcap of s0 only" in banner("p4sim", True, frozenset({"s0"}))
    True
    """
    missing = "".join(f"\n  - {m}" for m in STILL_MISSING)
    requests = ("P4Runtime requests to logs/<switch>-p4runtime-requests.txt, "
                if target == "p4sim" else
                "queue control through simple_switch_CLI --thrift-port 9090+device id, ")
    if not pcaps:
        captures = "no packet captures (--pcap or PCAP=1 for them)"
    else:
        which = f" of {', '.join(sorted(pcap_switches))} only" if pcap_switches else ""
        captures = f"packets to pcaps/<switch>-eth<N>_in|out.pcap{which}"
    return (f"testbed: switches ({target}) log to logs/<switch>.log (per-packet trace with "
            f"LOG_LEVEL=trace), {requests}"
            f"{captures}; `make stop` cleans up after a crash"
            + (f"\ntestbed: still missing from the story:{missing}" if missing else ""))


def _want_cli(mode: str) -> bool:
    if mode == "auto":
        return sys.stdin.isatty() and os.environ.get("CLI", "1") != "0"
    return mode == "yes"


def cmd_down(args: argparse.Namespace) -> int:  # noqa: ARG001
    """Tear down what build/testbed-state.json records (what `make stop` runs)."""
    state = TestbedState.load(args.state)
    if state is None:
        print(f"testbed: nothing to stop ({args.state} does not exist)")
        return 0
    owner = state.owner_pid
    owner_cmd = proc_cmdline(owner) or "" if owner else ""
    if owner and owner != os.getpid() and re.search(r"-m (testbed|scenarios)\b", owner_cmd):
        os.kill(owner, signal.SIGTERM)  # the `up` process tears down what it made
        deadline = time.monotonic() + 30
        while _alive(owner) and time.monotonic() < deadline:
            time.sleep(0.2)
    for line in undo_recorded(args.state):     # faults first: a stopped switch, nft tables
        print(f"testbed: {line}")
    for line in teardown(state):
        print(f"testbed: {line}")
    left = leftovers(state)
    if any(left.values()):
        print(f"testbed: could not remove {left}", file=sys.stderr)
        return 2
    args.state.unlink(missing_ok=True)
    print("testbed: stopped; nothing recorded is left")
    return 0


def cmd_ping(args: argparse.Namespace) -> int:
    """Ping on a testbed that an `up --hold` (or CLI) process keeps running."""
    state = TestbedState.load(args.state)
    if state is None or not any(record_matches(r) for r in state.procs):
        raise TestbedError("no testbed is running: start one with "
                           "`python -m testbed up --hold`")
    fabric = load_topology(args.fabric or TOPOLOGY_PATH)
    results = ping_all(fabric, state)
    print(ping_report(results))
    return 0 if all(r.ok for r in results) else 1


def cmd_status(args: argparse.Namespace) -> int:  # noqa: ARG001
    """Print what of the recorded testbed still exists (JSON), or one line saying that no
    testbed is recorded."""
    state = TestbedState.load(args.state)
    if state is None:
        print(f"testbed: none recorded in {args.state}: no testbed of this checkout is running "
              "(make run starts one)")
        return 0
    print(json.dumps(leftovers(state), indent=2))
    return 0


def cmd_deps(args: argparse.Namespace) -> int:  # noqa: ARG001
    """Install the Debian packages when root, else print the command. Monitoring's
    packages (Prometheus, Chromium, nftables) are installed with them when root; without
    root their absence is said once and is not an error (the monitor falls back)."""
    missing = missing_tools()
    optional = missing_monitor_tools()
    if not missing and (not optional or os.geteuid() != 0):
        if optional:
            print(f"testbed: monitoring runs without {' '.join(optional)} "
                  f"(install them as root: apt-get install -y {' '.join(optional)})", file=sys.stderr)
        return 0
    if os.geteuid() != 0:
        print(f"testbed: missing {' '.join(missing)}; run: sudo sh -c '{APT_COMMAND}'",
              file=sys.stderr)
        return 1
    missing = missing + optional
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True, env=env)
    return 0


def testbed_unavailable(specs: Sequence[Any] = ()) -> Optional[str]:
    """None when this process may start a Mininet testbed here, else why not (one line):
    root, the Debian tools and no recorded testbed up (:func:`preflight`), Mininet
    importable, and no switch interface of the fabrics of ``specs`` (``topo.FabricSpec``;
    default: the default fabric) already present (a testbed started with another state
    file).

    >>> isinstance(testbed_unavailable(), (str, type(None)))
    True
    """
    if os.geteuid() != 0:
        return "the testbed needs root (namespaces, veths)"
    try:
        preflight(STATE_PATH)
        load_mininet()
    except TestbedError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 — any Mininet import failure means: not here
        return f"Mininet not importable: {exc}"
    for spec in specs or (FabricSpec(),):
        fab = build_fabric(spec)
        taken = [f"{s.name}-eth{p}" for s in fab.switches for p in s.ports
                 if link_exists(f"{s.name}-eth{p}")]
        if taken:
            return f"a testbed is already up here ({', '.join(taken[:3])} exist)"
    return None


def switch_names(text: str) -> frozenset[str]:
    """``--pcap-switches``: a comma-separated list of switch names.

    >>> sorted(switch_names("b0r0l0, s0"))
    ['b0r0l0', 's0']
    >>> switch_names(",")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: --pcap-switches: no switch named in ','
    """
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"--pcap-switches: no switch named in {text!r}")
    return names


def capture_options(args: argparse.Namespace, fabric: Any) -> tuple[Optional[Path], Optional[frozenset[str]]]:
    """The pcap directory (None: no captures) and the switches that capture (None: all) of
    ``up``'s options; a ``--pcap-switches`` name the fabric lacks is an error naming it.

    >>> from types import SimpleNamespace as NS
    >>> fab = NS(switches=[NS(name="b0r0l0"), NS(name="s0")])
    >>> capture_options(NS(pcap=False, pcap_switches=None, pcaps=Path("/p")), fab)
    (None, None)
    >>> capture_options(NS(pcap=False, pcap_switches=frozenset({"s0"}), pcaps=Path("/p")), fab)
    (PosixPath('/p'), frozenset({'s0'}))
    >>> capture_options(NS(pcap=True, pcap_switches=frozenset({"s9"}), pcaps=Path("/p")), fab)
    Traceback (most recent call last):
    ValueError: --pcap-switches: no switch s9 in the fabric (b0r0l0, s0)
    """
    chosen: Optional[frozenset[str]] = getattr(args, "pcap_switches", None)
    if chosen is not None:
        known = {sw.name for sw in fabric.switches}
        unknown = sorted(chosen - known)
        if unknown:
            raise ValueError(f"--pcap-switches: no switch {', '.join(unknown)} in the fabric "
                             f"({', '.join(sorted(known))})")
        return args.pcaps.resolve(), chosen
    return (args.pcaps.resolve() if args.pcap else None), None


def add_up_arguments(up: argparse.ArgumentParser, pcaps_by_default: bool = True) -> None:
    """The options of ``up`` (shared with ``python -m scenarios up``), each with its help.
    ``pcaps_by_default``: whether the switches capture every frame unless ``--no-pcap``
    (``testbed up``, as the P4 tutorials' ``run_exercise.py``) or only with ``--pcap``
    (``scenarios up``: its elephants run at thousands of frames/s; testbed/README.md,
    "Captures")."""
    up.add_argument("--target", default=os.environ.get("TARGET", "auto"),
                    help="p4sim | bmv2 | auto (default: bmv2 when simple_switch_grpc is on "
                         "PATH, else p4sim; $TARGET)")
    up.add_argument("--fabric", type=Path, default=None,
                    help="fabric file (topo's JSON, e.g. build/topology.json)")
    up.add_argument("--spec", type=Path, default=None,
                    help="topology spec (YAML/JSON, topo/specs/); default: FabricSpec()")
    up.add_argument("--cli", choices=("auto", "yes", "no"), default="auto",
                    help="open the Mininet CLI at the end (auto: when stdin is a terminal)")
    up.add_argument("--hold", action="store_true", help="stay up until Ctrl-C / make stop")
    up.add_argument("--tc-links", action="store_true",
                    help="shape every link to its gbps with TCLink")
    up.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"),
                    help="switch log level (trace = per-packet trace; $LOG_LEVEL)")
    up.add_argument("--p4c", default=os.environ.get("P4C", "p4c-bm2-ss"),
                    help="BMv2 compiler (default p4c-bm2-ss; $P4C)")
    up.add_argument("--simple-switch-grpc",
                    default=os.environ.get("SIMPLE_SWITCH_GRPC", "simple_switch_grpc"),
                    help="BMv2 switch (default simple_switch_grpc; $SIMPLE_SWITCH_GRPC)")
    up.add_argument("--logs", type=Path, default=REPO / "logs", help="switch logs (logs/)")
    up.add_argument("--pcaps", type=Path, default=REPO / "pcaps", help="pcap directory")
    up.add_argument("--pcap", action=argparse.BooleanOptionalAction, default=pcaps_by_default,
                    help="per-port captures of every frame, pcaps/<switch>-eth<N>_in|out.pcap "
                         f"(default: {'on' if pcaps_by_default else 'off'}; --no-pcap / --pcap)")
    up.add_argument("--pcap-switches", type=switch_names, default=None, metavar="SW[,SW...]",
                    help="capture on these switches only (implies --pcap; e.g. b0r0l0,s0)")
    up.add_argument("--state", type=Path, default=STATE_PATH,
                    help="state file (default build/testbed-state.json)")
    up.add_argument("--thresholds", default=os.environ.get("THRESHOLDS", "static"),
                    help="PFC/ECN thresholds: static (packets per port, the default) | dynamic "
                         "(shared-buffer alphas) | a YAML/JSON file of dynamic settings "
                         "($THRESHOLDS; p4src/README.md)")
    up.add_argument("--insecure", action="store_true",
                    default=os.environ.get("INSECURE", "0") not in ("", "0"),
                    help="P4Runtime in plaintext, no PKI (default: TLS with client "
                         "certificates from a CA made in build/pki/; $INSECURE=1)")


def build_parser(prog: str = "python -m testbed") -> argparse.ArgumentParser:
    """The command line of :func:`main` (every option with a line of help)."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="fabric up, program, ping, CLI/hold, teardown (no "
                                   "scenario: `python -m scenarios up` runs one)")
    add_up_arguments(up)
    down = sub.add_parser("down", help="tear down what build/testbed-state.json records")
    ping = sub.add_parser("ping", help="all-pairs ping per rail on a running testbed")
    ping.add_argument("--fabric", type=Path, default=None,
                      help="fabric file (default build/topology.json)")
    status = sub.add_parser("status", help="what of the recorded testbed still exists")
    for p in (down, ping, status):
        p.add_argument("--state", type=Path, default=STATE_PATH,
                       help="state file (default build/testbed-state.json)")
    sub.add_parser("deps", help="install Mininet and tools (root) or print the command")
    add_fault_arguments(sub.add_parser("fault", help="inject, list and undo faults on a "
                                                     "running testbed (testbed/faults.py)"))
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m testbed``."""
    args = build_parser().parse_args(argv)
    handler = {"up": cmd_up, "down": cmd_down, "ping": cmd_ping, "status": cmd_status,
               "deps": cmd_deps, "fault": cmd_fault}[args.command]
    try:
        return handler(args)
    except TestbedError as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

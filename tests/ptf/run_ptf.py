"""Run the fabric PTF suite (``tests/ptf/fabric``) against p4sim or BMv2 — what ``make ptf``
and ``tests/ptf/test_ptf_suite.py`` call. Needs root (veth pairs, raw sockets).

Steps, each undone on the way out (also on failure or Ctrl-C):

1. compile ``p4src/fabric.p4`` into ``build/``: p4sim → ``build/fabric.p4info.txtpb`` +
   ``build/fabric.json`` (``python -m p4sim compile``); bmv2 → ``build/bmv2/fabric.json``
   + ``build/bmv2/fabric.p4info.txtpb`` (``$P4C --p4runtime-files``);
2. create veth pairs ``pt<pid>s<N>`` (switch side) / ``pt<pid>h<N>`` (PTF side) for ports
   1..8, IPv6 off, offloads off; the names are recorded in ``build/ptf/veths.txt``;
3. start the switch as the testbed does (:class:`testbed.targets.SwitchLaunch`:
   ``--no-p4 -i N@pt<pid>sN … -- --grpc-server-addr A --cpu-port 255 --priority-queues 8``;
   the fabric maps DSCP to 8 priorities; p4sim also with ``--pfc-passthrough`` so that
   received PFC frames reach the P4 parser as on BMv2, and ``--control-port 0`` for its
   queue control API; BMv2 with a free ``--thrift-port`` for its Thrift runtime);
   readiness: the gRPC port (and p4sim's ready line, BMv2's Thrift port).
   P4Runtime runs over TLS with client certificates by default, as on the testbed
   (testbed/README.md, "TLS"): a throw-away CA in ``<build>/ptf/pki/`` (:class:`testbed.pki.
   FabricPki`: ``ca.pem``, ``switch.pem``/``.key``, ``controller.pem``/``.key``, keys 0600,
   deleted at the end of the run) and the switch started with the five options of
   :func:`testbed.tls.switch_tls_options` (the same on both targets); ``--insecure`` (or
   ``INSECURE=1`` in the environment, e.g. ``make ptf INSECURE=1``): no PKI, plaintext;
4. run ``ptf --test-dir tests/ptf/fabric --interface N@pt<pid>hN …`` with test params
   ``grpc_addr``, ``device_id``, ``p4info``, ``config``, ``target``, ``control_addr``
   (p4sim), ``thrift_port`` (BMv2), and with TLS ``tls_ca``, ``tls_cert``, ``tls_key``,
   ``tls_server_name`` (the tests' P4Runtime client connects with the controller's
   certificate and accepts only the switch's own: :class:`controller.p4rt.tls.ClientTls`)
   — the tests control queues through :func:`testbed.control.open_control` on either
   target;
5. stop the switch by its PID, delete the veths this run created (by recorded name) and
   the PKI.

Usage::

    python tests/ptf/run_ptf.py [--target p4sim|bmv2] [--p4c P4C]
        [--simple-switch-grpc BIN] [--build-dir build] [--insecure] [TEST ...]

Exit status: PTF's (0 = every test passed), 1 also when a test was skipped (every test runs
on both targets), 2 when the set-up failed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # the testbed's PKI, imported when a run makes one
    from testbed.pki import FabricPki, TlsFiles

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4src" / "fabric.p4"
TEST_DIR = Path(__file__).resolve().parent / "fabric"
PORTS = tuple(range(1, 9))
DEVICE_ID = 0
READY_TIMEOUT_S = 120.0
SWITCH_NAME = "switch"
"""The switch's name: its log files and the name its TLS certificate carries."""
CONTROLLER = "controller"
"""The party name of the tests' P4Runtime client certificate."""


class SetupError(RuntimeError):
    """The harness could not prepare the run (the message says which step)."""


def _run(cmd: Sequence[str], timeout_s: float = 30.0, check: bool = True
         ) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, timeout=timeout_s, check=check)


# ------------------------------------------------------------------------------ compile
def compile_program(target: str, build: Path, p4c: str) -> tuple[Path, Path]:
    """(P4Info text file, device config) of the fabric for ``target`` under ``build``."""
    if target == "p4sim":
        p4info, config = build / "fabric.p4info.txtpb", build / "fabric.json"
        cmd = [sys.executable, "-m", "p4sim", "compile", str(PROGRAM), "-I",
               str(PROGRAM.parent / "include"), "--p4info", str(p4info), "--config", str(config)]
    else:
        out = build / "bmv2"
        out.mkdir(parents=True, exist_ok=True)
        p4info, config = out / "fabric.p4info.txtpb", out / "fabric.json"
        cmd = [p4c, "-I", str(PROGRAM.parent / "include"),
               "--p4runtime-files", str(p4info), "-o", str(config), str(PROGRAM)]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, timeout=300)
    if res.returncode != 0:
        raise SetupError(f"compile failed ({' '.join(cmd)}):\n{res.stderr.decode()}"
                         f"{res.stdout.decode()}")
    return p4info, config


# --------------------------------------------------------------------------------- tls
def make_pki(root: Path) -> "FabricPki":
    """A throw-away CA under ``root`` (replacing any; the directory 0700, keys 0600) with
    certificates for the switch and the tests' client.

    >>> import tempfile
    >>> pki = make_pki(Path(tempfile.mkdtemp()) / "pki")
    >>> sorted(tls_test_params(pki))
    ['tls_ca', 'tls_cert', 'tls_key', 'tls_server_name']
    >>> oct(pki.files(SWITCH_NAME).key.stat().st_mode & 0o777)
    '0o600'
    """
    from testbed.pki import FabricPki  # noqa: PLC0415
    pki = FabricPki.create(root, [SWITCH_NAME, CONTROLLER])
    root.chmod(0o700)
    return pki


def tls_test_params(pki: Optional["FabricPki"]) -> dict[str, str]:
    """The PTF test params of the client's credentials (empty values: plaintext).

    >>> tls_test_params(None)["tls_ca"]
    ''
    """
    if pki is None:
        return {"tls_ca": "", "tls_cert": "", "tls_key": "", "tls_server_name": ""}
    files = pki.files(CONTROLLER)
    return {"tls_ca": str(files.ca_cert), "tls_cert": str(files.cert),
            "tls_key": str(files.key), "tls_server_name": SWITCH_NAME}


# ------------------------------------------------------------------------------- veths
class Veths:
    """veth pairs created by this run; :meth:`delete` removes exactly those."""

    def __init__(self, record: Path) -> None:
        self.tag = f"pt{os.getpid() % 100000}"
        self.record = record
        self.made: list[str] = []

    def switch_side(self, port: int) -> str:
        return f"{self.tag}s{port}"

    def host_side(self, port: int) -> str:
        return f"{self.tag}h{port}"

    def create(self, ports: Sequence[int]) -> None:
        for port in ports:
            a, b = self.switch_side(port), self.host_side(port)
            try:
                _run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
            except subprocess.CalledProcessError as exc:
                raise SetupError(f"cannot create veth {a}: {exc.stderr.decode().strip()}") \
                    from None
            self.made.append(a)
            self.record.write_text("\n".join(self.made) + "\n")
            for ifc in (a, b):
                _run(["sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1"], check=False)
                if shutil.which("ethtool"):
                    _run(["ethtool", "-K", ifc, "tx", "off", "rx", "off", "sg", "off"],
                         check=False)
                _run(["ip", "link", "set", ifc, "mtu", "9000"], check=False)
                _run(["ip", "link", "set", ifc, "up"])

    def delete(self) -> None:
        for a in self.made:
            _run(["ip", "link", "del", a], check=False)
        self.made.clear()
        self.record.unlink(missing_ok=True)


# ------------------------------------------------------------------------------ switch
class Switch:
    """The switch process of this run, started as the testbed starts its switches
    (:class:`testbed.targets.SwitchLaunch`, :class:`testbed.net.SwitchDaemon`); logs in
    ``logdir``. p4sim also gets ``--pfc-passthrough`` (received PFC frames reach the P4
    parser, as they always do on BMv2) and ``--control-port 0`` (its queue control API)."""

    def __init__(self, target: str, veths: Veths, logdir: Path, ssg: str,
                 log_level: str = "info", tls: Optional["TlsFiles"] = None) -> None:
        from testbed.targets import SwitchLaunch, TargetError, check_binary  # noqa: PLC0415
        from testbed.net import SwitchDaemon  # noqa: PLC0415
        from testbed.ports import free_port  # noqa: PLC0415

        self.target = target
        grpc_port = free_port()
        self.grpc_addr = f"127.0.0.1:{grpc_port}"
        try:
            launch = SwitchLaunch(
                target, SWITCH_NAME, device_id=DEVICE_ID, grpc_addr=self.grpc_addr,
                interfaces={p: veths.switch_side(p) for p in PORTS}, log_dir=logdir,
                pcap_dir=None, log_level=log_level,
                binary=check_binary(target, ssg if target == "bmv2" else None),
                thrift_port=free_port(avoid={grpc_port}) if target == "bmv2" else None,
                p4sim_flags=("--pfc-passthrough", "--control-port", "0"), tls=tls)
        except TargetError as exc:
            raise SetupError(str(exc)) from None
        self.daemon = SwitchDaemon.of(launch)
        self.cmd = self.daemon.cmd
        self.cpu_port = launch.cpu_port
        self.daemon.start()

    @property
    def control_addr(self) -> str:
        """p4sim's control API (``""`` on BMv2)."""
        return self.daemon.control_addr

    @property
    def thrift_port(self) -> Optional[int]:
        """BMv2's Thrift runtime port (None on p4sim)."""
        return self.daemon.thrift_port

    def wait_ready(self) -> None:
        from testbed.net import TestbedError  # noqa: PLC0415
        try:
            self.daemon.wait_ready(time.monotonic() + READY_TIMEOUT_S)
        except TestbedError as exc:
            raise SetupError(str(exc)) from None

    def stop(self) -> None:
        self.daemon.stop()


# --------------------------------------------------------------------------------- run
def ptf_command(veths: Veths, params: dict[str, str], logdir: Path,
                tests: Sequence[str]) -> list[str]:
    """The ptf command line for this run."""
    ptf = Path(sys.executable).with_name("ptf")
    ifaces = [a for p in PORTS for a in ("--interface", f"{p}@{veths.host_side(p)}")]
    tp = ";".join(f"{k}='{v}'" for k, v in params.items())
    return [sys.executable, str(ptf), "--test-dir", str(TEST_DIR), *ifaces,
            "--test-params", tp, "--log-file", str(logdir / "ptf.log"),
            "--pypath", str(REPO), *tests]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=("p4sim", "bmv2"), default="p4sim")
    ap.add_argument("--p4c", default=os.environ.get("P4C", "p4c-bm2-ss"))
    ap.add_argument("--simple-switch-grpc",
                    default=os.environ.get("SIMPLE_SWITCH_GRPC", "simple_switch_grpc"))
    ap.add_argument("--build-dir", type=Path, default=REPO / "build",
                    help="where the compiled program and the logs go (default build/)")
    ap.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"),
                    help="the switch's log level (trace: BMv2's and p4sim's per-packet trace "
                         "in build/ptf/switch.log; $LOG_LEVEL)")
    ap.add_argument("--insecure", action="store_true",
                    default=os.environ.get("INSECURE", "") not in ("", "0"),
                    help="P4Runtime in plaintext (default: TLS with client certificates, "
                         "a throw-away PKI in BUILD/ptf/pki; $INSECURE=1)")
    ap.add_argument("tests", nargs="*", help="PTF test names (default: all)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("run_ptf: needs root (veth pairs, raw sockets)", file=sys.stderr)
        return 2
    build: Path = args.build_dir.resolve()
    logdir = build / "ptf"
    logdir.mkdir(parents=True, exist_ok=True)
    veths = Veths(logdir / "veths.txt")
    switch: Optional[Switch] = None
    pki_dir = logdir / "pki"
    pki: Optional["FabricPki"] = None
    try:
        if args.target == "bmv2" and shutil.which(args.p4c) is None:
            raise SetupError(f"{args.p4c} not found (set P4C=…)")
        p4info, config = compile_program(args.target, build, args.p4c)
        veths.create(PORTS)
        pki = None if args.insecure else make_pki(pki_dir)
        switch = Switch(args.target, veths, logdir, args.simple_switch_grpc, args.log_level,
                        tls=pki.files(SWITCH_NAME) if pki is not None else None)
        switch.wait_ready()
        params = {"grpc_addr": switch.grpc_addr, "device_id": str(DEVICE_ID),
                  "p4info": str(p4info), "config": str(config), "target": args.target,
                  "control_addr": switch.control_addr, "cpu_port": str(switch.cpu_port),
                  "thrift_port": str(switch.thrift_port or ""), **tls_test_params(pki)}
        cmd = ptf_command(veths, params, logdir, args.tests)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(REPO), str(TEST_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
        channel = "in plaintext (--insecure)" if pki is None else \
            f"over TLS with client certificates, PKI in {pki_dir}"
        print(f"run_ptf: {args.target} switch at {switch.grpc_addr}, P4Runtime {channel}; "
              f"logs in {logdir}", flush=True)
        res = subprocess.run(cmd, cwd=REPO, env=env, timeout=900, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        print(res.stdout, end="", flush=True)
        skipped = re.search(r"skipped=(\d+)", res.stdout)
        if res.returncode == 0 and skipped:
            print(f"run_ptf: {skipped.group(1)} test(s) skipped on {args.target}: every test "
                  "must run on both targets", file=sys.stderr)
            return 1
        return res.returncode
    except SetupError as exc:
        print(f"run_ptf: {exc}", file=sys.stderr)
        return 2
    finally:
        if switch is not None:
            switch.stop()
        veths.delete()
        if pki is not None:
            shutil.rmtree(pki.root, ignore_errors=True)


if __name__ == "__main__":
    # A script (``make ptf``): its imports of the repository's packages (testbed, topo)
    # resolve from the repository root, as they do for ``python -m`` from there.
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    sys.exit(main())

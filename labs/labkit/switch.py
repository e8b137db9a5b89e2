"""``LabSwitch``: one switch running a lab's P4 program, with veth ports the lab sends
packets into and reads packets from — p4sim by default, BMv2 ``simple_switch_grpc`` with
``target="bmv2"`` (started as the testbed starts its switches:
:class:`testbed.targets.SwitchLaunch`). :meth:`LabSwitch.control` is the switch's queue
control outside P4Runtime on either target (:mod:`testbed.control`).

On enter it compiles the program, creates the veth pairs (names ``lb<pid>…``, recorded in
``build/labs/<lab>/veths.txt``), starts the switch, waits (bounded) until its gRPC port
accepts connections, connects as primary controller (``controller.p4rt``) and pushes the
pipeline. On exit it stops the switch by its PID and deletes exactly the veths it made.
Logs go under ``build/labs/<lab>/``: ``<switch>.log`` (packet trace, also linked as
``switch.log``), ``<switch>-p4runtime-requests.txt`` (p4sim), ``<switch>.out`` and
``pcaps/``.

P4Runtime is in plaintext by default: a lab is one switch on localhost, started and
stopped by the checker itself. ``tls=True`` (or ``LAB_TLS=1`` in the environment, which
``python -m labs.labkit check --tls`` sets) runs it over TLS with client certificates as
the testbed does: a throw-away CA in ``build/labs/<lab>/pki/`` (:class:`testbed.pki.
FabricPki`, keys 0600, deleted on exit) with a certificate for the switch and one for the
controller; the switch gets the five options of :func:`testbed.tls.switch_tls_options`
(the same on both targets) and the connection presents the controller's certificate and
accepts only the switch's own (:attr:`LabSwitch.client_tls`).

Example::

    >>> with LabSwitch(Path("labs/01-ecmp-hashing/ecmp.p4"), lab="01-ecmp-hashing",
    ...                ports=[1, 2, 3, 4, 5]) as sw:                       # doctest: +SKIP
    ...     sw.connection.insert(sw.connection.table_entry(...))
    ...     sw.send(1, frame)
    ...     port_and_frames = sw.receive_all(timeout_s=0.5)
"""
from __future__ import annotations

import itertools
import os
import shutil
import time
from pathlib import Path
from typing import Optional, Sequence

from controller.p4rt import P4InfoHelper, SwitchConnection
from controller.p4rt.tls import ClientTls
from labs.labkit.build import REPO, LabError, compile_program
from labs.labkit.netdev import VethSet
from testbed.control import SwitchControl, open_control
from testbed.targets import TargetError, check_binary
from testbed.net import SwitchDaemon, switch_launch
from testbed.pki import FabricPki
from testbed.ports import free_port

READY_TIMEOUT_S = 90.0
DEVICE_ID = 0
BUILD_LABS = REPO / "build" / "labs"
TLS_ENV = "LAB_TLS"
"""Set to 1 in the environment: every :class:`LabSwitch` without ``tls=`` uses TLS."""
CONTROLLER = "controller"
"""The party name of the lab controller's certificate."""
_instances = itertools.count()


def tls_by_default() -> bool:
    """Whether a :class:`LabSwitch` without ``tls=`` runs P4Runtime over TLS
    (``LAB_TLS=1``; default: plaintext).

    >>> isinstance(tls_by_default(), bool)
    True
    """
    return os.environ.get(TLS_ENV, "") not in ("", "0")


class LabSwitch:
    """A lab's switch (context manager). ``ports`` are the switch ports to create.

    ``p4sim_args`` are extra flags for p4sim only (e.g. ``["--pfc-passthrough"]``); queue
    control on either target is :meth:`control`. ``tls``: P4Runtime over TLS with client
    certificates (None: :func:`tls_by_default`).
    """

    def __init__(self, program: Path, *, lab: str, ports: Sequence[int], target: str = "p4sim",
                 include_dirs: Sequence[Path] = (), p4sim_args: Sequence[str] = (),
                 log_level: str = "info", pcap: bool = True,
                 tls: Optional[bool] = None) -> None:
        if target not in ("p4sim", "bmv2"):
            raise LabError(f"unknown target {target!r} (p4sim or bmv2)")
        self.program, self.lab, self.target = Path(program), lab, target
        self.ports = tuple(ports)
        self.include_dirs = tuple(include_dirs)
        self.p4sim_args, self.log_level, self.pcap = tuple(p4sim_args), log_level, pcap
        n = next(_instances)
        self.name = f"lb{os.getpid() % 100000}" + (chr(ord("a") + n % 26) if n else "")
        self.out_dir = BUILD_LABS / lab
        self.veths = VethSet(self.name, self.ports, self.out_dir / "veths.txt")
        self.daemon: Optional[SwitchDaemon] = None
        self._connection: Optional[SwitchConnection] = None
        self.grpc_addr = ""
        self.tls = tls_by_default() if tls is None else tls
        self.pki_dir = self.out_dir / "pki"
        self.client_tls: Optional[ClientTls] = None
        """The controller's credentials while running with TLS (None in plaintext)."""

    # ---------------------------------------------------------------- properties
    @property
    def connection(self) -> SwitchConnection:
        """The primary P4Runtime connection (pipeline already pushed)."""
        if self._connection is None:
            raise LabError("the switch is not running (use LabSwitch as a context manager)")
        return self._connection

    @property
    def p4info(self) -> P4InfoHelper:
        """The P4Info of the lab's program."""
        info = self.connection.p4info
        assert info is not None
        return info

    @property
    def log_path(self) -> Path:
        """The switch's packet trace (BMv2-style log)."""
        return self.out_dir / f"{self.name}.log"

    @property
    def control_addr(self) -> str:
        """``HOST:PORT`` of p4sim's control API (queue rates, PFC); ``""`` on BMv2."""
        return self.daemon.control_addr if self.daemon is not None else ""

    @property
    def thrift_port(self) -> Optional[int]:
        """BMv2's Thrift runtime port (None on p4sim)."""
        return self.daemon.thrift_port if self.daemon is not None else None

    def control(self) -> SwitchControl:
        """Queue rate and depth, register reads: p4sim's control API or BMv2's Thrift
        runtime (close it after use)."""
        if self.daemon is None:
            raise LabError("the switch is not running (use LabSwitch as a context manager)")
        return open_control(self.target, {"control_addr": self.control_addr,
                                          "thrift_port": self.thrift_port}, self.name)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Compile (errors first, even without root), create ports, start the switch,
        connect, push the pipeline."""
        compiled = compile_program(self.program, self.out_dir, self.target, self.include_dirs)
        if os.geteuid() != 0:
            raise LabError("labs need root to create veth ports and raw sockets: "
                           "run `sudo make check` (or as root)")
        try:
            binary = check_binary(self.target)       # BMv2: $SIMPLE_SWITCH_GRPC or PATH
        except TargetError as exc:
            raise LabError(f"{exc} (or use the default TARGET=p4sim)") from None
        self.veths.create()
        grpc_port = free_port()
        self.grpc_addr = f"127.0.0.1:{grpc_port}"
        thrift_port = free_port(avoid={grpc_port}) if self.target == "bmv2" else None
        extra = [*self.p4sim_args, "--control-port", "0"]
        switch_tls = None
        if self.tls:
            pki = FabricPki.create(self.pki_dir, [self.name, CONTROLLER])
            self.pki_dir.chmod(0o700)
            switch_tls = pki.files(self.name)
            mine = pki.files(CONTROLLER)
            self.client_tls = ClientTls(mine.ca_cert, mine.cert, mine.key).for_server(self.name)
        launch = switch_launch(self.target, name=self.name, device_id=DEVICE_ID,
                               grpc_addr=self.grpc_addr, ports=self.ports, log_dir=self.out_dir,
                               pcap_dir=self.out_dir / "pcaps" if self.pcap else None,
                               log_level=self.log_level, binary=binary,
                               thrift_port=thrift_port, extra=extra, tls=switch_tls)
        if self.pcap:
            (self.out_dir / "pcaps").mkdir(parents=True, exist_ok=True)
        self.daemon = SwitchDaemon.of(launch)
        self.daemon.start()
        link = self.out_dir / "switch.log"
        link.unlink(missing_ok=True)
        link.symlink_to(self.log_path.name)
        try:
            self.daemon.wait_ready(time.monotonic() + READY_TIMEOUT_S)
        except Exception as exc:
            raise LabError(str(exc)) from None
        self._connection = SwitchConnection(self.grpc_addr, device_id=DEVICE_ID,
                                            election_id=(0, 1), tls=self.client_tls)
        self._connection.push_pipeline(compiled.p4info, compiled.config)

    def stop(self) -> None:
        """Close the connection, stop the switch by its PID, delete the veths."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self.daemon is not None:
            self.daemon.stop()
        self.veths.delete()
        if self.client_tls is not None:
            shutil.rmtree(self.pki_dir, ignore_errors=True)
            self.client_tls = None

    def __enter__(self) -> "LabSwitch":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- packets
    def send(self, port: int, frame: bytes) -> None:
        """Send one Ethernet frame into switch port ``port``."""
        self.veths.send(port, frame)

    def receive(self, port: int, timeout_s: float) -> Optional[bytes]:
        """The next frame the switch sends out of ``port`` within ``timeout_s``, or None."""
        return self.veths.receive(port, timeout_s)

    def send_paced(self, port: int, frames: Sequence[bytes], window: int = 32,
                   timeout_s: float = 0.5) -> list[tuple[int, bytes]]:
        """Send many frames into ``port`` without overrunning the switch (at most ``window``
        in flight); ``(port, frame)`` of everything that came out, until ``timeout_s`` of
        quiet. Use it instead of a loop of :meth:`send` for more than ~100 frames."""
        return self.veths.send_paced(port, frames, window, timeout_s)

    def receive_all(self, timeout_s: float) -> list[tuple[int, bytes]]:
        """``(port, frame)`` for everything the switch sends until ``timeout_s`` of quiet."""
        return self.veths.receive_all(timeout_s)

    def banner(self) -> str:
        """Where things are, for the student."""
        channel = "P4Runtime over TLS" if self.client_tls is not None else "plaintext"
        return (f"switch {self.name} ({self.target}) up: grpc {self.grpc_addr} ({channel}), "
                f"ports {', '.join(map(str, self.ports))}; logs in {self.out_dir.relative_to(REPO)}/")

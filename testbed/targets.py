"""How a switch process is started, for each target: the one place that knows
``python -m p4sim switch``'s and BMv2 ``simple_switch_grpc``'s command lines.

Both targets take one command-line shape, BMv2's (``docs/simple_switch.md`` and
``targets/simple_switch_grpc/README.md`` of p4lang/behavioral-model; its option parser is
``src/bm_sim/options_parse.cpp``)::

    BINARY --no-p4 -i 1@IFACE ... --device-id N --log-level L [--pcap=DIR] GENERIC...
           -- --grpc-server-addr HOST:PORT --cpu-port 255 --priority-queues 8
              [--grpc-server-ssl --grpc-server-cacert CA --grpc-server-cert CERT
               --grpc-server-key KEY --grpc-server-with-client-auth]

Generic BMv2 options come first; the target options of ``simple_switch_grpc``
(``--grpc-server-addr``, ``--cpu-port``, ``--priority-queues``, and with ``tls`` the five
TLS options of :func:`testbed.tls.switch_tls_options`, the same on both targets) only
after ``--``: BMv2 refuses them before it ("Error while parsing command line arguments",
exit 1), and so does p4sim. Per target:

* **bmv2** logs with ``--log-console`` (its ``--log-file`` and ``--log-console`` are
  exclusive) into ``logs/<switch>.log`` as the P4 tutorials do, and runs its Thrift
  runtime on ``--thrift-port`` (queue control: :mod:`testbed.control`);
* **p4sim** logs with ``--log-file logs/<switch>.log``, writes every P4Runtime request to
  ``logs/<switch>-p4runtime-requests.txt`` and prints its ready and control-API lines on
  stdout (``logs/<switch>.out``); p4sim-only flags (``--control-port``,
  ``--pfc-passthrough``, …) go before ``--``.

Example::

    >>> launch = SwitchLaunch("p4sim", "s0", device_id=201, grpc_addr="127.0.0.1:9760",
    ...                       interfaces={1: "s0-eth1"}, log_dir=Path("logs"), pcap_dir=None)
    >>> launch.command()[3:]      # doctest: +NORMALIZE_WHITESPACE
    ['switch', '--no-p4', '-i', '1@s0-eth1', '--device-id', '201', '--log-level', 'info',
     '--log-file', 'logs/s0.log', '--request-log', 'logs/s0-p4runtime-requests.txt',
     '--', '--grpc-server-addr', '127.0.0.1:9760', '--cpu-port', '255', '--priority-queues', '8']
    >>> SwitchLaunch("bmv2", "s0", device_id=201, grpc_addr="127.0.0.1:9760",
    ...              interfaces={1: "s0-eth1"}, log_dir=Path("logs"), pcap_dir=None,
    ...              thrift_port=9291).command()[8:]      # doctest: +NORMALIZE_WHITESPACE
    ['--log-console', '--thrift-port', '9291', '--', '--grpc-server-addr', '127.0.0.1:9760',
     '--cpu-port', '255', '--priority-queues', '8']
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from testbed.tls import switch_tls_options

if TYPE_CHECKING:
    from testbed.pki import TlsFiles

TARGETS = ("p4sim", "bmv2")
CPU_PORT = 255
#: one egress queue per 802.1p priority (the fabric maps DSCP to 8 priorities; a packet
#: whose priority has no queue is dropped by BMv2: "Priority out of range")
PRIORITY_QUEUES = 8
THRIFT_BASE_PORT = 9090          # BMv2's default thrift port; the testbed uses 9090 + device id
#: the BMv2 release this project is checked against; older ones are refused with a message
BMV2_MIN_VERSION = (1, 15, 0)
BMV2_SWITCH_ENV = "SIMPLE_SWITCH_GRPC"


class TargetError(RuntimeError):
    """A switch cannot be started on this target (the message names the switch, the
    binary or command, and the fix)."""


def default_binary(target: str) -> str:
    """The switch program of ``target``: p4sim runs under this Python; BMv2's is
    ``$SIMPLE_SWITCH_GRPC`` or ``simple_switch_grpc`` from PATH.

    >>> default_binary("p4sim") == sys.executable
    True
    """
    if target == "p4sim":
        return sys.executable
    if target == "bmv2":
        return os.environ.get(BMV2_SWITCH_ENV, "simple_switch_grpc")
    raise TargetError(f"unknown target {target!r} (one of {', '.join(TARGETS)})")


@dataclass(frozen=True, slots=True)
class SwitchLaunch:
    """Everything needed to start one switch process of ``target`` (see the module).

    ``interfaces`` maps switch port → Linux interface; ``program`` is a compiled config to
    load at start (None: ``--no-p4``, the controller pushes the pipeline);
    ``p4sim_flags`` are p4sim-only flags (ignored for BMv2, which has none of them);
    ``tls`` the switch's CA, certificate and key: P4Runtime over TLS with client
    authentication (None: plaintext, ``up --insecure``).
    """
    target: str
    name: str
    device_id: int
    grpc_addr: str
    interfaces: Mapping[int, str]
    log_dir: Path
    pcap_dir: Optional[Path]
    log_level: str = "info"
    thrift_port: Optional[int] = None
    binary: Optional[str] = None
    program: Optional[Path] = None
    cpu_port: int = CPU_PORT
    priority_queues: int = PRIORITY_QUEUES
    p4sim_flags: Sequence[str] = field(default_factory=tuple)
    tls: Optional["TlsFiles"] = None

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise TargetError(f"switch {self.name}: unknown target {self.target!r} "
                              f"(one of {', '.join(TARGETS)})")

    @property
    def log_path(self) -> Path:
        """The switch's log (BMv2's console log / p4sim's ``--log-file``)."""
        return self.log_dir / f"{self.name}.log"

    @property
    def stdout_path(self) -> Path:
        """Where the process's stdout and stderr go: the log itself on BMv2 (it logs to
        the console), ``<switch>.out`` on p4sim (ready and control lines)."""
        return self.log_path if self.target == "bmv2" else self.log_dir / f"{self.name}.out"

    @property
    def request_log_path(self) -> Path:
        """p4sim's P4Runtime request log (BMv2 writes none of its own)."""
        return self.log_dir / f"{self.name}-p4runtime-requests.txt"

    def target_options(self) -> list[str]:
        """simple_switch_grpc's target options: what follows ``--``.

        >>> from testbed.pki import TlsFiles
        >>> SwitchLaunch("bmv2", "s0", device_id=1, grpc_addr="127.0.0.1:9760", interfaces={},
        ...              log_dir=Path("logs"), pcap_dir=None,
        ...              tls=TlsFiles(Path("ca.pem"), Path("s0.pem"), Path("s0.key"))
        ...              ).target_options()[6:]      # doctest: +NORMALIZE_WHITESPACE
        ['--grpc-server-ssl', '--grpc-server-cacert', 'ca.pem', '--grpc-server-cert', 's0.pem',
         '--grpc-server-key', 's0.key', '--grpc-server-with-client-auth']
        """
        options = ["--grpc-server-addr", self.grpc_addr, "--cpu-port", str(self.cpu_port),
                   "--priority-queues", str(self.priority_queues)]
        if self.tls is not None:
            options += switch_tls_options(self.tls)
        return options

    def command(self) -> list[str]:
        """The full command line (argv) of this switch."""
        ifaces = [a for p in sorted(self.interfaces)
                  for a in ("-i", f"{p}@{self.interfaces[p]}")]
        program = [str(self.program)] if self.program is not None else ["--no-p4"]
        generic = [*program, *ifaces, "--device-id", str(self.device_id),
                   "--log-level", self.log_level]
        if self.pcap_dir is not None:
            generic.append(f"--pcap={self.pcap_dir}")
        binary = self.binary or default_binary(self.target)
        if self.target == "p4sim":
            return [binary, "-m", "p4sim", "switch", *generic,
                    "--log-file", str(self.log_path),
                    "--request-log", str(self.request_log_path), *self.p4sim_flags,
                    "--", *self.target_options()]
        thrift = self.thrift_port if self.thrift_port is not None \
            else THRIFT_BASE_PORT + self.device_id
        return [binary, *generic, "--log-console", "--thrift-port", str(thrift),
                "--", *self.target_options()]


_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
#: a log line that reports an error: BMv2's "Error while parsing …", "Error: …", a "[E]"
#: log entry, p4sim's "error: …" (not a usage text that merely lists the word)
_ERROR_LINE = re.compile(r"^\s*(\[[^\]]*\]\s*)*(error\b|fatal\b|\[E\])|\berror:", re.IGNORECASE)


def bmv2_version(binary: str, timeout_s: float = 10.0) -> tuple[int, int, int]:
    """``simple_switch_grpc --version`` as a tuple; TargetError when it cannot be run or
    prints no version.

    >>> bmv2_version("/nonexistent/simple_switch_grpc")
    Traceback (most recent call last):
    testbed.targets.TargetError: /nonexistent/simple_switch_grpc: cannot run it: ...
    """
    try:
        res = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TargetError(f"{binary}: cannot run it: {exc}") from None
    m = _VERSION.search(res.stdout + res.stderr)
    if res.returncode != 0 or m is None:
        last = (res.stdout + res.stderr).strip().splitlines()[-1:] or ["(no output)"]
        raise TargetError(f"{binary} --version: exit status {res.returncode}, no version "
                          f"printed: {last[0]}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def check_binary(target: str, binary: Optional[str] = None) -> str:
    """The resolved path of ``target``'s switch program, or TargetError naming what is
    missing or too old (BMv2 older than :data:`BMV2_MIN_VERSION`).

    >>> check_binary("p4sim") == sys.executable
    True
    """
    binary = binary or default_binary(target)
    if target == "p4sim":
        return binary
    path = shutil.which(binary)
    if path is None:
        raise TargetError(f"{binary} not found: install BMv2 (simple_switch_grpc, built "
                          f"with PI), put it on PATH or set {BMV2_SWITCH_ENV}=/path/to/it, "
                          "or use TARGET=p4sim")
    version = bmv2_version(path)
    if version < BMV2_MIN_VERSION:
        want = ".".join(map(str, BMV2_MIN_VERSION))
        raise TargetError(f"{path} is BMv2 {'.'.join(map(str, version))}; this project "
                          f"needs {want} or newer (target options after '--', "
                          "P4Runtime as documented in p4sim/README.md)")
    return path


def exit_report(name: str, command: Sequence[str], status: Optional[int],
                log_path: Path) -> str:
    """The one line said when switch ``name`` exits at start: the command line, the exit
    status and the last line of its log (its last line that mentions an error, if any:
    BMv2 prints its usage after "Error while parsing command line arguments").

    >>> exit_report("s0", ["simple_switch_grpc", "--bad"], 1, Path("/nonexistent.log"))
    "switch s0 exited at start (status 1): simple_switch_grpc --bad; last log line: '(no log)'"
    """
    try:
        lines = [l for l in log_path.read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        lines = []
    errors = [l for l in lines if _ERROR_LINE.search(l)]
    last = (errors or lines or ["(no log)"])[-1].strip()
    return (f"switch {name} exited at start (status {status}): {' '.join(command)}; "
            f"last log line: {last!r}")


__all__ = ["BMV2_MIN_VERSION", "CPU_PORT", "PRIORITY_QUEUES", "SwitchLaunch", "TARGETS",
           "THRIFT_BASE_PORT", "TargetError", "bmv2_version", "check_binary",
           "default_binary", "exit_report"]

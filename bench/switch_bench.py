"""The ``switch`` benchmark group: figures of a REAL ``python -m p4sim switch`` process.

Every benchmark starts its own switch process (``bench/programs/port_fwd.p4``, gRPC on a
free port of 127.0.0.1), records its PID, and stops it by that PID (SIGTERM, then SIGKILL
after 10 s). Figures:

* ``p4sim.ready_s``: process start (``Popen``) to the ``p4sim switch ready:`` line,
  median of ``config.runs`` starts; ``p4sim.rss_mb``: VmRSS of the last one at that point
  (program loaded, no table entries).
* ``p4sim.p4rt_writes_per_s.batched`` / ``.single``: table entry INSERTs per second through
  P4Runtime (a plain gRPC client: arbitration, SetForwardingPipelineConfig, then Write
  requests of 100 updates or of 1), exact-match table ``FwdIngress.dmac``, up to
  :data:`MAX_ENTRIES` entries per run (read back and checked, then deleted, untimed).
* ``p4sim.p4rt_write_cpu_us.batched`` / ``.single``: CPU time the switch process's
  threads spent during those runs (``/proc/PID/task/*/schedstat``), per entry, in µs: the
  cost of a write on the switch's side whatever else loads the machine.
* ``p4sim.p4rt_read_ms.counters_4096``: one wildcard Read of an indexed counter of 4,096
  cells (``bench/programs/counters.p4``), request sent to the last entity decoded by the
  client, median of 20 reads per run (medians over ``config.runs``); the count is checked.
* ``p4sim.p4rt_read_ms.poll_cells_116`` / ``p4sim.p4rt_read_cpu_ms.poll_cells_116``: one
  Read of :data:`POLL_CELLS` indexed cells of that counter, one entity each (what GOR's
  poller asks a switch for every 0.1 s: 7 counters' cells of its polled ports), end to
  end and in the switch's CPU (:func:`process_cpu_ns` over the run's reads / reads);
  medians as above.
* ``p4sim.p4rt_read_ms.poll_7_counters`` / ``p4sim.p4rt_read_cpu_ms.poll_7_counters``: the
  same for GOR's poll as it asks (:data:`POLL_COUNTERS`): 4 ports' cells of 7 counters,
  counter after counter (tx, rx, ECN, drops, PFC tx one cell a port, PFC rx 8, the
  queue-depth histogram 16), 116 entities; the CPU from ``/proc/PID/task/*/schedstat``
  (ns) on p4sim, ``/proc/PID/stat`` on BMv2.
* With ``--target bmv2`` the write and read probes run unchanged against
  ``simple_switch_grpc`` (no program, no interfaces; the program compiled by
  ``p4c-bm2-ss``, pushed as its JSON with p4c's P4Info) and their figures are named
  ``bmv2.p4rt_writes_per_s.*``, ``bmv2.p4rt_write_cpu_us.*``, ``bmv2.p4rt_read_ms.counters_4096``
  (in ``build/bench-bmv2.json``): PI's P4Runtime server in the very probe p4sim's runs.
* ``p4sim.pps.veth``: frames per second forwarded between two veth ports (root only; the
  figure is not written otherwise). The veth pairs are named after this process and only
  they are deleted.
* ``p4sim.pps.veth_overload``: the same veths under an unpaced sender (root only; see
  :mod:`bench.veth_overload`).

Example::

    $ .venv/bin/python -m bench switch                  # all three (as root for pps.veth)
    $ .venv/bin/python -m bench switch.p4rt_writes --duration 1 --runs 1
    $ .venv/bin/python -m bench switch.p4rt_read --runs 3
    $ .venv/bin/python -m bench switch.p4rt_writes switch.p4rt_read --target bmv2
"""
from __future__ import annotations

import os
import queue
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple, Optional, Sequence

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from bench.results import BenchCheckError, BenchConfig, Benchmark, Figure, median
from p4sim.device import DeviceConfig
from p4sim.engine.program import load_program
from p4sim.frontend.preprocess import preprocess
from p4sim.p4info import build_p4info
from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.switchd.device import SwitchDevice
from process import stop_process
from testbed.ports import free_port

REPO = Path(__file__).resolve().parents[1]
PROGRAM = Path(__file__).resolve().parent / "programs" / "port_fwd.p4"
COUNTERS_PROGRAM = Path(__file__).resolve().parent / "programs" / "counters.p4"
COUNTER_CELLS = 4096
READS_PER_RUN = 20
POLL_CELLS = 116
"""Indexed cells GOR's poller reads from a leaf in one Read (4 polled ports: tx, rx, ECN,
drops, PFC tx one cell each, PFC rx 8 and the queue-depth histogram 16)."""
POLL_READS_PER_RUN = 100
POLL_COUNTERS = (("CntIngress.tx", 1), ("CntIngress.rx", 1), ("CntIngress.ecn", 1), ("CntIngress.drops", 1),
                 ("CntIngress.pfc_tx", 1), ("CntIngress.pfc_rx", 8), ("CntIngress.cells", 16))
"""(counter, cells a port) of GOR's poll of a leaf's 4 polled ports, in its order: 116 cells."""
POLL_PORTS = 4
READY_TIMEOUT_S = 60.0
RPC_TIMEOUT_S = 30.0
MAX_ENTRIES = 4000
BATCH = 100
DEVICE_ID = 0
BENCH_ETHERTYPE = 0x88B5
WINDOW = 32
"""Frames in flight in the veth benchmark (below the switch's default queue depth of 64)."""

Update = p4runtime_pb2.Update


# ---------------------------------------------------------------------- the process
class SwitchProcess:
    """A ``python -m p4sim switch`` child process, stopped only by its own PID.

    ``ready_s`` is the time from ``Popen`` to the ready line, ``grpc_addr`` and
    ``control_addr`` the addresses it announced (P4Runtime, control API).
    ``target_options`` go after ``--`` (``("--priority-queues", "8")``, as the testbed's).

    Example::

        >>> with SwitchProcess.run(PROGRAM) as sw:                 # doctest: +SKIP
        ...     print(sw.pid, sw.grpc_addr, round(sw.ready_s, 2))
        12345 127.0.0.1:40123 1.2
    """

    def __init__(self, program: Path, ports: Sequence[tuple[int, str]] = (),
                 engine: Optional[str] = None, target_options: Sequence[str] = ()) -> None:
        self.program = program
        self.ports = list(ports)
        self.engine = engine
        self.target_options = list(target_options)
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.ready_s = 0.0
        self.grpc_addr = ""
        self.control_addr = ""
        self._stderr = tempfile.TemporaryFile()

    @classmethod
    @contextmanager
    def run(cls, program: Path = PROGRAM, ports: Sequence[tuple[int, str]] = (),
            engine: Optional[str] = None,
            target_options: Sequence[str] = ()) -> Iterator["SwitchProcess"]:
        """Start the switch (``--engine engine`` when given), wait for its ready line,
        stop it on exit."""
        sw = cls(program, ports, engine, target_options)
        try:
            sw.start()
            yield sw
        finally:
            sw.stop()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        """Start the process and wait (bounded) for ``p4sim switch ready: grpc HOST:PORT``."""
        cmd = [sys.executable, "-m", "p4sim", "switch", str(self.program), "--control-port", "0"]
        if self.engine is not None:
            cmd += ["--engine", self.engine]
        for num, iface in self.ports:
            cmd += ["-i", f"{num}@{iface}"]
        cmd += ["--", "--grpc-server-addr", "127.0.0.1:0", *self.target_options]
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=self._stderr)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            line = self._read_line(deadline)
            if line.startswith("p4sim switch control: "):
                self.control_addr = line.split()[3]
            if line.startswith("p4sim switch ready: grpc "):
                self.ready_s = time.perf_counter() - t0
                self.grpc_addr = line.split()[4]
                return

    def _read_line(self, deadline: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if line:
                    return line.decode(errors="replace").strip()
                break
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"p4sim switch did not report ready: {self.stderr_text()}")

    def stderr_text(self) -> str:
        """What the process wrote on stderr so far (its last 2000 characters)."""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-2000:]

    def rss_mb(self) -> float:
        """Resident memory (VmRSS of /proc/PID/status) in MiB."""
        with open(f"/proc/{self.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        raise RuntimeError(f"no VmRSS for PID {self.pid}")

    def stop(self) -> None:
        """SIGTERM this PID (SIGKILL after 10 s); idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc)
        self._stderr.close()


class Bmv2Process:
    """``simple_switch_grpc --no-p4`` (plaintext gRPC on a free port of 127.0.0.1, no
    interfaces) as a child process, stopped only by its own PID; the counterpart of
    :class:`SwitchProcess` for ``--target bmv2``. :meth:`pipeline` compiles a program with
    ``p4c-bm2-ss`` into a temporary folder of its own.

    Example::

        >>> with Bmv2Process.run() as sw:                          # doctest: +SKIP
        ...     p4info, json_bytes = sw.pipeline(PROGRAM)
    """

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.grpc_addr = ""
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-bmv2-")
        self._log = open(Path(self._tmp.name) / "simple_switch_grpc.log", "wb")

    @classmethod
    @contextmanager
    def run(cls) -> Iterator["Bmv2Process"]:
        """Start it, wait (bounded) until its gRPC server answers, stop it on exit."""
        sw = cls()
        try:
            sw.start()
            yield sw
        finally:
            sw.stop()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        self.grpc_addr = f"127.0.0.1:{free_port()}"
        cmd = ["simple_switch_grpc", "--no-p4", "--device-id", str(DEVICE_ID),
               "--thrift-port", str(free_port()), "--", "--grpc-server-addr", self.grpc_addr,
               "--cpu-port", "255"]
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        channel = grpc.insecure_channel(self.grpc_addr)
        try:
            grpc.channel_ready_future(channel).result(timeout=READY_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            raise BenchCheckError(f"simple_switch_grpc did not answer on {self.grpc_addr} within "
                                  f"{READY_TIMEOUT_S:g} s (exit status {self.proc.poll()})") from None
        finally:
            channel.close()

    def pipeline(self, program: Path) -> tuple[p4info_pb2.P4Info, bytes]:
        """``program`` compiled by ``p4c-bm2-ss``: its P4Info and BMv2 JSON."""
        out = Path(self._tmp.name) / program.stem
        out.mkdir(exist_ok=True)
        p4info_path, json_path = out / "p4info.txtpb", out / "program.json"
        res = subprocess.run(["p4c-bm2-ss", "--p4runtime-files", str(p4info_path), "-o", str(json_path),
                              str(program)], capture_output=True, timeout=600)
        if res.returncode != 0:
            raise BenchCheckError(f"p4c-bm2-ss {program.name}: {res.stderr.decode(errors='replace')[-500:]}")
        return text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info()), json_path.read_bytes()

    def stop(self) -> None:
        """SIGTERM this PID (SIGKILL after 10 s); idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc)
        if not self._log.closed:
            self._log.close()
        self._tmp.cleanup()


def p4sim_pipeline(program: Path) -> tuple[p4info_pb2.P4Info, bytes]:
    """``program``'s P4Info and p4sim device config."""
    return (build_p4info(load_program(str(program))),
            DeviceConfig(program.name, preprocess(str(program))).to_json().encode())


@contextmanager
def target_switch(target: str, program: Path) -> Iterator[tuple[int, "P4RuntimeClient"]]:
    """A switch of ``target`` (``p4sim``: ``python -m p4sim switch program``; ``bmv2``:
    :class:`Bmv2Process`) with ``program`` pushed by a primary client: yields (its PID,
    the client)."""
    if target == "bmv2":
        with Bmv2Process.run() as bm, P4RuntimeClient.connect(bm.grpc_addr) as client:
            client.push_config(*bm.pipeline(program))
            yield bm.pid, client
        return
    with SwitchProcess.run(program) as sw, P4RuntimeClient.connect(sw.grpc_addr) as client:
        client.push_pipeline(program)
        yield sw.pid, client


# ---------------------------------------------------------------------- P4Runtime client
def _canonical(value: int) -> bytes:
    """P4Runtime's shortest bytestring: ``_canonical(0) == b"\\x00"``."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


class P4RuntimeClient:
    """A minimal primary controller over raw gRPC stubs (election id 1, role default).

    Example::

        >>> with P4RuntimeClient.connect("127.0.0.1:50051") as c:  # doctest: +SKIP
        ...     c.push_pipeline(PROGRAM)
        ...     c.write([c.exact_update("FwdIngress.port_fwd", 1, "FwdIngress.forward", 2)])
    """

    def __init__(self, address: str, device_id: int = DEVICE_ID) -> None:
        self.device_id = device_id
        self.channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(self.channel).result(timeout=RPC_TIMEOUT_S)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.p4info = p4info_pb2.P4Info()
        self._requests: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self._responses: "queue.Queue[object]" = queue.Queue()
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read_stream, daemon=True)
        self._reader.start()

    @classmethod
    @contextmanager
    def connect(cls, address: str) -> Iterator["P4RuntimeClient"]:
        """Connect and become primary; close the stream and channel on exit."""
        client = cls(address)
        try:
            client.arbitrate()
            yield client
        finally:
            client.close()

    def _read_stream(self) -> None:
        try:
            for resp in self._stream:
                self._responses.put(resp)
        except grpc.RpcError as exc:
            self._responses.put(exc)

    def arbitrate(self) -> None:
        """Send MasterArbitrationUpdate (election id 1) and check we are primary."""
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.low = 1
        self._requests.put(req)
        resp = self._responses.get(timeout=RPC_TIMEOUT_S)
        if not isinstance(resp, p4runtime_pb2.StreamMessageResponse) or \
                not resp.HasField("arbitration") or resp.arbitration.status.code != 0:
            raise RuntimeError(f"arbitration failed: {resp}")

    def push_pipeline(self, program: Path) -> None:
        """SetForwardingPipelineConfig(VERIFY_AND_COMMIT) with p4sim's device config."""
        self.push_config(*p4sim_pipeline(program))

    def push_config(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        """SetForwardingPipelineConfig(VERIFY_AND_COMMIT) of ``p4info`` and ``device_config``."""
        self.p4info = p4info
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(self.p4info)
        req.config.p4_device_config = device_config
        self.stub.SetForwardingPipelineConfig(req, timeout=RPC_TIMEOUT_S)

    def _id(self, kind: str, name: str) -> int:
        for obj in getattr(self.p4info, kind):
            if obj.preamble.name == name:
                return int(obj.preamble.id)
        raise KeyError(name)

    def exact_update(self, table: str, key: int, action: str, *params: int,
                     utype: "Update.Type.ValueType" = Update.INSERT) -> p4runtime_pb2.Update:
        """An Update of a one-field exact table whose action takes only integer params."""
        upd = Update(type=utype)
        te = upd.entity.table_entry
        te.table_id = self._id("tables", table)
        te.match.add(field_id=1).exact.value = _canonical(key)
        if utype != Update.DELETE:
            te.action.action.action_id = self._id("actions", action)
            for i, value in enumerate(params, 1):
                te.action.action.params.add(param_id=i, value=_canonical(value))
        return upd

    def write_request(self, updates: Sequence[p4runtime_pb2.Update]) -> p4runtime_pb2.WriteRequest:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        req.election_id.low = 1
        req.updates.extend(updates)
        return req

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        self.stub.Write(self.write_request(updates), timeout=RPC_TIMEOUT_S)

    def count_entries(self, table: str) -> int:
        """Number of entries of ``table`` returned by a Read."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.add().table_entry.table_id = self._id("tables", table)
        return sum(len(r.entities) for r in self.stub.Read(req, timeout=RPC_TIMEOUT_S))

    def close(self) -> None:
        self._requests.put(None)
        self.channel.close()
        self._reader.join(5)


# ---------------------------------------------------------------------- startup, memory
def run_startup(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.ready_s`` (median of ``config.runs`` starts) and ``p4sim.rss_mb``."""
    times: list[float] = []
    rss = 0.0
    for _ in range(config.runs):
        with SwitchProcess.run(PROGRAM) as sw:
            times.append(sw.ready_s)
            rss = sw.rss_mb()
    return {"p4sim.ready_s": Figure(round(median(times), 3), "s"),
            "p4sim.rss_mb": Figure(round(rss, 1), "MB")}


# ---------------------------------------------------------------------- P4Runtime writes
DMAC = "FwdIngress.dmac"
FORWARD = "FwdIngress.forward"


class WriteRun(NamedTuple):
    """One timed run of :func:`insert_run`: entries/s, and the switch process's CPU per
    entry (µs; None when no PID was given)."""

    rate: float
    cpu_us: Optional[float]


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (``/proc/PID/stat``,
    in clock ticks of 10 ms)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu_ns(pid: int) -> int:
    """Time on a CPU so far, in ns, of the threads process ``pid`` has now (the first
    field of each ``/proc/PID/task/TID/schedstat``): a run of a few thousand writes takes
    tens of ms, too few of :func:`process_cpu_s`'s ticks. Threads that ended are not
    counted; the switch's gRPC and device threads live as long as it does."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def threads_ctx_switches(pid: int) -> int:
    """Context switches so far (voluntary + involuntary, ``/proc/PID/task/TID/status``) of
    the threads process ``pid`` has now: each is a thread put to sleep or preempted, so
    per forwarded frame it counts the wake-ups a frame costs. Threads that ended are not
    counted (as :func:`threads_cpu_ns`)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def process_cpu_ns(pid: int) -> int:
    """:func:`process_cpu_s` in ns: counts the threads that have ended too (simple_switch_grpc's
    gRPC threads come and go, which :func:`threads_cpu_ns` would miss), at 10 ms resolution."""
    return round(process_cpu_s(pid) * 1e9)


def insert_run(client: P4RuntimeClient, batch: int, duration_s: float, max_entries: int = MAX_ENTRIES,
               base_mac: int = 0x0A0000000000, switch_pid: Optional[int] = None,
               cpu_ns: Callable[[int], int] = threads_cpu_ns) -> WriteRun:
    """INSERTs/s of up to ``max_entries`` dmac entries in requests of ``batch`` updates,
    for at most ``duration_s``, and (``switch_pid``) the CPU the switch spent per entry
    (``cpu_ns(switch_pid)`` before and after); the entries are read back (BenchCheckError on a wrong count) and deleted afterwards,
    untimed."""
    requests = [client.write_request([client.exact_update(DMAC, base_mac + i, FORWARD, 1 + i % 8)
                                      for i in range(start, min(start + batch, max_entries))])
                for start in range(0, max_entries, batch)]
    n = 0
    cpu0 = cpu_ns(switch_pid) if switch_pid is not None else 0
    t0 = time.perf_counter()
    for req in requests:
        client.stub.Write(req, timeout=RPC_TIMEOUT_S)
        n += len(req.updates)
        if time.perf_counter() - t0 >= duration_s:
            break
    elapsed = time.perf_counter() - t0
    cpu_us = (cpu_ns(switch_pid) - cpu0) / 1e3 / n if switch_pid is not None else None
    got = client.count_entries(DMAC)
    if got != n:
        raise BenchCheckError(f"{DMAC}: {n} entries inserted, {got} read back")
    for start in range(0, n, BATCH):
        client.write([client.exact_update(DMAC, base_mac + i, "", utype=Update.DELETE)
                      for i in range(start, min(start + BATCH, n))])
    return WriteRun(n / elapsed, cpu_us)


def insert_rate(client: P4RuntimeClient, batch: int, duration_s: float,
                max_entries: int = MAX_ENTRIES, base_mac: int = 0x0A0000000000) -> float:
    """The entries/s of :func:`insert_run`."""
    return insert_run(client, batch, duration_s, max_entries, base_mac).rate


def run_p4rt_writes(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.p4rt_writes_per_s.batched`` (100 updates/request) and ``.single``, and the
    switch's CPU per entry of each (``p4sim.p4rt_write_cpu_us.*``: what the rate would be
    on a core of its own, whatever the load of the machine)."""
    figures: dict[str, Figure] = {}
    target = config.target
    # p4sim's threads live as long as it does (ns resolution); BMv2's come and go
    cpu_ns = process_cpu_ns if target == "bmv2" else threads_cpu_ns
    with target_switch(target, PROGRAM) as (pid, client):
        if config.warmup_s > 0:
            insert_rate(client, BATCH, config.warmup_s, max_entries=1000)
        for label, batch in (("batched", BATCH), ("single", 1)):
            runs = [insert_run(client, batch, config.duration_s, switch_pid=pid, cpu_ns=cpu_ns)
                    for _ in range(config.runs)]
            figures[f"{target}.p4rt_writes_per_s.{label}"] = Figure(round(median([r.rate for r in runs]), 1),
                                                                    "entries/s")
            figures[f"{target}.p4rt_write_cpu_us.{label}"] = Figure(
                round(median([r.cpu_us for r in runs if r.cpu_us is not None]), 1), "us/entry")
    return figures


STAGE_BATCH = 4096
"""Updates in the one WriteRequest :func:`run_p4rt_write_stages` times."""


def write_stages(engine: str, rounds: int, batch: int = STAGE_BATCH) -> dict[str, float]:
    """CPU µs per entry of one WriteRequest of ``batch`` dmac INSERTs, then of the same
    keys' DELETEs, in-process through a real :class:`P4RuntimeServer` on a
    :class:`SwitchDevice` of ``engine`` (no ports, no gRPC round trip): ``parse``
    (``WriteRequest.FromString`` of the wire bytes), ``insert`` and ``delete`` (the
    server's ``_apply`` under its locks, including the copy into C at the device lock's
    release on the native path). Medians of ``rounds``, each with fresh keys (the
    entries are checked, then deleted). Thread CPU time of the calling thread, which
    runs all three.

    >>> write_stages("python", 1, 256)                   # doctest: +SKIP
    {'parse': 0.2, 'insert': 5.6, 'delete': 3.6}
    """
    dev = SwitchDevice(device_id=DEVICE_ID, engine=engine)
    dev.start()
    srv = P4RuntimeServer(dev, "127.0.0.1:0")
    port = srv.start()
    got: dict[str, list[float]] = {"parse": [], "insert": [], "delete": []}
    try:
        with P4RuntimeClient.connect(f"127.0.0.1:{port}") as client:
            client.arbitrate()
            client.push_pipeline(PROGRAM)
            for rnd in range(rounds):
                base = 0x0B0000000000 + rnd * batch
                inserts = client.write_request([client.exact_update(DMAC, base + i, FORWARD, 1 + i % 8)
                                                for i in range(batch)]).SerializeToString()
                deletes = client.write_request([client.exact_update(DMAC, base + i, "", utype=Update.DELETE)
                                                for i in range(batch)]).SerializeToString()
                for stage, wire in (("insert", inserts), ("delete", deletes)):
                    t0 = time.thread_time()
                    request = p4runtime_pb2.WriteRequest.FromString(wire)
                    t1 = time.thread_time()
                    with srv._state_lock:
                        errors = srv._apply(srv._target(), request)
                    t2 = time.thread_time()
                    if errors:
                        raise BenchCheckError(f"{stage}: {sum(e.canonical_code != 0 for e in errors)} updates failed")
                    if stage == "insert":
                        got["parse"].append((t1 - t0) * 1e6 / batch)
                        if client.count_entries(DMAC) != batch:
                            raise BenchCheckError(f"{DMAC}: {batch} entries inserted, not all read back")
                    got[stage].append((t2 - t1) * 1e6 / batch)
    finally:
        srv.stop()
        dev.stop()
    return {stage: round(median(v), 2) for stage, v in got.items()}


def run_p4rt_write_stages(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.p4rt_write_stage_us.{parse,insert,delete}`` (the default engine) and
    ``.insert_python`` / ``.delete_python`` (``--engine python``): :func:`write_stages`."""
    figures: dict[str, Figure] = {}
    for engine, suffix in (("auto", ""), ("python", "_python")):
        stages = write_stages(engine, max(1, config.runs))
        for stage, us in stages.items():
            if stage == "parse" and suffix:
                continue
            figures[f"p4sim.p4rt_write_stage_us.{stage}{suffix}"] = Figure(us, "us/entry")
    return figures


# ---------------------------------------------------------------------- P4Runtime reads
def counter_read_ms(client: P4RuntimeClient, counter: str, cells: int) -> float:
    """Milliseconds of one wildcard Read of ``counter`` (every cell): the request sent to
    the last entity of the last response decoded; BenchCheckError on a wrong count."""
    req = p4runtime_pb2.ReadRequest(device_id=client.device_id)
    req.entities.add().counter_entry.counter_id = client._id("counters", counter)
    return timed_read_ms(client, req, counter, cells)


def timed_read_ms(client: P4RuntimeClient, req: p4runtime_pb2.ReadRequest, counter: str, cells: int) -> float:
    """Milliseconds of the Read ``req`` (sent → last response decoded); BenchCheckError
    unless it answers ``cells`` entities of ``counter``."""
    t0 = time.perf_counter()
    got = sum(len(resp.entities) for resp in client.stub.Read(req, timeout=RPC_TIMEOUT_S))
    elapsed = time.perf_counter() - t0
    if got != cells:
        raise BenchCheckError(f"{counter}: {got} counter entries read, {cells} expected")
    return elapsed * 1e3


def indexed_read_ms(client: P4RuntimeClient, counter: str, cells: int) -> float:
    """Milliseconds of one Read of ``counter``'s first ``cells`` cells, one entity each;
    BenchCheckError on a wrong count."""
    req = p4runtime_pb2.ReadRequest(device_id=client.device_id)
    cid = client._id("counters", counter)
    for i in range(cells):
        ent = req.entities.add().counter_entry
        ent.counter_id, ent.index.index = cid, i
    return timed_read_ms(client, req, counter, cells)


def poll_read_ms(client: P4RuntimeClient) -> float:
    """Milliseconds of one Read shaped as GOR's poll (:data:`POLL_COUNTERS`, ports 1-4, one
    entity a cell); BenchCheckError on a wrong count."""
    req = p4runtime_pb2.ReadRequest(device_id=client.device_id)
    for counter, per_port in POLL_COUNTERS:
        cid = client._id("counters", counter)
        for port in range(1, POLL_PORTS + 1):
            for k in range(per_port):
                ent = req.entities.add().counter_entry
                ent.counter_id, ent.index.index = cid, port * per_port + k
    return timed_read_ms(client, req, "the poll's counters", POLL_PORTS * sum(n for _, n in POLL_COUNTERS))


def run_p4rt_read(config: BenchConfig) -> dict[str, Figure]:
    """``p4sim.p4rt_read_ms.counters_4096``: median of :data:`READS_PER_RUN` reads, and
    ``.poll_cells_116`` with its switch CPU, of :data:`POLL_READS_PER_RUN`; medians over
    ``config.runs``."""
    with target_switch(config.target, COUNTERS_PROGRAM) as (pid, client):
        if config.warmup_s > 0:
            counter_read_ms(client, "CntIngress.cells", COUNTER_CELLS)
            indexed_read_ms(client, "CntIngress.cells", POLL_CELLS)
        runs = [median([counter_read_ms(client, "CntIngress.cells", COUNTER_CELLS)
                        for _ in range(READS_PER_RUN)]) for _ in range(config.runs)]
        poll_ms, poll_cpu_ms = [], []
        for _ in range(config.runs):
            cpu0 = process_cpu_ns(pid)
            poll_ms.append(median([indexed_read_ms(client, "CntIngress.cells", POLL_CELLS)
                                   for _ in range(POLL_READS_PER_RUN)]))
            poll_cpu_ms.append((process_cpu_ns(pid) - cpu0) / POLL_READS_PER_RUN / 1e6)
        gor_ms, gor_cpu_ms = [], []
        poll_read_ms(client)
        # p4sim's threads live as long as it does: schedstat's ns, not stat's 10 ms ticks
        cpu_ns = threads_cpu_ns if config.target == "p4sim" else process_cpu_ns
        for _ in range(config.runs):
            cpu0 = cpu_ns(pid)
            gor_ms.append(median([poll_read_ms(client) for _ in range(POLL_READS_PER_RUN)]))
            gor_cpu_ms.append((cpu_ns(pid) - cpu0) / POLL_READS_PER_RUN / 1e6)
    t = config.target
    return {f"{t}.p4rt_read_ms.counters_4096": Figure(round(median(runs), 2), "ms"),
            f"{t}.p4rt_read_ms.poll_cells_116": Figure(round(median(poll_ms), 2), "ms"),
            f"{t}.p4rt_read_cpu_ms.poll_cells_116": Figure(round(median(poll_cpu_ms), 3), "ms"),
            f"{t}.p4rt_read_ms.poll_7_counters": Figure(round(median(gor_ms), 2), "ms"),
            f"{t}.p4rt_read_cpu_ms.poll_7_counters": Figure(round(median(gor_cpu_ms), 3), "ms")}


# ---------------------------------------------------------------------- veth packet rate
def veth_available() -> Optional[str]:
    """None when the veth benchmark can run, else why not."""
    if os.geteuid() != 0:
        return "needs root (creates veth pairs)"
    if shutil.which("ip") is None:
        return "needs iproute2 (`ip`)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@contextmanager
def veth_pairs(count: int = 2) -> Iterator[list[tuple[str, str]]]:
    """``count`` veth pairs (switch side, host side) named after this PID, IPv6 off, up;
    deletes exactly the ones it created."""
    tag = f"p4b{os.getpid() % 100000}"
    made: list[str] = []
    try:
        pairs = []
        for i in range(count):
            a, b = f"{tag}a{i}", f"{tag}b{i}"
            _ip("link", "add", a, "type", "veth", "peer", "name", b)
            made.append(a)
            for ifc in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1"],
                               capture_output=True, timeout=10)
                _ip("link", "set", ifc, "up")
            pairs.append((a, b))
        yield pairs
    finally:
        for a in made:
            subprocess.run(["ip", "link", "del", a], capture_output=True, timeout=10)


def make_frames(count: int = 256, size: int = 64) -> list[bytes]:
    """Pre-built test frames (EtherType 0x88B5, a 4-byte sequence number, padded)."""
    head = bytes.fromhex("020000000002" "020000000001") + BENCH_ETHERTYPE.to_bytes(2, "big")
    return [(head + i.to_bytes(4, "big")).ljust(size, b"\x00") for i in range(count)]


def _drain(rx: socket.socket) -> int:
    n = 0
    while True:
        try:
            rx.recv(4096)
        except BlockingIOError:
            return n
        n += 1


def forward_rate(tx: socket.socket, rx: socket.socket, frames: Sequence[bytes],
                 duration_s: float, window: int = WINDOW) -> float:
    """Frames/s received on ``rx`` while at most ``window`` frames are in flight (a frame
    not back within 50 ms counts as lost and frees its slot), for ``duration_s``."""
    sent = outstanding = received = 0
    t0 = time.perf_counter()
    end = t0 + duration_s
    while time.perf_counter() < end:
        while outstanding < window:
            tx.send(frames[sent % len(frames)])
            sent += 1
            outstanding += 1
        ready, _, _ = select.select([rx], [], [], 0.05)
        if not ready:
            outstanding = 0
            continue
        got = _drain(rx)
        received += got
        outstanding = max(0, outstanding - got)
    elapsed = time.perf_counter() - t0
    _drain(rx)
    return received / elapsed


def _check_forwarding(tx: socket.socket, rx: socket.socket, frames: Sequence[bytes]) -> None:
    """Frames sent on port 1 come out of port 2 unchanged and in order, else BenchCheckError."""
    _drain(rx)
    probe = list(frames[:10])
    got: list[bytes] = []
    for f in probe:
        tx.send(f)
    deadline = time.monotonic() + 5.0
    while len(got) < len(probe) and (left := deadline - time.monotonic()) > 0:
        if select.select([rx], [], [], left)[0]:
            try:
                got.append(rx.recv(4096)[:len(probe[0])])
            except BlockingIOError:
                pass
    if got != probe:
        raise BenchCheckError(f"veth forwarding: sent {len(probe)} frames on port 1, "
                              f"got {len(got)} back on port 2 "
                              f"({'unchanged' if got == probe[:len(got)] else 'modified'})")


def run_pps_veth(config: BenchConfig, engine: str = "python",
                 figure: str = "p4sim.pps.veth") -> dict[str, Figure]:
    """``p4sim.pps.veth`` (the switch on ``engine``); returns no figure (and says why)
    when not root."""
    why = veth_available()
    if why is not None:
        print(f"switch.pps_veth: skipped, {why}; p4sim.pps.veth not written",
              file=sys.stderr, flush=True)
        return {}
    frames = make_frames()
    with forwarding_veths(engine, frames) as (_, tx, rx):
        if config.warmup_s > 0:
            forward_rate(tx, rx, frames, config.warmup_s)
        rates = [forward_rate(tx, rx, frames, config.duration_s) for _ in range(config.runs)]
    return {figure: Figure(round(median(rates), 1), "pps")}


@contextmanager
def forwarding_veths(engine: str, frames: Sequence[bytes]) -> Iterator[tuple["SwitchProcess", socket.socket,
                                                                         socket.socket]]:
    """``port_fwd.p4`` on ``engine`` between two veth pairs of its own, port 1 <-> port 2,
    forwarding checked with ``frames``: (the switch process, a sender on port 1's host end,
    a non-blocking receiver of BENCH_ETHERTYPE on port 2's). Root only; everything it
    made is gone when the block ends.

    ``with forwarding_veths("native", make_frames()) as (sw, tx, rx): ...``
    """
    with veth_pairs(2) as pairs:
        (sw1, host1), (sw2, host2) = pairs
        with SwitchProcess.run(PROGRAM, [(1, sw1), (2, sw2)], engine) as sw, \
                P4RuntimeClient.connect(sw.grpc_addr) as client:
            client.push_pipeline(PROGRAM)
            client.write([client.exact_update("FwdIngress.port_fwd", 1, FORWARD, 2),
                          client.exact_update("FwdIngress.port_fwd", 2, FORWARD, 1)])
            tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(BENCH_ETHERTYPE))
            with tx, rx:
                tx.bind((host1, 0))
                rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                rx.bind((host2, BENCH_ETHERTYPE))
                rx.setblocking(False)
                _check_forwarding(tx, rx, frames)
                yield sw, tx, rx


BENCHMARKS = (
    Benchmark("startup", "switch", run_startup),
    Benchmark("p4rt_writes", "switch", run_p4rt_writes, targets=("p4sim", "bmv2")),
    Benchmark("p4rt_write_stages", "switch", run_p4rt_write_stages),
    Benchmark("p4rt_read", "switch", run_p4rt_read, targets=("p4sim", "bmv2")),
    Benchmark("pps_veth", "switch", run_pps_veth),
)

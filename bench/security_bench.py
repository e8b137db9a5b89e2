"""The ``security`` benchmark group: what TLS costs a P4Runtime client of a live switch.

``security.tls_handshake`` starts a real ``python -m p4sim switch --no-p4`` with
simple_switch_grpc's TLS options (``--grpc-server-ssl ... --grpc-server-with-client-auth``,
a throw-away :class:`testbed.pki.FabricPki` in a temporary directory) and another one in
plaintext, and measures, :data:`CONNECTIONS` times each (after :data:`WARMUP` untimed):
a new gRPC channel (its own subchannel pool, so every connection is a new TCP connection
and, with TLS, a full handshake with the client certificate) → the first RPC
(``Capabilities``) answered. Figures, medians in milliseconds:

* ``security.tls_handshake_ms`` — TLS 1.3 with client authentication (ECDSA P-256 keys);
* ``security.plaintext_connect_ms`` — the same without TLS, for comparison.

Each switch is stopped by its own PID (SIGTERM, then SIGKILL after 10 s).

Example::

    $ .venv/bin/python -m bench security

>>> round(median_ms([0.001, 0.003, 0.002]), 3)
2.0
"""
from __future__ import annotations

import select
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from bench.results import BenchConfig, Benchmark, Figure
from process import stop_process
from testbed.pki import FabricPki

REPO = Path(__file__).resolve().parents[1]
CONNECTIONS = 40
WARMUP = 3
READY_TIMEOUT_S = 60.0
RPC_TIMEOUT_S = 10.0
READY_PREFIX = "p4sim switch ready: grpc "


def median_ms(seconds: Sequence[float]) -> float:
    """The median of durations in seconds, in milliseconds."""
    return statistics.median(seconds) * 1000.0


@contextmanager
def live_switch(target_options: Sequence[str]) -> Iterator[str]:
    """A ``python -m p4sim switch --no-p4`` on a free port of 127.0.0.1 with these target
    options; yields its P4Runtime address, stops it by PID on exit."""
    cmd = [sys.executable, "-m", "p4sim", "switch", "--no-p4", "--control-port", "0", "--",
           "--grpc-server-addr", "127.0.0.1:0", *target_options]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=err, bufsize=0)
        try:
            yield _ready_addr(proc, err)
        finally:
            stop_process(proc)


def _ready_addr(proc: "subprocess.Popen[bytes]", err: "tempfile._TemporaryFileWrapper[bytes]") -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            line = proc.stdout.readline().decode(errors="replace")
            if line.startswith(READY_PREFIX):
                return line[len(READY_PREFIX):].split()[0]
    err.seek(0)
    raise RuntimeError(f"p4sim switch did not report ready: {err.read().decode(errors='replace')[-500:]}")


def connect_times(addr: str, creds: Optional[grpc.ChannelCredentials], n: int,
                  warmup: int = WARMUP) -> list[float]:
    """Seconds from a new channel to its first answered RPC, ``n`` times (after ``warmup``)."""
    options = [("grpc.use_local_subchannel_pool", 1)]   # a new connection every time
    out: list[float] = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        channel = grpc.insecure_channel(addr, options) if creds is None else \
            grpc.secure_channel(addr, creds, options)
        try:
            p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=RPC_TIMEOUT_S, wait_for_ready=True)
            if i >= warmup:
                out.append(time.perf_counter() - t0)
        finally:
            channel.close()
    return out


def bench_tls_handshake(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — fixed count
    """``security.tls_handshake_ms`` and ``security.plaintext_connect_ms`` (module docstring)."""
    with tempfile.TemporaryDirectory(prefix="security-bench-") as tmp:
        pki = FabricPki.create(Path(tmp), ["switch", "controller"])
        sw, me = pki.files("switch"), pki.files("controller")
        tls_options = ["--grpc-server-ssl", "--grpc-server-cacert", str(sw.ca_cert),
                       "--grpc-server-cert", str(sw.cert), "--grpc-server-key", str(sw.key),
                       "--grpc-server-with-client-auth"]
        ca, cert, key = me.read()
        creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                             certificate_chain=cert)
        with live_switch(tls_options) as addr:
            tls = connect_times(addr, creds, CONNECTIONS)
        with live_switch([]) as addr:
            plain = connect_times(addr, None, CONNECTIONS)
    return {"security.tls_handshake_ms": Figure(round(median_ms(tls), 2), "ms"),
            "security.plaintext_connect_ms": Figure(round(median_ms(plain), 2), "ms")}


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("tls_handshake", "security", bench_tls_handshake),)

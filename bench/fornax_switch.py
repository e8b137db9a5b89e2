"""The SmartNIC of the ``fornax`` bench, in a process of its own: p4sim's switch device
with in-process ports behind a real P4Runtime server (the manager, in the bench's
process, talks gRPC to it), fed with the first packets and the later packets of
synthetic connections on command, so that the bench process's CPU time is the manager's
alone.

Protocol: the bench writes one JSON command a line on stdin and reads one JSON answer a
line on stdout; the first line out is ``{"grpc": "127.0.0.1:PORT"}``. Commands:
``inject`` (``kind`` syn|ack|rst, connection indices ``start``, ``stop``, ``step`` —
:func:`bench.fornax_bench.conn_frame` builds them — put on their VM's port),
``idle`` (wait until every injected frame entered the pipeline), ``stats`` (frames that
left, by port), ``quit``.

    python -m bench.fornax_switch --vms 20
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import Any, Optional, Sequence

from bench.fornax_bench import CPU_PORT, UPLINK, conn_frame, vm_of
from p4sim.p4runtime.server import P4RuntimeServer
from p4sim.switchd.device import InProcessPort, SwitchDevice


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fornax_switch")
    ap.add_argument("--vms", type=int, default=20, help="local VMs (ports 2..)")
    args = ap.parse_args(argv)
    dev = SwitchDevice(device_id=1, cpu_port=CPU_PORT)
    ports = {p: InProcessPort(p) for p in [UPLINK, *range(2, 2 + args.vms)]}
    for p in ports.values():
        dev.add_port(p)
    dev.start()
    server = P4RuntimeServer(dev, "127.0.0.1:0", None)
    grpc_port = server.start()
    out_counts = {p: 0 for p in ports}

    def drain(number: int, port: InProcessPort) -> None:
        while True:
            if port.take(0.5) is not None:
                out_counts[number] += 1

    for n, p in ports.items():
        threading.Thread(target=drain, args=(n, p), daemon=True).start()
    print(json.dumps({"grpc": f"127.0.0.1:{grpc_port}"}), flush=True)
    for line in sys.stdin:
        req: dict[str, Any] = json.loads(line)
        cmd = req.get("cmd")
        if cmd == "inject":
            n = 0
            for c in range(req["start"], req["stop"], req.get("step", 1)):
                ports[2 + vm_of(c, args.vms)].inject(conn_frame(c, req["kind"], args.vms))
                n += 1
            reply: Any = {"queued": n}
        elif cmd == "idle":
            reply = {"idle": all(p.wait_idle(req.get("timeout_s", 600)) for p in ports.values())}
        elif cmd == "stats":
            reply = {"out": {str(k): v for k, v in out_counts.items()},
                     "switch": dev.switch_stats() if hasattr(dev, "switch_stats") else {}}
        elif cmd == "quit":
            print(json.dumps({"bye": True}), flush=True)
            break
        else:
            reply = {"error": f"unknown command {cmd!r}"}
        print(json.dumps(reply), flush=True)
    server.stop(0)
    dev.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

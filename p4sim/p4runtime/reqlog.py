"""The P4Runtime request log, as the P4 tutorials keep it in
``logs/<switch>-p4runtime-requests.txt``: every ``Write`` request in protobuf text format
under a timestamped header, and a one-paragraph summary of every
``SetForwardingPipelineConfig`` (the P4Info itself is not repeated).

Example::

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "s1-p4runtime-requests.txt")
    >>> log = RequestLog(path)
    >>> log.write_request(p4runtime_pb2.WriteRequest(device_id=1))
    >>> "/p4.v1.P4Runtime/Write" in open(path).read()
    True
    >>> log.close()
"""
from __future__ import annotations

import threading
import time
from typing import Optional, TextIO

from google.protobuf import text_format
from p4.v1 import p4runtime_pb2


def _stamp() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"


class RequestLog:
    """Appends requests to ``path`` (created if needed); safe to call from many threads."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file: Optional[TextIO] = open(path, "a", encoding="utf-8")

    def _append(self, method: str, body: str) -> None:
        with self._lock:
            if self._file is None:
                return
            self._file.write(f"\n[{_stamp()}] /p4.v1.P4Runtime/{method}\n---\n{body}---\n")
            self._file.flush()

    def write_request(self, req: p4runtime_pb2.WriteRequest) -> None:
        """Log one ``Write`` request in full."""
        self._append("Write", text_format.MessageToString(req))

    def pipeline_config(self, req: p4runtime_pb2.SetForwardingPipelineConfigRequest,
                        program_name: str = "") -> None:
        """Log a ``SetForwardingPipelineConfig``: action, ids, cookie, P4Info sizes."""
        action = p4runtime_pb2.SetForwardingPipelineConfigRequest.Action.Name(req.action)
        info = req.config.p4info
        lines = [
            f"device_id: {req.device_id}",
            f"election_id: {req.election_id.high},{req.election_id.low}",
            f"action: {action}",
        ]
        if req.role:
            lines.append(f"role: {req.role}")
        if program_name:
            lines.append(f"program: {program_name}")
        if req.config.HasField("cookie"):
            lines.append(f"cookie: {req.config.cookie.cookie}")
        lines.append(f"p4info: {len(info.tables)} tables, {len(info.actions)} actions, "
                     f"{len(info.counters) + len(info.direct_counters)} counters, "
                     f"{len(info.meters) + len(info.direct_meters)} meters, {len(info.registers)} registers, "
                     f"{len(info.digests)} digests")
        lines.append(f"p4_device_config: {len(req.config.p4_device_config)} bytes")
        self._append("SetForwardingPipelineConfig", "".join(line + "\n" for line in lines))

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

"""Forwarding-pipeline RPCs of one device: SetForwardingPipelineConfig (push a P4Info and
device config, with an optional cookie) and GetForwardingPipelineConfig (the cookie
only, or the P4Info). Used by :class:`controller.p4rt.SwitchConnection`.

Example::

    >>> req, info = set_pipeline_request(0, p4runtime_pb2.Uint128(low=1), p4info_pb2.P4Info(),
    ...                                  b"{}", 42)
    >>> req.config.cookie.cookie, req.config.p4_device_config
    (42, b'{}')
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.p4info import load_p4info

PUSH_TIMEOUT_MIN_S = 60.0
"""A pipeline push waits at least this long (a switch compiles/loads the program)."""


def _read_bytes(source: Union[str, Path, bytes]) -> bytes:
    return source if isinstance(source, bytes) else Path(source).read_bytes()


def set_pipeline_request(device_id: int, election_id: p4runtime_pb2.Uint128,
                         p4info: Union[str, Path, bytes, p4info_pb2.P4Info],
                         device_config: Union[str, Path, bytes], cookie: Optional[int] = None
                         ) -> tuple[p4runtime_pb2.SetForwardingPipelineConfigRequest,
                                    p4info_pb2.P4Info]:
    """A VERIFY_AND_COMMIT request and the P4Info it carries (this caller's own copy).

    A P4Info message is copied first: callers push one message to many switches from
    many threads, and the pure-Python protobuf runtime mutates a message when an unset
    sub-message is merely read (``dictionary changed size during iteration``)."""
    info = load_p4info(p4info)
    if info is p4info:
        own = p4info_pb2.P4Info()
        own.MergeFromString(info.SerializeToString())
        info = own
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=device_id, election_id=election_id,
        action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
    req.config.p4info.CopyFrom(info)
    req.config.p4_device_config = _read_bytes(device_config)
    if cookie is not None:
        req.config.cookie.cookie = cookie
    return req, info


def read_pipeline_cookie(stub: Any, device_id: int,
                         timeout_s: float) -> tuple[bool, Optional[int]]:
    """(whether the device runs a pipeline, its cookie or None) from
    GetForwardingPipelineConfig(COOKIE_ONLY); FAILED_PRECONDITION or no config is
    ``(False, None)``."""
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
        device_id=device_id,
        response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY)
    try:
        resp = stub.GetForwardingPipelineConfig(req, timeout=timeout_s)
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:  # type: ignore[attr-defined]
            return False, None
        raise
    if not resp.HasField("config"):
        return False, None
    cfg = resp.config
    return True, (cfg.cookie.cookie if cfg.HasField("cookie") else None)


def read_p4info(stub: Any, device_id: int, timeout_s: float) -> p4info_pb2.P4Info:
    """The device's P4Info (GetForwardingPipelineConfig, P4INFO_AND_COOKIE)."""
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
        device_id=device_id,
        response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
    resp = stub.GetForwardingPipelineConfig(req, timeout=timeout_s)
    return resp.config.p4info


__all__ = ["PUSH_TIMEOUT_MIN_S", "read_p4info", "read_pipeline_cookie", "set_pipeline_request"]

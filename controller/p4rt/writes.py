"""Write RPC requests and their errors: the atomicity modes, the WriteRequest, and a
failed Write turned into a :class:`~controller.p4rt.errors.WriteError` that lists each
failed update (from the ``grpc-status-details-bin`` trailer, one ``p4.v1.Error`` per
update).

Example::

    >>> write_request(0, p4runtime_pb2.Uint128(low=1), [], "ROLLBACK_ON_ERROR").atomicity == \\
    ...     p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR
    True
"""
from __future__ import annotations

from typing import Iterable

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.errors import UpdateError, WriteError

ATOMICITY = {
    "CONTINUE_ON_ERROR": p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
    "ROLLBACK_ON_ERROR": p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
    "DATAPLANE_ATOMIC": p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC,
}


def write_request(device_id: int, election_id: p4runtime_pb2.Uint128,
                  updates: Iterable[p4runtime_pb2.Update],
                  atomicity: str = "CONTINUE_ON_ERROR") -> p4runtime_pb2.WriteRequest:
    """One WriteRequest of ``updates`` with an :data:`ATOMICITY` mode by name."""
    return p4runtime_pb2.WriteRequest(device_id=device_id, election_id=election_id,
                                      updates=list(updates), atomicity=ATOMICITY[atomicity])


def write_error(exc: grpc.RpcError) -> WriteError:
    """The :class:`WriteError` of a failed Write RPC, with every update that failed."""
    errors: list[UpdateError] = []
    for key, value in (exc.trailing_metadata() or ()):  # type: ignore[attr-defined]
        if key == "grpc-status-details-bin":
            st = status_pb2.Status()
            st.ParseFromString(value)
            for i, detail in enumerate(st.details):
                err = p4runtime_pb2.Error()
                if detail.Unpack(err) and err.canonical_code != code_pb2.OK:
                    errors.append(UpdateError(i, code_pb2.Code.Name(err.canonical_code),
                                              err.message))
    status = f"{exc.code().name}: {exc.details()}"  # type: ignore[attr-defined]
    return WriteError(f"Write failed ({status})", errors)


__all__ = ["ATOMICITY", "write_error", "write_request"]

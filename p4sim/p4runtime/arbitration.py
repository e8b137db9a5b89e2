"""Client arbitration (P4Runtime spec, "Client Arbitration and Controller Replication"):
which ``StreamChannel`` is the primary controller of each (device, role).

Rules implemented:

* the first ``MasterArbitrationUpdate`` of a stream names the device (another device id
  ends the stream with ``NOT_FOUND``); later ones must keep the device and role
  (``FAILED_PRECONDITION``); an election id already held by another live stream of the
  same role ends the stream with ``INVALID_ARGUMENT``;
* the primary is the live stream with the highest election id, as in BMv2's P4Runtime
  server (PI): when the primary's stream closes, the next highest becomes primary (the
  spec's newer text keeps the highest id ever seen instead; PI's rule lets a restarted
  controller with a lower id take over, which tools written against BMv2 rely on). An
  unset election id never makes a stream primary;
* notifications: every controller of the role hears about a new primary, a primary that
  downgrades itself, or a primary that disconnects; the primary gets status ``OK``, the
  backups ``ALREADY_EXISTS`` (``NOT_FOUND`` when there is no primary); ``election_id`` is
  the highest seen (unset if there never was a primary);
* roles: the default role (empty name) and named roles are separate arbitration domains,
  all with full pipeline access. ``role.config`` (a role definition) is refused with
  ``UNIMPLEMENTED`` unless the server runs a policy (``--p4rt-policy``,
  :mod:`p4sim.p4runtime.authz`): then the server checks it before :meth:`Arbiter.update`
  (``accept_config=True``), the config of the stream that becomes primary is the role's
  (:meth:`Arbiter.role_config`), and every notification carries it (spec, "Client
  Arbitration Notifications").

Example::

    >>> arb = Arbiter(device_id=1)
    >>> got = []
    >>> a = Session(1, got.append)
    >>> upd = p4runtime_pb2.MasterArbitrationUpdate(device_id=1)
    >>> upd.election_id.low = 5
    >>> arb.update(a, upd)
    >>> got[-1].arbitration.status.code, arb.is_primary("", 5)
    (0, True)
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

from google.protobuf import any_pb2
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

SendFn = Callable[[p4runtime_pb2.StreamMessageResponse], None]


class ArbitrationError(Exception):
    """An arbitration request that ends the stream with ``code`` (a canonical code name)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def election_id_value(uint128: p4runtime_pb2.Uint128) -> int:
    """The 128-bit integer of a ``Uint128``.

    Example::

        >>> election_id_value(p4runtime_pb2.Uint128(high=1, low=2))
        18446744073709551618
    """
    return (uint128.high << 64) | uint128.low


def _set_uint128(msg: p4runtime_pb2.Uint128, value: int) -> None:
    msg.high = value >> 64
    msg.low = value & ((1 << 64) - 1)


@dataclass(eq=False)
class Session:
    """One ``StreamChannel``: ``send`` queues a message for it (thread-safe)."""

    stream_id: int
    send: SendFn
    device_id: Optional[int] = None
    role: Optional[str] = None
    election_id: Optional[int] = None
    identity: Optional[str] = None          # the client certificate's common name
    config: Optional[any_pb2.Any] = None    # the role.config it sent last


@dataclass
class _RoleState:
    sessions: list[Session] = field(default_factory=list)
    primary: Optional[Session] = None
    highest: Optional[int] = None
    config: Optional[any_pb2.Any] = None     # the role.config of the primary, most recent


class Arbiter:
    """Primary/backup bookkeeping for one device (see the module docstring)."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._roles: dict[str, _RoleState] = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ queries
    def is_primary(self, role: str, election_id: Optional[int]) -> bool:
        """Whether ``election_id`` is the current primary's for ``role`` (Write, pipeline)."""
        with self._lock:
            st = self._roles.get(role)
            return (st is not None and st.primary is not None and election_id is not None
                    and st.primary.election_id == election_id)

    def primaries(self) -> list[Session]:
        """The primary session of every role that has one (PacketIn and digest receivers)."""
        with self._lock:
            return [st.primary for st in self._roles.values() if st.primary is not None]

    def primary_of(self, role: str = "") -> Optional[Session]:
        with self._lock:
            st = self._roles.get(role)
            return st.primary if st is not None else None

    def role_config(self, role: str) -> Optional[any_pb2.Any]:
        """The ``role.config`` the role's primary sent most recently (None: unset, the
        role's full definition)."""
        with self._lock:
            st = self._roles.get(role)
            return st.config if st is not None else None

    # ------------------------------------------------------------------ updates
    def update(self, session: Session, msg: p4runtime_pb2.MasterArbitrationUpdate,
               accept_config: bool = False) -> None:
        """Handle one ``MasterArbitrationUpdate`` from ``session``; raises ArbitrationError.
        ``accept_config``: the caller checked ``role.config`` (a policy's server)."""
        role = msg.role.name
        if msg.role.HasField("config") and not accept_config:
            raise ArbitrationError("UNIMPLEMENTED", "role.config is not supported: p4sim has no role "
                                                    "definitions (python -m p4sim switch --p4rt-policy FILE has)")
        eid = election_id_value(msg.election_id) if msg.HasField("election_id") else None
        with self._lock:
            if session.device_id is None:
                if msg.device_id != self.device_id:
                    raise ArbitrationError("NOT_FOUND", f"no device with id {msg.device_id}")
            else:
                if msg.device_id != session.device_id:
                    raise ArbitrationError("FAILED_PRECONDITION", "the stream's device_id cannot change")
                if role != session.role:
                    raise ArbitrationError("FAILED_PRECONDITION",
                                           "the stream's role cannot change; open a new stream")
            st = self._roles.setdefault(role, _RoleState())
            if eid is not None and any(s is not session and s.election_id == eid for s in st.sessions):
                raise ArbitrationError("INVALID_ARGUMENT",
                                       f"election id {eid} is already used by another controller")
            if session.device_id is None:
                session.device_id = msg.device_id
                session.role = role
                st.sessions.append(session)
            session.election_id = eid
            session.config = msg.role.config if msg.role.HasField("config") else None
            before = st.primary
            self._elect(st)
            if session is st.primary:          # spec: the primary's config is the role's
                st.config = session.config
            if st.primary is not before or session is before or session is st.primary:
                self._notify(role, st, st.sessions)
            else:
                self._notify(role, st, [session])

    @staticmethod
    def _elect(st: _RoleState) -> None:
        candidates = [s for s in st.sessions if s.election_id is not None]
        st.primary = max(candidates, key=lambda s: s.election_id or 0) if candidates else None
        if st.primary is not None:
            st.highest = max(st.highest or 0, st.primary.election_id or 0)

    def remove(self, session: Session) -> None:
        """The stream closed: forget it; if it was primary, tell the others."""
        with self._lock:
            if session.role is None:
                return
            st = self._roles.get(session.role)
            if st is None or session not in st.sessions:
                return
            st.sessions.remove(session)
            if st.primary is session:
                self._elect(st)
                if st.primary is not None:
                    st.config = st.primary.config
                self._notify(session.role, st, st.sessions)

    def _notify(self, role: str, st: _RoleState, to: list[Session]) -> None:
        for s in to:
            resp = p4runtime_pb2.StreamMessageResponse()
            arb = resp.arbitration
            arb.device_id = self.device_id
            if role:
                arb.role.name = role
            if st.config is not None:
                arb.role.config.CopyFrom(st.config)
            if st.primary is not None and st.primary.election_id is not None:
                _set_uint128(arb.election_id, st.primary.election_id)
            elif st.highest is not None:
                _set_uint128(arb.election_id, st.highest)
            if st.primary is None:
                arb.status.code = code_pb2.NOT_FOUND
                arb.status.message = "no primary controller"
            elif st.primary is s:
                arb.status.code = code_pb2.OK
                arb.status.message = "is primary"
            else:
                arb.status.code = code_pb2.ALREADY_EXISTS
                arb.status.message = "is backup"
            s.send(resp)

"""Who may do what on a p4sim switch's P4Runtime server: the policy file of
``python -m p4sim switch --p4rt-policy FILE`` (a p4sim option; BMv2 has none).

BMv2 (simple_switch_grpc + PI) authenticates a client by its certificate and then lets it
do everything: any client trusted by ``--grpc-server-cacert`` may arbitrate, become
primary, Write and push a pipeline. With a policy, p4sim also *authorizes*: a client's
identity is the common name of its verified certificate, and the policy says which roles
each identity may hold and what each role may do. A role is shaped after Stratum's
``P4RoleConfig`` (:mod:`p4sim.p4runtime.roleconfig`), with ``read_only`` added for a
client that only reads::

    # p4rt-policy.yaml — python -m p4sim switch ... --p4rt-policy p4rt-policy.yaml -- ...
    version: 1
    roles:
      "":                        # P4Runtime's default role (no role name): the controller
        can_push_pipeline: true
        receives_packet_ins: true
      monitor:                   # Read and GetForwardingPipelineConfig only
        read_only: true
    identities:                  # certificate common name: the roles it may hold
      controller: [""]
      monitor: [monitor]

Role fields (all optional): ``read_only`` (bool: no stream, no Write, no pipeline push;
Read, GetForwardingPipelineConfig and Capabilities only), ``can_push_pipeline`` (bool),
``receives_packet_ins`` (bool), ``packet_in_filter`` (``{metadata_id: N, value: BYTES}``,
``value`` an integer or a ``0x…`` string: only PacketIns whose metadata ``N`` has this
value), ``exclusive_p4_ids`` and ``shared_p4_ids`` (lists of P4Info ids: the entities the
role may write, exclusive ones to no other role; both absent: every entity but other
roles' exclusive ones, and the packet replication engine). Booleans default to false, as
in Stratum.

What the server then enforces (:class:`AuthzPolicy`), every refusal ``PERMISSION_DENIED``
with a message naming the identity and the role:

* an identity the policy does not name gets nothing: every RPC, a stream included;
* ``Read`` / ``GetForwardingPipelineConfig``: any identity the policy names (a Read with
  a ``role`` only by an identity holding it);
* ``StreamChannel`` arbitration for a role: only an identity holding it, never for a
  read-only role; ``role.config`` (Stratum's ``P4RoleConfig``, another type
  ``INVALID_ARGUMENT`` as the specification says) may narrow the role, never widen it;
  the primary's config is the role's until another primary (spec, "Role Config");
* ``Write`` and ``SetForwardingPipelineConfig``: the request's (role, election id) must be
  the primary's, *and* the caller must be the identity of the primary's stream (a Write
  needs no stream, so the election id alone would be a shared secret anyone may guess);
  the pipeline only by a role with ``can_push_pipeline``; each update only on an entity
  the role may write (that update ``PERMISSION_DENIED``, the others applied: BMv2's
  CONTINUE_ON_ERROR);
* PacketIn only to the primary of a role that ``receives_packet_ins`` (and passes its
  filter); digests and idle-timeout notifications only to primaries of roles that may
  write the digest / table.

A bad file is refused when the switch starts (exit status 1), with ``FILE:LINE: FIELD:
message``:

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "p.yaml")
>>> _ = open(path, "w").write("roles:\\n  monitor: {read_only: true}\\nidentities:\\n  mon: [monitr]\\n")
>>> load_policy(path)
Traceback (most recent call last):
...
p4sim.p4runtime.authz.PolicyError: ...p.yaml:4: identities.mon[0]: unknown role 'monitr' (the policy's roles: monitor)
>>> _ = open(path, "w").write(DEFAULT_POLICY_TEXT)
>>> pol = load_policy(path)
>>> pol.roles_of("controller"), pol.roles_of("b0s0")
(('',), ())
>>> pol.require_writer("monitor", "monitor")
Traceback (most recent call last):
...
p4sim.p4runtime.authz.Denied: identity 'monitor' may not write as role 'monitor': the role is read-only (Read and GetForwardingPipelineConfig only)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

import yaml
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime import roleconfig

POLICY_VERSION = 1
#: a certificate common name the policy may name (the testbed's party names and more)
_IDENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$")
_ROLE_NAME = re.compile(r"^[A-Za-z0-9._-]{0,128}$")
_ROLE_FIELDS = ("read_only", "can_push_pipeline", "receives_packet_ins", "packet_in_filter",
                "exclusive_p4_ids", "shared_p4_ids")

DEFAULT_POLICY_TEXT = """\
# P4Runtime authorization of a p4sim switch (python -m p4sim switch --p4rt-policy FILE).
# Identities are the common names of client certificates verified by --grpc-server-cacert.
version: 1
roles:
  "":                      # P4Runtime's default role: full pipeline access
    can_push_pipeline: true
    receives_packet_ins: true
  monitor:                 # Read and GetForwardingPipelineConfig only
    read_only: true
identities:
  controller: [""]
  monitor: [monitor]
"""
"""The testbed's policy: the controller programs, the monitor reads, nobody else."""


class PolicyError(ValueError):
    """A policy file the switch refuses to start with: ``FILE:LINE: FIELD: message``."""


class Denied(Exception):
    """A request the policy refuses; ``code`` is the canonical code name."""

    def __init__(self, message: str, code: str = "PERMISSION_DENIED") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def role_label(role: str) -> str:
    """How messages name a role: ``'<default>'`` for the default role.

    >>> role_label(""), role_label("monitor")
    ("'<default>'", "'monitor'")
    """
    return "'<default>'" if role == "" else repr(role)


@dataclass(frozen=True, slots=True)
class PacketFilter:
    """Only PacketIns whose metadata ``metadata_id`` equals ``value`` (Stratum's filter)."""

    metadata_id: int
    value: bytes

    def passes(self, packet_in: p4runtime_pb2.PacketIn) -> bool:
        """Whether ``packet_in`` carries the metadata with this value (canonical bytes)."""
        want = self.value.lstrip(b"\x00")
        return any(m.metadata_id == self.metadata_id and m.value.lstrip(b"\x00") == want
                   for m in packet_in.metadata)


@dataclass(frozen=True, slots=True)
class RoleDef:
    """One role of a policy (see the module docstring); ``exclusive_p4_ids`` and
    ``shared_p4_ids`` both empty: every entity but other roles' exclusive ones."""

    name: str
    read_only: bool = False
    can_push_pipeline: bool = False
    receives_packet_ins: bool = False
    packet_in_filter: Optional[PacketFilter] = None
    exclusive_p4_ids: frozenset[int] = frozenset()
    shared_p4_ids: frozenset[int] = frozenset()

    @property
    def every_entity(self) -> bool:
        """Whether the role names no entity list (it may write every entity)."""
        return not self.exclusive_p4_ids and not self.shared_p4_ids

    def to_config(self) -> Any:
        """This role as Stratum's ``P4RoleConfig`` message."""
        cfg = roleconfig.P4RoleConfig(exclusive_p4_ids=sorted(self.exclusive_p4_ids),
                                      shared_p4_ids=sorted(self.shared_p4_ids),
                                      receives_packet_ins=self.receives_packet_ins,
                                      can_push_pipeline=self.can_push_pipeline)
        if self.packet_in_filter is not None:
            cfg.packet_in_filter.metadata_id = self.packet_in_filter.metadata_id
            cfg.packet_in_filter.value = self.packet_in_filter.value
        return cfg

    def narrowed(self, cfg: Any, identity: str) -> "RoleDef":
        """The role as a client's ``P4RoleConfig`` narrows it; :class:`Denied` naming what
        it asks beyond the policy."""
        beyond = []
        if cfg.can_push_pipeline and not self.can_push_pipeline:
            beyond.append("can_push_pipeline")
        if cfg.receives_packet_ins and not self.receives_packet_ins:
            beyond.append("receives_packet_ins")
        flt: Optional[PacketFilter] = None
        if cfg.HasField("packet_in_filter"):
            flt = PacketFilter(cfg.packet_in_filter.metadata_id, bytes(cfg.packet_in_filter.value))
        if self.packet_in_filter is not None and cfg.receives_packet_ins and flt != self.packet_in_filter:
            beyond.append("packet_in_filter (the policy's filter must be kept)")
        ids = set(cfg.exclusive_p4_ids) | set(cfg.shared_p4_ids)
        if not self.every_entity:
            allowed = self.exclusive_p4_ids | self.shared_p4_ids
            if not ids:
                beyond.append("every entity (the policy lists the role's entities)")
            elif ids - allowed:
                beyond.append(f"p4 ids {sorted(ids - allowed)}")
        if beyond:
            raise Denied(f"identity {identity!r}: role.config asks for more than role "
                         f"{role_label(self.name)} grants: {', '.join(beyond)}")
        return replace(self, can_push_pipeline=bool(cfg.can_push_pipeline),
                       receives_packet_ins=bool(cfg.receives_packet_ins),
                       packet_in_filter=flt if flt is not None else self.packet_in_filter,
                       exclusive_p4_ids=frozenset(cfg.exclusive_p4_ids),
                       shared_p4_ids=frozenset(cfg.shared_p4_ids))


def entity_p4_id(entity: p4runtime_pb2.Entity) -> Optional[int]:
    """The P4Info id an entity belongs to (None for the packet replication engine, which
    belongs to no P4 object).

    >>> entity_p4_id(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=5)))
    5
    """
    kind = entity.WhichOneof("entity")
    msg = getattr(entity, kind) if kind else None
    if msg is None or kind == "packet_replication_engine_entry":
        return None
    if kind in ("direct_counter_entry", "direct_meter_entry"):
        return int(msg.table_entry.table_id)
    for attr in ("table_id", "action_profile_id", "counter_id", "meter_id", "register_id",
                 "digest_id", "value_set_id", "extern_id"):
        if hasattr(msg, attr):
            return int(getattr(msg, attr))
    return None


@dataclass
class AuthzPolicy:
    """A loaded policy (:func:`load_policy`); ``identities`` maps a certificate common
    name to the names of the roles it may hold."""

    path: str
    roles: dict[str, RoleDef]
    identities: dict[str, tuple[str, ...]]
    _exclusive_of: dict[int, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._exclusive_of = {i: r.name for r in self.roles.values() for i in r.exclusive_p4_ids}

    def roles_of(self, identity: Optional[str]) -> tuple[str, ...]:
        """The roles ``identity`` may hold (empty for one the policy does not name)."""
        return self.identities.get(identity or "", ())

    def _who(self, identity: Optional[str]) -> str:
        return repr(identity) if identity else "(no client certificate)"

    def require_identity(self, identity: Optional[str], rpc: str) -> tuple[str, ...]:
        """The identity's roles; Denied for an identity the policy does not name."""
        roles = self.roles_of(identity)
        if not roles:
            raise Denied(f"identity {self._who(identity)} holds no role on this switch "
                         f"(policy {Path(self.path).name}): {rpc} refused")
        return roles

    def require_role(self, identity: Optional[str], role: str, rpc: str) -> RoleDef:
        """The role ``identity`` acts in; Denied unless it holds it."""
        roles = self.require_identity(identity, rpc)
        if role not in roles:
            held = ", ".join(role_label(r) for r in roles)
            raise Denied(f"identity {self._who(identity)} may not hold role {role_label(role)} "
                         f"(its roles: {held}): {rpc} refused")
        return self.roles[role]

    def require_writer(self, identity: Optional[str], role: str, rpc: str = "Write") -> RoleDef:
        """The role, when ``identity`` holds it and it is not read-only."""
        rd = self.require_role(identity, role, rpc)
        if rd.read_only:
            raise Denied(f"identity {self._who(identity)} may not write as role "
                         f"{role_label(role)}: the role is read-only (Read and "
                         "GetForwardingPipelineConfig only)")
        return rd

    def update_denied(self, rd: RoleDef, entity: p4runtime_pb2.Entity) -> Optional[str]:
        """Why role ``rd`` may not write ``entity`` (None: it may)."""
        return self.p4_id_denied(rd, entity_p4_id(entity))

    def p4_id_denied(self, rd: RoleDef, p4_id: Optional[int]) -> Optional[str]:
        """Why role ``rd`` may not write the entity of P4Info id ``p4_id`` (None: the
        packet replication engine); None when it may.

        >>> pol = parse_policy("{roles: {acl: {exclusive_p4_ids: [7]}, '': {}}, identities: {c: ['']}}")
        >>> pol.p4_id_denied(pol.roles[""], 7), pol.p4_id_denied(pol.roles["acl"], 7)
        ("P4 id 7 belongs to role 'acl' exclusively", None)
        """
        if p4_id is None:
            return None if rd.every_entity else \
                f"role {role_label(rd.name)} lists its entities: the packet replication engine is not one of them"
        if not rd.every_entity:
            if p4_id in rd.exclusive_p4_ids or p4_id in rd.shared_p4_ids:
                return None
            return f"P4 id {p4_id} is not an entity of role {role_label(rd.name)}"
        owner = self._exclusive_of.get(p4_id)
        if owner is not None and owner != rd.name:
            return f"P4 id {p4_id} belongs to role {role_label(owner)} exclusively"
        return None

    def may_notify(self, rd: RoleDef, p4_id: int) -> bool:
        """Whether a primary of ``rd`` gets digests / idle notifications of ``p4_id``."""
        return not rd.read_only and self.update_denied(rd, p4runtime_pb2.Entity(
            table_entry=p4runtime_pb2.TableEntry(table_id=p4_id))) is None


# ---------------------------------------------------------------------- loading
def _fail(path: str, node: Any, where: str, message: str) -> PolicyError:
    line = node.start_mark.line + 1 if node is not None else 1
    return PolicyError(f"{path}:{line}: {where}: {message}")


def _mapping(path: str, node: Any, where: str) -> list[tuple[Any, Any]]:
    if not isinstance(node, yaml.MappingNode):
        raise _fail(path, node, where, "expected a mapping")
    seen: dict[str, Any] = {}
    for k, _ in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise _fail(path, k, where, "a key must be a plain name")
        if k.value in seen:
            raise _fail(path, k, f"{where}.{k.value}" if where else k.value, "given twice")
        seen[k.value] = k
    return list(node.value)


def _scalar(path: str, node: Any, where: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise _fail(path, node, where, "expected a single value")
    return yaml.safe_load(yaml.serialize(node))


def _bool(path: str, node: Any, where: str) -> bool:
    v = _scalar(path, node, where)
    if not isinstance(v, bool):
        raise _fail(path, node, where, f"expected true or false, not {node.value!r}")
    return v


def _uint(path: str, node: Any, where: str, bits: int = 32) -> int:
    v = _scalar(path, node, where)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v < (1 << bits):
        raise _fail(path, node, where, f"expected a P4Info id (1 … {(1 << bits) - 1}), not {node.value!r}")
    return v


def _id_list(path: str, node: Any, where: str) -> frozenset[int]:
    if not isinstance(node, yaml.SequenceNode):
        raise _fail(path, node, where, "expected a list of P4Info ids")
    return frozenset(_uint(path, n, f"{where}[{i}]") for i, n in enumerate(node.value))


def _filter(path: str, node: Any, where: str) -> PacketFilter:
    fields = dict((k.value, (k, v)) for k, v in _mapping(path, node, where))
    for name, (k, _) in fields.items():
        if name not in ("metadata_id", "value"):
            raise _fail(path, k, f"{where}.{name}", "unknown field (metadata_id, value)")
    for name in ("metadata_id", "value"):
        if name not in fields:
            raise _fail(path, node, where, f"{name} is required")
    mid = _uint(path, fields["metadata_id"][1], f"{where}.metadata_id")
    vnode = fields["value"][1]
    raw = _scalar(path, vnode, f"{where}.value")
    if isinstance(raw, str) and raw.lower().startswith("0x"):
        try:
            raw = int(raw, 16)
        except ValueError:
            raise _fail(path, vnode, f"{where}.value", f"not a hexadecimal number: {raw!r}") from None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise _fail(path, vnode, f"{where}.value", f"expected a non-negative integer or 0x…, not {vnode.value!r}")
    return PacketFilter(mid, raw.to_bytes(max(1, (raw.bit_length() + 7) // 8), "big"))


def _role(path: str, name: str, node: Any, where: str) -> RoleDef:
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return RoleDef(name)
    kw: dict[str, Any] = {}
    for k, v in _mapping(path, node, where):
        f = f"{where}.{k.value}"
        if k.value not in _ROLE_FIELDS:
            raise _fail(path, k, f, f"unknown field (one of {', '.join(_ROLE_FIELDS)})")
        if k.value in ("exclusive_p4_ids", "shared_p4_ids"):
            kw[k.value] = _id_list(path, v, f)
        elif k.value == "packet_in_filter":
            kw[k.value] = _filter(path, v, f)
        else:
            kw[k.value] = _bool(path, v, f)
    rd = RoleDef(name, **kw)
    if rd.read_only and (rd.can_push_pipeline or rd.receives_packet_ins or not rd.every_entity):
        raise _fail(path, node, where, "a read_only role cannot also push a pipeline, receive "
                                       "PacketIns or list entities to write")
    if rd.exclusive_p4_ids & rd.shared_p4_ids:
        raise _fail(path, node, where, f"p4 ids {sorted(rd.exclusive_p4_ids & rd.shared_p4_ids)} "
                                       "are both exclusive and shared")
    return rd


def parse_policy(text: str, path: str = "<policy>") -> AuthzPolicy:
    """A policy from the text of a file (see the module docstring); PolicyError naming the
    line and the field of the first problem."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise PolicyError(f"{path}:{line}: (file): not YAML: {getattr(exc, 'problem', exc)}") from None
    if root is None:
        raise PolicyError(f"{path}:1: (file): empty; a policy has 'roles' and 'identities'")
    top = {k.value: (k, v) for k, v in _mapping(path, root, "(file)")}
    for name, (k, _) in top.items():
        if name not in ("version", "roles", "identities"):
            raise _fail(path, k, name, "unknown field (version, roles, identities)")
    if "version" in top and _scalar(path, top["version"][1], "version") != POLICY_VERSION:
        raise _fail(path, top["version"][1], "version", f"this p4sim reads version {POLICY_VERSION}")
    for need in ("roles", "identities"):
        if need not in top:
            raise _fail(path, root, need, "is required")
    roles: dict[str, RoleDef] = {}
    for k, v in _mapping(path, top["roles"][1], "roles"):
        name = str(k.value)
        if not _ROLE_NAME.match(name):
            raise _fail(path, k, f"roles.{name}", "not a role name (letters, digits, '.', '_', '-')")
        roles[name] = _role(path, name, v, "roles." + (name or '""'))
    if not roles:
        raise _fail(path, top["roles"][1], "roles", "no role is defined")
    owners: dict[int, str] = {}
    for rd in roles.values():
        for i in sorted(rd.exclusive_p4_ids):
            other = next((o.name for o in roles.values() if o is not rd and
                          (i in o.exclusive_p4_ids or i in o.shared_p4_ids)), None)
            if other is not None or i in owners:
                raise _fail(path, top["roles"][1], f"roles.{rd.name}.exclusive_p4_ids",
                            f"p4 id {i} is also listed by role {role_label(other or owners[i])}")
            owners[i] = rd.name
    identities: dict[str, tuple[str, ...]] = {}
    for k, v in _mapping(path, top["identities"][1], "identities"):
        who = str(k.value)
        where = f"identities.{who}"
        if not _IDENTITY.match(who):
            raise _fail(path, k, where, "not a certificate common name this policy accepts "
                                        "(letters, digits, '.', '_', '@', '-')")
        if not isinstance(v, yaml.SequenceNode) or not v.value:
            raise _fail(path, v, where, "expected a non-empty list of role names")
        held = []
        for i, rn in enumerate(v.value):
            name = _scalar(path, rn, f"{where}[{i}]")
            name = "" if name is None else str(name)
            if name not in roles:
                known = ", ".join(r if r else '""' for r in roles)
                raise _fail(path, rn, f"{where}[{i}]", f"unknown role {name!r} (the policy's roles: {known})")
            held.append(name)
        identities[who] = tuple(held)
    if not identities:
        raise _fail(path, top["identities"][1], "identities", "no identity is named: nobody could use the switch")
    return AuthzPolicy(path, roles, identities)


def load_policy(path: str | Path) -> AuthzPolicy:
    """:func:`parse_policy` of a file; PolicyError (one line) when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}:1: (file): cannot read the policy: {exc}") from None
    return parse_policy(text, str(path))


def write_policy(path: Path, identities: Mapping[str, Iterable[str]],
                 text: str = DEFAULT_POLICY_TEXT) -> Path:
    """Write ``text`` (after checking it parses and names exactly ``identities``) to
    ``path``; used by the testbed. Returns the path."""
    pol = parse_policy(text, str(path))
    want = {k: tuple(v) for k, v in identities.items()}
    if pol.identities != want:
        raise ValueError(f"{path}: the policy names {pol.identities}, not {want}")
    path.write_text(text, encoding="utf-8")
    return path


def peer_identity(context: Any) -> Optional[str]:
    """The common name of the call's verified client certificate (None without TLS or
    without a client certificate)."""
    auth = context.auth_context() or {}
    if b"ssl" not in auth.get("transport_security_type", []):
        return None
    names = auth.get("x509_common_name") or []
    return names[0].decode(errors="replace") if names else None


__all__ = ["AuthzPolicy", "DEFAULT_POLICY_TEXT", "Denied", "PacketFilter", "PolicyError",
           "RoleDef", "entity_p4_id", "load_policy", "parse_policy", "peer_identity",
           "role_label", "write_policy"]

"""P4Runtime ``Action`` messages ↔ :class:`p4sim.runtime.tables.ActionCall`, checked
against a table's P4Info action list (used by the table and action profile entities).

Codes, as the P4Runtime spec names them: an action that is not one of the table's, a
missing, unknown or repeated parameter → ``INVALID_ARGUMENT``; an action used outside
its scope (``@tableonly`` as default, ``@defaultonly`` in an entry) →
``PERMISSION_DENIED``; a parameter value wider than its bitwidth → ``OUT_OF_RANGE``.

Example::

    >>> call = decode_action(index, table_info, msg, default=False)      # doctest: +SKIP
    >>> encode_action(index, call).action_id                             # doctest: +SKIP
    16800567
"""
from __future__ import annotations

from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.entities_index import ProgramIndex, TableInfo
from p4sim.p4runtime.entities_translated import decode_translated
from p4sim.p4runtime.entities_values import decode_bits, encode_bits, fail
from p4sim.runtime.tables import ActionCall


def decode_action(index: ProgramIndex, ti: TableInfo, msg: pb.Action, default: bool) -> ActionCall:
    """The call an ``Action`` message asks for in table ``ti`` (as an entry or the default)."""
    scope = ti.action_scopes.get(msg.action_id)
    ai = index.actions.get(msg.action_id)
    if scope is None or ai is None:
        fail("INVALID_ARGUMENT", f"table {ti.name}: action id {msg.action_id} is not one of its actions")
    if default and scope == "table_only":
        fail("PERMISSION_DENIED", f"table {ti.name}: action {ai.name} is @tableonly, not a default action")
    if not default and scope == "default_only":
        fail("PERMISSION_DENIED", f"table {ti.name}: action {ai.name} is @defaultonly")
    args: list[int] = [0] * len(ai.params)
    seen: set[int] = set()
    for p in msg.params:
        info = ai.params.get(p.param_id)
        if info is None:
            fail("INVALID_ARGUMENT", f"action {ai.name}: unknown parameter id {p.param_id}")
        if p.param_id in seen:
            fail("INVALID_ARGUMENT", f"action {ai.name}: parameter {info[1]} given twice")
        seen.add(p.param_id)
        pos, pname, width = info
        what = f"action {ai.name} parameter {pname}"
        if p.param_id in ai.translated:
            args[pos] = decode_translated(p.value, width, 0, what, match_key=False)
        else:
            args[pos] = decode_bits(p.value, width, what)
    if len(seen) != len(ai.params):
        missing = sorted(n for pid, (_, n, _) in ai.params.items() if pid not in seen)
        fail("INVALID_ARGUMENT", f"action {ai.name}: missing parameters {', '.join(missing)}")
    return ActionCall(ai.name, tuple(args))


def encode_action(index: ProgramIndex, call: ActionCall) -> pb.Action:
    """The ``Action`` message of a call, parameters in canonical form."""
    out = pb.Action(action_id=index.action_id_by_name[call.name])
    params = index.actions[out.action_id].params
    for pid, (pos, _n, _w) in sorted(params.items(), key=lambda kv: kv[1][0]):
        out.params.add(param_id=pid, value=encode_bits(call.args[pos]))
    return out

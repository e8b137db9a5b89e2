"""P4Info generation: the P4Runtime description of a loaded v1model program, as
``p4c-bm2-ss --p4runtime-files`` emits it.

IDs follow p4c: the top byte is the P4Runtime resource prefix (``P4Ids.Prefix``:
actions 0x01, tables 0x02, controller headers 0x04, action profiles 0x11, counters 0x12,
direct counters 0x13, meters 0x14, direct meters 0x15, registers 0x16, digests 0x17,
parser value sets 0x03: :mod:`p4sim.p4info_values`);
the low 24 bits are the Jenkins one-at-a-time hash of the fully qualified name. ``@id``
values are honoured first (the prefix is added when missing); the other names of a
type are hashed in sorted order and collisions are resolved by linear probing of the
hash. Aliases are the shortest unique dot-separated suffix over all P4Runtime symbols.

Example::

    >>> from p4sim.engine import load_program                       # doctest: +SKIP
    >>> info = build_p4info(load_program("prog.p4"))                 # doctest: +SKIP
    >>> write_p4info(info, "prog.p4info.txtpb", "prog.p4info.bin")   # doctest: +SKIP
    >>> symbol_id(PREFIX_ACTION, "NoAction")
    21257015
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2 as P

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.types import ErrorT, StructLikeT, bit_width
from p4sim.frontend.uses import removed_blocks_and_tables
from p4sim.p4info_names import check_action_names, check_anonymous_properties, check_duplicate_names
from p4sim.p4info_newtypes import NewTypes, check_translations
from p4sim.p4info_symbols import (PREFIX_ACTION, PREFIX_ACTION_PROFILE, PREFIX_CONTROLLER_HEADER,
                                  PREFIX_COUNTER, PREFIX_DIGEST, PREFIX_DIRECT_COUNTER,
                                  PREFIX_DIRECT_METER, PREFIX_METER, PREFIX_REGISTER, PREFIX_TABLE,
                                  SymbolTable, _add_annotations, _add_doc, _ann, _ann_int, _ann_string,
                                  _field_ids, _preamble, annotation_text, jenkins_hash, symbol_id)
from p4sim.p4info_typeinfo import add_error_members, add_serializable_enum, add_type_spec, p4c_writes_type_info
from p4sim.p4info_values import add_value_set_symbols, add_value_sets

_MATCH_TYPES = {"exact": P.MatchField.EXACT, "lpm": P.MatchField.LPM, "ternary": P.MatchField.TERNARY,
                "range": P.MatchField.RANGE, "optional": P.MatchField.OPTIONAL}
_COUNTER_UNITS = {"packets": P.CounterSpec.PACKETS, "bytes": P.CounterSpec.BYTES,
                  "packets_and_bytes": P.CounterSpec.BOTH}
_METER_UNITS = {"packets": P.MeterSpec.PACKETS, "bytes": P.MeterSpec.BYTES}
_SCOPES = {"table_and_default": P.ActionRef.TABLE_AND_DEFAULT, "table_only": P.ActionRef.TABLE_ONLY,
           "default_only": P.ActionRef.DEFAULT_ONLY}


# --------------------------------------------------------------------------- program walk
def _instantiations(prog: Any) -> list[A.Instantiation]:
    out: list[A.Instantiation] = []
    ast = getattr(prog, "ast", None)
    for d in getattr(ast, "decls", []) or []:
        if isinstance(d, A.Instantiation):
            out.append(d)
        for loc in getattr(d, "locals", None) or []:
            if isinstance(loc, A.Instantiation):
                out.append(loc)
    return out


def extern_declaration(prog: Any, fq: str) -> Optional[A.Instantiation]:
    """The declaration that created the runtime object ``fq`` (None if not found)."""
    for d in _instantiations(prog):
        local = _ann_string(_ann(d.annotations, "name")) or d.name
        if local.startswith("."):
            if fq == local[1:]:
                return d
        elif fq == local or fq.endswith("." + local):
            return d
    return None


def _extern_annotations(prog: Any, fq: str) -> list[A.Annotation]:
    """Annotations of the declaration that created the runtime object ``fq``."""
    d = extern_declaration(prog, fq)
    return d.annotations if d is not None else []


def tables_with_implementation(prog: Any) -> list[Any]:
    """The tables that reach the BMv2 JSON with an action profile or selector (their
    ``TableInfo``): p4c-bm2-ss says of each "Target does not support default_action for
    T (due to action profiles)" (backends/bmv2/common/control.h; p4c's front end gives
    every table a default action)."""
    return [ti for ti in _live_tables(prog) if ti.runtime.implementation is not None]


def unattached_direct_counters(prog: Any) -> list[str]:
    """The direct counters no table that reaches the BMv2 JSON uses (attached to no table,
    or only to one p4c's front end removes): p4c-bm2-ss leaves them out, with the warning
    "X: Direct counter not used; ignoring" (simpleSwitch.cpp), and so does P4Info."""
    tables = _live_tables(prog)
    return [fq for fq, c in prog.state.direct_counters.items()
            if not any(ti.runtime.direct_counter is c for ti in tables)]


def _header_decls(prog: Any) -> list[A.StructLikeDecl]:
    ast = getattr(prog, "ast", None)
    return [d for d in getattr(ast, "decls", []) or []
            if isinstance(d, A.StructLikeDecl) and d.kind == "header" and _ann(d.annotations, "controller_header")]


def _p4c_action_order(prog: Any, tables: Sequence[Any], actions: Sequence[Any]) -> Any:
    """The sort key that lists actions in p4c's order: control by control (in V1Switch's
    order), each control's copies of the top-level actions it uses first, in the order of
    their first use (LocalizeAllActions prepends them; a table's before a direct call's),
    then its own actions in
    declaration order. An action's or table's control is the one it is declared in, not
    the one its name says: ``@name(".send")`` on an action of ``ingress`` names it at the
    top level, and it is still one of ingress's own actions."""
    blocks = [getattr(inst, "fqname", "") for inst in getattr(prog, "blocks", {}).values()]

    def block_of(path: str) -> int:
        top = path.split(".", 1)[0]
        return blocks.index(top) if top in blocks else len(blocks)

    def path_of(obj: Any) -> str:
        return getattr(obj, "block_path", None) or obj.fqname

    def top_level(ai: Any) -> bool:
        path = getattr(ai, "block_path", None)
        return path == "" if path is not None else "." not in ai.fqname

    position = {ai.fqname: i for i, ai in enumerate(actions)}
    first_use: dict[str, tuple[int, int, int]] = {}
    for ti in tables:
        for ai in ti.actions:
            if top_level(ai) and ai.fqname not in first_use:
                first_use[ai.fqname] = (block_of(path_of(ti)), 0, len(first_use))
    # a top-level action no table uses but a control's body calls: that control's copy
    for fq, caller in getattr(prog, "direct_action_callers", {}).items():
        if fq not in first_use:
            first_use[fq] = (block_of(caller), 0, len(first_use))

    def key(ai: Any) -> tuple[int, int, int]:
        if top_level(ai):
            return first_use.get(ai.fqname, (-1, 0, position[ai.fqname]))
        return (block_of(path_of(ai)), 1, position[ai.fqname])
    return key


def _live_tables(prog: Any) -> list[Any]:
    """The program's tables but those p4c's front end deletes before writing P4Info (a
    table applied only in the dead branch of ``if (false)`` or ``false ? a : b``)."""
    ast = getattr(prog, "ast", None)
    removed = {id(d) for d in removed_blocks_and_tables(ast)} if ast is not None else set()
    return [ti for ti in prog.tables_info.values() if ti.runtime is not None and id(ti.decl) not in removed]


def table_actions_in_p4c_order(prog: Any) -> list[A.ActionDecl]:
    """The declarations of the actions tables use, in p4c's order (as P4Info and the BMv2
    JSON list them)."""
    tables = _live_tables(prog)
    referenced = {ai.fqname for ti in tables for ai in ti.actions}
    actions = [ai for fq, ai in prog.actions.items() if fq in referenced]
    actions.sort(key=_p4c_action_order(prog, tables, actions))
    return [ai.decl for ai in actions]


# --------------------------------------------------------------------------- builder
_SELECTOR_ANNOTATIONS = ("max_group_size", "selector_size_semantics", "max_member_weight")
"""An action selector's annotations that P4Info writes as fields, not annotations."""


def _selector_size(m: Any, anns: Sequence[A.Annotation]) -> None:
    """``max_group_size`` and the selector size semantics of the action selector ``m``
    from its annotations, as p4c's v1model P4Runtime handler writes them:
    ``@selector_size_semantics("sum_of_weights")`` (any case) gives ``sum_of_weights {}``,
    ``"sum_of_members"`` gives ``sum_of_members {}`` with ``@max_member_weight`` in it
    (ignored with the other semantics or none); another value is refused."""
    mgs = _ann_int(_ann(anns, "max_group_size"))
    if mgs:
        m.max_group_size = mgs
    sem = _ann(anns, "selector_size_semantics")
    if sem is not None:
        value = _ann_string(sem) or ""
        if value.upper() == "SUM_OF_WEIGHTS":
            m.sum_of_weights.SetInParent()
        elif value.upper() == "SUM_OF_MEMBERS":
            m.sum_of_members.SetInParent()
        else:
            raise P4Error('Expected selector_size_semantics value "sum_of_weights" or "sum_of_members", '
                          f'but got \'{value}\'', sem.loc)
    weight = _ann_int(_ann(anns, "max_member_weight"))
    if weight is not None and m.HasField("sum_of_members"):
        m.sum_of_members.max_member_weight = weight


def build_p4info(prog: Any) -> P.P4Info:
    """The P4Info of a loaded program (:class:`p4sim.engine.program.CompiledProgram`)."""
    check_translations(getattr(prog, "ast", None))
    all_tables = _live_tables(prog)
    # p4c checks the actions its front end keeps (a table's, or one a control's body
    # calls): an unused action is removed first, whatever its name
    kept = {id(ai.decl) for ti in all_tables for ai in ti.actions}
    kept |= {id(prog.actions[fq].decl) for fq in getattr(prog, "direct_action_calls", ()) if fq in prog.actions}
    check_action_names(getattr(prog, "ast", None), kept)
    check_duplicate_names(getattr(prog, "duplicate_names", []))
    state = prog.state
    check_anonymous_properties(all_tables)
    tables = [ti for ti in all_tables if not _ann(ti.decl.annotations, "hidden")]
    # actions, as p4c-bm2-ss lists them: every action left among a control's locals once
    # its front end has inlined the actions other actions call and removed the
    # declarations nothing refers to (RemoveAllUnusedDeclarations). That is the actions a
    # table refers to (a @hidden table's too: only the table is hidden), with their
    # control-plane parameters, and the actions a control's body calls directly, with no
    # parameters (RemoveActionParameters turns those into locals); never an @hidden one.
    referenced = {ai.fqname for ti in all_tables for ai in ti.actions}
    called = set(getattr(prog, "direct_action_calls", ())) - referenced
    actions = [ai for fq, ai in prog.actions.items()
               if (fq in referenced or fq in called) and not _ann(ai.annotations, "hidden")]
    actions.sort(key=_p4c_action_order(prog, all_tables, actions))
    headers = _header_decls(prog)

    st = SymbolTable()
    for ai in actions:
        st.add(PREFIX_ACTION, ai.fqname, _ann_int(_ann(ai.annotations, "id")))
    for ti in tables:
        st.add(PREFIX_TABLE, ti.fqname, _ann_int(_ann(ti.decl.annotations, "id")))
    # p4c lists a direct counter or meter with the table it is attached to; one attached
    # to no table is not listed (nothing refers to it: its front end removes it)
    direct_counters = {fq: c for fq, c in state.direct_counters.items()
                       if any(ti.runtime.direct_counter is c for ti in tables)}
    direct_meters = {fq: m for fq, m in state.direct_meters.items()
                     if any(ti.runtime.direct_meter is m for ti in tables)}
    kinds = ((PREFIX_ACTION_PROFILE, state.action_profiles), (PREFIX_COUNTER, state.counters),
             (PREFIX_DIRECT_COUNTER, direct_counters), (PREFIX_METER, state.meters),
             (PREFIX_DIRECT_METER, direct_meters), (PREFIX_REGISTER, state.registers))
    for prefix, objs in kinds:
        for fq in objs:
            st.add(prefix, fq, _ann_int(_ann(_extern_annotations(prog, fq), "id")))
    for h in headers:
        st.add(PREFIX_CONTROLLER_HEADER, h.name, _ann_int(_ann(h.annotations, "id")))
    for name in prog.digest_types:
        st.add(PREFIX_DIGEST, name)
    add_value_set_symbols(st, prog)
    st.assign_ids()

    info = P.P4Info()
    _pkg_info(info.pkg_info, getattr(prog, "ast", None))
    newtypes = NewTypes(getattr(prog, "ast", None))
    for ti in tables:
        _table(info, st, ti, getattr(prog, "error_codes", {}), newtypes)
    for ai in actions:
        a = info.actions.add()
        _preamble(a, st, PREFIX_ACTION, ai.fqname, ai.annotations)
        if ai.fqname in called:
            continue
        dirless = [p for p in ai.decl.params if p.direction == ""]
        ids = _field_ids([getattr(p, "annotations", []) for p in dirless])
        for p, pid, (_, width) in zip(dirless, ids, ai.cp_params):
            ptype = dict(zip(ai.decl.params, ai.ptypes)).get(p)
            add_serializable_enum(info, ptype)
            prm = a.params.add()
            prm.id = pid
            prm.name = p.name
            _add_annotations(prm, getattr(p, "annotations", []))
            _add_doc(prm, getattr(p, "annotations", []))
            _set_width_and_type(prm, ptype, width, info, newtypes)
    for fq, ap in state.action_profiles.items():
        m = info.action_profiles.add()
        anns = _extern_annotations(prog, fq)
        _preamble(m, st, PREFIX_ACTION_PROFILE, fq, [a for a in anns if a.name not in _SELECTOR_ANNOTATIONS])
        # p4c keeps a profile's tables in a std::set of names: sorted by name (measured on
        # p4c-bm2-ss 1.2.5.16 with sonic-pins' p4_pdpi/main.p4, three tables on one selector)
        m.table_ids.extend(st.id(PREFIX_TABLE, fq) for fq in
                           sorted(ti.fqname for ti in tables if ti.runtime.implementation is ap))
        m.with_selector = hasattr(ap, "algorithm")
        m.size = ap.size
        if m.with_selector:
            _selector_size(m, anns)
    # indexed and direct counters and meters: (objects, P4Info list, id prefix, units, owning table)
    resources = (
        (state.counters, info.counters, PREFIX_COUNTER, _COUNTER_UNITS, None),
        (direct_counters, info.direct_counters, PREFIX_DIRECT_COUNTER, _COUNTER_UNITS, "direct_counter"),
        (state.meters, info.meters, PREFIX_METER, _METER_UNITS, None),
        (direct_meters, info.direct_meters, PREFIX_DIRECT_METER, _METER_UNITS, "direct_meter"),
    )
    for objects, out, prefix, units, table_attr in resources:
        for fq, obj in objects.items():
            m = out.add()
            _preamble(m, st, prefix, fq, _extern_annotations(prog, fq))
            m.spec.unit = units[obj.unit]
            if table_attr is None:
                m.size = obj.size
                continue
            owner = next((ti for ti in tables if getattr(ti.runtime, table_attr) is obj), None)
            if owner is not None:
                m.direct_table_id = st.id(PREFIX_TABLE, owner.fqname)
    for h in headers:
        _controller_header(info, st, h, prog, newtypes)
    for fq, r in state.registers.items():
        m = info.registers.add()
        _preamble(m, st, PREFIX_REGISTER, fq, _extern_annotations(prog, fq))
        bits = m.type_spec.bitstring
        (bits.int if getattr(r, "signed", False) else bits.bit).bitwidth = r.width
        m.size = r.size
    for name, t in prog.digest_types.items():
        m = info.digests.add()
        _preamble(m, st, PREFIX_DIGEST, name, [])
        add_type_spec(m.type_spec, t, info, newtypes, getattr(prog, "error_codes", {}))
    add_value_sets(info, st, prog)
    if p4c_writes_type_info(prog, info):
        info.type_info.SetInParent()  # p4c writes ``type_info {}`` even when it is empty
    return info


def _set_width_and_type(msg: Any, t: Any, program_width: int, info: P.P4Info, newtypes: NewTypes) -> None:
    """``bitwidth`` and ``type_name`` of a match field, parameter or controller-header
    field of type ``t``, as p4c writes them (a translated ``type``: its controller width)."""
    msg.bitwidth = newtypes.width(t, program_width)
    name = newtypes.type_name(t)
    if name is not None:
        msg.type_name.name = name
        newtypes.add(info, t, _add_annotations)


def _initial_default(t: Any, st: SymbolTable, ti: Any, rt: Any, newtypes: NewTypes) -> None:
    """``initial_default_action`` as p4c writes it: the action and its arguments, each at
    the full byte width of its parameter (a translated ``type``'s controller width)."""
    call = rt.initial_default_action
    t.initial_default_action.action_id = st.id(PREFIX_ACTION, call.name)
    ai = next((a for a in ti.actions if a.fqname == call.name), None)
    if ai is None:
        return
    dirless = [p for p in ai.decl.params if p.direction == ""]
    ids = _field_ids([getattr(p, "annotations", []) for p in dirless])
    ptypes = dict(zip(ai.decl.params, ai.ptypes))
    for p, pid, (_, width), value in zip(dirless, ids, ai.cp_params, call.args):
        width = newtypes.width(ptypes.get(p), width)
        if width == 0:   # p4c-bm2-ss: "Compiler Bug: Unexpected width 0" (bytestrings.cpp)
            raise P4Error(f"{ti.fqname}: the default action's argument {p.name} has a type translated to a "
                          "string (@p4runtime_translation(..., string)); p4c-bm2-ss cannot write it in P4Info",
                          getattr(p, "loc", None))
        arg = t.initial_default_action.arguments.add()
        arg.param_id = pid
        arg.value = int(value).to_bytes((width + 7) // 8, "big")


def _table(info: P.P4Info, st: SymbolTable, ti: Any, error_codes: dict[str, int], newtypes: NewTypes) -> None:
    rt = ti.runtime
    t = info.tables.add()
    _preamble(t, st, PREFIX_TABLE, ti.fqname, ti.decl.annotations)
    kp = ti.decl.prop("key")
    elems = list(kp.value) if kp is not None else []
    ids = _field_ids([ke.annotations for ke in elems]) if elems else list(range(1, len(rt.keys) + 1))
    key_types = list(getattr(ti, "key_types", []))
    key_types += [None] * (len(rt.keys) - len(key_types))
    for k, fid, ke, kt in zip(rt.keys, ids, elems or [None] * len(rt.keys), key_types):
        if k.match_kind not in _MATCH_TYPES:
            continue  # selector keys are not control-plane match fields
        mf = t.match_fields.add()
        mf.id = fid
        mf.name = k.name
        anns = ke.annotations if ke is not None else []
        _add_annotations(mf, anns)
        _add_doc(mf, anns)
        if isinstance(kt, ErrorT):   # p4c: no bitwidth, the error's members in type_info
            add_error_members(info, error_codes)
        else:
            add_serializable_enum(info, kt)
            _set_width_and_type(mf, kt, k.width, info, newtypes)
        mf.match_type = _MATCH_TYPES[k.match_kind]
    ap = ti.decl.prop("actions")
    refs = list(ap.value) if ap is not None else []
    for i, ai in enumerate(ti.actions):
        ar = t.action_refs.add()
        ar.id = st.id(PREFIX_ACTION, ai.fqname)
        spec = rt.actions.get(ai.fqname)
        scope = spec.scope if spec is not None else "table_and_default"
        if i < len(refs):
            _add_annotations(ar, refs[i].annotations)
        elif scope == "default_only":
            ar.annotations.append("@defaultonly")  # the implicit NoAction default, as p4c adds it
        ar.scope = _SCOPES[scope]
    if rt.default_is_const and rt.initial_default_action is not None:
        t.const_default_action_id = st.id(PREFIX_ACTION, rt.initial_default_action.name)
    if rt.initial_default_action is not None:
        _initial_default(t, st, ti, rt, newtypes)
    if rt.implementation is not None:
        t.implementation_id = st.id(PREFIX_ACTION_PROFILE, rt.implementation.name)
    if rt.direct_counter is not None:
        t.direct_resource_ids.append(st.id(PREFIX_DIRECT_COUNTER, rt.direct_counter.name))
    if rt.direct_meter is not None:
        t.direct_resource_ids.append(st.id(PREFIX_DIRECT_METER, rt.direct_meter.name))
    t.size = rt.size
    if rt.support_timeout:
        t.idle_timeout_behavior = P.Table.NOTIFY_CONTROL
    if rt.is_const:
        t.is_const_table = True
    entries = ti.decl.prop("entries")
    if entries is not None and entries.value:
        # p4c: an empty ``const entries = { }`` gives none (is_const_table only)
        t.has_initial_entries = True


def _controller_header(info: P.P4Info, st: SymbolTable, h: A.StructLikeDecl, prog: Any, newtypes: NewTypes) -> None:
    cname = _ann_string(_ann(h.annotations, "controller_header")) or h.name
    m = info.controller_packet_metadata.add()
    _preamble(m, st, PREFIX_CONTROLLER_HEADER, cname, h.annotations, alias=cname, symbol=h.name)
    htype = prog.struct_types.get(h.name)
    flat = _flatten_fields(htype, "", []) if htype is not None else []
    for _, _, ft in flat:
        add_serializable_enum(info, ft)
    fields = [f for f in flat if not _ann(f[1], "hidden")]
    for (name, anns, ft), fid in zip(fields, _field_ids([f[1] for f in fields])):
        md = m.metadata.add()
        md.id = fid
        md.name = name
        _add_annotations(md, anns)
        _set_width_and_type(md, ft, bit_width(ft) or 0, info, newtypes)


def _flatten_fields(t: Any, prefix: str, outer: list[A.Annotation]) -> list[tuple[str, list[A.Annotation], Any]]:
    """A controller header's fields as p4c's FlattenHeader lists them: a struct-typed field
    becomes its bit fields, named ``outer.inner``, each with the annotations of the field
    and of the fields enclosing it (the innermost wins when a name repeats)."""
    out: list[tuple[str, list[A.Annotation], Any]] = []
    for fname, ft in t.fields:
        own = list(t.annotations.get(fname, []))
        merged = own + [a for a in outer if all(a.name != b.name for b in own)]
        if isinstance(ft, StructLikeT):
            out += _flatten_fields(ft, f"{prefix}{fname}.", merged)
        else:
            out.append((prefix + fname, merged, ft))
    return out


def write_p4info(p4info: P.P4Info, txt_path: str, bin_path: Optional[str] = None) -> None:
    """Write ``p4info`` in protobuf text format (and binary when ``bin_path`` is given)."""
    with open(txt_path, "w", encoding="utf-8") as f:
        f.write(text_format.MessageToString(p4info))
    if bin_path:
        with open(bin_path, "wb") as fb:
            fb.write(p4info.SerializeToString())

_PKGINFO_STRINGS = ("name", "version", "organization", "contact", "url", "arch")
_PLATFORM_INTS = ("multicast_group_table_size", "multicast_group_table_total_replicas",
                  "multicast_group_table_max_replicas_per_entry")


def _pkg_info(pkg: Any, program: Optional[A.Program]) -> None:
    """``pkg_info`` as p4c's addPkgInfo writes it: ``arch``, then the ``@pkginfo(k = "v",
    ...)`` and ``@platform_property(k = N, ...)`` annotations of ``main`` (measured on
    p4c-bm2-ss 1.2.5.16 with sonic-pins' SAI P4 programs), its other annotations and
    ``@brief``/``@description``. Unknown keys are ignored (p4c warns); a value of the wrong
    kind is p4c's error."""
    pkg.arch = "v1model"
    mains = [d for d in getattr(program, "decls", ()) if isinstance(d, A.Instantiation) and d.name == "main"]
    if not mains:
        return
    anns = list(getattr(mains[0], "annotations", None) or [])
    for a in anns:
        if a.name == "pkginfo":
            for key, value in (a.kv or {}).items():
                if key not in _PKGINFO_STRINGS:
                    continue
                if not isinstance(value, A.StringLit):
                    raise P4Error(f"Value for '{key}' key in @pkginfo annotation is not a string", value.loc)
                setattr(pkg, key, value.value)
        elif a.name == "platform_property":
            props = pkg.platform_properties
            props.SetInParent()
            for key, value in (a.kv or {}).items():
                if key not in _PLATFORM_INTS:
                    continue
                if not isinstance(value, A.IntLit):
                    raise P4Error(f"Value for '{key}' key in @platform_property annotation is not an integer",
                                  value.loc)
                setattr(props, key, value.value)
    _add_annotations(pkg, [a for a in anns if a.name not in ("pkginfo", "platform_property")])
    _add_doc(pkg, anns)

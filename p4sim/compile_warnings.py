"""The warnings ``p4sim check`` and ``p4sim compile`` print (:mod:`p4sim.frontend.p4c_warnings`)
for a loaded program, with the actions its tables use in the BMv2 JSON's order.

Example::

    >>> import sys
    >>> from p4sim.engine import load_program_text
    >>> lines = ["#include <v1model.p4>", "header h_t { bit<8> a; } struct H { h_t h; } struct M { }",
    ...          "parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) {",
    ...          "  state start { p.extract(h.h); transition accept; } }",
    ...          "control C(inout H h, inout M m) { apply { } }",
    ...          "control I(inout H h, inout M m, inout standard_metadata_t s) { bit<8> spare; apply { } }",
    ...          "control D(packet_out p, in H h) { apply { p.emit(h.h); } }",
    ...          "V1Switch(P(), C(), I(), I(), C(), D()) main;"]
    >>> prog = load_program_text("\\n".join(lines), "ex.p4")
    >>> print_warnings(prog, [], sys.stdout)
    ex.p4:6:71: [--Wwarn=unused] warning: 'spare' is unused
    control I(inout H h, inout M m, inout standard_metadata_t s) { bit<8> spare; apply { } }
                                                                          ^^^^^
    >>> print_warnings(prog, ["unused"], sys.stdout)
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from p4sim.frontend.p4c_warnings import Diagnostic, WarningFilter, external_name, program_warnings
from p4sim.frontend.text import at_name
from p4sim.p4info import (extern_declaration, table_actions_in_p4c_order, tables_with_implementation,
                          unattached_direct_counters)


def compiled_program_warnings(program: Any) -> list[Diagnostic]:
    """:func:`program_warnings` of a loaded :class:`p4sim.engine.program.CompiledProgram`,
    then the BMv2 back end's about the loaded objects (a table with an action profile, a
    direct counter no table uses)."""
    ast = getattr(program, "ast", None)
    if ast is None:
        return []
    out = program_warnings(ast, table_actions_in_p4c_order(program))
    for ti in tables_with_implementation(program):
        # p4c names it as its @name says, a leading dot kept (".t" for @name(".t"))
        shown = "." + ti.fqname if external_name(ti.decl).startswith(".") else ti.fqname
        out.append(Diagnostic(at_name(ti.decl.loc, ti.decl.name), "unsupported",
                              f"Target does not support default_action for {shown} "
                              "(due to action profiles)"))
    for fq in unattached_direct_counters(program):
        d = extern_declaration(program, fq)
        if d is not None:
            shown = "." + fq if external_name(d).startswith(".") else fq
            out.append(Diagnostic(at_name(d.loc, d.name), "unused",
                                  f"{shown}: Direct counter not used; ignoring", width=len(d.name)))
    return out


def print_warnings(program: Any, disabled: Optional[Sequence[Optional[str]]], stream: Any) -> None:
    """Print the warnings of a loaded program that ``--Wdisable`` options leave on. A
    failure inside the analysis is reported in one line and never changes the outcome of
    the command (warnings never do)."""
    shown = WarningFilter.from_options(disabled)
    try:
        found = compiled_program_warnings(program)
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - warnings must not fail a compile
        print(f"p4sim: internal error while looking for warnings ({type(exc).__name__}: {exc}); "
              "please report it with the program", file=stream)
        return
    for d in found:
        if shown.shows(d):
            print(d.render(), file=stream)

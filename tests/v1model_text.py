"""The v1model program around a test's ingress control: Ethernet only, every other block
empty. One copy for the P4Runtime store tests (``tests/p4sim/p4runtime/p4rt_fixtures.py``
re-exports it) and the native engine's table tests (tests/p4sim/native/), which each had
their own.

Importable as ``v1model_text`` from every test (``pythonpath = tests`` in ``pytest.ini``).

Example::

    >>> prog = v1model_program("control Ing(inout headers_t hdr, inout meta_t meta, "
    ...                        "inout standard_metadata_t sm) { apply { } }")
    >>> prog.startswith("#include <core.p4>") and prog.endswith("V1Switch(P(), VC(), Ing(), E(), CC(), D()) main;\\n")
    True
    >>> "struct meta_t { bit<16> tag; }" in v1model_program("", meta="bit<16> tag;", control="I")
    True
"""
from __future__ import annotations

V1MODEL_HEAD = r"""#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { ethernet_t eth; }
struct meta_t { %(meta)s }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

"""
"""Everything of the program before the ingress control (``%(meta)s``: meta_t's fields)."""
V1MODEL_TAIL = "\nV1Switch(P(), VC(), %s(), E(), CC(), D()) main;\n"
"""The package line (``%s``: the ingress control's name)."""


def v1model_program(ingress: str, meta: str = "bit<2> color;", control: str = "Ing") -> str:
    """The v1model program whose ingress is ``ingress`` (the text of ``control
    <control>``), ``meta``: the fields of ``meta_t``."""
    return V1MODEL_HEAD % {"meta": meta} + ingress.strip("\n") + "\n" + V1MODEL_TAIL % control


__all__ = ["V1MODEL_HEAD", "V1MODEL_TAIL", "v1model_program"]

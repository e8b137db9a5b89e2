"""Included files are named as cpp names them, which is how p4c-bm2-ss names them in its
messages: the including file's folder as it was named joined with the ``#include``'s
name, or the ``-I`` folder as written, nothing normalised (issue 35, third corpus:
ageapps/in-network-aggregation's ``scenarios/X/switch.p4`` includes
``../includes/ip_forward.p4``). The expected names are what p4c-bm2-ss 1.2.5.16 printed
for this layout (measured: ``sub/../lib/more.p4(2)`` for ``sub/prog.p4``,
``../lib/more.p4(2)`` run from ``sub``, the absolute form for an absolute path).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from p4sim.engine import load_program
from p4sim.errors import P4Error

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
#include "../lib/err.p4"
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { Helper() hp; apply { hp.apply(sm); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "sub" / "prog.p4").write_text(PROGRAM)
    (tmp_path / "lib" / "err.p4").write_text('#include "more.p4"\n')
    (tmp_path / "lib" / "more.p4").write_text(
        "control Helper(inout standard_metadata_t sm) {\n    apply { mark_to_drop(); }\n}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("where, path, includes, expected", [
    pytest.param(".", "sub/prog.p4", [], "sub/../lib/more.p4:2:", id="relative"),
    pytest.param(".", "./sub/prog.p4", [], "./sub/../lib/more.p4:2:", id="dot-relative"),
    pytest.param(".", "sub/prog.p4", ["sub"], "sub/../lib/more.p4:2:", id="with-include-folder"),
    pytest.param("sub", "prog.p4", [], "../lib/more.p4:2:", id="from-its-folder"),
    pytest.param(".", "ABS/sub/prog.p4", [], "ABS/sub/../lib/more.p4:2:", id="absolute"),
])
def test_an_included_file_is_named_as_cpp_names_it(layout: Path, where: str, path: str,
                                                   includes: list[str], expected: str) -> None:
    os.chdir(layout / where)
    path = path.replace("ABS", str(layout))
    with pytest.raises(P4Error) as info:
        load_program(path, includes)
    assert str(info.value).startswith(expected.replace("ABS", str(layout)) + "13: error: Expected 1 argument")


def test_includes_nest_at_most_200_deep_as_cpp(tmp_path: Path) -> None:
    """cpp's ``-fmax-include-depth`` (200, what p4c runs): a chain ``f0.p4`` -> ``f1.p4``
    -> ... stops at ``f199.p4``'s directive, with cpp's message (measured: cpp 11 gives
    ``f199.p4:1:19``); a file that includes itself (distrue/p4ids-bmv2's ``core.p4``, with
    ``#include <core.p4>`` and its folder on the include path) is refused the same way,
    not with a Python recursion error."""
    from p4sim.frontend.preprocess import preprocess
    for i in range(205):
        (tmp_path / f"f{i}.p4").write_text(f'#include "f{i + 1}.p4"\n')
    (tmp_path / "f205.p4").write_text("\n")
    with pytest.raises(P4Error) as info:
        preprocess(str(tmp_path / "f0.p4"))
    assert str(info.value) == (f"{tmp_path}/f199.p4:1:19: error: #include nested depth 200 exceeds maximum "
                               "of 200 (use -fmax-include-depth=DEPTH to increase the maximum)")
    (tmp_path / "core.p4").write_text("/* self */\n#include <core.p4>\n")
    with pytest.raises(P4Error, match=r"core.p4:2:19: error: #include nested depth 200 exceeds"):
        preprocess(str(tmp_path / "core.p4"), [str(tmp_path)])

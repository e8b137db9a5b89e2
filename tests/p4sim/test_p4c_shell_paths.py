"""``p4sim-p4c-bm2-ss`` refuses the program paths p4c-bm2-ss's preprocessor command line
(``popen`` through ``/bin/sh``) cannot carry, with p4c's lines (issue 35, second corpus:
a third-party program named in Chinese characters; p4sim/tutorials/p4c_shell.py).

Every expectation below was measured on p4c-bm2-ss 1.2.5.16 (6b7ec98e) with this same
program, run from the folder that holds it (exit status 1 and the first line of stderr;
a non-ASCII include folder and a plain path compile).
"""
from __future__ import annotations

import os
from typing import Any

import pytest

from p4sim.tutorials.p4c import main_p4c_bm2_ss

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; }
struct H { h_t h; }
struct M { }
parser P(packet_in b, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { b.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { if (hdr.h.f == 0) { mark_to_drop(sm); } else { sm.egress_spec = 1; } }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out b, in H hdr) { apply { b.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

CASES = [
    # (path of the program, include folders, exit status, first line of stderr)
    ("é.p4", [], 1, "cc1: fatal error: 303251.p4: No such file or directory"),
    ("dé/a.p4", [], 1, "cc1: fatal error: d303251/a.p4: No such file or directory"),
    ("a b.p4", [], 1, "cc1: fatal error: a: No such file or directory"),
    ("a$b.p4", [], 1, "cc1: fatal error: a.p4: No such file or directory"),
    ("k (p4)/a.p4", [], 1, 'sh: 1: Syntax error: "(" unexpected'),
    ("ok.p4", ["k (p4)"], 1, 'sh: 1: Syntax error: "(" unexpected'),
    ("ok.p4", ["sp ace"], 1, "cc1: fatal error: ace: No such file or directory"),
    ("ok.p4", ["dé"], 0, ""),
    ("ok.p4", [], 0, ""),
]


@pytest.mark.parametrize("path, includes, status, first", CASES,
                         ids=[f"{c[0]}|{','.join(c[1])}" for c in CASES])
def test_path_is_refused_as_p4c_bm2_ss_refuses(tmp_path: Any, monkeypatch: Any, capsys: Any,
                                               path: str, includes: list[str], status: int,
                                               first: str) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in includes + [os.path.dirname(path)]:
        if folder:
            os.makedirs(folder, exist_ok=True)
    with open(path, "w") as f:
        f.write(PROGRAM)
    args = ["--p4v", "16"] + [a for d in includes for a in ("-I", d)] + ["-o", "x.json", path]
    assert main_p4c_bm2_ss(args) == status
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    if status:
        assert lines[0] == first
        assert lines[-1] == "[--Werror=overlimit] error: 1 errors encountered, aborting compilation"
    else:
        assert os.path.exists("x.json")

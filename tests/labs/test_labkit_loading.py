"""labkit's loading of Python files (``labs.labkit.student``, ``plugin.load_lab``) and what
the student sees when a file does not load; the shared fabric helper and the figures
script's list. No switch, no root."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from labs.labkit import LABS_DIR, LabError, load_lab
from labs.labkit.__main__ import main as labkit_main
from labs.labkit.student import StudentCodeError, load_student_module, module_name

PLUGIN_WITH_DATACLASS = '''
from __future__ import annotations   # string annotations: @dataclass looks up sys.modules

from dataclasses import dataclass

@dataclass(frozen=True)
class Case:
    name: str
    rate_gbps: float = 40.0

TITLE = "dataclass lab"
FILES = ("answer.py",)
CASES = (Case("two elephants"),)

def run(files_dir, target):
    return 0

def check(files_dir, target):
    from labs.labkit import Report
    from labs.labkit.student import load_student_module
    r = Report(TITLE)
    mod = load_student_module(files_dir / "answer.py")
    r.expect(mod.answer() == 42, "answer() is 42", "return 42")
    return r
'''


def make_lab(root: Path, answer_source: str, name: str = "98-dataclass") -> Path:
    lab = root / name
    lab.mkdir()
    (lab / "lab.py").write_text(PLUGIN_WITH_DATACLASS)
    (lab / "answer.py").write_text(answer_source)
    return lab


def test_load_lab_with_dataclass(tmp_path: Path) -> None:
    """A lab.py using @dataclass loads (it needs its module in sys.modules)."""
    plugin = load_lab(make_lab(tmp_path, "def answer():\n    return 42\n"))
    assert plugin.TITLE == "dataclass lab"
    assert plugin.CASES[0].rate_gbps == 40.0
    assert sys.modules[plugin.__name__] is plugin


def test_every_real_lab_loads_by_path() -> None:
    names = {load_lab(LABS_DIR / n).__name__ for n in ("01-ecmp-hashing", "06-gor-loop")}
    assert len(names) == 2


def test_fresh_module_per_call(tmp_path: Path) -> None:
    path = tmp_path / "answer.py"
    path.write_text("VALUE = 1\nseen = []\n")
    first = load_student_module(path)
    first.seen.append("x")
    path.write_text("VALUE = 2\nseen = []\n")
    second = load_student_module(path)
    assert second is not first and second.VALUE == 2 and second.seen == []
    assert sys.modules[module_name(path)] is second


def test_names_differ_by_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert module_name(tmp_path / "a" / "ports.py") != module_name(tmp_path / "b" / "ports.py")
    skeleton = LABS_DIR / "05-orthogonal-ports" / "ports.py"
    solution = LABS_DIR / "05-orthogonal-ports" / "solution" / "ports.py"
    assert load_student_module(skeleton) is not load_student_module(solution)


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "predict.py"
    path.write_text("import ipaddress\n\ndef predict_uplink(src):\n    return (1 +\n")
    with pytest.raises(StudentCodeError) as info:
        load_student_module(path)
    exc = info.value
    assert isinstance(exc, LabError)
    assert exc.location.endswith("predict.py:4") and "SyntaxError" in exc.message
    assert module_name(path) not in sys.modules


def test_import_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "ports.py"
    path.write_text('"""doc"""\nfrom p4src.hashmodel import port_to_member_tabel\n')
    with pytest.raises(StudentCodeError) as info:
        load_student_module(path)
    assert info.value.location.endswith("ports.py:2")
    assert "ImportError" in info.value.message
    assert "port_to_member_tabel" in info.value.message     # the line itself is shown


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(StudentCodeError, match="file not found"):
        load_student_module(tmp_path / "gone.py")


def test_check_of_a_broken_student_file_is_a_failed_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``check``: exit 1 with file:line and a hint, no traceback; ``run``: exit 1 too."""
    lab = make_lab(tmp_path, "def answer(:\n    return 42\n")
    assert labkit_main(["check", str(lab)]) == 1
    out = capsys.readouterr().out
    assert "\u2718 answer.py loads" in out and "answer.py:1: SyntaxError" in out
    assert "Traceback" not in out and "make check" in out
    assert labkit_main(["run", str(lab)]) == 0            # this plugin's run ignores the file


def test_check_passes_once_fixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = make_lab(tmp_path, "def answer():\n    return 41\n")
    assert labkit_main(["check", str(lab)]) == 1
    (lab / "answer.py").write_text("def answer():\n    return 42\n")
    assert labkit_main(["check", str(lab)]) == 0            # the edit is seen (fresh module)
    assert "RESULT: all 1 checks passed" in capsys.readouterr().out


def test_broken_lab_py_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = tmp_path / "97-broken-plugin"
    lab.mkdir()
    (lab / "lab.py").write_text("TITLE = 'x'\nFILES = ()\nimport no_such_module_here\n")
    assert labkit_main(["check", str(lab)]) == 2
    err = capsys.readouterr().err
    assert "lab.py:3: ModuleNotFoundError" in err


def test_run_of_a_broken_student_file_exits_1(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    lab = tmp_path / "96-run"
    lab.mkdir()
    (lab / "lab.py").write_text(
        "from labs.labkit.student import load_student_module\n"
        "TITLE = 'run'\nFILES = ('answer.py',)\n"
        "def run(files_dir, target):\n"
        "    load_student_module(files_dir / 'answer.py')\n    return 0\n"
        "def check(files_dir, target):\n    raise AssertionError\n")
    (lab / "answer.py").write_text("x = undefined_name\n")
    assert labkit_main(["run", str(lab)]) == 1
    err = capsys.readouterr().err
    assert "answer.py:1: NameError" in err and "x = undefined_name" in err


def test_run_of_a_program_without_the_labs_table_exits_1(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    """``make run`` on a skeleton whose table is not applied yet (lab 03 before TODO 3
    was a traceback): one line naming the table and what to do, exit status 1."""
    lab = tmp_path / "95-no-table"
    lab.mkdir()
    (lab / "lab.py").write_text(
        "from controller.p4rt.errors import P4InfoLookupError\n"
        "TITLE = 'no table'\nFILES = ()\n"
        "def run(files_dir, target):\n"
        "    raise P4InfoLookupError('table', 'MyEgress.port_macs')\n"
        "def check(files_dir, target):\n    raise AssertionError\n")
    assert labkit_main(["run", str(lab)]) == 1
    err = capsys.readouterr().err
    assert "no table named MyEgress.port_macs" in err and "apply it where the lab's TODO" in err
    assert "Traceback" not in err


def test_lab01_run_does_not_call_the_skeleton_polarisation() -> None:
    """Lab 01's make run on the skeleton sent all 1000 flows to port 2 at both tiers and
    concluded "polarisation"; with one uplink used at tier 1 it now says the program does
    not hash yet."""
    plugin = load_lab(LABS_DIR / "01-ecmp-hashing")
    assert plugin.conclusion(Counter({2: 1000})).startswith("Tier 1 used one uplink")
    assert plugin.conclusion(Counter({2: 256, 3: 266, 4: 215, 5: 263})).startswith(
        "One uplink out of four at tier 2 is polarisation")


def test_a_lab_without_a_switch_does_not_name_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    """Lab 06 runs no switch (SWITCH = False): its banner said "target p4sim"."""
    assert labkit_main(["check", "06", "--solution"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "no switch: --target is ignored" in first and "p4sim" not in first


def test_no_figure_scripts_beside_the_students_files() -> None:
    """Figures are drawn by labs.labkit.figures only, for every PNG a lab ships."""
    from labs.labkit.figures import FIGURES
    assert not list(LABS_DIR.glob("*/figure.py"))
    shipped = {str(p.relative_to(LABS_DIR)) for p in LABS_DIR.glob("[0-9][0-9]-*/*.png")}
    assert shipped == set(FIGURES)


def test_fabric_helper_is_shared() -> None:
    """Labs 04 and 05 program their leaf with labkit's one program_leaf."""
    from labs.labkit import fabric
    for name in ("04-reading-the-switch", "05-orthogonal-ports"):
        plugin = load_lab(LABS_DIR / name)
        assert plugin.program_leaf is fabric.program_leaf
        assert plugin.PROGRAM == fabric.FABRIC_PROGRAM

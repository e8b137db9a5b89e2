"""Every lab (``labs/NN-name/``, LB's included, found automatically): the checker passes on
``solution/`` and fails on the skeleton, run as the student runs it
(``python -m labs.labkit check``). Needs root (veth ports); skipped with the reason
otherwise. Also the framework pieces that need no switch: Report, plugin loading, the
compile-error report."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from labs.labkit import LABS_DIR, Report, find_labs, load_lab
from labs.labkit.__main__ import main as labkit_main

REPO = Path(__file__).resolve().parents[2]
CHECK_TIMEOUT_S = 240
LABS = find_labs()
PFC_LAB = LABS_DIR / "03-pfc"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="labs need root (veth ports)")


def run_check(lab: Path, solution: bool) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "labs.labkit", "check", str(lab), "--target", "p4sim"]
    if solution:
        cmd.append("--solution")
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                          timeout=CHECK_TIMEOUT_S)


LAB_LANES = 2
"""Labs checked at once by :func:`lab_checks`: a check is mostly waits on slow queues and
quiet ports (lab 02's about 2 s of CPU in 10 s), and each lab has its own switch, veths
and build folder (``build/labs/<lab>``, which the skeleton's and the solution's checks of
one lab share: those two run one after the other, 20 s for lab 02, so a third lane saves
little). With three, lab 02's solution once saw its 0.2 s queue window missed (a packet
of the burst arrived after the one before it had left) at load 8 on the 2-core machine."""
CHECKS = ("test_solution_passes", "test_skeleton_fails",
          "test_pfc_skeleton_check_runs_past_the_unapplied_table")
"""The tests that read :func:`lab_checks`."""

Check = tuple[Path, bool]
"""(lab, solution?): one ``python -m labs.labkit check`` run."""


def _wanted_checks(session: pytest.Session) -> list[Check]:
    """The checks the selected tests of this module read, in :data:`LABS` order."""
    want: set[Check] = set()
    for item in session.items:
        name = getattr(item, "originalname", "")
        if item.path != Path(__file__) or name not in CHECKS:
            continue
        lab = item.callspec.params["lab"] if hasattr(item, "callspec") else PFC_LAB
        want.add((lab, name == "test_solution_passes"))
    return sorted(want, key=lambda c: (LABS.index(c[0]) if c[0] in LABS else len(LABS), c[1]))


@pytest.fixture(scope="module")
def lab_checks(request: pytest.FixtureRequest) -> dict[Check, subprocess.CompletedProcess[str]]:
    """Every check the selected tests read, run once for the module, :data:`LAB_LANES`
    labs at a time (one lab's two checks in turn); lab 03's skeleton is read by two tests."""
    by_lab: dict[Path, list[bool]] = {}
    for lab, solution in _wanted_checks(request.session):
        by_lab.setdefault(lab, []).append(solution)

    def lab_runs(lab: Path) -> list[tuple[Check, subprocess.CompletedProcess[str]]]:
        return [((lab, sol), run_check(lab, solution=sol)) for sol in by_lab[lab]]

    with ThreadPoolExecutor(LAB_LANES) as pool:
        return dict(pair for runs in pool.map(lab_runs, by_lab) for pair in runs)


def lab_check(lab: Path, solution: bool,
              checks: dict[Check, subprocess.CompletedProcess[str]]) -> subprocess.CompletedProcess[str]:
    """The check's run from :func:`lab_checks` (run now if the fixture did not)."""
    if (lab, solution) not in checks:
        checks[(lab, solution)] = run_check(lab, solution=solution)
    return checks[(lab, solution)]


def test_labs_are_found() -> None:
    assert [p.name for p in LABS][:3] == ["01-ecmp-hashing", "02-ecn-dcqcn", "03-pfc"]


@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_lab_shape(lab: Path) -> None:
    plugin = load_lab(lab)
    assert isinstance(plugin.TITLE, str) and plugin.TITLE
    for name in plugin.FILES:
        assert (lab / name).is_file(), f"skeleton {name} missing"
        assert (lab / "solution" / name).is_file(), f"solution/{name} missing"
        assert (lab / name).read_bytes() != (lab / "solution" / name).read_bytes() or \
            name.endswith(".md"), f"{name}: skeleton identical to the solution"
    assert (lab / "README.md").is_file()
    assert "include ../common.mk" in (lab / "Makefile").read_text()


@needs_root
@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_solution_passes(lab: Path,
                         lab_checks: dict[Check, subprocess.CompletedProcess[str]]) -> None:
    res = lab_check(lab, True, lab_checks)
    assert res.returncode == 0, f"{lab.name} solution:\n{res.stdout}\n{res.stderr}"
    assert "RESULT: all" in res.stdout


@needs_root
@pytest.mark.parametrize("lab", LABS, ids=[p.name for p in LABS])
def test_skeleton_fails(lab: Path,
                        lab_checks: dict[Check, subprocess.CompletedProcess[str]]) -> None:
    res = lab_check(lab, False, lab_checks)
    assert res.returncode == 1, f"{lab.name} skeleton (want exit 1):\n{res.stdout}\n{res.stderr}"
    assert "\u2718" in res.stdout


@needs_root
def test_pfc_skeleton_check_runs_past_the_unapplied_table(
        lab_checks: dict[Check, subprocess.CompletedProcess[str]]) -> None:
    """Lab 03's skeleton never applies MyEgress.port_macs (TODO 3), so the compiler drops
    it; the check used to stop at "the program has what the check programs" (0 of 1).
    It now says so in one check and runs the rest, as the README's step 2 tells. (The
    same run as ``test_skeleton_fails[03-pfc]``: shared.)"""
    res = lab_check(PFC_LAB, False, lab_checks)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "\u2718 MyEgress.port_macs is applied" in res.stdout
    for passing in ("priority 3: the data packet was forwarded to port 2",
                    "no PAUSE while 3 packets wait", "all 8 queued packets delivered"):
        assert f"\u2714 {passing}" in res.stdout, res.stdout


@needs_root
def test_pfc_demo_resumes_then_pauses_both_senders() -> None:
    """Lab 03's make run (solution): the head-of-line part ends with the RESUME (it waits
    for the queued packets to drain), so the pause storm pauses both senders. Before, the
    RESUME came after a 0.3 s window, port 1 stayed marked paused and the storm printed
    "port 1: 0 PAUSE" under "One stuck receiver paused both senders"."""
    res = subprocess.run([sys.executable, "-m", "labs.labkit", "run", str(PFC_LAB), "--solution",
                          "--target", "p4sim"], cwd=REPO, capture_output=True, text=True,
                         timeout=CHECK_TIMEOUT_S)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "queue released -> RESUME: {3: 0}" in res.stdout, res.stdout
    assert "port 1: 1 PAUSE" in res.stdout and "port 3: 1 PAUSE" in res.stdout, res.stdout
    assert "paused both senders" in res.stdout


def test_report_verdicts() -> None:
    r = Report("t")
    assert not r.passed and r.exit_code == 1          # nothing checked is not a pass
    r.ok("a")
    assert r.passed and r.exit_code == 0
    r.fail("b", "look at line 3")
    assert not r.passed and [c.what for c in r.failures] == ["b"]
    text = r.render()
    assert "\u2714 a" in text and "\u2718 b" in text and "hint: look at line 3" in text


def test_compile_error_is_a_failed_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    """A lab whose P4 file does not compile: exit 1, the compiler's file:line:col shown."""
    lab = tmp_path / "99-broken"
    lab.mkdir()
    source = (LABS_DIR / "01-ecmp-hashing" / "ecmp.p4").read_text()
    good = "meta.ecmp_member = meta.member_base;"
    assert good in source
    line = source[:source.index(good)].count("\n") + 1
    (lab / "broken.p4").write_text(source.replace(good, "meta.ecmp_member = meta.no_such;"))
    (lab / "lab.py").write_text(
        "from pathlib import Path\n"
        "from labs.labkit import LabSwitch\n"
        "TITLE = 'broken'\nFILES = ('broken.p4',)\n"
        "def run(files_dir, target):\n    return 0\n"
        "def check(files_dir, target):\n"
        "    with LabSwitch(files_dir / 'broken.p4', lab='99-broken', ports=[1], target=target):\n"
        "        raise AssertionError('must not start')\n")
    assert labkit_main(["check", str(lab)]) == 1
    out = capsys.readouterr().out
    assert f"broken.p4:{line}:" in out and "error" in out and "TODO" in out


def test_unknown_lab_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert labkit_main(["check", "no-such-lab"]) == 2
    assert "no lab" in capsys.readouterr().err


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert labkit_main(["list"]) == 0
    assert "01-ecmp-hashing" in capsys.readouterr().out
    assert LABS_DIR.is_dir()

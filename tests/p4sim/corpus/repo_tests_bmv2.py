"""Run the corpus repositories' own PTF tests (jafingerhut/p4-guide's ``runptf.sh``
suites for simple_switch_grpc) on BMv2 and on p4sim, and say per suite whether each passes
(issue 35: they must pass on p4sim wherever they pass on BMv2).

Not part of ``make test`` and never needed by it. Needs root (veth pairs, raw sockets): run
it under the shared lock, ``flock /tmp/astral-net.lock``. With no ``simple_switch_grpc`` or
``p4c-bm2-ss`` on PATH it exits 77, having measured nothing; ``ptf`` and p4runtime-shell
come from ``.venv-shell`` (``make venv-shell``: requirements-shell.txt lists ptf and scapy,
since the suites import ``p4runtime_sh`` and ``ptf`` together).

Each suite is read from its ``runptf.sh`` (a fetched repository, ``--mirror-root``; only its
name, commit and path are stored here, in ``SUITES``): the program and P4Info file named on
its ``p4c`` line, the switch's ``-i N@vethX`` ports and its options after ``--`` (e.g.
``--cpu-port 510``), and PTF's ``--test-params`` and ``--test-dir``. The suite's folder and
``testlib/`` are exported (``git archive``) to a temporary folder; each target compiles the
program with its own compiler (``p4c-bm2-ss --p4v 16 --p4runtime-files X -o Y.json``;
``python -m p4sim compile --p4info X --config Y.json``); veth pairs ``rt<pid>s<N>`` /
``rt<pid>h<N>`` are made (IPv6 off) and deleted by name afterwards; the switch gets a free
gRPC port (``grpcaddr`` in the test params is set to it), and is stopped by its PID.

Usage::

    source /tmp/ref/env.sh
    flock /tmp/astral-net.lock .venv/bin/python tests/p4sim/corpus/repo_tests_bmv2.py \\
        --mirror-root /work/.mirror --out /tmp/repo_tests.json [--only demo1]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
EXIT_SKIPPED = 77
READY_TIMEOUT_S = 60.0
PTF_TIMEOUT_S = 900

# (repository, commit, runptf.sh path, set) — set as the program's in third_party_v1model.tsv
# (sha1(repository/program) % 3 == 0: held out)
P4GUIDE = ("jafingerhut/p4-guide", "23854a7f64315da40172a45db55064c51423aa1d")
SUITES = [
    "demo1/runptf.sh",
    "demo1-bitselect-key/runptf.sh",
    "demo2/runptf.sh",
    "demo7/runptf.sh",
    "initial-table-entries/const-entries-runptf.sh",
    "initial-table-entries/init-entries-runptf.sh",
    "initial-table-entries/no-entries-runptf.sh",
    "lpmtester/runptf.sh",
    "lpmtester/lpmwidth20bits/runptf.sh",
    "ptf-tests/duplicatekeys/runptf.sh",
    "ptf-tests/idletimeout/runptf.sh",
    "ptf-tests/matchkinds/runptf.sh",
    "ptf-tests/packetinout/runptf.sh",
    "ptf-tests/registeraccess/runptf.sh",
]


def git_dir(mirror_root: str, repository: str) -> str:
    return os.path.join(mirror_root, repository.replace("/", "+"), "repo")


def parse_runptf(text: str) -> dict:
    """What a p4-guide ``runptf.sh`` runs: program, P4Info, ports, switch options after
    ``--``, test params, test dir, testlib path (relative to the script's folder)."""
    joined = re.sub(r"\\\n", " ", text)
    lines = [ln for ln in joined.splitlines() if not ln.lstrip().startswith("#")]
    p4c = next(ln for ln in lines if re.match(r"\s*p4c\s", ln))
    words = shlex.split(p4c)
    program = [w for w in words if w.endswith(".p4")][-1]
    p4info = words[words.index("--p4runtime-files") + 1]
    ssg = next(ln for ln in lines if "simple_switch_grpc" in ln and "sudo" in ln)
    ssg = ssg.split("&")[0]
    ports = [int(m) for m in re.findall(r"-i\s+(\d+)@\S+", ssg)]
    after = ssg.split(" -- ", 1)[1].split() if " -- " in ssg else []
    ptf = next(ln for ln in lines if "which ptf" in ln)
    params = re.search(r"--test-params=\"([^\"]*)\"", ptf).group(1)
    test_dir = re.search(r"--test-dir\s+(\S+)", ptf).group(1)
    tail = ptf.split("--test-dir", 1)[1].split()[1:]
    tlib = re.search(r"T=\"`realpath ([^`]*)`\"", joined)
    return {"program": program, "p4info": p4info, "ports": ports, "switch_options": after,
            "test_params": params, "test_dir": test_dir, "tests": tail,
            "testlib": tlib.group(1) if tlib else "../testlib"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"switch exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"switch's gRPC port {port} did not open in {READY_TIMEOUT_S} s")


class Veths:
    """veth pairs made by this run, deleted by name."""

    def __init__(self) -> None:
        self.tag = f"rt{os.getpid() % 100000}"
        self.made: list[str] = []

    def create(self, ports: list[int]) -> None:
        for p in ports:
            a, b = f"{self.tag}s{p}", f"{self.tag}h{p}"
            subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
            self.made.append(a)
            for ifc in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1"], check=False)
                subprocess.run(["ip", "link", "set", ifc, "up"], check=True)

    def delete(self) -> None:
        for a in self.made:
            subprocess.run(["ip", "link", "del", a], check=False)
        self.made.clear()


def run_suite(target: str, suite: dict, folder: Path, work: Path, shell_py: str,
              ptf_timeout_s: float = PTF_TIMEOUT_S) -> dict:
    """One suite on one target: compile, switch, ptf. Returns {status, passed, failed, log}."""
    program = folder / suite["program"]
    p4info = work / f"{target}.p4info.txtpb"
    config = work / f"{target}.json"
    if target == "bmv2":
        cmd = ["p4c-bm2-ss", "--p4v", "16", "-I", str(program.parent), "--p4runtime-files",
               str(p4info), "-o", str(config), str(program)]
    else:
        cmd = [sys.executable, "-m", "p4sim", "compile", str(program), "--p4info", str(p4info),
               "--config", str(config)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"status": "compile refused", "log": proc.stderr[-2000:]}
    veths = Veths()
    grpc = _free_port()
    log = work / f"{target}-switch.log"
    sw: Optional[subprocess.Popen] = None
    try:
        veths.create(suite["ports"])
        ifs = [a for p in suite["ports"] for a in ("-i", f"{p}@{veths.tag}s{p}")]
        opts = ["--", "--grpc-server-addr", f"127.0.0.1:{grpc}", *suite["switch_options"]]
        if target == "bmv2":
            argv = ["simple_switch_grpc", "--no-p4", "--log-file", str(work / "bmv2-ss"),
                    "--log-flush", "--thrift-port", str(_free_port()), "--notifications-addr",
                    f"ipc://{work}/notifications.ipc", *ifs, *opts]
        else:
            argv = [sys.executable, "-m", "p4sim", "switch", "--no-p4", *ifs, *opts]
        with open(log, "w") as f:
            sw = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=str(work))
        _wait_port(grpc, sw)
        params = re.sub(r"grpcaddr='[^']*'", f"grpcaddr='127.0.0.1:{grpc}'", suite["test_params"])
        params = re.sub(r"p4info='[^']*'", f"p4info='{p4info}'", params)
        params = re.sub(r"config='[^']*'", f"config='{config}'", params)
        ptf = Path(shell_py).with_name("ptf")
        testlib = (folder / suite["testlib"]).resolve()
        pargv = [shell_py, str(ptf), "--pypath", str(testlib),
                 *[a for p in suite["ports"] for a in ("-i", f"{p}@{veths.tag}h{p}")],
                 "--test-params", params, "--test-dir", str(folder / suite["test_dir"]),
                 "--log-file", str(work / f"{target}-ptf.log"), *suite["tests"]]
        try:
            res = subprocess.run(pargv, capture_output=True, text=True, timeout=ptf_timeout_s,
                                 cwd=str(folder))
        except subprocess.TimeoutExpired:
            return {"status": "ptf timeout", "log": ""}
        out = res.stdout + res.stderr
        ran = re.search(r"Ran (\d+) test", out)
        failed = re.search(r"FAILED \(([^)]*)\)", out)
        nfail = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", failed.group(1))) \
            if failed else 0
        total = int(ran.group(1)) if ran else 0
        status = "pass" if res.returncode == 0 and total else "fail"
        return {"status": status, "tests": total, "failed": nfail, "rc": res.returncode,
                "log": out[-4000:]}
    finally:
        if sw is not None:
            sw.terminate()
            try:
                sw.wait(timeout=20)
            except subprocess.TimeoutExpired:
                sw.kill()
                sw.wait()
        veths.delete()


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror-root", required=True)
    ap.add_argument("--shell-python", default=str(REPO / ".venv-shell" / "bin" / "python"),
                    help="python of the environment with ptf and p4runtime-shell")
    ap.add_argument("--only", default=None)
    ap.add_argument("--ptf-timeout-s", type=float, default=PTF_TIMEOUT_S,
                    help="limit of one target's PTF run (lpmtester's 32-bit suite: 12.5 min on BMv2)")
    ap.add_argument("--targets", default="bmv2,p4sim")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    missing = [t for t in ("simple_switch_grpc", "p4c-bm2-ss") if shutil.which(t) is None]
    if missing:
        print(f"repo_tests_bmv2: {', '.join(missing)} not on PATH: nothing measured (skipped)",
              file=sys.stderr)
        return EXIT_SKIPPED
    if os.geteuid() != 0:
        print("repo_tests_bmv2: needs root (veth pairs): nothing measured", file=sys.stderr)
        return 2
    if not Path(args.shell_python).with_name("ptf").exists():
        print(f"repo_tests_bmv2: no ptf next to {args.shell_python}: nothing measured", file=sys.stderr)
        return 2
    # a SIGTERM (e.g. from `timeout`) unwinds, so the switch is stopped and the veths deleted
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    repo, commit = P4GUIDE
    gdir = git_dir(args.mirror_root, repo)
    results = []
    for path in SUITES:
        if args.only and args.only not in path:
            continue
        suite = parse_runptf(subprocess.run(["git", "-C", gdir, "show", f"{commit}:{path}"],
                                            capture_output=True, text=True, check=True).stdout)
        sdir = os.path.dirname(path)
        with tempfile.TemporaryDirectory(prefix="repotests-") as tmp:
            root = Path(tmp) / "src"
            root.mkdir()
            top = sdir.split("/")[0]
            arch = subprocess.run(["git", "-C", gdir, "archive", commit, top, "testlib"],
                                  capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(root)], input=arch, check=True)
            row = {"repository": repo, "commit": commit, "suite": path,
                   "program": os.path.normpath(os.path.join(sdir, suite["program"]))}
            for target in args.targets.split(","):
                work = Path(tmp) / target
                work.mkdir()
                try:
                    row[target] = run_suite(target, suite, root / sdir, work, args.shell_python,
                                            args.ptf_timeout_s)
                except Exception as exc:  # noqa: BLE001 — say which suite, go on
                    row[target] = {"status": f"harness error: {type(exc).__name__}: {exc}"}
            results.append(row)
            print(f"{path}: " + ", ".join(
                f"{t} {row[t]['status']} ({row[t].get('tests', 0)} tests, {row[t].get('failed', 0)} failed)"
                for t in args.targets.split(",")), flush=True)
    both = [r for r in results if all(t in r for t in ("bmv2", "p4sim"))]
    bm_pass = [r for r in both if r["bmv2"]["status"] == "pass"]
    sim_pass = [r for r in both if r["p4sim"]["status"] == "pass"]
    worse = [r["suite"] for r in bm_pass if r["p4sim"]["status"] != "pass"]
    print(f"suites: {len(both)}; pass on BMv2 {len(bm_pass)}, on p4sim {len(sim_pass)}; "
          f"pass on BMv2 but not on p4sim: {worse or 'none'}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())

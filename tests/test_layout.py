"""The folders are the architecture: imports between top-level folders flow one way (no
cycle spans two folders, nothing imports ``bench/``, ``topo/`` describes and imports none of
what runs), every command-line option says what it does, and the README's tables follow the
tree and the scenario registry."""
from __future__ import annotations

import argparse
import functools
import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("astral_proto", "bench", "controller", "fuzz", "host", "labs", "monitor", "p4sim",
           "p4src", "process", "scenarios", "sim", "testbed", "topo")


@functools.lru_cache(maxsize=1)
def _edges() -> dict[tuple[str, str], list[str]]:
    """(from folder, to folder) → where, for every import of another top-level folder."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for folder in FOLDERS:
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and node.module and \
                    node.level == 0 else []
                for name in names:
                    top = name.split(".")[0]
                    if top in FOLDERS and top != folder:
                        edges[(folder, top)].append(f"{path.relative_to(REPO)}:{node.lineno}")
    return edges


def test_no_import_cycle_spans_two_folders() -> None:
    edges = _edges()
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)

    def reaches(src: str, dst: str) -> bool:
        seen, todo = set(), [src]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt == dst:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    cycles = {f"{a} <-> {b} ({edges[(a, b)][0]})" for a, b in edges if reaches(b, a)}
    assert not cycles, cycles


@pytest.mark.parametrize("lower, upper", [
    ("topo", "testbed"), ("topo", "scenarios"), ("topo", "host"), ("topo", "controller"),
    ("host", "testbed"), ("host", "scenarios"), ("testbed", "scenarios"),
    ("controller", "testbed"), ("controller", "scenarios"), ("controller", "p4sim"),
    ("p4sim", "controller"), ("p4sim", "topo"),
    ("testbed", "monitor"), ("monitor", "scenarios"), ("controller", "monitor"),
    ("host", "monitor"), ("p4sim", "monitor"), ("topo", "monitor"),
    *[(f, "bench") for f in FOLDERS if f != "bench"]])
def test_one_way(lower: str, upper: str) -> None:
    assert not _edges().get((lower, upper)), f"{lower}/ imports {upper}/: {_edges()[(lower, upper)]}"


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    from scenarios.cli import build_parser as scenarios_parser
    from testbed.cli import build_parser as testbed_parser

    out = []
    for name, ap in (("testbed", testbed_parser()), ("scenarios", scenarios_parser())):
        out.append((name, ap))
        for action in ap._actions:
            if isinstance(action, argparse._SubParsersAction):
                out += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    return out


def test_every_option_has_a_line_of_help() -> None:
    missing = [f"{name}: {'/'.join(a.option_strings)}" for name, ap in _parsers()
               for a in ap._actions if a.option_strings and not a.help]
    assert not missing, missing


def test_readme_layout_table_names_every_folder() -> None:
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("## Repository layout"):]
    named = set(re.findall(r"^\| `([\w.]+)/`", table, re.MULTILINE))
    folders = {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")
               and (p / "__init__.py").exists() or p.name == "tests" and p.is_dir()}
    assert folders <= named, f"folders missing from the README's layout: {folders - named}"
    assert named <= {p.name for p in REPO.iterdir() if p.is_dir()}, \
        f"the README names folders that do not exist: {named - {p.name for p in REPO.iterdir()}}"


def test_readme_scenario_table_is_the_registry() -> None:
    from scenarios.registry import SCENARIOS

    readme = (REPO / "README.md").read_text()
    rows = dict(re.findall(r"^\| `SCENARIO=([\w-]+)` \| (.+?) \|$", readme, re.MULTILINE))
    assert set(rows) == set(SCENARIOS) | {"none"}, rows
    for name, sc in SCENARIOS.items():
        assert rows[name] == sc.summary, name

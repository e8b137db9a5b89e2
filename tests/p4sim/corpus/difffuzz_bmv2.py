"""Differential fuzz of p4sim against a real BMv2 ``simple_switch`` on the third-party
corpus programs that come with table entries (issue 35): the same program, the same
entries, the same packets one at a time; per packet, the egress ports and exact bytes of
everything that comes out (a drop is "nothing"), compared.

Not part of ``make test`` and never needed by it (GUIDE: nothing may need BMv2/p4c). With
no ``simple_switch``, ``simple_switch_CLI`` or ``p4c-bm2-ss`` on PATH the script says so on
stderr and exits 77, having measured nothing; a case that could not be run on either side
is listed with its reason, never counted as agreeing.

Cases (``difffuzz_cases.tsv``, written by ``--update-cases`` from the fetched repositories):
a corpus program both compilers accept (``third_party_v1model.tsv``) and a
``simple_switch_CLI`` commands file of its repository (p4-learning's ``sX-commands.txt``,
p4pi's and p4app's ``commands*.txt``) in the program's folder or the nearest folder above
it that has one (within the example's folder). Only the list (repository, commit, paths)
is stored here; the files are read from the fetched repositories (``--mirror-root``, git
directories ``<owner>+<repo>/repo``) with ``git show COMMIT:PATH``. A case's set (tune /
held) is its program's (``sha1(repository/path) % 3 == 0`` held out): fixes are made
looking at the tuning set only.

How each side runs:

* BMv2: ``p4c-bm2-ss --p4v 16 -I DIR -o X.json PROGRAM``; ``simple_switch --packet-in
  tcp://127.0.0.1:P --thrift-port T --log-level off X.json``; the commands file through
  ``simple_switch_CLI --thrift-port T`` (comment lines ``//``/``#`` left out); a case whose
  commands BMv2's CLI refuses (a file written for another program of the folder) is
  skipped, with the CLI's error. Packets go in through BMv2's nanomsg packet-in socket (a
  PAIR socket; the SP protocol over TCP is spoken here, a few lines, no library), one at a
  time: the next is sent once nothing more came out for ``--quiet-s`` seconds, so each
  packet has left the switch (and its PHV is back in BMv2's pool) before the next arrives.
* p4sim: ``load_program`` in this process, the same commands applied to its runtime with
  simple_switch_CLI's meaning (names by unique ``.suffix``, values as its ``parse_param``:
  IPv4/MAC/IPv6 text by width, else ``int(text, 0)``; the smaller priority number wins),
  ``V1ModelSwitch.process_packet`` per packet (headers reused between packets, as BMv2).

BMv2 itself is not deterministic everywhere (``random()`` seeded by itself, meters against
the wall clock, timestamps): after the first run, BMv2 is run again (``--bmv2-runs``, default
2: a fresh ``simple_switch``, the same entries, the same packets, each waited for as long
as p4sim's output count says). A packet on which BMv2's runs differ is one the reference
does not decide; the figures are given over all packets (p4sim against BMv2's first run)
and over the packets on which BMv2's runs agree. Two runs find only part of BMv2's
variability (a lower bound), so the program-level figure (programs whose JSON uses
``random()``, meters or timestamps left out) is printed as well.

Packets: built from the BMv2 JSON's parse graph (a random walk of its states: each
extracted header with random fields, the fields a transition selects on set to that
transition's value, IPv4-like headers given version 4, IHL 5, their length and checksum),
then table keys that are header fields set, half of the time, to a value of one of the
commands file's entries; a few are truncated or random bytes. Seeded (``--seed``): the
same seed gives the same packets.

Usage::

    source /tmp/ref/env.sh
    .venv/bin/python tests/p4sim/corpus/difffuzz_bmv2.py --update-cases --mirror-root /work/.mirror
    .venv/bin/python tests/p4sim/corpus/difffuzz_bmv2.py --mirror-root /work/.mirror \\
        --root /tmp/i35/corpus --packets 150 --out /tmp/difffuzz.json [--set tune]
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import ipaddress
import json
import os
import random
import select
import signal
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from p4sim.runtime.meters import MeterConfig

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CORPUS_TSV = HERE / "third_party_v1model.tsv"
CASES_TSV = HERE / "difffuzz_cases.tsv"
EXIT_SKIPPED = 77
SS_START_TIMEOUT_S = 30.0
CLI_TIMEOUT_S = 120.0
MAX_WAIT_S = 3.0                       # longest wait for one packet's outputs
CASE_COLUMNS = ("repository", "commit", "program", "entries", "set")
ENTRIES_NAMES = ("commands",)          # simple_switch_CLI files: *commands*.txt


# --------------------------------------------------------------------------- cases
@dataclass
class Case:
    """A program and one commands file of its repository."""

    repository: str
    commit: str
    program: str
    entries: str
    set: str

    @property
    def key(self) -> str:
        return f"{self.repository}/{self.program} + {self.entries}"


def corpus_programs(tsv: Path = CORPUS_TSV) -> list[dict[str, str]]:
    """Rows of the corpus list (comment lines left out)."""
    with open(tsv, newline="") as f:
        return list(csv.DictReader((ln for ln in f if not ln.startswith("#")), delimiter="\t"))


def held_out(repository: str, path: str) -> bool:
    """The held-out rule of the corpus (compare_p4c.py's list): a third by sha1.

    >>> held_out("jafingerhut/p4-guide", "demo1-bitselect-key/demo1.p4_16.p4")
    True
    """
    digest = hashlib.sha1(f"{repository.replace('/', '+')}/{path}".encode()).hexdigest()
    return int(digest, 16) % 3 == 0


def git_dir(mirror_root: str, repository: str) -> str:
    return os.path.join(mirror_root, repository.replace("/", "+"), "repo")


def git_files(gdir: str, commit: str) -> list[str]:
    out = subprocess.run(["git", "-C", gdir, "ls-tree", "-r", "--name-only", commit],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def git_show(gdir: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", gdir, "show", f"{commit}:{path}"], capture_output=True,
                          text=True, check=True).stdout


def find_cases(mirror_root: str, tsv: Path = CORPUS_TSV) -> list[Case]:
    """Every (program both compilers accept, commands file) pair: the commands files of the
    program's folder, else of the nearest folder above it that has some, not above the
    example's own folder (the first two path parts), else of its folder's subfolders
    (``pod-topo/s1-commands.txt``)."""
    cases: list[Case] = []
    trees: dict[tuple[str, str], list[str]] = {}
    for row in corpus_programs(tsv):
        if row["p4sim"] != "accept" or row["p4c_bm2_ss"] != "accept":
            continue
        key = (row["repository"], row["commit"])
        if key not in trees:
            trees[key] = git_files(git_dir(mirror_root, row["repository"]), row["commit"])
        files = trees[key]
        folder = os.path.dirname(row["path"])
        top = "/".join(row["path"].split("/")[:2])
        while True:
            found = sorted(f for f in files if os.path.dirname(f) == folder
                           and f.endswith(".txt")
                           and any(n in os.path.basename(f) for n in ENTRIES_NAMES))
            if found or not folder or not (folder + "/").startswith(top + "/") or folder == top:
                break
            folder = os.path.dirname(folder)
        if not found:   # p4lang/tutorials' layout: the switches' files in a topology folder
            own = os.path.dirname(row["path"])
            found = sorted(f for f in files if os.path.dirname(os.path.dirname(f)) == own
                           and f.endswith(".txt") and any(n in os.path.basename(f) for n in ENTRIES_NAMES))
        for entries in found:
            cases.append(Case(row["repository"], row["commit"], row["path"], entries, row["set"]))
    return cases


def write_cases(cases: list[Case], path: Path = CASES_TSV, corpus_name: str = CORPUS_TSV.name) -> None:
    head = ("# Differential-fuzz cases of issue 35 (tests/p4sim/corpus/difffuzz_bmv2.py): a corpus\n"
            "# program both compilers accept and a simple_switch_CLI commands file of its repository\n"
            f"# (not stored here: repository, commit, paths). set: the program's ({corpus_name}).\n")
    with open(path, "w") as f:
        f.write(head + "\t".join(CASE_COLUMNS) + "\n")
        for c in cases:
            f.write("\t".join(getattr(c, k) for k in CASE_COLUMNS) + "\n")


def read_cases(path: Path = CASES_TSV) -> list[Case]:
    with open(path, newline="") as f:
        rows = csv.DictReader((ln for ln in f if not ln.startswith("#")), delimiter="\t")
        return [Case(**{k: r[k] for k in CASE_COLUMNS}) for r in rows]


# --------------------------------------------------------------------------- CLI commands
def cli_lines(text: str) -> list[str]:
    """The commands of a simple_switch_CLI file, comments and blank lines left out, and
    ``port_add``/``port_remove`` too: they bind a Linux interface to a port (ralfkundel/p4-codel
    names mininet's), which BMv2's CLI refuses here ("Invalid device manager operation") as
    the packets go through the packet-in socket instead, and p4sim's ports need none.

    >>> cli_lines("// c\\nport_add r1-eth1 1\\n\\ntable_add t a 1 =>\\n")
    ['table_add t a 1 =>']
    """
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("//", "#")) or s.split()[0] in ("port_add", "port_remove"):
            continue
        out.append(s)
    return out


def cli_param(text: str, width: int) -> int:
    """A value as simple_switch_CLI's ``parse_param`` reads it.

    >>> cli_param("10.0.1.1", 32), cli_param("00:00:0a:00:01:01", 48), cli_param("0x10", 9)
    (167772417, 167772417, 16)
    """
    if width == 32 and "." in text:
        return int(ipaddress.IPv4Address(text))
    if width == 48 and ":" in text:
        return int(text.replace(":", ""), 16)
    if width == 128 and ":" in text:
        return int(ipaddress.IPv6Address(text))
    value = int(text, 0)
    if value >> (8 * ((width + 7) // 8)):
        raise ValueError(f"parameter {text} is too large for {width} bits")
    return value


def resolve_suffix(names: list[str], wanted: str, what: str) -> str:
    """The full name, or the one name that ends in ``.wanted`` (simple_switch_CLI)."""
    found = [n for n in names if n == wanted or n.endswith("." + wanted)]
    if len(found) != 1:
        raise KeyError(f"{what} {wanted!r}: {len(found)} candidates")
    return found[0]


class CliTarget:
    """simple_switch_CLI's commands applied to a loaded p4sim program's runtime state."""

    PRIORITY_TOP = (1 << 30)       # BMv2: the smaller number wins; p4sim: the larger

    def __init__(self, program: Any) -> None:
        self.state = program.state
        self.direct_rates: dict[str, tuple[int, int, int, int]] = {}   # table -> meter rates

    def run(self, line: str) -> None:
        cmd, *args = line.split()
        fn = getattr(self, "_" + cmd, None)
        if fn is None:
            raise NotImplementedError(f"command {cmd} not supported by this harness")
        fn(args)

    def _table(self, name: str) -> Any:
        return self.state.tables[resolve_suffix(list(self.state.tables), name, "table")]

    def _action(self, table: Any, name: str, params: list[str]) -> Any:
        from p4sim.runtime.tables import ActionCall
        acts = table.actions
        specs = dict(acts) if isinstance(acts, dict) else {a.name: a for a in acts}
        spec = specs[resolve_suffix(list(specs), name, "action")]
        if len(params) != len(spec.params):
            raise ValueError(f"action {spec.name} takes {len(spec.params)} parameters")
        return ActionCall(spec.name, [cli_param(p, w) & ((1 << w) - 1)
                                      for p, (_, w) in zip(params, spec.params)])

    def _matches(self, table: Any, keys: list[str]) -> list[Any]:
        from p4sim.runtime import tables as T
        mkeys = [k for k in table.keys if k.match_kind != "selector"]
        if len(keys) != len(mkeys):
            raise ValueError(f"table {table.name} has {len(mkeys)} keys, given {len(keys)}")
        out = []
        for k, text in zip(mkeys, keys):
            w, full = k.width, (1 << k.width) - 1
            if k.match_kind == "exact":
                out.append(T.Exact(cli_param(text, w) & full))
            elif k.match_kind == "lpm":
                v, plen = text.split("/")
                p = int(plen)
                out.append(T.Lpm(cli_param(v, w) & (((1 << p) - 1) << (w - p)), p))
            elif k.match_kind in ("ternary", "optional"):
                v, m = text.split("&&&")
                vv, mm = cli_param(v, w) & full, cli_param(m, w) & full
                if k.match_kind == "ternary":
                    out.append(T.Ternary(vv & mm, mm))
                elif mm == 0:
                    out.append(T.Optional_(None))
                elif mm == full:
                    out.append(T.Optional_(vv))
                else:
                    raise ValueError("partial mask on an optional key")
            elif k.match_kind == "range":
                lo, hi = text.split("->")
                out.append(T.Range(cli_param(lo, w), cli_param(hi, w)))
            else:
                raise NotImplementedError(f"match kind {k.match_kind}")
        return out

    def _table_add(self, args: list[str]) -> None:
        table = self._table(args[0])
        keys, _, rest = " ".join(args[2:]).partition("=>")
        params = rest.split()
        kinds = {k.match_kind for k in table.keys}
        prio = 0
        if kinds & {"ternary", "range", "optional"}:
            prio = self.PRIORITY_TOP - int(params.pop(-1))
        entry = table.add_entry(self._matches(table, keys.split()),
                                self._action(table, args[1], params), priority=prio)
        if table.name in self.direct_rates:
            entry.meter.set_config(MeterConfig(*self.direct_rates[table.name]))

    def _table_set_default(self, args: list[str]) -> None:
        table = self._table(args[0])
        table.set_default_action(self._action(table, args[1], args[2:]))

    def _mc_mgrp_create(self, args: list[str]) -> None:
        self.state.pre.mc_mgrp_create(int(args[0]))

    def _mc_node_create(self, args: list[str]) -> None:
        self.state.pre.mc_node_create(int(args[0]), [int(p) for p in args[1:]])

    def _mc_node_associate(self, args: list[str]) -> None:
        self.state.pre.mc_node_associate(int(args[0]), int(args[1]))

    def _mirroring_add(self, args: list[str]) -> None:
        self.state.pre.mirroring_add(int(args[0]), int(args[1]))

    def _register_write(self, args: list[str]) -> None:
        regs = self.state.registers
        regs[resolve_suffix(list(regs), args[0], "register")].set(int(args[1], 0), int(args[2], 0))

    def _register_reset(self, args: list[str]) -> None:
        regs = self.state.registers
        regs[resolve_suffix(list(regs), args[0], "register")].reset()

    def _meter(self, name: str) -> Any:
        return self.state.meters[resolve_suffix(list(self.state.meters), name, "meter")]

    def _direct_meter_table(self, name: str) -> Any:
        """The table owning the direct meter ``name`` (full name or unique ``.suffix``),
        None when ``name`` is not a direct meter."""
        owners = {t.direct_meter.name: t for t in self.state.tables.values() if t.direct_meter}
        found = [n for n in owners if n == name or n.endswith("." + name)]
        return owners[found[0]] if len(found) == 1 else None

    def _set_queue_rate(self, args: list[str]) -> None:
        """Not modelled: one packet is in the switch at a time, so no queue builds up
        (BMv2's rate only delays the frame; the harness waits for it)."""

    _set_queue_depth = _set_queue_rate

    def _meter_array_set_rates(self, args: list[str]) -> None:
        """Every cell of the array. For a direct meter BMv2's array has one cell per entry
        handle of its table (bm_sim/P4Objects.cpp init_meter_arrays, match_tables.cpp
        ``get_meter(handle)``), so every entry, present or added later, gets the rates."""
        (cr, cb), (pr, pb) = [w.split(":", 1) for w in args[1:]]
        cfg = (round(float(cr) * 1e6), int(cb), round(float(pr) * 1e6), int(pb))
        table = self._direct_meter_table(args[0])
        if table is not None:
            self.direct_rates[table.name] = cfg
            for entry in table.entries():
                entry.meter.set_config(MeterConfig(*cfg))
            return
        m = self._meter(args[0])
        for i in range(m.size):
            m.set_config(i, *cfg)

    def _meter_set_rates(self, args: list[str]) -> None:
        m = self._meter(args[0])
        (cr, cb), (pr, pb) = [w.split(":", 1) for w in args[2:]]
        m.set_config(int(args[1]), round(float(cr) * 1e6), int(cb), round(float(pr) * 1e6), int(pb))


# --------------------------------------------------------------------------- packets
class PacketMaker:
    """Frames that walk a BMv2 JSON's parser, with table keys set to entries' values."""

    def __init__(self, bmv2_json: dict, entry_values: dict[tuple[str, str], list[int]],
                 rng: random.Random) -> None:
        self.j, self.rng = bmv2_json, rng
        self.types = {t["name"]: t for t in bmv2_json["header_types"]}
        self.headers = {h["name"]: h for h in bmv2_json["headers"]}
        self.stacks = {s["name"]: s for s in bmv2_json.get("header_stacks", [])}
        parser = bmv2_json["parsers"][0]
        self.states = {s["name"]: s for s in parser["parse_states"]}
        self.init = parser["init_state"]
        self.entry_values = entry_values      # (header instance, field) -> values

    def _fields(self, type_name: str) -> list[tuple[str, int]]:
        return [(f[0], f[1]) for f in self.types[type_name]["fields"] if f[1] != "*"]

    def walk(self) -> bytes:
        rng = self.rng
        bits: list[int] = []           # packet as a list of bits
        where: dict[str, tuple[int, str]] = {}   # instance -> (bit offset, type)
        stack_next: dict[str, int] = {}
        state = self.init
        for _ in range(24):
            if state is None or state not in self.states:
                break
            st = self.states[state]
            for op in st.get("parser_ops", []):
                if op.get("op") not in ("extract", "extract_VL"):
                    continue
                p = op["parameters"][0]
                if p["type"] == "regular":
                    inst = p["value"]
                    tname = self.headers[inst]["header_type"]
                elif p["type"] == "stack":
                    sname = p["value"]
                    i = stack_next.get(sname, 0)
                    stack_next[sname] = i + 1
                    if i >= len(self.stacks[sname]["header_ids"]):
                        continue
                    inst = f"{sname}[{i}]"
                    tname = self.stacks[sname]["header_type"]
                    where[sname + "$last"] = (len(bits), tname)
                else:
                    continue
                where[inst] = (len(bits), tname)
                for _, w in self._fields(tname):
                    bits.extend(rng.getrandbits(1) for _ in range(w))
                if op.get("op") == "extract_VL":
                    bits.extend(rng.getrandbits(1) for _ in range(8 * rng.randrange(0, 5)))
            trans = st.get("transitions", [])
            keys = st.get("transition_key", [])
            if not trans:
                break
            specific = [t for t in trans if t["type"] != "default"]
            choice = (rng.choice(specific) if specific and rng.random() < 0.85
                      else rng.choice(trans))
            if choice["type"] in ("hexstr",) and keys:
                self._force(bits, where, keys, choice)
            state = choice.get("next_state")
        self._fix_ipv4(bits, where)
        self._entry_values(bits, where)
        self._fix_ipv4(bits, where)
        data = _bits_to_bytes(bits) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 48)))
        return data

    def _field_pos(self, where: dict, inst: str, fname: str) -> Optional[tuple[int, int]]:
        if inst not in where:
            return None
        off, tname = where[inst]
        for n, w in self._fields(tname):
            if n == fname:
                return off, w
            off += w
        return None

    def _force(self, bits: list[int], where: dict, keys: list[dict], choice: dict) -> None:
        parts: list[tuple[Optional[int], int]] = []
        for k in keys:
            if k["type"] == "field":
                pos = self._field_pos(where, k["value"][0], k["value"][1])
                if pos is None:
                    w = self._width_of(k["value"])
                    parts.append((None, w))
                else:
                    parts.append(pos)
            elif k["type"] == "stack_field":
                pos = self._field_pos(where, k["value"][0] + "$last", k["value"][1])
                parts.append(pos if pos else (None, self._width_of_stack(k["value"])))
            elif k["type"] == "lookahead":
                off, w = k["value"]
                start = len(bits) + off
                need = start + w - len(bits)
                if need > 0:
                    bits.extend(self.rng.getrandbits(1) for _ in range(need))
                parts.append((start, w))
            else:
                return
        total = sum(w for _, w in parts)
        value = int(choice["value"], 16)
        mask = int(choice["mask"], 16) if choice.get("mask") else (1 << total) - 1
        shift = total
        for pos, w in parts:
            shift -= w
            if pos is None:
                continue
            v = (value >> shift) & ((1 << w) - 1)
            m = (mask >> shift) & ((1 << w) - 1)
            cur = _get(bits, pos, w)
            _put(bits, pos, w, (cur & ~m) | (v & m))

    def _width_of(self, ref: list[str]) -> int:
        h = self.headers.get(ref[0])
        if h is None:
            return 0
        for n, w in self._fields(h["header_type"]):
            if n == ref[1]:
                return w
        return 0

    def _width_of_stack(self, ref: list[str]) -> int:
        s = self.stacks.get(ref[0])
        if s is None:
            return 0
        return dict(self._fields(s["header_type"])).get(ref[1], 0)

    def _fix_ipv4(self, bits: list[int], where: dict) -> None:
        for inst, (off, tname) in where.items():
            names = [n for n, _ in self._fields(tname)]
            if "$last" in inst or names[:2] != ["version", "ihl"] or len(names) < 10:
                continue
            if sum(w for _, w in self._fields(tname)) != 160 or self.rng.random() < 0.1:
                continue
            _put(bits, off, 4, 4)
            _put(bits, off + 4, 4, 5)
            rest = (len(bits) - off) // 8
            _put(bits, off + 16, 16, rest + 24)     # about the payload that is appended
            _put(bits, off + 80, 16, 0)
            data = _bits_to_bytes(bits[off:off + 160])
            s = sum(struct.unpack("!10H", data))
            while s >> 16:
                s = (s & 0xFFFF) + (s >> 16)
            _put(bits, off + 80, 16, (~s) & 0xFFFF)

    def _entry_values(self, bits: list[int], where: dict) -> None:
        for (inst, fname), values in self.entry_values.items():
            pos = self._field_pos(where, inst, fname)
            if pos and values and self.rng.random() < 0.5:
                _put(bits, pos[0], pos[1], self.rng.choice(values) & ((1 << pos[1]) - 1))

    def frame(self) -> bytes:
        r = self.rng.random()
        data = self.walk()
        if r < 0.06 and len(data) > 1:
            return data[:self.rng.randrange(1, len(data))]          # truncated
        if r < 0.09:
            return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randrange(14, 80)))
        return data


def _get(bits: list[int], off: int, w: int) -> int:
    v = 0
    for b in bits[off:off + w]:
        v = (v << 1) | b
    return v


def _put(bits: list[int], off: int, w: int, value: int) -> None:
    for i in range(w):
        if off + i < len(bits):
            bits[off + i] = (value >> (w - 1 - i)) & 1


def _bits_to_bytes(bits: list[int]) -> bytes:
    bits = bits + [0] * (-len(bits) % 8)
    return bytes(_get(bits, i, 8) for i in range(0, len(bits), 8))


def entry_values(bmv2_json: dict, lines: list[str]) -> dict[tuple[str, str], list[int]]:
    """(header instance, field) -> values the commands' table entries match on."""
    tables = {}
    for pipe in bmv2_json["pipelines"]:
        for t in pipe["tables"]:
            tables[t["name"]] = t
    types = {t["name"]: t for t in bmv2_json["header_types"]}
    htype = {h["name"]: h["header_type"] for h in bmv2_json["headers"]}
    htype.update({s["name"]: s["header_type"] for s in bmv2_json.get("header_stacks", [])})
    out: dict[tuple[str, str], list[int]] = {}
    for line in lines:
        words = line.split()
        if len(words) < 3 or words[0] != "table_add":
            continue
        try:
            tname = resolve_suffix(list(tables), words[1], "table")
        except KeyError:
            continue
        keys = " ".join(words[3:]).partition("=>")[0].split()
        for k, text in zip(tables[tname]["key"], keys):
            target = k.get("target")
            if not isinstance(target, list) or len(target) != 2 or target[0] not in htype:
                continue
            widths = {f[0]: f[1] for f in types[htype[target[0]]]["fields"]}
            try:
                v = text.split("/")[0].split("&&&")[0].split("->")[0]
                out.setdefault((target[0], target[1]), []).append(cli_param(v, widths[target[1]]))
            except (ValueError, KeyError, TypeError):
                continue
    return out


TIME_FIELDS = ("ingress_global_timestamp", "egress_global_timestamp", "enq_timestamp",
               "deq_timedelta")


def nondeterminism(bmv2_json: dict) -> list[str]:
    """What makes a program's packets vary from run to run on BMv2 itself (so p4sim can
    agree only by chance): ``random()`` (BMv2 seeds it by itself), meters (rates against the
    wall clock), the switch's timestamps. Read from the JSON p4c-bm2-ss wrote.

    >>> nondeterminism({"actions": [{"primitives": [{"op": "modify_field_rng_uniform"}]}]})
    ['random()']
    """
    # where the program reads them: its actions, parsers, pipelines (conditions), checksums
    text = json.dumps({k: v for k, v in bmv2_json.items()
                       if k in ("actions", "parsers", "pipelines", "deparsers", "calculations",
                                "checksums")})
    out = []
    if '"modify_field_rng_uniform"' in text:
        out.append("random()")
    if '"execute_meter"' in text or any(t.get("direct_meters") for p in bmv2_json.get("pipelines", [])
                                        for t in p.get("tables", [])):
        out.append("meters")
    if any(f'"standard_metadata", "{f}"' in text for f in TIME_FIELDS):
        out.append("timestamps")
    return out


# --------------------------------------------------------------------------- BMv2
class Bmv2:
    """One ``simple_switch`` with a nanomsg packet-in socket (TCP) and a Thrift port."""

    def __init__(self, json_path: str, workdir: str, quiet_s: float) -> None:
        self.quiet_s = quiet_s
        self.workdir = workdir
        self.pkt_port, self.thrift_port = _free_port(), _free_port()
        self.log = open(os.path.join(workdir, "simple_switch.out"), "w")
        self.next_id = 0               # BMv2 numbers received packets 0, 1, ...
        self.trace: Optional[Any] = None
        self.proc = subprocess.Popen(
            ["simple_switch", "--packet-in", f"tcp://127.0.0.1:{self.pkt_port}",
             "--thrift-port", str(self.thrift_port), "-L", "debug", "--log-flush",
             "--log-file", os.path.join(workdir, "ss"),
             # its own notifications socket: the default (/tmp/bmv2-0-...) is shared
             "--notifications-addr", f"ipc://{os.path.join(workdir, 'notifications.ipc')}",
             json_path],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.sock = self._connect()
        self._wait_thrift()

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + SS_START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"simple_switch exited with {self.proc.returncode}")
            try:
                s = socket.create_connection(("127.0.0.1", self.pkt_port), timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("simple_switch's packet-in socket did not open")
                time.sleep(0.05)
        s.sendall(b"\x00SP\x00\x00\x10\x00\x00")          # SP header, NN_PAIR (16)
        hdr = _recv_exact(s, 8)
        if hdr[:4] != b"\x00SP\x00":
            raise RuntimeError(f"bad SP header from simple_switch: {hdr!r}")
        s.settimeout(None)
        self.buf = b""
        return s

    def _wait_thrift(self) -> None:
        deadline = time.monotonic() + SS_START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.thrift_port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("simple_switch's Thrift port did not open")
                time.sleep(0.05)

    def cli(self, lines: list[str]) -> list[str]:
        """Run the commands; return the CLI's error lines (empty when all went in)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = env.get("REF_PYTHONPATH", "")
        proc = subprocess.run(["simple_switch_CLI", "--thrift-port", str(self.thrift_port)],
                              input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S, env=env)
        text = proc.stdout + proc.stderr
        return [ln.strip() for ln in text.splitlines()
                if ("Error" in ln or "Invalid" in ln or "Unknown syntax" in ln
                    or "Traceback" in ln or "not" in ln.lower() and "found" in ln.lower())]

    def _dropped(self, pid: int) -> bool:
        """Whether BMv2's log says packet ``pid`` was dropped at the end of ingress/egress."""
        if self.trace is None:
            names = [n for n in os.listdir(self.workdir) if n.startswith("ss")]
            if not names:
                return False
            self.trace = open(os.path.join(self.workdir, names[0]))
            self.trace_buf = ""
            self.drops: set[int] = set()
        self.trace_buf += self.trace.read()
        *lines, self.trace_buf = self.trace_buf.split("\n")
        for ln in lines:
            if "Dropping packet at the end of" in ln:
                i = ln.find("] [cxt")
                j = ln.rfind("[", 0, i)
                try:
                    self.drops.add(int(ln[j + 1:i].split(".")[0]))
                except ValueError:
                    pass
        return pid in self.drops

    def send(self, port: int, data: bytes, expect: int) -> list[tuple[int, bytes]]:
        """Send one frame; return what came out. Waits (at most MAX_WAIT_S) until
        ``expect`` frames came out (p4sim's count), or, when that is 0, until the log says
        the packet was dropped or something came out; then until nothing more comes for
        ``quiet_s`` (copies BMv2 sends beyond the expected ones)."""
        pid, self.next_id = self.next_id, self.next_id + 1
        body = struct.pack("<iii", 3, port, len(data)) + data      # MSG_TYPE_PACKET_IN
        self.sock.sendall(struct.pack(">Q", len(body)) + body)
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + MAX_WAIT_S
        while time.monotonic() < deadline:
            if (expect and len(out) >= expect) or (not expect and (out or self._dropped(pid))):
                break
            msg = self._recv(0.01)
            if msg is not None:
                self._take(msg, out)
        while True:
            msg = self._recv(self.quiet_s)
            if msg is None:
                return out
            self._take(msg, out)

    @staticmethod
    def _take(msg: bytes, out: list[tuple[int, bytes]]) -> None:
        mtype, oport, length = struct.unpack("<iii", msg[:12])
        if mtype == 4:                                              # MSG_TYPE_PACKET_OUT
            out.append((oport, msg[12:12 + length]))

    def _recv(self, timeout: float) -> Optional[bytes]:
        while True:
            if len(self.buf) >= 8:
                n = struct.unpack(">Q", self.buf[:8])[0]
                if len(self.buf) >= 8 + n:
                    msg, self.buf = self.buf[8:8 + n], self.buf[8 + n:]
                    return msg
            r, _, _ = select.select([self.sock], [], [], timeout)
            if not r:
                return None
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("simple_switch closed the packet socket")
            self.buf += chunk

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
            if self.trace is not None:
                self.trace.close()


def _recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise RuntimeError("connection closed")
        data += chunk
    return data


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- a case
@dataclass
class CaseResult:
    case: str
    set: str
    status: str                    # "ran" or why not
    packets: int = 0
    agree: int = 0
    forwarded: int = 0             # packets after which BMv2 sent something out
    nondeterministic: list[str] = field(default_factory=list)   # why BMv2 itself varies
    differ: list[dict] = field(default_factory=list)
    # BMv2 run again (a fresh simple_switch, the same entries and packets): the packets on
    # which its runs agree with each other, and p4sim's agreement on those
    ref_runs: int = 1
    ref_stable: int = 0
    ref_stable_agree: int = 0


def ports_of(lines: list[str], rng: random.Random) -> list[int]:
    """Ingress ports to draw from: 0..8 and the numbers the commands use as ports."""
    ports = set(range(0, 9))
    for line in lines:
        w = line.split()
        if w and w[0] in ("mc_node_create",):
            ports.update(int(p) for p in w[2:] if p.isdigit() and int(p) < 511)
    return sorted(ports)


def run_case(case: Case, args: argparse.Namespace, work: str) -> CaseResult:
    from p4sim.engine import load_program
    from p4sim.v1model.switch import V1ModelSwitch

    res = CaseResult(case.key, case.set, "ran")
    program = os.path.join(args.root, case.repository.replace("/", "+"), case.program)
    text = git_show(git_dir(args.mirror_root, case.repository), case.commit, case.entries)
    lines = cli_lines(text)
    jpath = os.path.join(work, "prog.json")
    proc = subprocess.run(["p4c-bm2-ss", "--p4v", "16", "-I", os.path.dirname(program),
                           "-o", jpath, program], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        res.status = "p4c-bm2-ss refuses: " + (proc.stderr.strip().splitlines() or [""])[0]
        return res
    bjson = json.loads(Path(jpath).read_text())
    res.nondeterministic = nondeterminism(bjson)
    try:
        sim = load_program(program, [os.path.dirname(program)], seed=1, trace=False)
    except Exception as exc:  # noqa: BLE001 — a refusal is reported, not raised
        res.status = f"p4sim refuses: {str(exc).splitlines()[0]}"
        return res
    target = CliTarget(sim)
    for line in lines:
        try:
            target.run(line)
        except NotImplementedError as exc:
            res.status = f"harness: {exc}"
            return res
        except Exception as exc:  # noqa: BLE001
            res.status = f"p4sim runtime refuses '{line}': {type(exc).__name__}: {exc}"
            break
    sent: list[tuple[int, bytes, list]] = []        # (port, frame, p4sim's outputs)
    first: list[list] = []                          # BMv2's outputs, first run
    bm = Bmv2(jpath, work, args.quiet_s)
    try:
        errors = bm.cli(lines)
        if errors:
            res.status = f"BMv2 CLI refuses the commands: {errors[0]}"
            return res
        if res.status != "ran":
            res.status += " (BMv2's CLI accepts them)"
            return res
        switch = V1ModelSwitch(sim)
        seed = int(hashlib.sha1(f"{args.seed}/{case.key}".encode()).hexdigest(), 16) % (1 << 32)
        rng = random.Random(seed)
        maker = PacketMaker(bjson, entry_values(bjson, lines), rng)
        ports = ports_of(lines, rng)
        for i in range(args.packets):
            port = rng.choice(ports)
            data = maker.frame()
            got_sim = switch.process_packet(port, data)
            first.append(sorted(bm.send(port, data, expect=len(got_sim))))
            sent.append((port, data, sorted(got_sim)))
    finally:
        bm.close()
    # BMv2 again, as many times as asked: a packet on which its runs differ is one BMv2
    # itself does not decide (random(), meters against the wall clock, timestamps, ...)
    runs = [first]
    for _ in range(args.bmv2_runs - 1):
        with tempfile.TemporaryDirectory() as again:
            bm = Bmv2(jpath, again, args.quiet_s)
            try:
                errors = bm.cli(lines)
                if errors:
                    raise RuntimeError(f"BMv2 CLI refused the commands on a rerun: {errors[0]}")
                runs.append([sorted(bm.send(port, data, expect=len(got_sim)))
                             for port, data, got_sim in sent])
            finally:
                bm.close()
    res.ref_runs = len(runs)
    for i, (port, data, got_sim) in enumerate(sent):
        got_bm = first[i]
        stable = all(run[i] == got_bm for run in runs[1:])
        res.packets += 1
        res.forwarded += bool(got_bm)
        res.agree += got_bm == got_sim
        res.ref_stable += stable
        res.ref_stable_agree += stable and got_bm == got_sim
        if got_bm != got_sim or not stable:
            res.differ.append({"i": i, "port": port, "in": data.hex(), "bmv2_stable": stable,
                               "bmv2": [(p, d.hex()) for p, d in got_bm],
                               "bmv2_runs": [[(p, d.hex()) for p, d in run[i]] for run in runs[1:]],
                               "p4sim": [(p, d.hex()) for p, d in got_sim]})
    return res


def summarize(results: list[CaseResult]) -> dict[str, dict[str, int]]:
    """Counts per set (tune, held, all), also without the cases whose BMv2 output varies."""
    summary = {}
    for name in ("tune", "held", "all"):
        rs = [r for r in results if name == "all" or r.set == name]
        ran = [r for r in rs if r.status == "ran"]
        det = [r for r in ran if not r.nondeterministic]
        summary[name] = {"cases": len(rs), "ran": len(ran),
                         "programs": len({r.case.split(" + ")[0] for r in ran}),
                         "packets": sum(r.packets for r in ran),
                         "agree": sum(r.agree for r in ran),
                         "forwarded": sum(r.forwarded for r in ran),
                         "deterministic_cases": len(det),
                         "deterministic_programs": len({r.case.split(" + ")[0] for r in det}),
                         "deterministic_packets": sum(r.packets for r in det),
                         "deterministic_agree": sum(r.agree for r in det),
                         "bmv2_runs": min((r.ref_runs for r in ran), default=0),
                         "bmv2_stable_packets": sum(r.ref_stable for r in ran),
                         "bmv2_stable_agree": sum(r.ref_stable_agree for r in ran)}
    for name, s in summary.items():
        pct = 100.0 * s["agree"] / s["packets"] if s["packets"] else float("nan")
        dp = s["deterministic_packets"]
        dpct = 100.0 * s["deterministic_agree"] / dp if dp else float("nan")
        print(f"{name}: {s['ran']}/{s['cases']} cases ran ({s['programs']} programs), "
              f"{s['agree']}/{s['packets']} packets agree ({pct:.2f}%), BMv2 sent something "
              f"after {s['forwarded']}; without programs using random()/meters/timestamps: "
              f"{s['deterministic_cases']} cases ({s['deterministic_programs']} programs), "
              f"{s['deterministic_agree']}/{dp} ({dpct:.2f}%)")
        if s["bmv2_runs"] > 1:
            sp = s["bmv2_stable_packets"]
            spct = 100.0 * s["bmv2_stable_agree"] / sp if sp else float("nan")
            print(f"{name}: BMv2 run {s['bmv2_runs']} times: its runs agree with each other on "
                  f"{sp}/{s['packets']} packets; p4sim agrees on {s['bmv2_stable_agree']}/{sp} "
                  f"of those ({spct:.2f}%); BMv2 varied on {s['packets'] - sp}")
    return summary


def resummarize(path: str, root: str) -> int:
    """Print the summary of an earlier run's JSON, each case's BMv2 variability computed
    again (p4c-bm2-ss on its program)."""
    data = json.loads(Path(path).read_text())
    results = [CaseResult(**r) for r in data["results"]]
    cache: dict[str, list[str]] = {}
    for r in results:
        prog = r.case.split(" + ")[0]
        if prog not in cache:
            owner, name, rel = prog.split("/", 2)
            program = os.path.join(root, f"{owner}+{name}", rel)
            with tempfile.TemporaryDirectory() as tmp:
                jpath = os.path.join(tmp, "p.json")
                subprocess.run(["p4c-bm2-ss", "--p4v", "16", "-I", os.path.dirname(program), "-o",
                                jpath, program], capture_output=True, timeout=600)
                cache[prog] = nondeterminism(json.loads(Path(jpath).read_text())) \
                    if os.path.exists(jpath) else []
        r.nondeterministic = cache[prog]
        if r.status == "ran" and r.agree != r.packets:
            print(f"{r.set:4} {r.agree:4}/{r.packets:<4} {r.case}"
                  + (f"  (BMv2 varies: {', '.join(r.nondeterministic)})" if r.nondeterministic else ""))
    summarize(results)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror-root", required=True,
                    help="folder of the fetched repositories (<owner>+<repo>/repo git dirs)")
    ap.add_argument("--root", default="/tmp/i35/corpus", help="folder holding <owner>+<repo>/<path>")
    ap.add_argument("--update-cases", action="store_true", help="rewrite the cases list and stop")
    ap.add_argument("--corpus-tsv", type=Path, default=CORPUS_TSV,
                    help="corpus list the cases are found in (default: third_party_v1model.tsv)")
    ap.add_argument("--cases-tsv", type=Path, default=CASES_TSV,
                    help="cases list written by --update-cases and read by a run "
                         "(default: difffuzz_cases.tsv)")
    ap.add_argument("--packets", type=int, default=150, help="packets per case")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--quiet-s", type=float, default=0.05,
                    help="a packet has left BMv2 once nothing came out for this long")
    ap.add_argument("--set", choices=("tune", "held", "all"), default="all")
    ap.add_argument("--bmv2-runs", type=int, default=2,
                    help="run BMv2 this many times (fresh switches, same entries and packets); "
                         "a packet on which the runs differ counts as one BMv2 does not decide")
    ap.add_argument("--only", default=None, help="only cases whose name contains this")
    ap.add_argument("--out", default=None, help="write every case as JSON here")
    ap.add_argument("--summarize", default=None, metavar="JSON",
                    help="print the summary of an earlier --out file (the programs' BMv2 "
                         "variability taken again from p4c-bm2-ss's JSON) and stop")
    args = ap.parse_args(argv)
    if args.update_cases:
        cases = find_cases(args.mirror_root, args.corpus_tsv)
        write_cases(cases, args.cases_tsv, args.corpus_tsv.name)
        print(f"difffuzz: {len(cases)} cases written to {args.cases_tsv}")
        return 0
    missing = [t for t in ("simple_switch", "simple_switch_CLI", "p4c-bm2-ss") if shutil.which(t) is None]
    if missing:
        print(f"difffuzz_bmv2: {', '.join(missing)} not found on PATH: nothing measured (skipped)",
              file=sys.stderr)
        return EXIT_SKIPPED
    if args.summarize:
        return resummarize(args.summarize, args.root)
    sys.setrecursionlimit(10000)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # stop simple_switch on the way out
    cases = [c for c in read_cases(args.cases_tsv) if (args.set == "all" or c.set == args.set)
             and (args.only is None or args.only in c.key)]
    results: list[CaseResult] = []
    for c in cases:
        with tempfile.TemporaryDirectory() as work:
            try:
                r = run_case(c, args, work)
            except Exception as exc:  # noqa: BLE001 — say which case, go on
                r = CaseResult(c.key, c.set, f"harness error: {type(exc).__name__}: {exc}")
        results.append(r)
        print(f"{r.set:4} {r.agree:4}/{r.packets:<4} out {r.forwarded:<4} "
              f"stable {r.ref_stable_agree}/{r.ref_stable} {c.key}"
              + (f"  (BMv2 varies: {', '.join(r.nondeterministic)})" if r.nondeterministic else "")
              + ("" if r.status == "ran" else f"  [{r.status}]"), flush=True)
    summary = summarize(results)
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary,
                                              "results": [asdict(r) for r in results]}, indent=1))
    if not any(s["packets"] for s in summary.values()):
        print("difffuzz_bmv2: no packet was compared", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

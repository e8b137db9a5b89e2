"""The STF grammar of p4c's BMv2 test runner, exactly: tokens and statements as
``tools/stf/stf_lexer.py``, ``tools/stf/stf_parser.py`` and ``backends/bmv2/bmv2stf.py``
(p4c) read them, with every form that runner refuses refused here as
``file:line:col: error: ...``.

What the runner reads (newlines are not tokens: a statement may continue on the next
line unless that line starts with a command word)::

    add TABLE [PRIORITY] KEY:VALUE [KEY:VALUE ...] ACTION(ARG:VALUE, ...) [= NAME]
    setdefault TABLE ACTION(ARG:VALUE, ...)
    packet PORT HEX ...            expect PORT [HEX|* ...][$]
    check_counter NAME(INDEX|$NAME) [packets|bytes ==|!=|<|<=|>|>= NUMBER]
    mirroring_add|mirroring_add_mc ID PORT|GROUP   mirroring_delete|mirroring_get ID
    mc_mgrp_create GROUP   mc_node_create RID PORT ...   mc_node_associate GROUP NODE
    counter_read NAME INDEX   counter_write NAME INDEX PACKETS BYTES
    register_read NAME INDEX  register_write NAME INDEX VALUE   register_reset NAME
    meter_get_rates NAME INDEX   meter_set_rates NAME INDEX RATE:BURST ...
    meter_array_set_rates NAME RATE:BURST ...   wait   # comment

Numbers are decimal, ``0x`` hex or ``0b`` binary (``*`` digits allowed: ternary/lpm
don't-care digits); names are ``a.b.c`` (``$`` allowed, ``s[0]`` only as the first
part, ``"quoted"`` for anything else). Not STF for that runner, and refused here:
``value/len`` and ``value&&&mask`` keys, dotted quads, MAC addresses, ``0o`` octal,
``# comments`` on packet/expect lines, ``packet PORT`` without data, ``no_packet``,
``remove all`` on one line, ``mc_node_update`` (parsed, never sent), hex numbers where
simple_switch_CLI reads decimal (every number of the CLI commands), CR line ends.

Example::

    >>> cmds = parse_stf("add t 3 h.k:0x0a** a(p:1)\\nexpect 1 0a ** $\\n", "t.stf")
    >>> cmds[0].args["keys"], cmds[1].args["pattern"], cmds[1].args["exact"]
    ([('h.k', '0x0a**')], '0A**', True)
    >>> try:
    ...     parse_stf("add t h.k:0x0a000000/8 a()", "t.stf")
    ... except StfError as err:
    ...     print(err)
    t.stf:1:21: error: 'VALUE/LEN' keys are not STF: p4c's BMv2 runner fails on them; write the prefix with * digits (0x0a******, or 0b... for a prefix that is not a multiple of 4)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["StfError", "StfCommand", "Token", "tokenize", "parse_stf", "COMMANDS"]


class StfError(Exception):
    """A problem in an STF file or a command that cannot be carried out.

    Example::

        >>> str(StfError("unknown command 'foo'", "t.stf", 3, 1))
        "t.stf:3:1: error: unknown command 'foo'"
    """

    def __init__(self, message: str, file: str = "<stf>", line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col

    def __str__(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}" + (f":{self.col}" if self.col else "")
        return f"{where}: error: {self.message}"


@dataclass
class StfCommand:
    """One parsed statement: ``name`` is the lower-case command, ``args`` its fields,
    ``line``/``col`` where it starts, ``pos`` the (line, col) of located parts
    (``key0``, ``arg0``, ``index``, ...), ``text`` its source line."""

    name: str
    args: dict[str, Any]
    line: int
    text: str
    col: int = 1
    pos: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` as p4c's lexer names it (``ID``, ``INT_CONST_DEC``, ``ADD``...)."""

    kind: str
    value: str
    line: int
    col: int


# ----------------------------------------------------------------------------- lexer
_CLI_COMMANDS = (
    "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get",
    "mc_mgrp_create", "mc_node_create", "mc_node_update", "mc_node_associate",
    "counter_read", "counter_write", "register_read", "register_write", "register_reset",
    "meter_get_rates", "meter_set_rates", "meter_array_set_rates")
_KEYWORDS = {w: w.upper() for w in (
    "add", "all", "bytes", "check_counter", "expect", "no_packet", "packet", "packets",
    "remove", "setdefault", "wait") + _CLI_COMMANDS}
COMMANDS = tuple(sorted(set(_KEYWORDS) - {"all", "bytes", "packets"}))

_IDENT = r"[a-z$A-Z_][a-z$A-Z_0-9]*"
# INITIAL state, in the order p4c's (PLY) lexer tries them: function rules, then string
# rules longest first; the first alternative that matches wins.
_INITIAL = [
    ("TERN_CONST_HEX", r"0[xX][0-9a-fA-F*]+"), ("INT_CONST_BIN", r"0[bB][*01]+"),
    ("INT_CONST_DEC", r"[0-9]+"), ("ID", _IDENT), ("QUOTED_ID", r"\"[^\"]+\""),
    ("NEWLINE", r"\n+"), ("COMMENT", r"\#[^\n]*"),
    ("EQEQ", r"=="), ("NEQ", r"!="), ("LEQ", r"<="), ("GEQ", r">="),
    ("DOT", r"\."), ("LBRACKET", r"\["), ("RBRACKET", r"\]"), ("LPAREN", r"\("),
    ("RPAREN", r"\)"), ("COLON", r":"), ("COMMA", r","), ("EQUAL", r"="), ("LE", r"<"),
    ("GT", r">"), ("SLASH", r"/"), ("SPACE", r"[ \t]+"),
]
_PACKETDATA = [("DATA_DEC", r"[0-9]+"), ("DATA_HEX", r"[0-9a-fA-F]+"), ("DATA_TERN", r"\*"),
               ("DATA_EXACT", r"\$"), ("NEWLINE", r"\n+"), ("SPACE", r"[ \t]+")]


def _master(rules: list[tuple[str, str]]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in rules))


_RE_KEYWORD = _master([("KEYWORD_ID", _IDENT)] + _INITIAL)
_RE_INITIAL = _master(_INITIAL)
_RE_PACKETDATA = _master(_PACKETDATA)

_CHAR_HINTS = {
    "&": "ternary VALUE&&&MASK is not STF: write the value with * don't-care digits "
         "(0x0a**, or 0b1010**** for masks that are not whole hex digits)",
    "-": "ranges (LOW->HIGH) are not STF: p4c's BMv2 runner cannot program range keys",
    "\r": "carriage return: p4c's STF lexer refuses CRLF line ends (save the file with LF)",
    "#": "p4c's STF lexer allows no comment on a packet or expect line: put it on a line "
         "of its own",
    "'": "names with other characters go in double quotes",
}


def tokenize(text: str, file: str = "<stf>") -> list[Token]:
    """The token list of ``text`` as p4c's STF lexer produces it (spaces, newlines and
    comments dropped); an illegal character raises :class:`StfError`.

    Example::

        >>> [(t.kind, t.value) for t in tokenize("expect 1 0a*$\\nwait # w")]
        [('EXPECT', 'expect'), ('DATA_DEC', '1'), ('DATA_DEC', '0'), ('DATA_HEX', 'a'), ('DATA_TERN', '*'), ('DATA_EXACT', '$'), ('WAIT', 'wait')]
    """
    tokens: list[Token] = []
    state = "keyword"
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        rx = {"keyword": _RE_KEYWORD, "INITIAL": _RE_INITIAL, "packetdata": _RE_PACKETDATA}[state]
        m = rx.match(text, pos)
        col = pos - line_start + 1
        if m is None:
            ch = text[pos]
            what = "invalid packet data" if state == "packetdata" else "illegal character"
            hint = _CHAR_HINTS.get(ch, "")
            raise StfError(f"{what} {ch!r}" + (f": {hint}" if hint else ""), file, line, col)
        kind, value = m.lastgroup or "", m.group()
        pos = m.end()
        if kind == "NEWLINE":
            line += len(value)
            line_start = pos
            state = "keyword"
            continue
        if kind in ("SPACE", "COMMENT"):
            continue
        if kind == "KEYWORD_ID":
            kind = _KEYWORDS.get(value.lower(), "ID")
            state = "packetdata" if kind in ("EXPECT", "PACKET") else "INITIAL"
        elif kind == "ID" and value.lower() in ("bytes", "packets"):
            kind = value.upper()
        elif kind == "QUOTED_ID":
            kind, value = "ID", value[1:-1]
        tokens.append(Token(kind, value, line, col))
    return tokens


# ----------------------------------------------------------------------------- parser
_NUMBER = ("INT_CONST_DEC", "INT_CONST_BIN", "TERN_CONST_HEX")
_CONDS = ("EQEQ", "NEQ", "LEQ", "LE", "GEQ", "GT")
_SPELL = {"COLON": "':'", "COMMA": "','", "LPAREN": "'('", "RPAREN": "')'", "DOT": "'.'",
          "LBRACKET": "'['", "RBRACKET": "']'", "SLASH": "'/'", "EQUAL": "'='", "ID": "a name",
          "INT_CONST_DEC": "a decimal number", "DATA_DEC": "a decimal port number"}


class _Parser:
    """Recursive descent over p4c's LALR grammar (same language, first error raised)."""

    def __init__(self, tokens: list[Token], file: str, lines: list[str]) -> None:
        self.toks = tokens
        self.i = 0
        self.file = file
        self.lines = lines

    # -- helpers
    def peek(self, k: int = 0) -> Optional[Token]:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

    def error(self, tok: Optional[Token], message: str) -> StfError:
        if tok is None:
            last = self.toks[-1] if self.toks else Token("", "", 1, 1)
            return StfError(f"unexpected end of file: {message}", self.file, last.line,
                            last.col + len(last.value))
        return StfError(message, self.file, tok.line, tok.col)

    def take(self, *kinds: str, what: str = "") -> Token:
        tok = self.peek()
        if tok is None or tok.kind not in kinds:
            want = what or " or ".join(_SPELL.get(k, k.lower()) for k in kinds)
            found = f", found {tok.value!r}" if tok is not None else ""
            raise self.error(tok, f"expected {want}{found}" + self.hint(tok, kinds))
        self.i += 1
        return tok

    def hint(self, tok: Optional[Token], kinds: tuple[str, ...]) -> str:
        if tok is None:
            return ""
        if tok.kind == "SLASH":
            return ("; 'VALUE/LEN' keys are not STF: p4c's BMv2 runner fails on them; write the "
                    "prefix with * digits (0x0a******, or 0b... for a prefix that is not a "
                    "multiple of 4)")
        if tok.kind == "DOT" and self.i and self.toks[self.i - 1].kind in _NUMBER:
            return "; dotted addresses are not STF: write the number in hex (10.0.0.1 is 0x0a000001)"
        if tok.kind == "LBRACKET":
            return "; a stack index is only allowed on a name's first part: write hdr.s$0.f for hdr.s[0].f"
        prev = self.toks[self.i - 1] if self.i else None
        before = self.toks[self.i - 2] if self.i >= 2 else None
        for num, ident in ((prev, tok), (before, prev)):
            if num is not None and ident is not None and num.kind in _NUMBER and \
                    ident.kind == "ID" and (num.line, num.col + len(num.value)) == (ident.line, ident.col):
                return (f"; {num.value + ident.value!r} is not a number of p4c's STF lexer "
                        "(decimal, 0x hex or 0b binary; no octal, no suffixes)")
        if tok.kind in ("ALL", "BYTES", "PACKETS"):
            return f"; {tok.value!r} is a keyword of p4c's STF lexer: quote the name (\"{tok.value}\")"
        return ""

    def number(self) -> Token:
        return self.take(*_NUMBER, what="a number")

    def decimal(self, what: str) -> int:
        """A number simple_switch_CLI reads with int(): decimal only."""
        tok = self.number()
        if tok.kind != "INT_CONST_DEC":
            raise self.error(tok, f"{what} must be decimal: simple_switch_CLI reads it with "
                                  f"int(), which refuses {tok.value!r}")
        return int(tok.value)

    def qname(self) -> tuple[str, Token]:
        first = self.take("ID")
        name = first.value
        nxt = self.peek()
        if nxt is not None and nxt.kind == "LBRACKET":
            self.i += 1
            name += "[" + self.take("INT_CONST_DEC").value + "]"
            self.take("RBRACKET")
        while (nxt := self.peek()) is not None and nxt.kind == "DOT":
            self.i += 1
            name += "." + self.take("ID").value
        return name, first

    def action(self) -> tuple[str, list[tuple[str, str]], list[tuple[int, int]]]:
        name, _ = self.qname()
        self.take("LPAREN")
        args: list[tuple[str, str]] = []
        where: list[tuple[int, int]] = []
        if (tok := self.peek()) is not None and tok.kind != "RPAREN":
            while True:
                arg = self.take("ID", what="an action argument NAME:VALUE")
                self.take("COLON")
                value = self.number()
                args.append((arg.value, value.value))
                where.append((value.line, value.col))
                if (tok := self.peek()) is not None and tok.kind == "COMMA":
                    self.i += 1
                    continue
                break
        self.take("RPAREN")
        return name, args, where

    # -- statements
    def statement(self) -> StfCommand:
        tok = self.peek()
        assert tok is not None
        self.i += 1
        args: dict[str, Any]
        pos: dict[str, tuple[int, int]] = {}
        kind = tok.kind
        if kind == "ADD":
            args = self.add(pos)
        elif kind == "SETDEFAULT":
            table, _ = self.qname()
            action, aargs, where = self.action()
            pos.update({f"arg{i}": w for i, w in enumerate(where)})
            args = {"table": table, "action": action, "action_args": aargs}
        elif kind in ("PACKET", "EXPECT"):
            args = self.packet_or_expect(tok)
        elif kind == "WAIT":
            args = {}
        elif kind == "REMOVE":
            self.take("ALL", what="'all' at the start of a line (p4c's lexer reads "
                                  "'remove all' on one line as 'remove' and a name; BMv2's "
                                  "runner ignores remove anyway)")
            args = {}
        elif kind == "CHECK_COUNTER":
            args = self.check_counter(pos)
        elif kind == "NO_PACKET":
            raise self.error(tok, "'no_packet' is not usable: p4c's BMv2 runner fails on it "
                                  "(it has no port); leave the port without 'expect' instead")
        elif kind.lower() in _CLI_COMMANDS:
            args = self.cli_command(kind.lower(), tok, pos)
        elif kind == "ID" and tok.value.lower() in _KEYWORDS:
            raise self.error(tok, f"{tok.value!r} does not start a line, so p4c's STF lexer reads "
                                  "it as a name: put each command on a line of its own")
        else:
            known = ", ".join(COMMANDS)
            raise self.error(tok, f"unknown STF command {tok.value!r} (p4c's BMv2 runner knows: {known})"
                             if kind == "ID" else f"unexpected {tok.value!r}: expected a command"
                             + self.hint(tok, ()))
        text = self.lines[tok.line - 1].strip() if tok.line <= len(self.lines) else ""
        return StfCommand(kind.lower(), args, tok.line, text, tok.col, pos)

    def add(self, pos: dict[str, tuple[int, int]]) -> dict[str, Any]:
        table, _ = self.qname()
        priority: Optional[int] = None
        if (tok := self.peek()) is not None and tok.kind == "INT_CONST_DEC":
            priority = int(tok.value)
            self.i += 1
        keys: list[tuple[str, str]] = []
        while True:
            start = self.i
            name, first = self.qname()
            nxt = self.peek()
            if nxt is not None and nxt.kind == "LPAREN":
                if not keys:
                    raise self.error(first, "'add' needs at least one KEY:VALUE before the action "
                                            "(p4c's STF grammar has no key-less add)")
                self.i = start
                break
            self.take("COLON", what="':' (KEY:VALUE) or '(' (the action)")
            value = self.number()
            if (tok := self.peek()) is not None and tok.kind == "SLASH":
                raise self.error(tok, self.hint(tok, ()).lstrip("; "))
            pos[f"key{len(keys)}"] = (value.line, value.col)
            keys.append((name, value.value))
        action, aargs, where = self.action()
        pos.update({f"arg{i}": w for i, w in enumerate(where)})
        handle = None
        if (tok := self.peek()) is not None and tok.kind == "EQUAL":
            self.i += 1
            handle = self.take("ID").value
        return {"table": table, "priority": priority, "keys": keys, "action": action,
                "action_args": aargs, "handle": handle}

    def packet_or_expect(self, cmd: Token) -> dict[str, Any]:
        port = int(self.take("DATA_DEC", what="a port number").value)
        data = ""
        kinds = ("DATA_DEC", "DATA_HEX") + (("DATA_TERN",) if cmd.kind == "EXPECT" else ())
        while (tok := self.peek()) is not None and tok.kind in kinds:
            data += tok.value
            self.i += 1
        exact = False
        if cmd.kind == "EXPECT" and (tok := self.peek()) is not None and tok.kind == "DATA_EXACT":
            exact = True
            self.i += 1
        tok = self.peek()
        if tok is not None and tok.kind.startswith("DATA_"):
            raise self.error(tok, f"unexpected {tok.value!r} in {cmd.value} data"
                             + ("" if cmd.kind == "EXPECT" else " (* and $ are for expect)"))
        if cmd.kind == "PACKET":
            if not data:
                raise self.error(tok, "'packet' needs data (p4c's STF grammar has no empty packet)")
            if len(data) % 2:
                raise self.error(cmd, f"packet data has an odd number of hex digits ({len(data)}): "
                                      "p4c's BMv2 runner cannot convert it and sends nothing")
            return {"port": port, "data": bytes.fromhex(data)}
        if not data and not exact:
            return {"port": port, "pattern": None, "exact": False}
        return {"port": port, "pattern": data.upper(), "exact": exact}

    def check_counter(self, pos: dict[str, tuple[int, int]]) -> dict[str, Any]:
        name = self.take("ID", what="a counter name (a dotted name goes in double quotes)")
        if (tok := self.peek()) is not None and tok.kind == "DOT":
            raise self.error(tok, "check_counter takes a plain name: write the counter's last "
                                  "name part or quote the whole name (\"MyIngress.c\")")
        self.take("LPAREN")
        index = self.take("ID", *_NUMBER, what="an index or $ENTRY")
        pos["index"] = (index.line, index.col)
        self.take("RPAREN")
        kind, op, value = "packets", "==", 0
        if (tok := self.peek()) is not None and tok.kind in ("PACKETS", "BYTES"):
            self.i += 1
            kind = tok.kind.lower()
            op = self.take(*_CONDS, what="==, !=, <, <=, > or >=").value
            tok = self.number()
            if "*" in tok.value:
                raise self.error(tok, "a counter value has no * digits")
            value = int(tok.value, 10 if tok.kind == "INT_CONST_DEC" else 0)
        return {"counter": name.value, "index": index.value, "kind": kind, "op": op,
                "value": value}

    def cli_command(self, name: str, tok: Token, pos: dict[str, tuple[int, int]]) -> dict[str, Any]:
        if name == "mc_node_update":
            raise self.error(tok, "'mc_node_update' is parsed but never sent to the switch by "
                                  "p4c's BMv2 runner: create the node with its final ports")
        if name.startswith(("mirroring", "mc_")):
            fixed = 1 if name in ("mirroring_delete", "mirroring_get", "mc_mgrp_create") else 2
            if name == "mc_node_create":
                fixed = 1
            ints = [self.decimal(f"{name}'s argument") for _ in range(fixed)]
            rest: list[int] = []
            if name == "mc_node_create":
                rest.append(self.decimal("a port"))
                while (nxt := self.peek()) is not None and nxt.kind in _NUMBER:
                    rest.append(self.decimal("a port"))
            return {"ints": ints, "list": rest}
        extern, _ = self.qname()
        counts = {"counter_read": 1, "counter_write": 3, "register_read": 1,
                  "register_write": 2, "register_reset": 0, "meter_get_rates": 1,
                  "meter_set_rates": 1, "meter_array_set_rates": 0}
        words = [str(self.decimal(f"{name}'s argument")) for _ in range(counts[name])]
        if name.startswith("meter_") and name != "meter_get_rates":
            while True:
                rate = str(self.decimal("a meter rate"))
                if (nxt := self.peek()) is not None and nxt.kind == "DOT":
                    self.i += 1
                    rate += "." + self.take("INT_CONST_DEC", what="decimal digits").value
                self.take("COLON", what="':' (RATE:BURST)")
                words.append(f"{rate}:{self.decimal('a burst size')}")
                if (nxt := self.peek()) is None or nxt.kind not in _NUMBER:
                    break
        return {"extern": extern, "words": words}


def parse_stf(text: str, file: str = "<stf>") -> list[StfCommand]:
    """Parse STF text into commands (raises :class:`StfError`, located, on the first form
    p4c's BMv2 runner does not accept).

    Example::

        >>> c = parse_stf("add t 10 h.f:0x0a a(p:1) = E1", "x.stf")[0]
        >>> c.args["table"], c.args["priority"], c.args["keys"], c.args["handle"]
        ('t', 10, [('h.f', '0x0a')], 'E1')
        >>> try:
        ...     parse_stf("add t h.f:1 a()\\nfoo 1", "x.stf")
        ... except StfError as err:
        ...     print(err)    # doctest: +ELLIPSIS
        x.stf:2:1: error: unknown STF command 'foo' (p4c's BMv2 runner knows: add, ...)
    """
    parser = _Parser(tokenize(text, file), file, text.split("\n"))
    cmds: list[StfCommand] = []
    while parser.peek() is not None:
        cmds.append(parser.statement())
    return cmds

"""C preprocessor for P4 sources (``#include``, ``#define``, ``#if``…, ``#error``, ``#line``).

Built on :mod:`pcpp`. The output is plain P4 text interleaved with ``#line N "file"``
markers; every token is placed at its ORIGINAL column, so the lexer
(:mod:`p4sim.frontend.lexer`) reports locations in the files the user wrote (a mistake in
an included ``v1model.p4`` names ``v1model.p4``). Tokens produced by macro expansion are
placed at the macro's use site.

``#include <x>`` searches the ``-I`` directories, then ``p4sim/p4include`` (which holds
p4sim's own ``core.p4`` and ``v1model.p4``); ``#include "x"`` first searches the including
file's directory. Every file read is registered with :func:`p4sim.errors.remember_source`
so that diagnostics can quote it.

Example::

    >>> text = preprocess_text('#define W 8\\nconst bit<W> X = 1;\\n', "x.p4")
    >>> text.splitlines()[:2]
    ['#line 2 "x.p4"', 'const bit<8> X = 1;']
"""
from __future__ import annotations

import io
import os
import re
import sys
from typing import Iterable, Iterator, Optional

from pcpp import Preprocessor
from pcpp.parser import OutputDirective

from p4sim.errors import P4Error, P4FatalError, remember_source
from p4sim.frontend.ast import Loc

P4INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "p4include")

# Gaps of more blank lines than this are bridged with a ``#line`` marker instead.
_MAX_BLANK_LINES = 8


MAX_INCLUDE_DEPTH = 200      # cpp's -fmax-include-depth default (what p4c runs)
_FRAMES_PER_INCLUDE = 12     # Python frames one nested #include takes in pcpp, about


class _P4Preprocessor(Preprocessor):
    """pcpp with P4-friendly hooks: errors raise :class:`P4Error`, file texts are kept."""

    def __init__(self) -> None:
        super().__init__()
        self.rewrite_paths = []      # keep file names as opened (absolute for includes)
        self.texts: dict[str, str] = {}
        self.string_spans: dict[str, list[tuple[int, int]]] = {}  # strings spanning lines, per file
        self.line_starts: dict[str, list[int]] = {}
        # each file by the name cpp gives it (what p4c prints): an include is the including
        # file's directory as named, or the -I folder as written, joined with the name in
        # the directive, nothing normalised ("sub/../lib/x.p4"); pcpp opens absolute paths
        self.cpp_names: dict[str, str] = {}
        self.cpp_dirs: dict[str, str] = {}     # an absolute folder -> as cpp names it

    def display(self, name: str) -> str:
        """The name cpp gives the file pcpp opened as ``name`` (``name`` if none).

        Example::

            >>> pp = _P4Preprocessor(); pp.cpp_names["/a/lib/x.p4"] = "sub/../lib/x.p4"
            >>> pp.display("/a/lib/x.p4"), pp.display("y.p4")
            ('sub/../lib/x.p4', 'y.p4')
        """
        return self.cpp_names.get(name, name)

    def _cpp_name(self, is_system_include: bool, includepath: str) -> str:
        """cpp's name for the file an ``#include`` opens at ``includepath`` (absolute)."""
        d = self.lastdirective
        lines = self.texts.get(d.source, "").split("\n") if d is not None else []
        line = lines[d.lineno - 1] if d is not None and 0 < d.lineno <= len(lines) else ""
        m = re.match(r'\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', line)
        if m is None:               # a macro names it: left absolute
            return includepath
        filename = m.group(1) or m.group(2)
        for folder in (self.path if is_system_include else self.temp_path + self.path):
            if os.path.abspath(os.path.join(folder, filename)) == includepath:
                named = self.cpp_dirs.get(folder, folder)
                return os.path.join(named, filename) if named else filename
        return includepath

    def register_text(self, name: str, text: str) -> str:
        # pcpp lexes each file with trailing whitespace stripped from every line and line
        # ends normalised to "\n" (pcpp's group_lines): token positions (lexpos) index that
        # text, so columns and the "was there a space before" test must use it too; the
        # original text is what diagnostics quote.
        original, text = text, splice_split_words(text)
        self.texts[name] = _as_pcpp_lexes(text)
        self.string_spans[name] = multiline_string_spans(self.texts[name])
        starts = [0]
        for i, ch in enumerate(self.texts[name]):
            if ch == "\n":
                starts.append(i + 1)
        self.line_starts[name] = starts
        remember_source(name, original)
        _check_comments(name, original)
        return text

    def column_of(self, source: str, lineno: int, lexpos: int) -> int:
        starts = self.line_starts.get(source)
        if not starts or not 1 <= lineno <= len(starts):
            return 1
        return max(lexpos - starts[lineno - 1] + 1, 1)

    def include(self, tokens, original_line):  # type: ignore[no-untyped-def,override]
        """pcpp's ``#include``, nested at most :data:`MAX_INCLUDE_DEPTH` deep with cpp's
        error (a file that includes itself, e.g. ``core.p4`` with ``#include <core.p4>`` and
        its own folder on the include path), at the end of the directive that goes over."""
        # one folder of temp_path per open file (pcpp's search path for "..." includes)
        if len(self.temp_path) >= MAX_INCLUDE_DEPTH:
            d = self.lastdirective
            lines = self.texts.get(d.source, "").split("\n") if d is not None else []
            line = lines[d.lineno - 1] if d is not None and 0 < d.lineno <= len(lines) else ""
            loc = Loc(self.display(d.source), d.lineno, len(line.rstrip()) + 1) if d is not None else None
            raise P4Error(f"#include nested depth {MAX_INCLUDE_DEPTH} exceeds maximum of {MAX_INCLUDE_DEPTH} "
                          "(use -fmax-include-depth=DEPTH to increase the maximum)", loc)
        yield from super().include(tokens, original_line)

    # ---------------------------------------------------------------- pcpp hooks
    def on_file_open(self, is_system_include: bool, includepath: str):  # type: ignore[override]
        with open(includepath, encoding="utf-8") as f:
            text = f.read()
        if text.startswith("\ufeff"):
            text = text[1:]
        name = self._cpp_name(is_system_include, includepath)
        if name != includepath:
            self.cpp_names.setdefault(includepath, name)
            self.cpp_dirs.setdefault(os.path.dirname(includepath), os.path.dirname(name))
            remember_source(name, text)
        return io.StringIO(self.register_text(includepath, text))

    def on_error(self, file: str, line: int, msg: str) -> None:  # type: ignore[override]
        # pcpp: "Unterminated #ifdef NAME"; cpp (what p4c prints): "unterminated #ifdef"
        # at the group's first line, naming its last directive (#ifdef, #else, ...)
        if re.match(r"Unterminated\s+#", msg):
            msg = "unterminated #" + _last_group_directive(self.texts.get(file, ""), line)
        raise P4Error(msg, Loc(self.display(file) if file else "<input>", line, 1))

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):  # type: ignore[override]
        d = self.lastdirective
        loc = Loc(self.display(d.source), d.lineno, 1) if d is not None else None
        if is_malformed:
            raise P4Error(f"malformed #include {includepath}", loc)
        if d is not None:   # cpp's message (p4c runs cpp), at the file's name
            lines = self.texts.get(d.source, "").split("\n")
            line = lines[d.lineno - 1] if 0 < d.lineno <= len(lines) else ""
            m = re.match(r"\s*#\s*include\s*", line)
            loc = Loc(self.display(d.source), d.lineno, m.end() + 1 if m else 1)
        raise P4FatalError(f"{includepath}: No such file or directory", loc)

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):  # type: ignore[override]
        if directive.value == "error":
            text = "".join(t.value for t in toks).strip()
            hash_tok = precedingtoks[0] if precedingtoks else directive
            col = self.column_of(directive.source, directive.lineno, hash_tok.lexpos)
            raise P4Error(f"#error {text}".rstrip(), Loc(self.display(directive.source), directive.lineno, col))
        if directive.value == "warning":
            return True
        return None  # #line, #pragma: passed through, handled by the writer

    def on_comment(self, tok):  # type: ignore[override]
        # p4c runs cpp with -C: comments stay in its output, where P4's lexer drops them,
        # except inside a string literal spanning lines (cpp does not know such strings),
        # e.g. an @entry_restriction("...") annotation: there the comment is the string's
        # text (and P4Info's). Elsewhere it becomes whitespace, as before.
        spans = self.string_spans.get(tok.source or "", ())
        if any(a < tok.lexpos < b for a, b in spans):
            return True
        return None


def _last_group_directive(text: str, first_line: int) -> str:
    r"""The last directive of the conditional group opened at ``first_line`` and never
    closed: cpp names it in "unterminated #else".

    >>> _last_group_directive("#ifndef A\n#if B\n#else\n#endif\n#else\nx\n", 1)
    'else'
    """
    depth, last = 0, "if"
    for line in text.split("\n")[first_line - 1:]:
        m = re.match(r"\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b", line)
        if m is None:
            continue
        name = m[1]
        if name in ("if", "ifdef", "ifndef"):
            depth += 1
            if depth == 1:
                last = name
        elif name == "endif":
            depth -= 1
        elif depth == 1:
            last = name
    return last


def splice_split_words(text: str) -> str:
    r"""Join a word split by a backslash-newline (``#define NAME_\<newline>REST "v"``):
    cpp splices lines before it reads tokens, pcpp after, so it would read two names. The
    removed line breaks are added after the end of the logical line, so that every later
    line keeps its number (sonic-pins' versions.h splits a macro name so).

    Example::

        >>> splice_split_words('#define AB_\\\nCD \\\n  "5"\nx\n').split("\n")
        ['#define AB_CD \\', '  "5"', '', 'x', '']
    """
    if "\\\n" not in text and "\\\r\n" not in text:
        return text
    out: list[str] = []
    lines = text.split("\n")
    pending = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        while (i + 1 < len(lines) and line.endswith("\\") and len(line) > 1
               and (line[-2].isalnum() or line[-2] == "_")
               and lines[i + 1][:1] and (lines[i + 1][0].isalnum() or lines[i + 1][0] == "_")):
            line = line[:-1] + lines[i + 1]
            i += 1
            pending += 1
        out.append(line)
        if pending and not line.rstrip("\r").endswith("\\"):
            out.extend([""] * pending)
            pending = 0
        i += 1
    return "\n".join(out)


def _as_pcpp_lexes(text: str) -> str:
    """``text`` as pcpp's lexer sees it: lines split, trailing whitespace removed.

    Example::

        >>> _as_pcpp_lexes("a;   \\r\\n  \\nb;")
        'a;\\n\\nb;'
    """
    return "\n".join(line.rstrip() for line in text.splitlines())


def multiline_string_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the string literals of ``text`` that span lines (P4's
    lexer takes a string to the next unescaped quote; comments outside strings skipped).

    Example::

        >>> multiline_string_spans('a("x") // "no"\\n@e("\\n  // kept\\n") "y"')
        [(18, 30)]
    """
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if "\n" in text[i:j]:
                spans.append((i, j))
            i = j + 1
        else:
            i += 1
    return spans


def _check_comments(name: str, text: str) -> None:
    """Raise for a ``/*`` comment that is never closed (pcpp would pass it through)."""
    i, n, line, col = 0, len(text), 1, 1
    in_str = False
    while i < n:
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 2
                col += 2
                continue
            if ch == '"' or ch == "\n":
                in_str = False
        elif ch == '"':
            in_str = True
        elif text.startswith("//", i):
            j = text.find("\n", i)
            if j < 0:
                return
            col += j - i
            i = j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise P4Error("unterminated comment", Loc(name, line, col))
            chunk = text[i:j + 2]
            nl = chunk.count("\n")
            if nl:
                line += nl
                col = len(chunk) - chunk.rfind("\n")
            else:
                col += len(chunk)
            i = j + 2
            continue
        if ch == "\n":
            line += 1
            col = 1
        else:
            col += 1
        i += 1


class _Writer:
    """Lays pcpp's token stream out at original positions, with ``#line`` markers."""

    def __init__(self, pp: _P4Preprocessor) -> None:
        self.pp = pp
        self.out: list[str] = []
        self.file: Optional[str] = None
        self.line = 0
        self.col = 1
        self.remap: dict[str, tuple[int, int, str]] = {}  # source -> (phys line, new line, file)

    def mapped(self, source: str, lineno: int) -> tuple[str, int]:
        r = self.remap.get(source)
        if r is not None and lineno > r[0]:
            return r[2], r[1] + (lineno - r[0] - 1)
        return source, lineno

    def goto(self, file: str, line: int) -> None:
        if file != self.file or line < self.line or line > self.line + _MAX_BLANK_LINES:
            if self.out:
                self.out.append("\n")
            self.out.append(f'#line {line} "{self.pp.display(file)}"\n')
            self.file, self.line, self.col = file, line, 1
        elif line > self.line:
            self.out.append("\n" * (line - self.line))
            self.line, self.col = line, 1

    def emit(self, text: str) -> None:
        self.out.append(text)
        self.col += len(text)

    def run(self, tokens: Iterator) -> str:
        pp = self.pp
        ws = set(pp.t_WS)
        pending: list = []     # tokens of a pass-through directive line
        in_directive = False
        at_line_start = True
        saw_ws = False
        for tok in tokens:
            if in_directive:
                if tok.type in ws and "\n" in tok.value:
                    self.directive(pending)
                    pending = []
                    in_directive = False
                    at_line_start = True
                else:
                    pending.append(tok)
                continue
            expanded = bool(getattr(tok, "expanded_from", None))
            if tok.type in ws:
                if "\n" in tok.value and not expanded:
                    at_line_start = True
                saw_ws = True
                continue
            if tok.value == "#" and at_line_start and not expanded:
                in_directive = True
                pending = [tok]
                continue
            at_line_start = False
            source = tok.source or "<input>"
            file, line = self.mapped(source, tok.lineno)
            if expanded:
                if self.file is None:
                    self.goto(file, line)
                if saw_ws and self.out and not self.out[-1].endswith((" ", "\n")):
                    self.emit(" ")
                saw_ws = False
                self.emit(tok.value)
                continue
            saw_ws = False
            self.goto(file, line)
            col = pp.column_of(source, tok.lineno, tok.lexpos)
            if col > self.col:
                self.emit(" " * (col - self.col))
            elif col < self.col and self.col > 1:
                text = pp.texts.get(source, "")
                if tok.lexpos == 0 or tok.lexpos > len(text) or text[tok.lexpos - 1].isspace():
                    self.emit(" ")
            self.emit(tok.value)
            if "\n" in tok.value:   # a /* */ comment kept inside a string spanning lines
                self.line += tok.value.count("\n")
                self.col = len(tok.value) - tok.value.rindex("\n")
        if pending:
            self.directive(pending)
        self.out.append("\n")
        return "".join(self.out)

    def directive(self, toks: list) -> None:
        words = [t for t in toks[1:] if t.type not in set(self.pp.t_WS)]
        if not words:
            return
        name = words[0].value
        if name == "pragma":
            return
        source = toks[0].source or "<input>"
        # p4c runs cpp as `-x assembler-with-cpp`: a line starting with `#` that is no
        # directive passes through, and p4c's lexer skips it, except a line marker
        # `# N "file"` (one space after `#`, a file name: p4lexer.ll, onReadFileName).
        # Measured on p4c-bm2-ss 1.2.5.16: `#foo`, `#4096`, `# 4096` and `#4096 "f.p4"`
        # compile and change no position; `#line N` and `# N "f.p4"` renumber.
        if name == "line" and len(words) >= 2 and words[1].value.isdigit():
            args = words[1:]
        elif name.isdigit() and len(words) >= 2 and words[1].value.startswith('"') \
                and len(toks) > 1 and toks[1].type in set(self.pp.t_WS):
            args = words
        else:
            return
        new_file = self.mapped(source, toks[0].lineno)[0]
        if len(args) >= 2 and args[1].value.startswith('"'):
            new_file = args[1].value[1:-1]
        self.remap[source] = (toks[0].lineno, int(args[0].value), new_file)


def _make(include_dirs: Iterable[str], defines: Optional[dict[str, str]]) -> _P4Preprocessor:
    pp = _P4Preprocessor()
    for d in include_dirs:
        pp.add_path(os.path.abspath(d))
        pp.cpp_dirs.setdefault(os.path.abspath(d), d)
    pp.add_path(P4INCLUDE_DIR)
    pp.rewrite_paths = []  # name included files by the path they were opened with
    for k, v in (defines or {}).items():
        pp.define(f"{k} {v}")
    return pp


def _tokens(pp: _P4Preprocessor) -> Iterator:
    while True:
        tok = pp.token()
        if tok is None:
            return
        yield tok


def preprocess_text(text: str, filename: str = "<input>", include_dirs: Iterable[str] = (),
                    defines: Optional[dict[str, str]] = None) -> str:
    """Preprocess in-memory P4 source ``text`` that is reported as ``filename``.

    Example::

        >>> preprocess_text("#if 0\\nbad\\n#endif\\nx;\\n", "t.p4").split()
        ['#line', '4', '"t.p4"', 'x;']
    """
    pp = _make(include_dirs, defines)
    text = pp.register_text(filename, text)
    pp.ignore = {}
    pp.parser = pp.parsegen(text, filename, None)
    base = os.path.dirname(filename) if not filename.startswith("<") else ""
    pp.temp_path.insert(0, os.path.abspath(base))
    pp.cpp_dirs[os.path.abspath(base)] = base
    # pcpp nests a generator per #include: room for cpp's whole depth
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, MAX_INCLUDE_DEPTH * _FRAMES_PER_INCLUDE + 1000))
    try:
        return _Writer(pp).run(_tokens(pp))
    finally:
        sys.setrecursionlimit(limit)


def preprocess(path: str, include_dirs: Iterable[str] = (),
               defines: Optional[dict[str, str]] = None) -> str:
    """Preprocess the P4 file at ``path``; see :func:`preprocess_text`.

    Example::

        >>> out = preprocess("prog.p4", ["include"])  # doctest: +SKIP
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise P4Error(f"cannot read {path}: {e.strerror}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return preprocess_text(text, path, include_dirs, defines)

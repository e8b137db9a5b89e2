"""Recursive-descent parser for P4_16 (spec 1.2.x) producing :mod:`p4sim.frontend.ast`.

``parse_file``/``parse_text`` run the preprocessor, the lexer and this parser. Like p4c,
the parser tracks the names of declared types (and generic functions) as it goes, so that
``name<`` is read as type arguments only where a type can follow, and ``(T) x`` as a cast
only when ``T`` is a type. Ambiguous constructs (declarations vs. expression statements,
casts, type arguments, tuple keysets) are resolved by bounded backtracking.

Syntax errors raise :class:`P4Error` at the offending token
(p4c's text: ``syntax error, unexpected }, expecting ;``); valid constructs that p4sim does not
implement raise :class:`P4Unsupported`.

Example::

    >>> prog = parse_text("header h_t { bit<8> f; }", "h.p4")
    >>> prog.decls[0].kind, prog.decls[0].fields[0].name
    ('header', 'f')
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Callable, Iterable, Optional, TypeVar

from p4sim.errors import P4Error, P4Unsupported
from p4sim.frontend import ast as A
from p4sim.frontend.lexer import Token, tokenize
from p4sim.frontend.preprocess import preprocess, preprocess_text
from p4sim.frontend.validate import check_type_width, validate_program, walk

T = TypeVar("T")

_BASE_TYPES = {"bool", "string", "void", "error", "match_kind"}
_TYPE_START_KW = {"bit", "int", "varbit", "bool", "string", "void", "error", "match_kind", "tuple", "list"}
_DIRECTIONS = {"in", "out", "inout"}
# Binary operators by precedence level, lowest first (p4c's table).
_BINARY_LEVELS: list[tuple[str, ...]] = [
    ("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("|",), ("^",), ("&",),
    ("<<", ">>"), ("++", "+", "-", "|+|", "|-|"), ("*", "/", "%"),
]
_EXPR_START_OPS = {"(", "{", "!", "~", "-", "+", ".", "_"}
# ``lhs op= rhs`` → ``lhs = lhs op rhs`` (p4c's RemoveOpAssign; ``>>=`` is ``>`` + ``>=``)
_COMPOUND_ASSIGN = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&", "|=": "|",
                    "^=": "^", "<<=": "<<", "|+|=": "|+|", "|-|=": "|-|"}


# annotations whose parenthesised body p4c parses as a key = value list (P4Info pkg_info)
_KV_ANNOTATIONS = frozenset(("pkginfo", "platform_property"))

# p4c's lexer (frontends/parsers/p4/p4lexer.ll) makes these words tokens of its own; bison
# names them in a syntax error by the token's name (p4parser.ypp ``%token``).
_P4C_KEYWORD_TOKENS = {w: w.upper() for w in (
    "abstract action actions apply bool bit break const continue control default else entries "
    "enum error exit extern false for header header_union if in inout int key list match_kind "
    "out package parser pragma priority return select state string struct switch table this "
    "transition true tuple type typedef varbit void").split()}
_P4C_KEYWORD_TOKENS["value_set"] = "VALUESET"
# what p4c-bm2-ss 1.2.5.16's bison expects where a control's or a parser's locals may go on
# (measured: whatever the unexpected token, "}" included)
_CONTROL_LOCAL_START = "'action' or 'const' or 'table'"
_PARSER_LOCAL_START = "'const' or 'state' or 'value_set'"
# p4sim's own wording of what it expected -> bison's "expecting" list (its token order)
_P4C_EXPECTING = {"string, bit<W> or an integer": "BIT or STRING or INTEGER",
                  "the '>' of bit<W>": "> or R_ANGLE_SHIFT",
                  "the width of bit<W>": "INTEGER"}   # in @p4runtime_translation


def p4c_token_name(tok: Token, type_names: Iterable[str] = ()) -> str:
    """A token as p4c's bison parser names it in ``syntax error, unexpected X``: a keyword
    by its token name (``CONTROL``, ``ENTRIES``), punctuation by its text (``}``; a comma
    keeps its quotes, as bison does for an alias holding one), a declared type name
    ``TYPE_IDENTIFIER``, another name ``IDENTIFIER``, ``INTEGER``, ``STRING_LITERAL``, and
    the end of the input ``END``.

    >>> [p4c_token_name(t) for t in tokenize('control } , _ x 5 "s"')][:7]
    ['CONTROL', '}', '","', '_', 'IDENTIFIER', 'INTEGER', 'STRING_LITERAL']
    """
    if tok.kind == "eof":
        return "END"
    if tok.kind in ("ident", "kw"):
        if tok.text in _P4C_KEYWORD_TOKENS:
            return _P4C_KEYWORD_TOKENS[tok.text]
        return "TYPE_IDENTIFIER" if tok.text in type_names else "IDENTIFIER"
    if tok.kind == "int":
        return "INTEGER"
    if tok.kind == "string":
        return "STRING_LITERAL"
    return '","' if tok.text == "," else tok.text


def syntax_error(tok: Token, expected: Optional[str] = None,
                 type_names: Iterable[str] = ()) -> P4Error:
    """p4c's text for a syntax error at ``tok``: ``syntax error, unexpected X``, then
    ``, expecting Y`` where p4sim expected one token (bison lists what can follow when
    that is at most four tokens; p4sim's wider expectations, "an expression" and the like,
    stand for many, so nothing is added), and a name's text when nothing is (p4c's
    ParserDriver::onParseError).

    >>> str(syntax_error(tokenize("}")[0], "';'"))
    '<input>:1:1: error: syntax error, unexpected }, expecting ;'
    >>> str(syntax_error(tokenize("foo")[0], "a declaration"))
    '<input>:1:1: error: syntax error, unexpected IDENTIFIER "foo"'
    """
    msg = f"syntax error, unexpected {p4c_token_name(tok, type_names)}"
    expecting = None
    if expected in _P4C_EXPECTING:
        expecting = _P4C_EXPECTING[expected]
    elif expected and all(len(w) >= 3 and w[0] == w[-1] == "'" for w in expected.split(" or ")):
        names = []
        for word in expected.split(" or "):
            toks = tokenize(word[1:-1])
            if len(toks) == 2:       # one token, then the end
                names.append(p4c_token_name(toks[0]))
        if names and len(names) == len(expected.split(" or ")):
            expecting = " or ".join(names)
    if expecting:
        msg += f", expecting {expecting}"
    elif msg.endswith(" IDENTIFIER"):
        msg += f' "{tok.text}"'
    return P4Error(msg, tok.loc)


class _Backtrack(Exception):
    """Internal: a speculative parse did not fit."""


def parse_text(text: str, filename: str = "<input>", include_dirs: Iterable[str] = (),
               defines: Optional[dict[str, str]] = None, validate: bool = True) -> A.Program:
    """Parse in-memory P4 source (preprocessed first), then apply the rules of
    :mod:`p4sim.frontend.validate` unless ``validate`` is False (syntax-only fixtures).

    Example::

        >>> parse_text("const bit<8> X = 8w5;").decls[0].value.width
        8
    """
    pp = preprocess_text(text, filename, list(include_dirs), defines)
    program = Parser(tokenize(pp, filename)).parse_program()
    if validate:
        validate_program(program)
    return program


def parse_file(path: str, include_dirs: Iterable[str] = (),
               defines: Optional[dict[str, str]] = None, validate: bool = True) -> A.Program:
    """Preprocess, lex and parse the P4 file at ``path`` (and validate it, as
    :func:`parse_text`).

    Example::

        >>> prog = parse_file("prog.p4", ["include"])  # doctest: +SKIP
    """
    pp = preprocess(path, list(include_dirs), defines)
    program = Parser(tokenize(pp, path)).parse_program()
    if validate:
        validate_program(program)
    return program


class Parser:
    """The parser proper: ``Parser(tokens).parse_program()``.

    Example::

        >>> from p4sim.frontend.lexer import tokenize
        >>> Parser(tokenize("typedef bit<8> B;")).parse_program().decls[0].name
        'B'
    """

    def __init__(self, tokens: list[Token], type_names: Optional[set[str]] = None) -> None:
        self.toks = tokens
        self.pos = 0
        self.type_names: set[str] = set(type_names or ())
        self.generic_names: set[str] = set()   # functions/externs declared with <T>
        self.function_returns: dict[str, A.TypeRef] = {}  # non-generic functions' result types
        self.speculating = 0

    # ------------------------------------------------------------------ token helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def at(self, *values: str) -> bool:
        t = self.tok
        return t.kind in ("op", "kw") and t.value in values

    def at_ident(self, value: Optional[str] = None) -> bool:
        t = self.tok
        return t.kind == "ident" and (value is None or t.value == value)

    def advance(self) -> Token:
        t = self.toks[self.pos]
        if t.kind != "eof":
            self.pos += 1
        return t

    def error(self, expected: Optional[str] = None, tok: Optional[Token] = None) -> P4Error:
        if self.speculating:
            return _Backtrack()  # type: ignore[return-value]
        t = tok or self.tok
        if t.kind == "bad":
            return P4Error(f"unexpected character '{t.text}'", t.loc)
        return syntax_error(t, expected, self.type_names)

    def expect(self, value: str) -> Token:
        if self.at(value):
            return self.advance()
        raise self.error(f"'{value}'")

    def accept(self, value: str) -> bool:
        if self.at(value):
            self.advance()
            return True
        return False

    def name(self, what: str = "a name") -> str:
        """An identifier (soft keywords such as ``key`` or ``apply`` are identifiers), or
        ``list``, which p4c's grammar also takes as a name where it declares one (``match_kind
        { list }``, a field or parameter) or names a match kind, though not in an expression."""
        if self.tok.kind == "ident" or (self.tok.kind == "kw" and self.tok.value == "list"):
            return str(self.advance().value)
        raise self.error(what)

    def unsupported(self, what: str, tok: Optional[Token] = None) -> P4Unsupported:
        t = tok or self.tok
        return P4Unsupported(what, t.loc)

    def speculate(self, fn: Callable[[], T]) -> Optional[T]:
        """Run ``fn``; on a syntax mismatch rewind and return None."""
        start = self.pos
        self.speculating += 1
        try:
            return fn()
        except _Backtrack:
            self.pos = start
            return None
        except P4Unsupported:
            self.pos = start
            return None
        finally:
            self.speculating -= 1

    def shift_right_here(self) -> bool:
        """Two adjacent ``>`` tokens spell the ``>>`` operator."""
        a, b = self.tok, self.peek()
        return (a.kind == "op" and a.value == ">" and b.kind == "op" and b.value == ">"
                and a.loc.file == b.loc.file and a.loc.line == b.loc.line and b.loc.col == a.loc.col + 1)

    def is_type_name(self, tok: Token) -> bool:
        return tok.kind == "ident" and tok.value in self.type_names

    # ------------------------------------------------------------------ program
    def parse_program(self) -> A.Program:
        start = self.tok.loc
        decls: list[A.Decl] = []
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            decls.append(self.declaration())
        return A.Program(decls, loc=start)

    def declaration(self) -> A.Decl:
        annots = self.annotations()
        t = self.tok
        if t.kind == "kw":
            v = t.value
            if v == "const":
                return self.const_decl(annots)
            if v in ("header", "header_union", "struct"):
                return self.struct_like(annots)
            if v == "enum":
                return self.enum_decl(annots)
            if v == "typedef":
                return self.typedef_decl(annots, newtype=False)
            if v == "error":
                return self.error_decl(annots)
            if v == "match_kind":
                return self.match_kind_decl(annots)
            if v == "extern":
                return self.extern_decl(annots)
            if v == "parser":
                return self.parser_decl(annots)
            if v == "control":
                return self.control_decl(annots)
            if v == "package":
                return self.package_decl(annots)
            if v == "action":
                return self.action_decl(annots)
            if v == "value_set":
                return self.value_set_decl(annots)
        if t.kind == "ident" and t.value == "type" and self.peek().kind in ("ident", "kw"):
            return self.typedef_decl(annots, newtype=True)
        if t.kind in ("ident", "kw") or self.at("."):
            return self.function_or_instantiation(annots)
        raise self.error("a declaration")

    # ------------------------------------------------------------------ annotations
    def annotations(self) -> list[A.Annotation]:
        out: list[A.Annotation] = []
        while self.at("@"):
            out.append(self.annotation())
        return out

    def annotation(self) -> A.Annotation:
        at = self.expect("@")
        t = self.tok
        if t.kind not in ("ident", "kw"):
            raise self.error("an annotation name")
        self.advance()
        name = str(t.value)
        if name == "pragma":
            return self.pragma_annotation(at)
        if self.at("("):
            close = self.tok
            body = self.balanced("(", ")")
            deferred = None
            if name == "p4runtime_translation":
                # p4c parses this body in its P4Info pass (P4RuntimeAnnotations), after the
                # front end removed what is unused: an error here fails only P4Info, and only
                # for a type p4c keeps (p4info_newtypes.check_translations; measured)
                try:
                    self.check_translation(body, self.toks[self.pos - 1] if body else close)
                except P4Error as e:
                    deferred = (e.message, e.loc)
            ann = A.Annotation(name, raw=_join(body), loc=at.loc, deferred_error=deferred)
            ann.exprs = self.try_sub_exprs(body)
            if name in _KV_ANNOTATIONS and body:
                # p4c's ParseAnnotations reads these two as `key = expression, ...`
                ann.kv = self.try_sub(body, self.kv_list)
            return ann
        if self.at("["):
            body = self.balanced("[", "]")
            ann = A.Annotation(name, raw=_join(body), structured=True, loc=at.loc)
            kv = self.try_sub(body, self.kv_list)
            if kv is not None and body:
                ann.kv = kv
            else:
                exprs = self.try_sub_exprs(body)
                if exprs is None:
                    raise P4Error("syntax error in structured annotation", at.loc)
                ann.exprs = exprs
            return ann
        return A.Annotation(name, loc=at.loc)

    def check_translation(self, body: list[Token], close: Token) -> None:
        """``@p4runtime_translation("uri", T)`` is grammar in p4c: T is ``string``,
        ``bit<INTEGER>`` or (legacy) an integer.

        Example::

            >>> prog = Parser(tokenize('@p4runtime_translation("u", bool) type bit<8> t;')).parse_program()
            >>> prog.decls[0].annotations[0].deferred_error[0]
            'syntax error, unexpected BOOL, expecting BIT or STRING or INTEGER'
        """
        toks = body + [Token("op", ")", close.loc, ")")]
        i = 0

        def want(ok: bool, expected: str) -> None:
            if not ok:
                raise syntax_error(toks[i], expected)

        want(toks[i].kind == "string", "a string literal")
        i += 1
        want(toks[i].kind == "op" and toks[i].value == ",", "','")
        i += 1
        t = toks[i]
        if t.kind == "kw" and t.value == "bit":
            for expected in ("<", "int", ">"):
                i += 1
                want(toks[i].kind == "int" if expected == "int" else toks[i].value == expected,
                     "the width of bit<W>" if expected == "int" else
                     "the '>' of bit<W>" if expected == ">" else f"'{expected}'")
        else:
            want(t.kind == "int" or (t.kind == "kw" and t.value == "string"), "string, bit<W> or an integer")
        i += 1
        want(toks[i].kind == "op" and toks[i].value == ")", "')'")

    def pragma_annotation(self, at: Token) -> A.Annotation:
        toks: list[Token] = []
        line = at.loc
        while self.tok.kind != "eof" and self.tok.loc.line == line.line and self.tok.loc.file == line.file:
            toks.append(self.advance())
        if not toks:
            raise self.error("a pragma name")
        ann = A.Annotation(str(toks[0].value), raw=_join(toks[1:]), loc=at.loc)
        ann.exprs = self.try_sub_exprs(toks[1:])
        return ann

    def balanced(self, open_: str, close: str) -> list[Token]:
        """Consume ``open_ ... close`` (nested), returning the tokens in between."""
        self.expect(open_)
        body: list[Token] = []
        pairs = {"(": ")", "[": "]", "{": "}"}
        stack: list[str] = []
        while True:
            t = self.tok
            if t.kind == "eof":
                raise self.error(f"'{close}'")
            if t.kind == "op" and t.value in pairs:
                stack.append(pairs[str(t.value)])
            elif t.kind == "op" and t.value in (")", "]", "}"):
                if not stack:
                    if t.value != close:
                        raise self.error(f"'{close}'")
                    self.advance()
                    return body
                if stack[-1] != t.value:
                    raise self.error(f"'{stack[-1]}'")
                stack.pop()
            body.append(self.advance())

    def try_sub(self, body: list[Token], fn: Callable[["Parser"], T]) -> Optional[T]:
        if not body:
            return None
        eof = Token("eof", "", body[-1].loc, "")
        sub = Parser(body + [eof], self.type_names)
        sub.speculating = 1
        try:
            result = fn(sub)
        except (_Backtrack, P4Error):
            return None
        return result if sub.tok.kind == "eof" else None

    def try_sub_exprs(self, body: list[Token]) -> Optional[list[A.Expr]]:
        if not body:
            return []
        return self.try_sub(body, lambda p: p.comma_list(p.expression_or_dontcare, end=None))

    @staticmethod
    def kv_list(p: "Parser") -> dict[str, A.Expr]:
        out: dict[str, A.Expr] = {}
        while True:
            k = p.tok
            if k.kind not in ("ident", "kw"):
                raise _Backtrack()
            p.advance()
            p.expect("=")
            out[str(k.value)] = p.expression()
            if not p.accept(","):
                return out
            if p.tok.kind == "eof":
                return out

    # ------------------------------------------------------------------ types
    def type_params(self) -> list[str]:
        """Optional ``<A, B>`` on a declaration; the names become type names."""
        if not self.at("<"):
            return []
        self.advance()
        names = [self.name("a type parameter")]
        while self.accept(","):
            names.append(self.name("a type parameter"))
        self.expect(">")
        self.type_names.update(names)
        return names

    def type_ref(self) -> A.TypeRef:
        t = self.tok
        base: A.TypeRef
        if t.kind == "kw":
            v = t.value
            if v in ("bit", "int"):
                self.advance()
                if self.at("<"):
                    self.advance()
                    width = self.type_width(str(v))
                    self.expect(">")
                    base = A.BitType(width, signed=(v == "int"), loc=t.loc)
                elif v == "bit":
                    base = A.BitType(A.IntLit(1, loc=t.loc), loc=t.loc)
                else:
                    base = A.BaseType("int", loc=t.loc)
            elif v == "varbit":
                self.advance()
                self.expect("<")
                width = self.type_width("varbit")
                self.expect(">")
                base = A.VarbitType(width, loc=t.loc)
            elif v in _BASE_TYPES:
                self.advance()
                base = A.BaseType(str(v), loc=t.loc)
            elif v == "tuple":
                self.advance()
                base = A.TupleType(self.type_args(), loc=t.loc)
            elif v == "list":   # p4c's grammar; a value of it is refused by the checker
                self.advance()
                base = A.NamedType("list", self.type_args(), loc=t.loc)
            else:
                raise self.error("a type")
        elif t.kind == "ident" or (self.at(".") and self.peek().kind == "ident"):
            is_global = self.accept(".")
            nt = self.advance()
            args = self.type_args() if self.at("<") else []
            base = A.NamedType(str(nt.value), args, is_global, loc=nt.loc)
        elif self.at("_"):
            self.advance()
            return A.DontCareType(loc=t.loc)
        else:
            raise self.error("a type")
        while self.at("["):
            self.advance()
            size = self.expression()
            self.expect("]")
            base = A.StackType(base, size, loc=base.loc)
        return base

    def type_width(self, kind: str) -> A.Expr:
        t = self.tok
        if t.kind == "int":
            self.advance()
            check_type_width(kind, int(t.value), t.loc)  # type: ignore[call-overload]
            return A.IntLit(int(t.value), t.width, t.signed, text=t.text, loc=t.loc)  # type: ignore[arg-type]
        if self.at("("):
            self.advance()
            e = self.expression()
            self.expect(")")
            return e
        if t.kind == "ident":
            self.advance()
            return A.NameRef(str(t.value), loc=t.loc)
        raise self.error("an integer width")

    def type_args(self) -> list[A.TypeRef]:
        self.expect("<")
        args: list[A.TypeRef] = []
        if not self.at(">"):
            args.append(self.type_arg())
            while self.accept(","):
                args.append(self.type_arg())
        self.expect(">")
        return args

    def type_arg(self) -> A.TypeRef:
        if self.tok.kind == "int":
            raise self.error("a type")
        return self.type_ref()

    def starts_type(self) -> bool:
        t = self.tok
        if t.kind == "kw":
            return t.value in _TYPE_START_KW
        return t.kind == "ident" or (self.at(".") and self.peek().kind == "ident")

    # ------------------------------------------------------------------ simple declarations
    def const_decl(self, annots: list[A.Annotation]) -> A.ConstDecl:
        start = self.expect("const")
        ty = self.type_ref()
        name = self.name()
        self.expect("=")
        value = self.initializer()
        self.expect(";")
        return A.ConstDecl(name, ty, value, annotations=annots, loc=start.loc)

    def initializer(self) -> A.Expr:
        return self.expression()

    def typedef_decl(self, annots: list[A.Annotation], newtype: bool) -> A.TypedefDecl:
        start = self.advance()
        if self.at("header", "header_union", "struct", "enum"):
            raise self.unsupported("type declarations inside typedef")
        ty = self.type_ref()
        name = self.name()
        self.expect(";")
        self.type_names.add(name)
        return A.TypedefDecl(name, ty, newtype, annotations=annots, loc=start.loc)

    def struct_like(self, annots: list[A.Annotation]) -> A.StructLikeDecl:
        start = self.advance()
        name_loc = self.tok.loc
        name = self.name()
        self.type_names.add(name)
        tparams = self.type_params()
        self.expect("{")
        fields: list[A.StructField] = []
        while not self.at("}"):
            fa = self.annotations()
            ft = self.tok
            ty = self.type_ref()
            fname = self.name("a field name")
            if self.at("["):                   # p4c's grammar has it; p4c-bm2-ss fails on it
                raise self.unsupported(f"array field '{fname}' (T name[N])")
            if not self.accept(";"):
                raise self.error("'[' or ';'")     # p4c's grammar: also an array field here
            fields.append(A.StructField(ty, fname, fa, loc=ft.loc))
        self.expect("}")
        return A.StructLikeDecl(name, str(start.value), fields, tparams, annotations=annots, loc=start.loc,
                                name_loc=name_loc)

    def enum_decl(self, annots: list[A.Annotation]) -> A.EnumDecl:
        start = self.expect("enum")
        underlying: Optional[A.TypeRef] = None
        if not (self.tok.kind == "ident" and self.peek().kind == "op" and self.peek().value == "{"):
            underlying = self.type_ref()
        name = self.name()
        self.type_names.add(name)
        self.expect("{")
        members: list[str] = []
        values: list[A.Expr] = []
        while True:
            self.annotations()
            members.append(self.name("an enum member"))
            if underlying is not None:
                self.expect("=")
                values.append(self.expression())
            if not self.accept(","):
                break
            if self.at("}"):
                break
        self.expect("}")
        return A.EnumDecl(name, members, underlying, values if underlying is not None else None,
                          annotations=annots, loc=start.loc)

    def ident_list_block(self) -> list[str]:
        self.expect("{")
        members = [self.name()]
        while self.accept(","):
            if self.at("}"):
                break
            members.append(self.name())
        self.expect("}")
        return members

    def error_decl(self, annots: list[A.Annotation]) -> A.ErrorDecl:
        start = self.expect("error")
        return A.ErrorDecl("error", self.ident_list_block(), annotations=annots, loc=start.loc)

    def match_kind_decl(self, annots: list[A.Annotation]) -> A.MatchKindDecl:
        start = self.expect("match_kind")
        first = self.pos + 1     # the first member's token, after "{"
        members = self.ident_list_block()
        locs = [t.loc for t in self.toks[first:self.pos] if t.kind in ("ident", "kw")]
        return A.MatchKindDecl("match_kind", members, annotations=annots, loc=start.loc,
                               member_locs=locs if len(locs) == len(members) else [])

    # ------------------------------------------------------------------ parameters
    def params(self) -> list[A.Param]:
        self.expect("(")
        out: list[A.Param] = []
        if not self.at(")"):
            out.append(self.param())
            while self.accept(","):
                out.append(self.param())
        self.expect(")")
        return out

    def param(self) -> A.Param:
        annots = self.annotations()
        start = self.tok
        direction = ""
        if self.at(*_DIRECTIONS):
            direction = str(self.advance().value)
        named = self.tok if self.tok.kind == "ident" else self.peek() if self.at(".") else None
        if named is not None and not self.is_type_name(named):
            raise self.error(tok=named)     # p4c's lexer: a name not (yet) declared as a type
        ty = self.type_ref()
        name = self.name("a parameter name")
        default = None
        if self.accept("="):
            default = self.expression()
        return A.Param(direction, ty, name, default, annots, loc=start.loc)

    # ------------------------------------------------------------------ externs
    def extern_decl(self, annots: list[A.Annotation]) -> A.Decl:
        start = self.expect("extern")
        if self.tok.kind == "ident":
            nxt = self.peek()
            is_object = nxt.kind == "op" and nxt.value == "{"
            if not is_object and nxt.kind == "op" and nxt.value == "<":
                save = self.pos
                self.advance()
                is_object = self.speculate(lambda: (self.type_params(), self.expect("{"))) is not None
                self.pos = save
            if is_object:
                name = self.name()
                self.type_names.add(name)
                tparams = self.type_params()
                self.expect("{")
                methods: list[A.MethodDecl] = []
                while not self.at("}"):
                    methods.append(self.method_decl(name))
                self.expect("}")
                return A.ExternDecl(name, tparams, methods, annotations=annots, loc=start.loc)
        ret = self.type_ref()
        name = self.name("a function name")
        tparams = self.type_params()
        if tparams:
            self.generic_names.add(name)
        params = self.params()
        self.expect(";")
        return A.FunctionProto(name, ret, tparams, params, annotations=annots, loc=start.loc)

    def method_decl(self, extern_name: str) -> A.MethodDecl:
        annots = self.annotations()
        start = self.tok
        is_abstract = self.accept("abstract")
        if self.at_ident(extern_name) and self.peek().kind == "op" and self.peek().value in ("(", "<"):
            name = self.name()
            tparams = self.type_params()
            params = self.params()
            self.expect(";")
            return A.MethodDecl(name, None, tparams, params, is_abstract, annotations=annots, loc=start.loc)
        ret = self.type_ref()
        name = self.name("a method name")
        tparams = self.type_params()
        if tparams:
            self.generic_names.add(name)
        params = self.params()
        self.expect(";")
        return A.MethodDecl(name, ret, tparams, params, is_abstract, annotations=annots, loc=start.loc)

    # ------------------------------------------------------------------ functions, instantiations
    def function_or_instantiation(self, annots: list[A.Annotation]) -> A.Decl:
        start = self.tok
        if not self.starts_type():
            raise self.error("a declaration")
        ty = self.type_ref()
        if self.at("("):
            return self.instantiation_rest(annots, ty, start)
        name = self.name("a name")
        tparams = self.type_params()
        if tparams:
            self.generic_names.add(name)
        elif not (isinstance(ty, A.BaseType) and ty.name == "void"):
            self.function_returns[name] = ty
        params = self.params()
        body = self.block()
        return A.FunctionDecl(name, ty, tparams, params, body, annotations=annots, loc=start.loc)

    def instantiation_rest(self, annots: list[A.Annotation], ty: A.TypeRef, start: Token) -> A.Instantiation:
        args = self.arguments()
        name = self.name("an instance name")
        init: Optional[list[A.Decl]] = None
        if self.accept("="):
            self.expect("{")
            init = []
            while not self.at("}"):
                a = self.annotations()
                init.append(self.function_or_instantiation(a))
            self.expect("}")
        self.expect(";")
        return A.Instantiation(name, ty, args, init, annotations=annots, loc=start.loc)

    def value_set_decl(self, annots: list[A.Annotation]) -> A.ValueSetDecl:
        start = self.expect("value_set")
        self.expect("<")
        ty = self.type_arg()
        self.expect(">")
        self.expect("(")
        size = self.expression()
        self.expect(")")
        name = self.name()
        self.expect(";")
        return A.ValueSetDecl(name, ty, size, annotations=annots, loc=start.loc)

    # ------------------------------------------------------------------ parser / control / package
    def parser_decl(self, annots: list[A.Annotation]) -> A.Decl:
        start = self.expect("parser")
        name = self.name()
        self.type_names.add(name)
        tparams = self.type_params()
        params = self.params()
        if self.accept(";"):
            return A.ParserTypeDecl(name, tparams, params, annotations=annots, loc=start.loc)
        ctor = self.params() if self.at("(") else []
        self.expect("{")
        locals_: list[A.Decl] = []
        states: list[A.ParserState] = []
        while not self.at("}"):
            a = self.annotations()
            if self.at_ident("state") and self.peek().kind == "ident":
                states.append(self.parser_state(a))
            elif states:                  # p4c's grammar: the locals, then only states
                raise self.error("'state'")
            else:
                locals_.append(self.local_decl(a, allow_value_set=True))
        if not states:                    # and at least one state
            raise self.error(_PARSER_LOCAL_START)
        self.expect("}")
        return A.ParserDecl(name, tparams, params, ctor, locals_, states, annotations=annots, loc=start.loc)

    def parser_state(self, annots: list[A.Annotation]) -> A.ParserState:
        start = self.advance()
        name = self.name("a state name")
        self.expect("{")
        stmts: list = []
        transition: Optional[A.Transition] = None
        while not self.at("}"):
            if self.at("transition"):
                transition = self.transition()
                break
            stmts.append(self.statement())
        end = self.expect("}")
        if transition is None:
            # p4c's CreateBuiltins: a state without a transition statement goes to reject
            # (with the warning "implicit transition to `reject'")
            transition = A.Transition(state="reject", loc=end.loc)
        return A.ParserState(name, stmts, transition, annotations=annots, loc=start.loc)

    def transition(self) -> A.Transition:
        start = self.expect("transition")
        if self.at("select"):
            self.advance()
            self.expect("(")
            keys = self.comma_list(self.expression, end=")")
            self.expect(")")
            self.expect("{")
            cases: list[A.SelectCase] = []
            while not self.at("}"):
                self.annotations()
                ct = self.tok
                ks = self.keyset()
                self.expect(":")
                st = self.name("a state name")
                self.expect(";")
                cases.append(A.SelectCase(ks, st, loc=ct.loc))
            self.expect("}")
            return A.Transition(None, keys, cases, loc=start.loc)
        state = self.name("a state name")
        self.expect(";")
        return A.Transition(state, loc=start.loc)

    def keyset(self) -> A.Expr:
        """A select/entry keyset: simple, or a parenthesised tuple ``(k1, k2)``."""
        if self.at("("):
            start = self.tok

            def tuple_form() -> A.Expr:
                self.advance()
                elems = self.comma_list(self.simple_keyset, end=")")
                self.expect(")")
                if not self.at(":"):
                    raise _Backtrack()
                return elems[0] if len(elems) == 1 else A.ListExpr(elems, loc=start.loc)

            r = self.speculate(tuple_form)
            if r is not None:
                return r
        return self.simple_keyset()

    def simple_keyset(self) -> A.Expr:
        t = self.tok
        if self.at("default"):
            self.advance()
            return A.DefaultExpr(loc=t.loc)
        if self.at("_"):
            self.advance()
            return A.DontCare(loc=t.loc)
        e = self.expression()
        if self.at("&&&", ".."):
            op = str(self.advance().value)
            return A.Binary(op, e, self.expression(), loc=e.loc)
        return e

    def control_decl(self, annots: list[A.Annotation]) -> A.Decl:
        start = self.expect("control")
        name = self.name()
        self.type_names.add(name)
        tparams = self.type_params()
        params = self.params()
        if self.accept(";"):
            return A.ControlTypeDecl(name, tparams, params, annotations=annots, loc=start.loc)
        ctor = self.params() if self.at("(") else []
        self.expect("{")
        locals_: list[A.Decl] = []
        while not self.at_ident("apply"):
            if self.at("}"):
                raise self.error(_CONTROL_LOCAL_START)
            a = self.annotations()
            if self.at("action"):
                locals_.append(self.action_decl(a))
            elif self.at("table"):
                locals_.append(self.table_decl(a))
            else:
                locals_.append(self.local_decl(a, allow_value_set=False))
        self.advance()
        body_annots = self.annotations()  # the apply block is a block statement: it may be annotated
        body = self.block()
        body.annotations = body_annots
        self.expect("}")
        return A.ControlDecl(name, tparams, params, ctor, locals_, body, annotations=annots, loc=start.loc)

    def package_decl(self, annots: list[A.Annotation]) -> A.PackageTypeDecl:
        start = self.expect("package")
        name = self.name()
        self.type_names.add(name)
        tparams = self.type_params()
        params = self.params()
        self.expect(";")
        return A.PackageTypeDecl(name, tparams, params, annotations=annots, loc=start.loc)

    def local_decl(self, annots: list[A.Annotation], allow_value_set: bool) -> A.Decl:
        """const, variable or instantiation inside a parser/control (value_set in parsers)."""
        if self.at("const"):
            return self.const_decl(annots)
        if self.at("value_set") and allow_value_set:
            return self.value_set_decl(annots)
        if self.at("action") and allow_value_set:
            return self.action_decl(annots)
        d = self.var_or_instance(annots)
        if d is None:                     # bison's list at this point (measured, 1.2.5.16)
            raise self.error(_PARSER_LOCAL_START if allow_value_set else _CONTROL_LOCAL_START)
        return d

    def var_or_instance(self, annots: list[A.Annotation]) -> Optional[A.Decl]:
        """``T x;``, ``T x = e;``, ``T(args) x;`` — or None (position unchanged)."""
        start = self.tok
        begin = self.pos
        if not self.starts_type():
            return None

        def head() -> tuple[A.TypeRef, str]:
            ty = self.type_ref()
            if self.at("("):
                return ty, "("
            if self.tok.kind != "ident":
                raise _Backtrack()
            nxt = self.peek()
            if not (nxt.kind == "op" and nxt.value in (";", "=")):
                raise _Backtrack()
            return ty, "var"

        r = self.speculate(head)
        if r is None:
            return None
        ty, kind = r
        if kind == "(":
            inst = self.speculate(lambda: self.instantiation_rest(annots, ty, start))
            if inst is None:
                self.pos = begin
                return None
            return inst
        name_loc = self.tok.loc
        name = self.name()
        init = None
        if self.accept("="):
            init = self.initializer()
        self.expect(";")
        return A.VarDecl(name, ty, init, annotations=annots, loc=start.loc, name_loc=name_loc)

    # ------------------------------------------------------------------ actions and tables
    def action_decl(self, annots: list[A.Annotation]) -> A.ActionDecl:
        start = self.expect("action")
        name = self.name("an action name")
        params = self.params()
        body = self.block()
        return A.ActionDecl(name, params, body, annotations=annots, loc=start.loc)

    def table_decl(self, annots: list[A.Annotation]) -> A.TableDecl:
        start = self.expect("table")
        name_loc = self.tok.loc
        name = self.name("a table name")
        if self.at("(") and self.peek().kind == "op" and self.peek().value == ")":
            self.advance()  # ``table t() {`` — an empty parameter list (older P4_16 programs)
            self.advance()
        self.expect("{")
        props: list[A.TableProperty] = []
        if self.at("}"):                  # p4c's grammar: at least one property
            raise self.error("a table property")
        while not self.at("}"):
            props.append(self.table_property())
        self.expect("}")
        return A.TableDecl(name, props, annotations=annots, loc=start.loc, name_loc=name_loc)

    def table_property(self) -> A.TableProperty:
        annots = self.annotations()
        start = self.tok
        is_const = self.accept("const")
        pname = self.name("a table property")
        if pname == "key":
            self.expect("=")
            self.expect("{")
            elems: list[A.KeyElement] = []
            while not self.at("}"):
                kt = self.tok
                e = self.expression()
                self.expect(":")
                mk = self.name("a match kind")
                ka = self.annotations()
                self.expect(";")
                elems.append(A.KeyElement(e, mk, ka, loc=kt.loc))
            self.expect("}")
            return A.TableProperty("key", elems, is_const, annots, loc=start.loc)
        if pname == "actions":
            self.expect("=")
            self.expect("{")
            refs: list[A.ActionRef] = []
            while not self.at("}"):
                aa = self.annotations()
                ref = self.action_ref()
                ref.annotations = aa
                self.expect(";")
                refs.append(ref)
            self.expect("}")
            return A.TableProperty("actions", refs, is_const, annots, loc=start.loc)
        if pname == "entries":
            self.expect("=")
            self.expect("{")
            entries: list[A.TableEntry] = []
            while not self.at("}"):
                entries.append(self.table_entry(is_const))
            self.expect("}")
            return A.TableProperty("entries", entries, is_const, annots, loc=start.loc)
        if pname == "default_action":
            self.expect("=")
            ref = self.action_ref()
            self.expect(";")
            return A.TableProperty("default_action", ref, is_const, annots, loc=start.loc)
        self.expect("=")
        value = self.expression()
        self.expect(";")
        return A.TableProperty(pname, value, is_const, annots, loc=start.loc)

    def action_ref(self) -> A.ActionRef:
        t = self.tok
        is_global = self.accept(".")
        n = self.tok
        expr: A.Expr = A.NameRef(self.name("an action name"), is_global, loc=n.loc)
        while self.at(".") and self.peek().kind == "ident":
            self.advance()
            m = self.advance()
            expr = A.Member(expr, str(m.value), loc=expr.loc, name_loc=m.loc)
        args: list[A.Argument] = []
        has_parens = False
        if self.at("("):
            has_parens = True
            args = self.arguments()
        return A.ActionRef(expr, args, [], has_parens, loc=t.loc)

    def table_entry(self, table_const: bool) -> A.TableEntry:
        annots = self.annotations()
        start = self.tok
        is_const = self.accept("const") or table_const
        priority = None
        if self.at_ident("priority") and self.peek().kind == "op" and self.peek().value == "=":
            self.advance()
            self.advance()
            priority = self.expression()
            self.expect(":")
        keys = self.entry_keys(self.keyset())
        self.expect(":")
        ref = self.action_ref()
        ref.annotations = self.annotations()
        self.expect(";")
        return A.TableEntry(keys, ref, priority, is_const, annots, loc=start.loc)

    def entry_keys(self, ks: A.Expr) -> list[A.Expr]:
        """The keys of an entry's keyset, one per key element of the table, as p4c reads them.

        A tuple ``(k1, k2)`` and a list expression ``{k1, k2}`` both hold one keyset per key
        (p4c's ``entry`` rule takes any list expression as the keys, so ``{x}`` is the keyset
        of a one-key table); anything else is a single keyset. A list expression holds
        expressions only: ``_`` or ``default`` in it is p4c's syntax error (``...`` is an
        expression there).

        Example: ``{8w1, 8w2} : a();`` and ``(8w1, 8w2) : a();`` give ``[8w1, 8w2]``.
        """
        if not isinstance(ks, A.ListExpr):
            return [ks]
        if getattr(ks, "braced", False):
            for e in ks.elems:
                if not isinstance(e, (A.DontCare, A.DefaultExpr)):
                    continue
                tok = next((t for t in self.toks if t.loc == e.loc), None)
                if tok is not None and tok.text != "...":
                    # p4c-bm2-ss 1.2.5.16 (measured): "unexpected _, expecting }"
                    raise syntax_error(tok, "'}'", self.type_names)
        return list(ks.elems)

    # ------------------------------------------------------------------ statements
    def block(self) -> A.BlockStmt:
        start = self.expect("{")
        stmts: list = []
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error("'}'")
            stmts.append(self.statement())
        self.expect("}")
        return A.BlockStmt(stmts, loc=start.loc)

    def statement(self) -> A.Node:
        annots = self.annotations()
        t = self.tok
        if self.at("{"):
            b = self.block()
            b.annotations = annots
            return b
        if t.kind == "kw":
            v = t.value
            if v == "if":
                self.advance()
                self.expect("(")
                cond = self.expression()
                self.expect(")")
                then = self.statement()
                other = self.statement() if self.accept("else") else None
                return A.IfStmt(cond, then, other, loc=t.loc)  # type: ignore[arg-type]
            if v == "switch":
                return self.switch_stmt()
            if v == "exit":
                self.advance()
                self.expect(";")
                return A.ExitStmt(loc=t.loc)
            if v == "return":
                self.advance()
                value = None if self.at(";") else self.expression()
                self.expect(";")
                return A.ReturnStmt(value, loc=t.loc)
            if v == "const":
                return self.const_decl(annots)
            if v == "for":
                return self.for_stmt()
            if v in ("break", "continue"):
                self.advance()
                self.expect(";")
                return A.BreakStmt(loc=t.loc) if v == "break" else A.ContinueStmt(loc=t.loc)
            if v in ("action", "table"):
                raise self.error("a statement")
        if self.accept(";"):
            return A.EmptyStmt(loc=t.loc)
        d = self.var_or_instance(annots)
        if d is not None:
            return d
        lhs = self.expression()
        assign = self.assignment_rest(lhs, t)
        if assign is not None:
            self.expect(";")
            return assign
        if isinstance(lhs, A.Call):
            self.expect(";")
            return A.CallStmt(lhs, loc=t.loc)
        raise self.error("'='" if not self.at(";") else "a statement")

    def assignment_rest(self, lhs: A.Expr, start: Token,
                        hoist: bool = True) -> Optional[A.Stmt]:
        """``= rhs`` or a compound assignment ``op= rhs`` after ``lhs``; None if neither.

        ``lhs op= rhs`` becomes ``lhs = lhs op (rhs)``, as p4c's front end rewrites it
        (RemoveOpAssign, after SideEffectOrdering has evaluated the left side once). The
        rewrite reads the left side twice, so a call in it is evaluated once first, into a
        temporary, as SideEffectOrdering does: ``{ T tmp = f(..); a[tmp] = a[tmp] | r; }``
        (``hoist``; a call whose result type the parser does not know, e.g. a method's, is
        refused as unsupported).

        Example::

            >>> st = Parser(tokenize("x |+|= y + 1;")).statement()
            >>> st.rhs.op, st.rhs.left.name, st.rhs.right.op
            ('|+|', 'x', '+')
        """
        if self.accept("="):
            return A.AssignStmt(lhs, self.expression(), loc=start.loc)
        op_tok = self.tok
        if op_tok.kind == "op" and op_tok.value in _COMPOUND_ASSIGN:
            op = _COMPOUND_ASSIGN[str(op_tok.value)]
            self.advance()
        elif self.shift_right_assign_here():
            op = ">>"
            self.advance()
            self.advance()
        else:
            return None
        temps: list[A.Node] = []
        if not isinstance(lhs, A.Call) and any(isinstance(node, A.Call) for node, _ in walk(lhs, ())):
            if not hoist:
                raise self.unsupported(f"compound assignment {op}= with a call in its left side here", op_tok)
            lhs = self.hoist_calls(lhs, temps, op_tok)
        rhs = self.expression()
        assign = A.AssignStmt(lhs, A.Binary(op, copy.deepcopy(lhs), rhs, loc=lhs.loc), op, loc=start.loc)
        return A.BlockStmt(temps + [assign], loc=start.loc) if temps else assign

    def hoist_calls(self, e: A.Expr, temps: list[A.Node], op_tok: Token) -> A.Expr:
        """``e`` with each call (outermost first, in evaluation order) replaced by a new
        local that the declaration appended to ``temps`` initialises with the call."""
        if isinstance(e, A.Call):
            ret = self.function_returns.get(e.func.name) if isinstance(e.func, A.NameRef) else None
            if ret is None or e.type_args:
                raise self.unsupported(f"compound assignment {op_tok.value} with a call in its left side "
                                       "other than of a non-generic function declared before", op_tok)
            name = f"p4sim_opassign_tmp{len(temps)}_{op_tok.loc.line}_{op_tok.loc.col}"
            temps.append(A.VarDecl(name, copy.deepcopy(ret), e, loc=e.loc))
            return A.NameRef(name, loc=e.loc)
        for f in dataclasses.fields(e):
            value = getattr(e, f.name)
            if isinstance(value, A.Expr):
                setattr(e, f.name, self.hoist_calls(value, temps, op_tok))
        return e

    def shift_right_assign_here(self) -> bool:
        """``>`` followed by an adjacent ``>=`` spells ``>>=``."""
        a, b = self.tok, self.peek()
        return (a.kind == "op" and a.value == ">" and b.kind == "op" and b.value == ">="
                and a.loc.file == b.loc.file and a.loc.line == b.loc.line and b.loc.col == a.loc.col + 1)

    def for_stmt(self) -> A.Stmt:
        """``for (init; cond; update) stmt`` or ``for (T x in collection) stmt``."""
        start = self.expect("for")
        self.expect("(")
        forin = self.speculate(self.for_in_head)
        if forin is not None:
            ty, name = forin
            coll = self.expression()
            if self.at(".."):
                self.advance()
                coll = A.Binary("..", coll, self.expression(), loc=coll.loc)
            self.expect(")")
            body = self.statement()
            return A.ForInStmt(ty, name, coll, body, loc=start.loc)  # type: ignore[arg-type]
        init = [] if self.at(";") else self.comma_list(self.for_simple_stmt, end=None)
        self.expect(";")
        cond = self.expression()         # p4c's grammar: the condition is required
        self.expect(";")
        update = [] if self.at(")") else self.comma_list(self.for_simple_stmt, end=None)
        self.expect(")")
        body = self.statement()
        return A.ForStmt(init, cond, update, body, loc=start.loc)  # type: ignore[arg-type]

    def for_in_head(self) -> tuple[A.TypeRef, str]:
        if self.tok.kind == "ident" and self.peek().kind == "kw" and self.peek().value == "in":
            # p4c's grammar: for ([annotations] typeRef name in ...): the type is required
            raise syntax_error(self.peek(), None, self.type_names)
        ty = self.type_ref()
        if self.tok.kind != "ident" or not (self.peek().kind == "kw" and self.peek().value == "in"):
            raise _Backtrack()
        name = self.name()
        self.advance()
        return ty, name

    def for_simple_stmt(self) -> A.Node:
        """One element of a for loop's init or update list (no trailing ';')."""
        t = self.tok
        if self.starts_type():
            def decl() -> tuple[A.TypeRef, str]:
                ty = self.type_ref()
                if self.tok.kind != "ident" or not (self.peek().kind == "op" and self.peek().value == "="):
                    raise _Backtrack()
                return ty, self.name()
            r = self.speculate(decl)
            if r is not None:
                self.expect("=")
                return A.VarDecl(r[1], r[0], self.initializer(), loc=t.loc)
        lhs = self.expression()
        assign = self.assignment_rest(lhs, t, hoist=False)
        if assign is not None:
            return assign
        if isinstance(lhs, A.Call):
            return A.CallStmt(lhs, loc=t.loc)
        raise self.error("'='")

    def switch_stmt(self) -> A.SwitchStmt:
        start = self.expect("switch")
        self.expect("(")
        e = self.expression()
        self.expect(")")
        self.expect("{")
        cases: list[A.SwitchCase] = []
        while not self.at("}"):
            ct = self.tok
            if self.accept("default"):
                label: A.Expr = A.DefaultExpr(loc=ct.loc)
            else:
                label = self.expression()
            self.expect(":")
            body = self.block() if self.at("{") else None
            cases.append(A.SwitchCase(label, body, loc=ct.loc))
        self.expect("}")
        return A.SwitchStmt(e, cases, loc=start.loc)

    # ------------------------------------------------------------------ expressions
    def comma_list(self, item: Callable[[], T], end: Optional[str]) -> list[T]:
        out: list[T] = []
        if end is not None and self.at(end):
            return out
        out.append(item())
        while self.accept(","):
            out.append(item())
        return out

    def expression_or_dontcare(self) -> A.Expr:
        if self.at("_"):
            t = self.advance()
            return A.DontCare(loc=t.loc)
        return self.expression()

    def arguments(self) -> list[A.Argument]:
        self.expect("(")
        args = self.comma_list(self.argument, end=")")
        self.expect(")")
        return args

    def argument(self) -> A.Argument:
        t = self.tok
        if t.kind == "ident" and self.peek().kind == "op" and self.peek().value == "=":
            self.advance()
            self.advance()
            return A.Argument(self.expression_or_dontcare(), str(t.value), loc=t.loc)
        return A.Argument(self.expression_or_dontcare(), loc=t.loc)

    def expression(self) -> A.Expr:
        cond = self.binary(0)
        if self.at("?"):
            self.advance()
            then = self.expression()
            self.expect(":")
            other = self.expression()
            return A.Ternary(cond, then, other, loc=cond.loc)
        return cond

    def binary_op_here(self, ops: tuple[str, ...]) -> Optional[str]:
        t = self.tok
        if t.kind != "op":
            return None
        if ">>" in ops and self.shift_right_here():
            return ">>"
        if t.value in ops:
            if t.value == ">" and (self.shift_right_here() or self.shift_right_assign_here()):
                return None
            return str(t.value)
        return None

    def binary(self, level: int) -> A.Expr:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        ops = _BINARY_LEVELS[level]
        left = self.binary(level + 1)
        while True:
            op = self.binary_op_here(ops)
            if op is None:
                return left
            self.advance()
            if op == ">>":
                self.advance()
            right = self.binary(level + 1)
            left = A.Binary(op, left, right, loc=left.loc)

    def unary(self) -> A.Expr:
        t = self.tok
        if t.kind == "op" and t.value in ("!", "~", "-", "+"):
            self.advance()
            return A.Unary(str(t.value), self.unary(), loc=t.loc)
        if self.at("("):
            cast = self.speculate(self.cast)
            if cast is not None:
                return cast
        return self.postfix(self.primary())

    def cast(self) -> A.Expr:
        start = self.expect("(")
        t = self.tok
        if not (t.kind == "kw" and t.value in _TYPE_START_KW or self.is_type_name(t)
                or (self.at(".") and self.is_type_name(self.peek()))):
            raise _Backtrack()
        ty = self.type_ref()
        self.expect(")")
        nt = self.tok
        if nt.kind in ("op",) and nt.value not in _EXPR_START_OPS:
            raise _Backtrack()
        if nt.kind == "eof":
            raise _Backtrack()
        return A.Cast(ty, self.unary(), loc=start.loc)

    def primary(self) -> A.Expr:
        t = self.tok
        if t.kind == "int":
            self.advance()
            return A.IntLit(int(t.value), t.width, t.signed, text=t.text, loc=t.loc)  # type: ignore[arg-type]
        if t.kind == "string":
            self.advance()
            return A.StringLit(str(t.value), loc=t.loc)
        if t.kind == "ident":
            self.advance()
            return A.NameRef(str(t.value), loc=t.loc)
        if t.kind == "kw":
            v = t.value
            if v in ("true", "false"):
                self.advance()
                return A.BoolLit(v == "true", loc=t.loc)
            if v == "error":
                self.advance()
                return A.NameRef("error", loc=t.loc)
            if v == "this":
                raise self.unsupported("'this'")
            if v in ("bit", "int", "varbit", "tuple", "bool", "string"):
                ty = self.type_ref()
                return A.TypeNameExpr(ty, loc=t.loc)
            if v == "default":
                self.advance()
                return A.DefaultExpr(loc=t.loc)
        if t.kind == "op":
            v = t.value
            if v == "." and self.peek().kind == "ident":
                self.advance()
                n = self.advance()
                return A.NameRef(str(n.value), True, loc=t.loc)
            if v == "(":
                self.advance()
                e = self.expression()
                self.expect(")")
                return e
            if v == "{":
                return self.brace_expr()
            if v == "_":
                self.advance()
                return A.DontCare(loc=t.loc)
            if v == "...":
                self.advance()
                return A.DefaultExpr(loc=t.loc)
        raise self.error("an expression")

    def brace_expr(self) -> A.Expr:
        start = self.expect("{")
        if self.at("}"):
            self.advance()
            return A.ListExpr([], loc=start.loc)
        if self.tok.kind == "ident" and self.peek().kind == "op" and self.peek().value == "=":
            fields: list[tuple[str, A.Expr]] = []
            dots = False
            while True:
                if self.at("..."):     # p4c's grammar: only last
                    self.advance()
                    dots = True
                    break
                n = self.name("a field name")
                self.expect("=")
                fields.append((n, self.expression()))
                if not self.accept(","):
                    break
                if self.at("}"):
                    break
            self.expect("}")
            return A.StructExpr(fields, loc=start.loc, dots=dots)
        elems: list[A.Expr] = [self.expression_or_dontcare()]
        while self.accept(","):
            if self.at("}"):
                break
            elems.append(self.expression_or_dontcare())
        self.expect("}")
        le = A.ListExpr(elems, loc=start.loc)
        le.braced = True  # type: ignore[attr-defined]
        return le

    def postfix(self, e: A.Expr) -> A.Expr:
        while True:
            if self.at("."):
                self.advance()
                m = self.tok
                if m.kind not in ("ident", "kw"):
                    raise self.error("a member name")
                self.advance()
                e = A.Member(e, str(m.value), loc=e.loc, name_loc=m.loc)
            elif self.at("["):
                self.advance()
                idx = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    e = A.Slice(e, idx, lo, loc=e.loc)
                elif self.accept("+:"):
                    width = self.expression()
                    self.expect("]")
                    e = A.Slice(e, _plus_slice_msb(idx, width), idx, plus=True, loc=e.loc)
                else:
                    self.expect("]")
                    e = A.Index(e, idx, loc=e.loc)
            elif self.at("("):
                args = self.arguments()
                e = A.Call(e, args, loc=e.loc)
            elif self.at("<") and self.may_take_type_args(e):
                r = self.speculate(self.type_args_then_call)
                if r is None:
                    return e
                targs, args = r
                e = A.Call(e, args, targs, loc=e.loc)
            else:
                return e

    def may_take_type_args(self, e: A.Expr) -> bool:
        if isinstance(e, A.NameRef):
            return e.name in self.type_names or e.name in self.generic_names or self.type_can_follow()
        if isinstance(e, A.Member):
            return True
        return False

    def type_can_follow(self) -> bool:
        nxt = self.peek()
        if nxt.kind == "kw":
            return nxt.value in _TYPE_START_KW
        return self.is_type_name(nxt) or (nxt.kind == "op" and nxt.value == "_")

    def type_args_then_call(self) -> tuple[list[A.TypeRef], list[A.Argument]]:
        targs = self.type_args()
        if not self.at("("):
            raise _Backtrack()
        return targs, self.arguments()


def _plus_slice_msb(lsb: A.Expr, width: A.Expr) -> A.Expr:
    """The msb of ``e[lsb +: width]`` (P4_16 1.2.4's indexed slice), ``lsb + width - 1``:
    a literal when both are literals, else an expression the checker folds.

    Example::

        >>> _plus_slice_msb(A.IntLit(8, text="8"), A.IntLit(8, text="8")).value
        15
    """
    if isinstance(lsb, A.IntLit) and isinstance(width, A.IntLit) and lsb.width is None and width.width is None:
        msb = lsb.value + width.value - 1
        return A.IntLit(msb, text=str(msb), loc=lsb.loc)
    total = A.Binary("+", copy.deepcopy(lsb), width, loc=lsb.loc)
    return A.Binary("-", total, A.IntLit(1, text="1", loc=lsb.loc), loc=lsb.loc)


def _join(toks: list[Token]) -> str:
    """Source text of a token run, with one space where the source had a gap."""
    out: list[str] = []
    prev: Optional[Token] = None
    for t in toks:
        if prev is not None and not (t.loc.line == prev.loc.line and t.loc.col == prev.end_col):
            out.append(" ")
        out.append(t.text)
        prev = t
    return "".join(out)

"""Loading the Python files of a lab by file path: the student's files (``predict.py``,
``readings.py`` …) and each lab's own ``lab.py``, with one loader for all of them.

Every call gives a fresh module (the student may have edited the file since), named
from the file's path and registered in ``sys.modules`` before it runs (``@dataclass``,
``typing.get_type_hints`` and pickling look modules up there). A file that does not
load — a ``SyntaxError``, an ``ImportError``, any exception while its top level runs —
raises :class:`StudentCodeError`, whose message names ``file:line`` and the line, in
place of a traceback through labkit.

Example::

    >>> mod = load_student_module(Path("labs/01-ecmp-hashing/predict.py"))  # doctest: +SKIP
    >>> mod.predict_uplink("10.0.0.1", "10.1.0.2", 49152, 4791, seed=0x1234ABCD)  # doctest: +SKIP
    2
    >>> load_student_module(Path("broken.py"))                              # doctest: +SKIP
    Traceback (most recent call last):
    labs.labkit.student.StudentCodeError: broken.py:3: SyntaxError: invalid syntax
        return crc16_arc(data) %
"""
from __future__ import annotations

import importlib.util
import linecache
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Optional

from labs.labkit.build import REPO, LabError

MODULE_PREFIX = "labkit_file_"
LOAD_HINT = ("Python stopped at the line named above while loading your file: fix that "
             "line (the TODO comments near it say what belongs there), then run "
             "`make check` again.")


class StudentCodeError(LabError):
    """A lab's Python file did not load. ``location`` is ``file:line`` (the file as the
    student sees it), ``message`` the whole explanation (also ``str(exc)``)."""

    def __init__(self, path: Path, location: str, message: str) -> None:
        self.path = path
        self.location = location
        self.message = message
        super().__init__(message)


def module_name(path: Path) -> str:
    """The ``sys.modules`` name of the file at ``path`` (unique per resolved path).

    >>> module_name(REPO / "labs" / "01-ecmp-hashing" / "predict.py")
    'labkit_file_labs_01_ecmp_hashing_predict'
    """
    resolved = path.resolve()
    try:
        rel = resolved.relative_to(REPO)
    except ValueError:
        rel = resolved
    return MODULE_PREFIX + re.sub(r"\W", "_", str(rel.with_suffix(""))).strip("_")


def shown_path(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (what a student types).

    >>> shown_path(REPO / "labs" / "03-pfc" / "pfc.p4")
    'labs/03-pfc/pfc.p4'
    """
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(REPO))
    except ValueError:
        return str(resolved)


def _syntax_error(path: Path, exc: SyntaxError) -> StudentCodeError:
    line = exc.lineno or 0
    location = f"{shown_path(Path(exc.filename or path))}:{line}"
    text = (exc.text or "").rstrip("\n")
    lines = [f"{location}: {type(exc).__name__}: {exc.msg}"]
    if text.strip():
        stripped = text.lstrip()
        lines.append(f"    {stripped}")
        if exc.offset:
            col = max(exc.offset - 1 - (len(text) - len(stripped)), 0)
            lines.append(f"    {' ' * col}^")
    return StudentCodeError(path, location, "\n".join(lines))


def _where(path: Path, exc: BaseException) -> tuple[str, Optional[int]]:
    """``file:line`` of the deepest frame of ``exc``'s traceback inside ``path``."""
    target = str(path.resolve())
    line: Optional[int] = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename and str(Path(frame.filename).resolve()) == target:
            line = frame.lineno
    return (f"{shown_path(path)}:{line}" if line else shown_path(path)), line


def describe_exception(path: Path, exc: BaseException) -> str:
    """What a student needs of an exception raised by code of the file ``path``: the
    error, ``file:line`` of the deepest line of that file it went through, that line.

    >>> def boom() -> None: raise ValueError("no uplink")
    >>> try:
    ...     boom()
    ... except ValueError as exc:
    ...     print(describe_exception(Path("elsewhere.py"), exc))
    elsewhere.py: ValueError: no uplink
    """
    location, line = _where(path, exc)
    lines = [f"{location}: {type(exc).__name__}: {exc}"]
    if line:
        source = linecache.getline(str(path.resolve()), line).strip()
        if source:
            lines.append(f"    {source}")
    return "\n".join(lines)


def _runtime_error(path: Path, exc: BaseException) -> StudentCodeError:
    """The deepest frame inside ``path`` names the line (an import, a typo …)."""
    return StudentCodeError(path, _where(path, exc)[0], describe_exception(path, exc))


def load_student_module(path: Path) -> ModuleType:
    """Run the Python file ``path`` as a fresh module and return it; raises
    :class:`StudentCodeError` (file:line, the line, the error) when it does not load."""
    path = Path(path)
    if not path.is_file():
        raise StudentCodeError(path, shown_path(path), f"{shown_path(path)}: file not found "
                               "(restore it from the lab's solution/ folder or git)")
    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StudentCodeError(path, shown_path(path), f"{shown_path(path)}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    linecache.checkcache(str(path.resolve()))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise _syntax_error(path, exc) from None
    except Exception as exc:           # whatever the file's top level raises
        sys.modules.pop(name, None)
        raise _runtime_error(path, exc) from None
    return module

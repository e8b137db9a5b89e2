"""Finding and loading labs: every ``labs/NN-name/`` folder with a ``lab.py`` plugin, loaded
by file path (:func:`labs.labkit.student.load_student_module`, registered in
``sys.modules`` so that a ``lab.py`` may use ``@dataclass``; no ``sys.path`` change).

A plugin defines ``TITLE: str``, ``FILES: tuple[str, ...]`` (the student's files, the same
names in ``solution/``), ``run(files_dir, target) -> int`` and
``check(files_dir, target) -> Report``.

Example::

    >>> [lab.name for lab in find_labs()][:1]                    # doctest: +SKIP
    ['01-ecmp-hashing']
    >>> load_lab(LABS_DIR / "01-ecmp-hashing").TITLE             # doctest: +SKIP
    'ECMP hashing and polarisation'
"""
from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Union

from labs.labkit.build import REPO, LabError
from labs.labkit.student import load_student_module

LABS_DIR = REPO / "labs"
LAB_DIR_RE = re.compile(r"^\d\d-[a-z0-9-]+$")
REQUIRED = ("TITLE", "FILES", "run", "check")


def find_labs(root: Path = LABS_DIR) -> list[Path]:
    """Lab folders under ``root`` (``NN-name`` with a ``lab.py``), in order."""
    return sorted(p for p in root.iterdir()
                  if p.is_dir() and LAB_DIR_RE.match(p.name) and (p / "lab.py").is_file())


def resolve_lab(spec: Union[str, Path], root: Path = LABS_DIR) -> Path:
    """A lab folder from a path (``labs/01-ecmp-hashing``) or a name/number (``01``).

    >>> resolve_lab(LABS_DIR / "01-ecmp-hashing").name                # doctest: +SKIP
    '01-ecmp-hashing'
    """
    path = Path(spec)
    if (path / "lab.py").is_file():
        return path.resolve()
    matches = [p for p in find_labs(root) if p.name == str(spec) or p.name.startswith(f"{spec}-")]
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(p.name for p in find_labs(root))
    raise LabError(f"no lab {str(spec)!r}; labs: {names}")


def load_lab(lab_dir: Path) -> ModuleType:
    """Import ``lab_dir/lab.py`` as a module and check it defines the plugin interface;
    :class:`~labs.labkit.student.StudentCodeError` (a :class:`LabError`) with file:line
    when it does not load."""
    path = lab_dir / "lab.py"
    module = load_student_module(path)
    missing = [n for n in REQUIRED if not hasattr(module, n)]
    if missing:
        raise LabError(f"{path} does not define {', '.join(missing)}")
    return module

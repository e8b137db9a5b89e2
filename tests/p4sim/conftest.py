"""Shared by every test under ``tests/p4sim``.

pytest (``rootdir`` import mode "prepend", no ``__init__.py`` in ``tests``) puts the
directory of each ``conftest.py`` on ``sys.path`` before importing the test modules
below it; this file is what makes the helper modules of this directory importable from
the subdirectories:

    >>> from procs import SwitchProcess      # doctest: +SKIP

(``tests.p4sim.procs`` is not reliable: once IPython is imported, its own regular
package ``tests`` shadows the namespace package ``tests`` of this repository.)
"""

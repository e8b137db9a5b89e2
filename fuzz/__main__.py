"""``python -m fuzz``: see :mod:`fuzz.cli`."""
import sys

from fuzz.cli import main

sys.exit(main())

"""``python -m scenarios``: see :mod:`scenarios.cli`."""
import sys

from scenarios.cli import main

sys.exit(main())

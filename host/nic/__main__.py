"""``python -m host.nic send|recv ...``: see :mod:`host.nic.cli`."""
from host.nic.cli import main

raise SystemExit(main())

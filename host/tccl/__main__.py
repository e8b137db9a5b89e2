"""``python -m host.tccl plan|ports ...`` (see :mod:`host.tccl.cli`)."""
from host.tccl.cli import main

raise SystemExit(main())

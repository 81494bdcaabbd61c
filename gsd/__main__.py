"""Allow `python -m gsd`."""

from gsd.cli import main

raise SystemExit(main())

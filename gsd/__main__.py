"""Allow `python -m gsd`."""

from gsd.cli.entry import main

raise SystemExit(main())

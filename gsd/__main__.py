"""Allow `python -m gsd`."""

from gsd.entry import main

raise SystemExit(main())

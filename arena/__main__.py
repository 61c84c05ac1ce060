"""``python -m arena`` is the ``arena`` command."""

import sys

from arena.cli import main

sys.exit(main())

"""``python -m ssvm``: the ``ssvm`` command line."""

import sys

from ssvm.cli import main

sys.exit(main())

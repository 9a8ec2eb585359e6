"""python3 -m tunbedlib: the runner behind scripts/tunbed (docs/runner.md)."""

import sys

from tunbedlib.cli import main

sys.exit(main())

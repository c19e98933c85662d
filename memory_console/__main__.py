"""`python -m memory_console`: the same entry point as the `memory-console` command."""

import sys

from memory_console.cli import main

sys.exit(main())

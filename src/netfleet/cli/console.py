"""The process-wide Rich consoles. Piped output gets a wide console so tables are not cut."""

import sys

from rich.console import Console

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)

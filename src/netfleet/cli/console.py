"""The process-wide Rich consoles."""

from rich.console import Console

console = Console(highlight=False)

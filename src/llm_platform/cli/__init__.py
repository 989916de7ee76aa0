"""`llm-platform`, the command line: `main` dispatches to one module per command (`plan`, `check` here; the
others are the tools' and the simulator's own modules)."""

from llm_platform.cli.main import COMMANDS, main

__all__ = ["COMMANDS", "main"]

"""The command lines: `python -m llm_platform.simulator` and its subcommands, their arguments, progress and
output, and `python -m llm_platform.simulator.commands.routing`."""

import sys

from llm_platform.simulator.commands.cli import main

sys.exit(main())

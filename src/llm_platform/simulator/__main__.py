import sys

from llm_platform.simulator.cli import main

sys.exit(main())

import sys

from llm_platform.cli.main import main

sys.exit(main())

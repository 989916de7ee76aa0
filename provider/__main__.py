"""Entry point of the component provider plugin: serve llm_platform's components to the Pulumi engine."""

from llm_platform.provider import main

if __name__ == "__main__":
    main()

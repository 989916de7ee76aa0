"""The component provider and its schema, built once per test process.

Building the provider analyses every component's args (about 0.35 s of CPU), and `llm_platform.provider.schema()`
builds a provider to read its schema; the tests build and read both dozens of times for the same code. The
provider holds no state between constructs, so one instance serves every test; `schema()` parses a fresh
copy each call, as `llm_platform.provider.schema` does, so a test may edit what it gets.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import llm_platform.provider as package_provider


@functools.cache
def provider() -> package_provider.LlmPlatformProvider:
    """`llm_platform.provider.provider()`, built once."""
    built = package_provider.provider()
    assert isinstance(built, package_provider.LlmPlatformProvider)
    return built


def schema() -> dict[str, Any]:
    """`llm_platform.provider.schema()`: the schema of the provider built once, parsed anew."""
    return json.loads(provider().schema or "{}")

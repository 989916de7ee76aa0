"""The schema's shared parts: the base model every block derives from (camelCase keys, unknown keys refused),
the rule error config/errors.py places on the stack file's line, and the checked string types (DNS labels,
durations, cron expressions, time zones) the blocks' fields use."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from llm_platform.config.cron import Cron as CronExpression

DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

DURATION = re.compile(r"^([0-9]+(s|m|h))+$")

CRON = re.compile(r"^(\S+\s+){4}\S+$")


class Schema(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class RuleError(ValueError):
    """A rule broken at `loc` (the field path below the object that raises it, YAML spelling) by `value`.

    config/errors.py prefixes the file, line and full path and shows the value as written, so every message
    reads `models[1] (llama-8b).tensorParallelSize: 1 <message>`; `message` says why and what is allowed.
    """

    def __init__(self, loc: tuple[str | int, ...], value: Any, message: str) -> None:
        super().__init__(f"{'.'.join(map(str, loc))}: {value!r} {message}")
        self.loc = loc
        self.value = value
        self.message = message


class RuleErrors(ValueError):
    """Every rule an object breaks, raised together so one run reports them all (config/errors.py gives each
    its own line). Raised by `Problems.raise_all`."""

    def __init__(self, errors: Sequence[ValueError]) -> None:
        super().__init__("; ".join(map(str, errors)))
        self.errors = list(errors)


class Problems:
    """The broken rules of one object, collected so that one run reports all of them.

    `with problems.check(): ...` runs one rule, or a chain of rules where each needs the one before it to hold
    (the first broken one ends the chain, so no rule reports a consequence of another's problem); independent
    rules get a `check()` each. `raise_all()` at the end raises what was found: one RuleError, or RuleErrors.
    """

    def __init__(self) -> None:
        self.errors: list[ValueError] = []

    @contextmanager
    def check(self) -> Iterator[None]:
        try:
            yield
        except RuleErrors as exc:
            self.errors.extend(exc.errors)
        except ValueError as exc:
            self.errors.append(exc)

    def raise_all(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise RuleErrors(self.errors)


def plural(count: int, noun: str) -> str:
    """`1 GPU`, `4 GPUs`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """` (did you mean 'gateway'?)` for the closest choice, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _dns_label(max_len: int, why: str = ""):
    """A name of lowercase letters, digits and '-'; `why`: where `max_len` comes from, said in the message."""

    def check(value: str) -> str:
        if len(value) > max_len or not DNS_LABEL.match(value):
            raise ValueError(
                f"{value!r} is not allowed: use lowercase letters, digits and '-', starting with a letter, "
                f"at most {max_len} characters{f' ({why})' if why else ''}"
            )
        return value

    return AfterValidator(check)


def _duration(value: str) -> str:
    if not DURATION.match(value):
        raise ValueError(f"{value!r} is not a duration; use Go duration units such as '30s', '5m', '1h'")
    return value


def duration_seconds(value: str) -> float:
    """A validated Go-style duration ('30s', '5m', '1h30m') in seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    return float(sum(int(n) * units[u] for n, u in re.findall(r"([0-9]+)(s|m|h)", value)))


def _cron(value: str) -> str:
    problem = "" if CRON.match(value) else "it needs 5 fields"
    if not problem:
        try:
            CronExpression.parse(value)
        except ValueError as exc:
            problem = str(exc)
    if problem:
        raise ValueError(
            f"{value!r} is not a 5-field cron expression (minute hour day-of-month month day-of-week) "
            f"such as '0 7 * * 1-5': {problem}"
        )
    return value


def _timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"{value!r} is not an IANA time zone{did_you_mean(value, sorted(available_timezones()))}; "
            "use a name such as 'UTC', 'America/New_York' or 'Europe/Paris'"
        ) from None
    return value


Duration = Annotated[str, AfterValidator(_duration)]

Cron = Annotated[str, AfterValidator(_cron)]

Timezone = Annotated[str, AfterValidator(_timezone)]


class Environment(StrEnum):
    DEV = "dev"
    STAGING = "staging"
    PROD = "prod"


def _unique(at: tuple[str, ...], names: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise RuleError((*at, i, "name"), name, "is used twice; names must be unique")
        seen.add(name)

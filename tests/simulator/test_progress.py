"""Long commands say how long they will take once the first unit is timed, on stderr, and nothing with --json."""

from __future__ import annotations

import re

from llm_platform.simulator.commands.progress import minutes, track


def test_the_estimate_follows_the_first_unit(capsys) -> None:
    with track("days simulated", 4, "days") as progress:
        progress.advance()
        progress.advance()
    out, err = capsys.readouterr()
    assert out == ""
    assert re.fullmatch(r"days simulated: 4 days at about [\d.]+ s each: \d+ s more\n", err), err


def test_a_bounded_search_says_at_most_and_quiet_says_nothing(capsys) -> None:
    with track("tune: candidates scored", 10, "candidates", bounded=True) as progress:
        progress.advance()
    assert ": at most " in capsys.readouterr().err
    with track("tune", 10, "candidates", quiet=True) as progress:
        progress.advance()
    assert capsys.readouterr() == ("", "")


def test_minutes() -> None:
    assert (minutes(42), minutes(600)) == ("42 s", "10 min")

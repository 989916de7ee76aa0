"""All errors at once: a stack config with several problems of different kinds is refused with every one of
them in one run, each at its file, line and field, before any resource is registered."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_platform.config.loader import ConfigError, parse, raw_stack_config, read_stack
from llm_platform.platform import secrets_check
from tests.conftest import fixture_stack, stack_values


def _broken_costs_stack(tmp_path: Path) -> Path:
    """The costs fixture with six problems a team could make in one edit, each of a different kind."""
    text = fixture_stack("costs").read_text()
    for old, new in (
        ('kubernetesVersion: "1.34"', "kubernetesVersion: 1.30"),  # a value YAML reads as a number
        ("min: 3, max: 4", "min: 5, max: 4"),  # a rule of one object (systemNodes)
        ("receiver: webhook", "receiver: none"),  # a rule across blocks (environment and alerting)
        (  # a rule across blocks (costs, models, pools): two forecasts for one model
            '      - {model: chat-7b, usdPerDay: 30.5, configHash: "dfbc553a942d", source: "replay 2026-11-30"}',
            '      - {model: chat-7b, usdPerDay: 30.5, configHash: "dfbc553a942d", source: "replay 2026-11-30"}\n'
            '      - {model: chat-7b, usdPerDay: 31.0, configHash: "dfbc553a942d"}',
        ),
    ):
        assert old in text
        text = text.replace(old, new)
    text += "  llm-platform:gatewy: {enabled: true}\n"  # an unknown key
    path = tmp_path / "Pulumi.costs.yaml"
    path.write_text(text)
    return path


def _line(path: Path, needle: str, nth: int = 0) -> int:
    return [i for i, t in enumerate(path.read_text().splitlines(), 1) if needle in t][nth]


def test_every_problem_of_a_stack_file_is_reported_in_one_run_at_its_line(tmp_path: Path) -> None:
    path = _broken_costs_stack(tmp_path)
    ours, source = read_stack(path)
    region = raw_stack_config(path)["aws:region"]
    with pytest.raises(ConfigError) as info:
        # the secrets check the stack program runs: apiKey is not set
        parse(ours, source, region=region, checks=[secrets_check(lambda secret: secret != "apiKey")])
    lines = str(info.value).splitlines()
    at = f"{path}:"
    assert lines == [
        f"{at}{_line(path, 'gatewy')}: llm-platform:gatewy: unknown config key (did you mean 'gateway'?); "
        "allowed: " + lines[0].split("allowed: ", 1)[1],
        f"{at}{_line(path, 'kubernetesVersion')}: cluster.kubernetesVersion: 1.30 is a number in YAML, which "
        'drops trailing zeros (1.30 becomes 1.3); write the version in quotes, e.g. kubernetesVersion: "1.30"',
        f"{at}{_line(path, 'min: 5')}: cluster.systemNodes.min: 5 is larger than max 4; allowed: 1 to 4",
        f"{at}{_line(path, 'receiver: none')}: alerting.receiver: 'none' is allowed in dev only; staging must "
        "notify someone: allowed: slack, pagerduty or webhook (its URL or key in the alertReceiver secret)",
        f"{at}{_line(path, 'model: chat-7b', 1)}: costs.forecasts[1].model: 'chat-7b' has a forecast already; "
        "one per model; allowed: code-1b",
        f"{path}: apiKey: required by this config, not set (pulumi config set --secret apiKey ...)",
    ]


def test_rules_across_blocks_wait_only_for_the_blocks_they_read() -> None:
    """A refused block holds back the rules that read it (their verdict would rest on a guess), and no other:
    a bad cluster hides no cost or alerting problem; a bad model hides the rules on the models."""
    values = stack_values("costs")
    values["cluster"]["name"] = "Bad_Name"
    values["alerting"]["receiver"] = "none"
    values["costs"]["forecasts"][0]["model"] = "nope"
    values["models"][1]["autoscaling"]["minReplicas"] = 5  # above maxReplicas 3: a serving rule
    with pytest.raises(ConfigError) as info:
        parse(values, region="us-east-1")
    message = str(info.value)
    assert "cluster.name: 'Bad_Name' is not allowed" in message
    assert "alerting.receiver: 'none' is allowed in dev only" in message
    assert (
        "costs.forecasts[0].model: 'nope' is not a model of the stack; allowed: chat-7b, code-1b" in message
    )
    # the serving rules read the cluster (its mode: the model bucket), so they wait for it
    assert "minReplicas" not in message
    values["cluster"]["name"] = "llm-costs"
    with pytest.raises(ConfigError, match=r"models\[1\] \(code-1b\)\.autoscaling\.minReplicas: 5 is larger"):
        parse(values, region="us-east-1")


def test_the_program_reports_schema_and_secret_problems_together_before_any_resource(run_program) -> None:
    alerting = {"receiver": "none"}
    with pytest.raises(Exception, match="nothing was deployed") as info:
        run_program("costs", {"alerting": alerting, "gatewy": {}}, drop_secrets=["apiKey"])
    message = str(info.value)
    assert "llm-platform:gatewy: unknown config key" in message
    assert "alerting.receiver: 'none' is allowed in dev only" in message
    assert "apiKey: required by this config, not set" in message
    assert run_program.last.created == []

"""A sweep of broken stack files derived from the fixture stacks: each is refused with the field's own path,
the line of that field (not of the item around it), the value as written and what is allowed; messages never
dump whole entries, and a value YAML turned into a boolean or a number gets the hint to quote it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from llm_platform.config.errors import PATTERN_WORDS
from llm_platform.config.schema import StackConfig
from tests.conftest import config_error, fixture_stack


@dataclass(frozen=True)
class Case:
    fixture: str
    edits: tuple[tuple[str, str], ...]  # (text in the fixture, what it becomes)
    path: str  # the field path the refusal names
    value: str  # the value as the refusal shows it
    line_of: str  # text on the line the refusal must point at (in the edited file)
    allowed: str  # what the refusal says is allowed (after "allowed")


CASES = {
    "adapter rank": Case(
        "lora", (("rank: 16", "rank: 600"),),
        "models[0] (llama-8b).adapters[0] (sql-lora).rank", "600", "rank: 600", "1 to 512",
    ),
    "adapter revision": Case(
        "lora", (("revision: 0123456789abcdef0123456789abcdef01234567", "revision: main"),),
        "models[0] (llama-8b).adapters[0] (sql-lora).revision", "'main'", "revision: main", "40 lowercase hex",
    ),
    "adapter source": Case(
        "lora", (("source: s3://acme-adapters/llama-3.1-8b/legal/v3", "source: s3://x"),),
        "models[0] (llama-8b).adapters[2] (legal-lora).source", "'s3://x'", "source: s3://x", "s3://<bucket>",
    ),
    "data parallel": Case(
        "lora", (("      adapterSlots: 2\n", "      adapterSlots: 2\n      dataParallelSize: 2\n"),),
        "models[0] (llama-8b).dataParallelSize", "2", "dataParallelSize: 2", "tensorParallelSize and",
    ),
    "a reserved extra arg": Case(
        "lora", (("      adapterSlots: 2\n", "      adapterSlots: 2\n      extraArgs:\n        - --seed=1\n"
                  "        - --max-loras=4\n"),),
        "models[0] (llama-8b).extraArgs[1]", "'--max-loras=4'", "--max-loras=4", "list the adapters",
    ),
    "a reservation id": Case(
        "reservations", (("- id: cr-0123456789abcdef0", "- id: cr-NOT-AN-ID"),),
        "gpuNodePools[1] (p5-odcr).capacityReservations[0].id", "'cr-NOT-AN-ID'", "cr-NOT-AN-ID",
        "cr- then lowercase",
    ),
    "a reservation owner that is a number": Case(
        "reservations", (('ownerID: "444455556666"', "ownerID: 444455556666"),),
        "gpuNodePools[1] (p5-odcr).capacityReservations[1].ownerID", "444455556666", "ownerID: 4444",
        'quote it to keep it text, e.g. ownerID: "444455556666"',
    ),
    "headroom not whole replicas": Case(
        "headroom", (("headroom: {gpus: 8}", "headroom: {gpus: 4}"),),
        "gpuNodePools[1] (p4d).headroom.gpus", "4", "headroom: {gpus: 4}", "0, 8, 16",
    ),
    "a headroom window below the floor": Case(
        "headroom", (("timezone: America/New_York, gpus: 4}", "timezone: America/New_York, gpus: 0}"),),
        "gpuNodePools[0] (g5).headroom.schedule[0].gpus", "0", "gpus: 0}", "1 or more",
    ),
    "headroom above the gpu limit": Case(
        "headroom", (("timezone: America/New_York, gpus: 4}", "timezone: America/New_York, gpus: 8}"),),
        "gpuNodePools[0] (g5).headroom.schedule[0].gpus", "8", "gpus: 8}", "at most 7 warm GPUs",
    ),
    "a second forecast for one model": Case(
        "costs", (('configHash: "dfbc553a942d", source: "replay 2026-11-30"}',
                   'configHash: "dfbc553a942d", source: "replay 2026-11-30"}\n'
                   '      - {model: chat-7b, usdPerDay: 9.0, configHash: "dfbc553a942d"}'),),
        "costs.forecasts[1].model", "'chat-7b'", "usdPerDay: 9.0", "code-1b",
    ),
    "a boolean as a name": Case(
        "gateway", (("- {name: web, requestsPerMinute: 600}", "- {name: yes, requestsPerMinute: 600}"),),
        "gateway.clients[0].name", "yes", "name: yes", 'quote it to keep it text, e.g. name: "yes"',
    ),
    "a client name": Case(
        "gateway", (("- {name: web, requestsPerMinute: 600}", "- {name: Web_App, requestsPerMinute: 600}"),),
        "gateway.clients[0] (Web_App).name", "'Web_App'", "Web_App", "lowercase letters, digits and '-'",
    ),
    "a block written as a mapping": Case(
        "dev", (("  llm-platform:models:\n    - name: qwen-1-5b\n", "  llm-platform:models:\n    qwen-1-5b:\n"
                 "      name: qwen-1-5b\n"),),
        "models", "a mapping (1 key: qwen-1-5b)", "    qwen-1-5b:", "a YAML list",
    ),
    "an unknown key inside a model": Case(
        "dev", (("maxModelLen: 8192", "maxModelLe: 8192"),),
        "models[0] (qwen-1-5b).maxModelLe", "", "maxModelLe", "maxModelLen",
    ),
    "a zone twice": Case(
        "dev", (("availabilityZones: [us-east-1a, us-east-1b]", "availabilityZones:\n      - us-east-1a\n"
                 "      - us-east-1a  # again"),),
        "cluster.availabilityZones[1]", "'us-east-1a'", "us-east-1a  # again", "distinct zones",
    ),
    "min above max system nodes": Case(
        "staging", (("min: 2, max: 3, diskSizeGiB: 100", "min: 4, max: 3, diskSizeGiB: 100"),),
        "cluster.systemNodes.min", "4", "min: 4", "1 to 3",
    ),
    "fsx capacity": Case(
        "dev", (("  llm-platform:modelCache:\n", "  llm-platform:modelCache:\n    fsx:\n"
                 "      storageCapacityGiB: 1000\n"),),
        "modelCache.fsx.storageCapacityGiB", "1000", "storageCapacityGiB: 1000", "1200, 2400",
    ),
    "a tensor parallel size over the node": Case(
        "dev", (("tensorParallelSize: 1", "tensorParallelSize: 2"),),
        "models[0] (qwen-1-5b).tensorParallelSize", "2", "tensorParallelSize: 2", "1 to 1",
    ),
}  # fmt: skip


def _broken(tmp_path: Path, case: Case) -> Path:
    text = fixture_stack(case.fixture).read_text()
    for old, new in case.edits:
        assert text.count(old) == 1, f"{case.fixture}: {old!r} is not in the fixture once"
        text = text.replace(old, new)
    path = tmp_path / f"Pulumi.{case.fixture}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", list(CASES))
def test_each_broken_config_is_refused_at_its_field_line_with_value_and_what_is_allowed(
    tmp_path: Path, name: str
) -> None:
    case = CASES[name]
    path = _broken(tmp_path, case)
    lines = config_error(path).splitlines()
    mine = [line for line in lines if f": {case.path}: " in line]
    assert len(mine) == 1, f"no single refusal of {case.path} in:\n" + "\n".join(lines)
    (line,) = mine
    expected_line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if case.line_of in t)
    assert line.startswith(f"{path}:{expected_line}: {case.path}: {case.value}"), line
    assert "allowed" in line and case.allowed in line.split("allowed", 1)[1], line
    assert "{" not in line.split(": ", 2)[2].split("allowed")[0] or "{key: value}" in line, "no entry dumped"


def test_no_refusal_dumps_an_entry_or_cuts_a_word() -> None:
    """A value the schema refuses is shown by its shape (a mapping by its keys), never as JSON cut mid-word."""
    from llm_platform.config.errors import shown

    entry = {"name": "chat-7b", "huggingFaceId": "mistralai/Mistral-7B-Instruct-v0.2", "maxModelLen": [1]}
    assert shown({"chat-7b": entry}) == "a mapping (1 key: chat-7b)"
    assert shown([entry, entry]) == "a list of 2 items"
    long = "word " * 40
    cut = shown(long.strip())
    assert cut.endswith(" ...'") and len(cut) < 90 and "wor ..." not in cut and json.dumps(entry) not in cut


def test_every_pattern_of_the_schema_is_said_in_words() -> None:
    """A refused pattern says what is allowed in words (errors.PATTERN_WORDS), never as a regular expression."""
    patterns = set(re.findall(r'"pattern": ("(?:[^"\\]|\\.)*")', json.dumps(StackConfig.model_json_schema())))
    assert patterns, "the schema has patterns"
    assert {json.loads(p) for p in patterns} <= set(PATTERN_WORDS)

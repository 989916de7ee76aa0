"""Config errors a person can act on, on the render path and under the Pulumi program alike: file and line,
one field-path format, the value as written, what is allowed and the closest match; and the rules that need
numbers (a model fits its GPUs, a pool's GPU limit fits its models)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_platform.config.loader import ROOT, load_stack, parse
from llm_platform.facts.catalog import families
from llm_platform.tools import render
from tests.conftest import config_error, fixture_stack, stack_values


def _stack_file(tmp_path: Path, edit: Any, base: str = "dev") -> Path:
    """A copy of a fixture stack file with `edit(text) -> text` applied, as a team would edit it."""
    path = tmp_path / f"Pulumi.{base}.yaml"
    path.write_text(edit(fixture_stack(base).read_text()))
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path, capsys) -> None:
    path = _stack_file(tmp_path, lambda t: t.replace("maxReplicas: 2", "maxReplicas: [2"))
    msg = config_error(path)
    assert msg.startswith(f"{path}:") and "YAML syntax error" in msg
    assert f"(line {_line_of(path, 'maxReplicas: [2')}," in msg
    assert render.main([str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "YAML syntax error" in err and not (tmp_path / "out").exists()


def test_a_field_error_has_file_line_path_value_and_what_is_allowed(tmp_path: Path) -> None:
    path = _stack_file(tmp_path, lambda t: t.replace("kvCacheUsage: 0.8", "kvCacheUsage: 1.50"))
    line = _line_of(path, "kvCacheUsage: 1.50")
    assert config_error(path) == (
        f"{path}:{line}: models[0] (qwen-1-5b).autoscaling.kvCacheUsage: 1.50 is not allowed: "
        "Input should be less than or equal to 1"
    )


def test_a_mistyped_key_lists_the_allowed_keys_and_the_closest(tmp_path: Path) -> None:
    path = _stack_file(tmp_path, lambda t: t.replace("pollingInterval:", "pollingIntervall:"))
    msg = config_error(path)
    assert (
        f":{_line_of(path, 'pollingIntervall')}: models[0] (qwen-1-5b).autoscaling.pollingIntervall: " in msg
    )
    assert "unknown key (did you mean 'pollingInterval'?); allowed: minReplicas, maxReplicas" in msg


def test_a_mistyped_top_level_key_is_refused_with_the_closest(tmp_path: Path) -> None:
    path = _stack_file(tmp_path, lambda t: t + "  llm-platform:gatewy: {enabled: false}\n")
    msg = config_error(path)
    assert (
        f":{_line_of(path, 'gatewy')}: llm-platform:gatewy: unknown config key (did you mean 'gateway'?)"
        in msg
    )
    assert "allowed: environment, cluster, gpuNodePools, models" in msg


def test_every_unknown_top_level_key_is_reported_at_once(tmp_path: Path, capsys) -> None:
    """Two typos are two lines, each with its line, the allowed keys and the closest, plus any bad value."""
    path = _stack_file(
        tmp_path,
        lambda t: (
            t.replace("kvCacheUsage: 0.8", "kvCacheUsage: 1.50")
            + "  llm-platform:gatewy: {enabled: false}\n  llm-platform:alertng: {}\n"
        ),
    )
    lines = config_error(path).splitlines()
    assert lines[0].startswith(f"{path}:{_line_of(path, 'gatewy')}: llm-platform:gatewy: unknown config key")
    assert lines[1].startswith(
        f"{path}:{_line_of(path, 'alertng')}: llm-platform:alertng: unknown config key"
    )
    assert "(did you mean 'gateway'?)" in lines[0] and "(did you mean 'alerting'?)" in lines[1]
    assert all("allowed: environment, cluster, gpuNodePools, models" in line for line in lines[:2])
    assert lines[2].startswith(f"{path}:{_line_of(path, 'kvCacheUsage: 1.50')}: models[0] (qwen-1-5b).")
    assert render.main([str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "gatewy" in err and "alertng" in err and "kvCacheUsage" in err and not (tmp_path / "out").exists()


def test_a_misspelt_project_namespace_is_refused_not_ignored(tmp_path: Path) -> None:
    path = _stack_file(tmp_path, lambda t: t + "  llm_platform:gateway: {enabled: false}\n")
    assert config_error(path) == (
        f"{path}:{_line_of(path, 'llm_platform')}: llm_platform:gateway: unknown config namespace "
        "'llm_platform' (did you mean 'llm-platform:gateway'?)"
    )
    other = _stack_file(tmp_path, lambda t: t + "  kubernetes:context: x\n")
    assert load_stack(other).environment.value == "dev"  # another provider's namespace is not ours to judge


def test_an_unquoted_kubernetes_version_is_refused_as_written(tmp_path: Path) -> None:
    path = _stack_file(tmp_path, lambda t: t.replace('kubernetesVersion: "1.34"', "kubernetesVersion: 1.30"))
    msg = config_error(path)
    assert "cluster.kubernetesVersion: 1.30 is a number in YAML" in msg and 'kubernetesVersion: "1.30"' in msg
    assert "1.3 " not in msg.split("(")[0]


def test_a_kubernetes_version_without_native_sidecars_is_refused(tmp_path: Path) -> None:
    path = _stack_file(
        tmp_path, lambda t: t.replace('kubernetesVersion: "1.34"', 'kubernetesVersion: "1.28"')
    )
    msg = config_error(path)
    assert "cluster.kubernetesVersion: '1.28' is older than 1.30" in msg and "native sidecar" in msg
    assert ":15" in msg.split("cluster.")[0], "names the file and line"
    ok = _stack_file(tmp_path, lambda t: t.replace('kubernetesVersion: "1.34"', 'kubernetesVersion: "1.30"'))
    assert load_stack(ok).cluster.kubernetes_version == "1.30"


def test_one_gpu_is_singular() -> None:
    v = stack_values("dev")
    v["models"][0]["tensorParallelSize"] = 2  # the dev pool has 1-GPU instances only
    assert "is larger than the 1 GPU of the largest instance" in config_error(v)


def test_a_model_must_fit_its_gpus_with_the_numbers() -> None:
    v = stack_values("prod")
    v["models"][0]["huggingFaceId"] = "meta-llama/Llama-3.1-70B-Instruct"  # on the g5 pool, one A10G
    msg = config_error(v)
    assert msg.startswith("models[0] (mistral-7b).tensorParallelSize: 1 is too small")
    # 70.6e9 x 2 bytes = 131.5 GiB; KV 80 layers x 2 x 8 heads x 128 x 2 bytes x 8192 tokens = 2.5 GiB
    assert "131.5 GiB of weights + 2.5 GiB of KV cache for one 8192-token sequence = 134.0 GiB" in msg
    assert "24 GiB x gpuMemoryUtilization 0.9 = 21.6 GiB" in msg and "tensorParallelSize 8" in msg


def test_a_long_context_that_does_not_fit_says_how_long_fits() -> None:
    v = stack_values("dev")
    v["models"][0] |= {"huggingFaceId": "meta-llama/Llama-3.1-8B-Instruct", "maxModelLen": 131072}
    msg = config_error(v)
    assert "of KV cache for one 131072-token sequence" in msg and "maxModelLen " in msg and "or less" in msg


def test_the_pool_gpu_limit_must_fit_every_model_at_max_replicas() -> None:
    v = stack_values("prod")
    v["gpuNodePools"][1]["gpuLimit"] = 8  # llama-70b: 2 replicas x 8 GPUs
    msg = config_error(v)
    assert msg.startswith("gpuNodePools[1] (p4d).gpuLimit: 8 is less than the 16 GPUs")
    assert "llama-70b 2 x 8 GPUs" in msg and "gpuLimit 16 or more" in msg


def test_timezones_must_exist_with_the_closest() -> None:
    v = stack_values("prod")
    v["models"][0]["autoscaling"]["prewarm"][0]["timezone"] = "Europe/Pariss"
    msg = config_error(v)
    assert "models[0] (mistral-7b).autoscaling.prewarm[0] (morning-surge).timezone: 'Europe/Pariss'" in msg
    assert "(did you mean 'Europe/Paris'?)" in msg


def test_a_model_outside_the_profile_table_is_described_in_the_stack_file() -> None:
    v = stack_values("dev")
    v["models"][0]["huggingFaceId"] = "acme/chat-8b"
    msg = config_error(v)
    assert "models[0] (qwen-1-5b).huggingFaceId: 'acme/chat-8b' has no built-in geometry" in msg
    assert "geometry:" in msg
    v["models"][0]["geometry"] = {"parameters": 8.0e9, "layers": 32, "kvHeads": 8, "headDim": 128}
    profile = parse(v).models[0].profile
    assert profile.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2 and profile.weights_gb == pytest.approx(16.0)
    v["models"][0]["geometry"]["parameters"] = 80e9  # 149 GiB on one 24 GiB GPU
    assert "is too small for acme/chat-8b" in config_error(v)


def test_the_program_refuses_an_unknown_key_before_any_resource(run_program) -> None:
    """Under the Pulumi CLI the program reads every `llm-platform:` key, not only the known ones."""
    with pytest.raises(
        Exception, match=r"llm-platform:gatewy: unknown config key \(did you mean 'gateway'\?\)"
    ):
        run_program("dev", {"gatewy": {"enabled": True}})
    assert run_program.last.created == []


def test_the_program_refuses_every_unknown_key_at_once(run_program) -> None:
    with pytest.raises(
        Exception, match=r"llm-platform:gatewy: unknown config key \(did you mean 'gateway'\?\)"
    ) as info:
        run_program("dev", {"gatewy": {"enabled": True}, "modelz": []})
    assert "llm-platform:modelz: unknown config key (did you mean 'models'?)" in str(info.value)
    assert run_program.last.created == []


def test_the_program_refuses_a_misspelt_project_namespace(run_program) -> None:
    with pytest.raises(Exception, match=r"llm-platfrom:models: unknown config namespace 'llm-platfrom'"):
        run_program("dev", {"llm-platfrom:models": []})
    assert run_program.last.created == []


def test_the_program_reports_a_bad_value_before_any_resource(run_program) -> None:
    models = stack_values("dev")["models"]
    models[0]["autoscaling"]["prewarm"] = [
        {"name": "am", "start": "0 7 * * *", "end": "0 9 * * *", "timezone": "Mars/Olympus", "replicas": 1}
    ]
    with pytest.raises(
        Exception, match=r"models\[0\] \(qwen-1-5b\)\.autoscaling\.prewarm\[0\] \(am\)\.timezone"
    ):
        run_program("dev", {"models": models})
    assert run_program.last.created == []


def test_running_the_program_without_pulumi_prints_a_hint() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "__main__.py")], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "pulumi up" in result.stderr and "tools.render" in result.stderr


def test_every_schema_object_refuses_unknown_keys() -> None:
    from pydantic import BaseModel

    import llm_platform.config.schema as schema

    classes = [c for c in vars(schema).values() if isinstance(c, type) and issubclass(c, BaseModel)]
    assert len(classes) > 10
    assert all(c.model_config.get("extra") == "forbid" for c in classes if c is not BaseModel)


def test_an_unknown_instance_family_points_at_its_own_line(tmp_path: Path) -> None:
    """The offending value's line, not the pool's first line (`- name: ...`)."""
    path = _stack_file(
        tmp_path,
        lambda t: t.replace("instanceFamilies: [g6, g5]", "instanceFamilies:\n        - g6\n        - g6f"),
    )
    assert config_error(path) == (
        f"{path}:{_line_of(path, '- g6f')}: gpuNodePools[0] (gpu-spot).instanceFamilies[1]: 'g6f' is not a catalog "
        f"instance family (did you mean 'g6'?); allowed: {', '.join(families())}"
    )


def test_a_pool_rule_points_at_the_key_it_names(tmp_path: Path) -> None:
    """A rule of the pool object that names one of its fields (`gpuNodePools[gpu].instanceSizes: ...`) is
    reported on that key's line."""
    path = _stack_file(
        tmp_path, lambda t: t.replace("instanceSizes: [xlarge, 2xlarge]", "instanceSizes: [96xlarge]")
    )
    msg = config_error(path)
    assert msg.startswith(
        f"{path}:{_line_of(path, 'instanceSizes: [96xlarge]')}: gpuNodePools[0] (gpu-spot).instanceSizes"
    ), msg

"""What a disaggregated model's gateway queue, endpoint pickers and pool headroom are sized on: its roles, not
the model-level `autoscaling` block no object of a P/D model reads."""

from __future__ import annotations

import math

import pytest

from llm_platform.config.schema import ModelConfig, replica_gpus
from llm_platform.plan.addon_pods import epp_cpu_millicores
from llm_platform.plan.gateway import EPP_REPLICAS
from llm_platform.plan.model import gateway_sizing
from llm_platform.simulator.traffic import replay_data
from tests.conftest import load_fixture
from tests.plans import model_plan


def _with_roles(model: ModelConfig, *, decode_max: int, prefill_tp: int) -> ModelConfig:
    d = model.disaggregation
    assert d is not None
    decode = d.decode.model_copy(
        update={"autoscaling": d.decode.autoscaling.model_copy(update={"max_replicas": decode_max})}
    )
    prefill = d.prefill.model_copy(update={"tensor_parallel_size": prefill_tp})
    return model.model_copy(
        update={"disaggregation": d.model_copy(update={"decode": decode, "prefill": prefill})}
    )


def test_gateway_queue_holds_per_decode_replica_at_its_ceiling() -> None:
    """The picker holds `maxPendingPerReplica` per decode replica (each request holds one for its generation)
    at the decode role's maxReplicas, not at the model-level default of 4."""
    cfg = load_fixture("pd")
    model = _with_roles(cfg.models[0], decode_max=3, prefill_tp=4)
    sizing = gateway_sizing(model)
    assert (sizing.min_replicas, sizing.max_replicas) == (1, 3)
    m = model_plan(cfg.model_copy(update={"models": [model]}), model.name)
    assert m.flow_control is not None
    held = cfg.gateway.max_pending_per_replica * 3
    assert m.flow_control.held_per_picker == math.ceil(held / EPP_REPLICAS)


def test_saturation_threshold_follows_the_prefill_queue_target() -> None:
    """The pd fixture's prefill role scales on 4 waiting requests per pod: the pool counts as saturated at
    twice that (8), where the model-level default target (5) would say 10."""
    m = model_plan("pd", "llama-70b")
    assert m.flow_control is not None
    assert m.flow_control.saturation_queue_depth == 8


def test_aggregated_model_is_sized_on_its_own_autoscaling() -> None:
    model = load_fixture("prod").models[0]
    assert gateway_sizing(model) is model.autoscaling


def test_pickers_cpu_covers_both_roles_pods() -> None:
    """The pd model's pickers scrape 2 prefill + 4 decode pods at the ceilings: 600m, not the 500m floor the
    model-level maxReplicas (4) gives."""
    assert epp_cpu_millicores(model_plan("pd", "llama-70b")) == 600


def test_headroom_placeholder_fits_the_larger_role() -> None:
    """A prefill role of 8 GPUs next to a decode role of 4: one placeholder must free room for a prefill pod."""
    cfg = load_fixture("pd")
    model = _with_roles(cfg.models[0], decode_max=4, prefill_tp=8)
    assert replica_gpus(cfg.gpu_node_pools[0], [model]) == 8
    assert replica_gpus(cfg.gpu_node_pools[0], [cfg.models[0]]) == 4


def test_replay_refuses_a_disaggregated_model_naming_its_role_deployments() -> None:
    """Replay would query `deployment="llama-70b"`, which a P/D model does not run: it says so instead."""
    with pytest.raises(ValueError, match="llama-70b-prefill, llama-70b-decode"):
        replay_data.queries(model_plan("pd", "llama-70b"))

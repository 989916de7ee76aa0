"""The resolved plan: one definition of every name and fact, between `config/` and everything else."""

from llm_platform.plan.cold_start import ColdStartBudget
from llm_platform.plan.headroom import HeadroomPlan, HeadroomWindowPlan, PoolPlan
from llm_platform.plan.model import ModelNames, ModelPlan
from llm_platform.plan.scaling import MetricTrigger, PrewarmTrigger, ScalingPlan
from llm_platform.plan.stack import MonitoringPlan, NodeClassPlan, Plan, PrometheusSizing, resolve

__all__ = [
    "ColdStartBudget",
    "HeadroomPlan",
    "HeadroomWindowPlan",
    "MetricTrigger",
    "ModelNames",
    "ModelPlan",
    "MonitoringPlan",
    "NodeClassPlan",
    "Plan",
    "PoolPlan",
    "PrewarmTrigger",
    "PrometheusSizing",
    "ScalingPlan",
    "resolve",
]

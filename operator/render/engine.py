"""From a spec and the speculation state to the engine configuration of every pod."""

from __future__ import annotations

from specfleet.operator.api.types import (
    SpecDecodeDeploymentSpec,
    SpeculationMode,
    SpeculationState,
)
from specfleet.runtime.engine_args import EngineConfig, SpeculativeConfig


def initial_speculation(spec: SpecDecodeDeploymentSpec) -> SpeculationState:
    """The configuration a new fleet starts with: speculating at the starting k unless pinned off."""
    if spec.speculation.mode == SpeculationMode.OFF:
        return SpeculationState(enabled=False, reason="mode Off pins speculation off")
    return SpeculationState(
        enabled=True,
        method=spec.speculation.method,
        k=spec.speculation.num_speculative_tokens,
        reason="starting configuration from spec",
    )


def pinned_speculation(spec: SpecDecodeDeploymentSpec, current: SpeculationState) -> SpeculationState:
    """Apply the spec's pins to the current state: Off disables; a changed method or a k above max resets."""
    mode = spec.speculation.mode
    if mode == SpeculationMode.OFF:
        if not current.enabled:
            return current
        return SpeculationState(enabled=False, reason="mode Off pins speculation off")
    if mode == SpeculationMode.ON and not current.enabled:
        return initial_speculation(spec).model_copy(update={"reason": "mode On pins speculation on"})
    if current.enabled and (
        current.method != spec.speculation.method or (current.k or 0) > spec.speculation.max_speculative_tokens
    ):
        return initial_speculation(spec).model_copy(update={"reason": "speculation settings changed in spec"})
    return current


def engine_config(spec: SpecDecodeDeploymentSpec, state: SpeculationState) -> EngineConfig:
    """The pods' engine configuration; its hash labels the pods so signals never mix two configs."""
    speculative = None
    if state.enabled:
        schedule = tuple((row.max_batch_size, row.k) for row in state.schedule) if state.schedule else None
        speculative = SpeculativeConfig(
            method=str(spec.speculation.method),
            k=state.k or spec.speculation.num_speculative_tokens,
            draft_model=spec.speculation.draft_model,
            schedule=schedule,
        )
    return EngineConfig(
        model=spec.model.name,
        served_model_name=spec.model.served_model_name,
        tensor_parallel_size=spec.model.tensor_parallel_size,
        data_parallel_size=spec.model.data_parallel_size,
        max_model_len=spec.model.max_model_len,
        speculative=speculative,
        port=spec.runtime.port,
        extra_args=tuple(spec.runtime.extra_args),
    )

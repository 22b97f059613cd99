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


def runs_live_table(state: SpeculationState) -> bool:
    """Whether the pods take their batch-size→k table live (pushed by the operator), not from their arguments.

    Every fleet whose configuration has a table does: the runtime's control endpoint swaps it inside the running
    engine, so the table is no part of the restart-bound configuration (nor of its hash).
    """
    return state.enabled and bool(state.schedule)


def covering_table(k: int) -> tuple[tuple[int, int], ...]:
    """The start-up table of a live-table pod: k at batch 1, one less per running request, down to 0.

    It names every k from 0 to the start-up k, because a live table may only use the k values the engine
    started with (decode CUDA graphs are captured for those alone, see docs/images.md); the operator pushes
    the table the policy chose as soon as the pod is Ready.
    """
    return tuple((batch, k - batch + 1) for batch in range(1, k + 2))


def engine_config(spec: SpecDecodeDeploymentSpec, state: SpeculationState) -> EngineConfig:
    """The pods' engine configuration: only what needs a restart; its hash labels the pods so signals never mix
    two configs. A live-table fleet starts at the deployment's ceiling k, so any table the policy renders fits."""
    speculative = None
    if state.enabled:
        live = runs_live_table(state)
        k = spec.speculation.max_speculative_tokens if live else state.k or spec.speculation.num_speculative_tokens
        speculative = SpeculativeConfig(
            method=str(spec.speculation.method),
            k=k,
            draft_model=spec.speculation.draft_model,
            schedule=covering_table(k) if live else None,
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

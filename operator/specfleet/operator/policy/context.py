"""What the decision core needs besides signals and state: the deployment's fixed facts and the fleet now."""

from __future__ import annotations

from dataclasses import dataclass

from specfleet.operator.api.types import SpecDecodeDeploymentSpec, SpeculationMode
from specfleet.operator.policy.acceptance import PRIORS, AcceptancePrior, prior_curve
from specfleet.operator.policy.calibration import Calibration
from specfleet.operator.policy.costmodel import CostModel, MeasuredPrior
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.resolve import ResolvedPolicy
from specfleet.operator.policy.schedule import render_schedule, table_supported
from specfleet.operator.policy.state import PolicyState, SpecConfig


@dataclass(frozen=True)
class Fleet:
    """The pods as the Deployment reports them."""

    replicas: int
    ready_replicas: int
    # Hash of the configuration the pods run; signals measured under another one are not used for it.
    config_hash: str | None = None

    @property
    def ready(self) -> bool:
        return self.ready_replicas >= self.replicas


@dataclass(frozen=True)
class Context:
    policy: ResolvedPolicy
    cost: CostModel
    method: str
    mode: SpeculationMode
    fleet: Fleet
    start_k: int
    data_parallel_size: int = 1
    paused: bool = False
    # A rollout starts a surge pod before each old one goes (spec.rollout.maxSurge 1): no capacity is lost.
    surge: bool = True

    @property
    def prior(self) -> AcceptancePrior:
        return PRIORS.get(self.method, PRIORS["eagle3"])

    @property
    def k_range(self) -> range:
        return range(self.policy.min_k, self.policy.max_k + 1)

    @property
    def table_supported(self) -> bool:
        return table_supported(self.policy.schedule, self.data_parallel_size)

    @property
    def live_tables(self) -> bool:
        """Whether a new table reaches the running pods without a restart: wherever a table runs, since every
        pod runs specfleet's runtime, whose control endpoint takes a new table within the start-up k."""
        return self.table_supported

    def enabled_config(self, predictor: Predictor, k: int, incumbent: SpecConfig | None = None) -> SpecConfig:
        """Speculation on: the batch-size→k table where the topology allows it, else a fixed k. `incumbent`:
        the configuration running, whose table's rows a re-rendered table keeps unless surely beaten."""
        if not self.table_supported:
            return SpecConfig(enabled=True, k=k)
        table = render_schedule(predictor, self.k_range, incumbent=incumbent)
        ceiling = max(row_k for _, row_k in table)
        return SpecConfig(enabled=True, k=ceiling or self.policy.min_k, schedule=table)


def fleet_cost(spec: SpecDecodeDeploymentSpec, measured: MeasuredPrior | None = None) -> CostModel:
    """The fleet's step-cost model: the roofline of its model and hardware, or a profile's measured prior."""
    return CostModel.build(
        spec.runtime.accelerator,
        spec.model.name,
        str(spec.speculation.method),
        size_billions=spec.model.size_billions,
        tensor_parallel=spec.model.tensor_parallel_size,
    ).with_measured(measured)


def build_context(
    spec: SpecDecodeDeploymentSpec,
    policy: ResolvedPolicy,
    fleet: Fleet,
    *,
    paused: bool = False,
    measured: MeasuredPrior | None = None,
) -> Context:
    """The context of a SpecDecodeDeployment (the operator's path; the simulator may build one itself)."""
    method = str(spec.speculation.method)
    return Context(
        policy=policy,
        cost=fleet_cost(spec, measured),
        method=method,
        mode=SpeculationMode(spec.speculation.mode),
        fleet=fleet,
        start_k=spec.speculation.num_speculative_tokens,
        data_parallel_size=spec.model.data_parallel_size,
        paused=paused,
        surge=spec.rollout.surge,
    )


def initial_state(ctx: Context) -> PolicyState:
    """State of a new resource: the spec's starting configuration (Off mode: off), assumed good.

    Where the table is supported it is rendered from the acceptance prior, so the engine adapts k from the
    first pod on; measured acceptance re-renders it once it drifts from that prior.
    """
    if ctx.mode == SpeculationMode.OFF:
        return PolicyState(current=SpecConfig.off(), last_good=SpecConfig.off())
    curve = prior_curve(ctx.prior, ctx.policy.max_k)
    config = ctx.enabled_config(Predictor(ctx.cost, curve, Calibration()), ctx.policy.clamp_k(ctx.start_k))
    return PolicyState(
        current=config,
        last_good=config,
        table_curve=curve if config.schedule else None,
    )

"""The engine of each engine-test module of `specfleet profile` (one at a time: module scope)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from specfleet.runtime.engine_args import SpeculativeConfig
from tests.fixtures.vllm import ControlToken, EngineServer, TinyModels, engine_config, start_engine, stop_engine
from tests.profile.engines import LIVE_SCHEDULE


@pytest.fixture(scope="module")
def live_engine(
    request: pytest.FixtureRequest,
    tiny_models: TinyModels,
    tmp_path_factory: pytest.TempPathFactory,
    control_token: ControlToken,
) -> Iterator[EngineServer]:
    """An engine of the module's `METHOD` at k=3 whose live table may set k 0, 1 or 3.

    A draft-model engine's target drafts for itself (as in the shared fixture): two random models would
    accept nothing.
    """
    method: str = request.module.METHOD
    draft = str(tiny_models.target) if method == "draft_model" else None
    spec = SpeculativeConfig(method=method, k=3, draft_model=draft, schedule=LIVE_SCHEDULE)
    workdir = tmp_path_factory.mktemp(f"profile-{method}")
    server = start_engine(engine_config(tiny_models.target, spec), workdir, env=control_token.env())
    yield server
    stop_engine(server)

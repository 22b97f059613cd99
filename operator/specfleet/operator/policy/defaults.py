"""The documented defaults of every policy field (the descriptions in `api.policy_types` quote these)."""

from __future__ import annotations

from specfleet.operator.api.policy_types import Fallback

DEFAULT_START_K = 3
INTERVAL_SECONDS = 30
WINDOW_SECONDS = 120
ENABLE_MARGIN = 0.10
DISABLE_MARGIN = 0.02
DWELL_SECONDS = 120
COOLDOWN_SECONDS = 600
MAX_RESTARTS_PER_HOUR = 2
RESTART_COST_SECONDS = 90.0
EXPECTED_DWELL_SECONDS = 1800.0
FALLBACK = Fallback.HOLD
METRICS_MISSING_INTERVALS = 3
COLLAPSE_ACCEPTANCE_LENGTH = 1.3
MIN_K = 1
MIN_SAMPLES = 50
MIN_PODS = 1
VERIFICATION_WINDOWS = 2
ROLLBACK_TOLERANCE = 0.15
READY_DEADLINE_SECONDS = 900
SCHEDULE = True
# Gap kept between the margins when a merged policy would otherwise have none.
HYSTERESIS_GAP = ENABLE_MARGIN - DISABLE_MARGIN

"""Monitoring: the PodMonitor writes the operator's labels, alerts fire when they should, dashboards add up.

Alerts and dashboard queries run through promtool (Prometheus' own engine) on synthetic series.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from specfleet.operator.api.constants import LABEL_CONFIG_HASH, LABEL_DEPLOYMENT
from specfleet.operator.config import OperatorConfig
from specfleet.operator.signals.model import LabelMapping
from tests.chart.engines import engine_deployment
from tests.chart.helm import NAMESPACE, RELEASE, ROOT, chart_metadata, chart_values, one, render
from tests.chart.promtool import check_rules, counter, run_rule_tests, series
from tests.chart.relabel import pod_meta_labels, relabel
from tests.examples import valid_examples

MONITORING = ("monitoring.podMonitor.enabled=true", "monitoring.prometheusRule.enabled=true")
WITH_OPERATOR_SCRAPE = (*MONITORING, "monitoring.serviceMonitor.enabled=true")
DASHBOARD = ("monitoring.grafanaDashboard.enabled=true",)
# Grafana's variables, as the dashboard would expand them with "All" selected.
RUNBOOKS = ROOT / "docs" / "runbooks.md"
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__range": "1h", "$namespace": ".*", "$deployment": ".*"}


def _engine_pod(example: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """(pod labels, container) of the first engine pod the operator renders for an example."""
    template = engine_deployment(example)["spec"]["template"]
    return template["metadata"]["labels"], template["spec"]["containers"][0]


@pytest.mark.parametrize("example", valid_examples(), ids=lambda path: path.stem)
def test_podmonitor_gives_engine_series_the_labels_the_operator_queries(example: Path) -> None:
    pod_labels, container = _engine_pod(example)
    monitor = one(render(sets=MONITORING), "PodMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in {port["name"] for port in container["ports"]}

    target = relabel(pod_meta_labels("team-a", "engine-0", pod_labels), endpoint["relabelings"])
    config, queried = (
        OperatorConfig(),
        LabelMapping(),
    )  # the operator's defaults; what the signal queries group by
    for namespace, pod, deployment, config_hash in (
        (config.label_namespace, config.label_pod, config.label_deployment, config.label_config_hash),
        (queried.namespace, queried.pod, queried.deployment, queried.config_hash),
    ):
        assert (target[namespace], target[pod]) == ("team-a", "engine-0")
        assert target[deployment] == pod_labels[LABEL_DEPLOYMENT]
        assert target[config_hash] == pod_labels[LABEL_CONFIG_HASH]


def test_label_mapping_flows_into_podmonitor_alerts_and_dashboard() -> None:
    sets = (*MONITORING, *DASHBOARD, "operator.labels.deployment=sdd", "operator.labels.configHash=sdd_hash")
    manifests = render(sets=sets)
    (endpoint,) = one(manifests, "PodMonitor")["spec"]["podMetricsEndpoints"]
    assert {"sdd", "sdd_hash"} <= {relabeling["targetLabel"] for relabeling in endpoint["relabelings"]}
    rules = json.dumps(one(manifests, "PrometheusRule")["spec"])
    dashboard = one(manifests, "ConfigMap")["data"]["specfleet.json"]
    for text in (rules, dashboard):
        assert "specfleet_dev_deployment" not in text
        assert "specfleet_dev_config_hash" not in text
    assert "by (namespace, sdd)" in rules
    assert "sdd_hash" in dashboard


def _rule_groups(sets: Sequence[str] = WITH_OPERATOR_SCRAPE) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = one(render(sets=sets), "PrometheusRule")["spec"]["groups"]
    return groups


def test_alert_rules_pass_promtool_check(tmp_path: Path) -> None:
    groups = _rule_groups()
    result = check_rules(groups, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = {rule["alert"] for group in groups for rule in group["rules"]}
    assert {
        "SpecfleetAcceptanceCollapse",
        "SpecfleetSpeculationFlapping",
        "SpecfleetMetricsUnavailable",
    } <= alerts
    assert "SpecfleetRollback" in alerts


def _anchors(markdown: str) -> dict[str, str]:
    """GitHub's anchor of each heading (lower case, punctuation dropped, spaces to hyphens) -> the heading."""
    headings = re.findall(r"^#+ (.+)$", markdown, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"): heading for heading in headings}


@pytest.mark.parametrize("base", [None, "https://wiki.example.com/specfleet/runbooks"])
def test_every_alert_links_its_section_of_the_runbooks(base: str | None) -> None:
    sets = (*WITH_OPERATOR_SCRAPE, *([f"monitoring.prometheusRule.runbookBaseUrl={base}"] if base else []))
    # The default page is docs/runbooks.md of the chart's own repository.
    page = base or f"{chart_metadata()['home']}/blob/main/docs/runbooks.md"
    anchors = _anchors(RUNBOOKS.read_text())
    alerts = [rule for group in _rule_groups(sets) for rule in group["rules"] if "alert" in rule]
    for rule in alerts:
        url, _, anchor = rule["annotations"].get("runbook_url", "").partition("#")
        assert (url, anchors.get(anchor)) == (page, rule["alert"]), f"{rule['alert']}: {rule['annotations']}"
    assert {rule["alert"] for rule in alerts} == set(re.findall(r"^## (\w+)$", RUNBOOKS.read_text(), re.MULTILINE))


def _without_annotations(groups: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rules minus annotations: unit tests compare labels; annotations are checked by `check rules`."""
    stripped = copy.deepcopy(list(groups))
    for group in stripped:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    return [dict(group) for group in stripped]


def _rule(groups: Sequence[Mapping[str, Any]], alert: str) -> Mapping[str, Any]:
    rules: list[Mapping[str, Any]] = [rule for group in groups for rule in group["rules"]]
    (rule,) = [rule for rule in rules if rule.get("alert") == alert]
    return rule


def _alert_case(
    groups: Sequence[Mapping[str, Any]],
    alert: str,
    inputs: list[dict[str, str]],
    firing: Sequence[Mapping[str, str]],
    eval_minutes: int,
) -> dict[str, Any]:
    rule_labels = dict(_rule(groups, alert).get("labels", {}))
    return {
        "interval": "1m",
        "input_series": inputs,
        "alert_rule_test": [
            {
                "eval_time": f"{eval_minutes}m",
                "alertname": alert,
                "exp_alerts": [{"exp_labels": {**rule_labels, **labels}} for labels in firing],
            }
        ],
    }


def test_acceptance_collapse_fires_on_both_metric_spellings_and_not_when_healthy(tmp_path: Path) -> None:
    threshold = float(chart_values()["monitoring"]["prometheusRule"]["collapseAcceptanceLength"])
    drafts = 120.0
    config = OperatorConfig()
    cases = {  # deployment: (metric prefix, accepted tokens per minute)
        "colon": ("vllm:", drafts * (threshold - 1) / 2),
        "underscore": ("vllm_", drafts * (threshold - 1) / 2),
        "healthy": ("vllm:", drafts * (threshold - 1) * 2),
    }
    inputs = []
    for deployment, (prefix, accepted) in cases.items():
        labels = {
            config.label_namespace: "team-a",
            config.label_pod: f"{deployment}-0",
            config.label_deployment: deployment,
        }
        inputs.append(series(f"{prefix}spec_decode_num_drafts_total", labels, counter(drafts, 40)))
        inputs.append(series(f"{prefix}spec_decode_num_accepted_tokens_total", labels, counter(accepted, 40)))
    groups = _without_annotations(_rule_groups())
    firing = [{config.label_namespace: "team-a", config.label_deployment: name} for name in ("colon", "underscore")]
    result = run_rule_tests(groups, [_alert_case(groups, "SpecfleetAcceptanceCollapse", inputs, firing, 30)], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_flapping_metrics_unavailable_and_rollback_fire_for_the_affected_deployment_only(
    tmp_path: Path,
) -> None:
    switches = int(chart_values()["monitoring"]["prometheusRule"]["flappingSwitchesPerHour"]) * 2
    period = 60 // switches
    flapping = [float((minute // period) % 2) for minute in range(61)]
    steady = [1.0] * 61
    bad, good = {"namespace": "team-a", "deployment": "bad"}, {"namespace": "team-a", "deployment": "good"}
    groups = _without_annotations(_rule_groups())
    cases = [
        _alert_case(
            groups,
            "SpecfleetSpeculationFlapping",
            [
                series("specfleet_speculation_enabled", bad, flapping),
                series("specfleet_speculation_enabled", good, steady),
            ],
            [bad],
            60,
        ),
        _alert_case(
            groups,
            "SpecfleetMetricsUnavailable",
            [
                series("specfleet_metrics_available", bad, [0.0] * 31),
                series("specfleet_metrics_available", good, [1.0] * 31),
            ],
            [bad],
            30,
        ),
        _alert_case(
            groups,
            "SpecfleetRollback",
            [
                series("specfleet_rollbacks_total", bad, [0.0] * 10 + [1.0] * 21),
                series("specfleet_rollbacks_total", good, [0.0] * 31),
            ],
            [bad],
            20,
        ),
    ]
    result = run_rule_tests(groups, cases, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_operator_down_fires_when_no_replica_is_scraped(tmp_path: Path) -> None:
    groups = _without_annotations(_rule_groups())
    up = {"job": f"{RELEASE}-specfleet-metrics", "namespace": NAMESPACE}
    case = _alert_case(groups, "SpecfleetOperatorDown", [series("up", {**up, "pod": "a"}, [0.0] * 31)], [], 30)
    case["alert_rule_test"][0]["exp_alerts"] = [{"exp_labels": dict(_rule(groups, "SpecfleetOperatorDown")["labels"])}]
    healthy = _alert_case(groups, "SpecfleetOperatorDown", [series("up", {**up, "pod": "a"}, [1.0] * 31)], [], 30)
    result = run_rule_tests(groups, [case, healthy], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def _dashboard() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(one(render(sets=DASHBOARD), "ConfigMap")["data"]["specfleet.json"])
    return dashboard


def _expand(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def _panel_exprs(dashboard: Mapping[str, Any], title: str) -> list[str]:
    (panel,) = [panel for panel in dashboard["panels"] if panel["title"] == title]
    return [_expand(target["expr"]) for target in panel["targets"]]


def test_dashboard_covers_what_an_sre_needs() -> None:
    manifests = render(sets=DASHBOARD)
    config_map = one(manifests, "ConfigMap")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    titles = {panel["title"] for panel in json.loads(config_map["data"]["specfleet.json"])["panels"]}
    needed = {
        "Mean acceptance length L",
        "Per-position acceptance",
        "Requests per second",
        "Concurrency per replica",
    }
    assert needed | {"TPOT by mode", "Decisions"} <= titles


def test_every_dashboard_query_parses(tmp_path: Path) -> None:
    dashboard = _dashboard()
    exprs = [_expand(target["expr"]) for panel in dashboard["panels"] for target in panel["targets"]]
    rules = [{"record": f"dashboard:query_{index}", "expr": expr} for index, expr in enumerate(exprs)]
    result = check_rules([{"name": "dashboard", "rules": rules}], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_acceptance_qps_and_tpot_by_mode_add_up(tmp_path: Path) -> None:
    """Two pods of one deployment, one speculating, one not: the panels give L, a_i, QPS and TPOT per mode."""
    config = OperatorConfig()
    deployment = {config.label_namespace: "team-a", config.label_deployment: "llama"}
    spec_pod, plain_pod = (
        {**deployment, config.label_pod: "spec-0"},
        {**deployment, config.label_pod: "plain-0"},
    )
    drafts, per_position = 120.0, (90.0, 30.0)
    accepted = sum(per_position)
    tpot = {"spec-0": (12.0, 96.0), "plain-0": (24.0, 96.0)}  # (seconds, requests) added per minute
    requests = {"spec-0": 60.0, "plain-0": 120.0}
    inputs = [
        series("vllm:spec_decode_num_drafts_total", spec_pod, counter(drafts, 10)),
        series("vllm:spec_decode_num_accepted_tokens_total", spec_pod, counter(accepted, 10)),
        *(
            series(
                "vllm:spec_decode_num_accepted_tokens_per_pos_total",
                {**spec_pod, "position": str(i)},
                counter(n, 10),
            )
            for i, n in enumerate(per_position)
        ),
    ]
    for pod in (spec_pod, plain_pod):
        seconds, count = tpot[pod[config.label_pod]]
        inputs.append(series("vllm:request_time_per_output_token_seconds_sum", pod, counter(seconds, 10)))
        inputs.append(series("vllm:request_time_per_output_token_seconds_count", pod, counter(count, 10)))
        inputs.append(series("vllm:request_success_total", pod, counter(requests[pod[config.label_pod]], 10)))

    dashboard = _dashboard()
    (acceptance,) = _panel_exprs(dashboard, "Mean acceptance length L")
    (positions,) = _panel_exprs(dashboard, "Per-position acceptance")
    (qps,) = _panel_exprs(dashboard, "Requests per second")
    speculating, vanilla = _panel_exprs(dashboard, "TPOT by mode")
    labels = "{" + ", ".join(f'{key}="{value}"' for key, value in sorted(deployment.items())) + "}"

    def expect(expr: str, *samples: tuple[str, float]) -> dict[str, Any]:
        return {
            "expr": expr,
            "eval_time": "10m",
            "exp_samples": [{"labels": lab, "value": val} for lab, val in samples],
        }

    expr_tests = [
        expect(acceptance, (labels, 1 + accepted / drafts)),
        expect(
            positions,
            *((labels[:-1] + f', position="{i}"}}', n / drafts) for i, n in enumerate(per_position)),
        ),
        expect(qps, (labels, sum(requests.values()) / 60)),
        expect(speculating, (labels, tpot["spec-0"][0] / tpot["spec-0"][1])),
        expect(vanilla, (labels, tpot["plain-0"][0] / tpot["plain-0"][1])),
    ]
    case = {"interval": "1m", "input_series": inputs, "promql_expr_test": expr_tests}
    result = run_rule_tests([], [case], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr

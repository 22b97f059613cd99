"""Custom resources against their CRD schema: 422 wording, pruning, defaults, CEL rules (with oldSelf)."""

from __future__ import annotations

from typing import Any

import pytest

from specfleet.emulator.cel import check_rules
from specfleet.emulator.schema import apply_defaults, prune, unknown_fields, validate
from tests.emulator.conftest import Http
from tests.emulator.widgets import widget

MERGE = "application/merge-patch+json"


def _invalid(http: Http, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, status = http("POST", path, body)
    assert code == 422, status
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Invalid", 422)
    result: dict[str, Any] = status
    return result


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"replicas": "two"},
            'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        ),
        (
            {"replicas": -1},
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            {"replicas": 11},
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ),
        (
            {"replicas": 1, "mode": "Sometimes"},
            'spec.mode: Unsupported value: "Sometimes": supported values: "Auto", "On", "Off"',
        ),
        (
            {"replicas": 1, "model": ""},
            'spec.model: Invalid value: "": spec.model in body should be at least 1 chars long',
        ),
        ({"replicas": 1, "model": "x" * 21}, "spec.model: Too long: may not be longer than 20"),
        (
            {"replicas": 1, "model": "Big"},
            "spec.model: Invalid value: \"Big\": spec.model in body should match '^[a-z0-9-]*$'",
        ),
        ({"replicas": 1, "tags": ["a", "b", "c", "d"]}, "spec.tags: Too many: 4: must have at most 3 items"),
        (
            {"replicas": 1, "labels": {"a": 1}},
            'spec.labels[a]: Invalid value: "integer": spec.labels[a] in body must be of type string: "integer"',
        ),
        ({"mode": "On"}, "spec.replicas: Required value"),
    ],
)
def test_schema_violations_read_like_the_apiserver(
    http: Http, widgets: str, spec: dict[str, Any], message: str
) -> None:
    body = widget("bad")
    body["spec"] = spec
    status = _invalid(http, widgets, body)
    assert status["message"] == f'Widget.test.dev "bad" is invalid: {message}'
    assert status["details"]["causes"][0]["field"] == message.split(":")[0]


def test_several_violations_are_listed_together(http: Http, widgets: str) -> None:
    status = _invalid(http, widgets, widget("many", replicas=-1, mode="No"))
    assert status["message"].startswith('Widget.test.dev "many" is invalid: [')
    assert len(status["details"]["causes"]) == 2


def test_cel_rule_failure(http: Http, widgets: str) -> None:
    status = _invalid(http, widgets, widget("cel", speculation={"k": 7, "maxK": 4}))
    assert (
        status["message"] == 'Widget.test.dev "cel" is invalid: '
        'spec.speculation: Invalid value: "object": k must not exceed maxK'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": k must not exceed maxK',
            "field": "spec.speculation",
        }
    ]


def test_cel_rule_sees_defaults(http: Http, widgets: str) -> None:
    assert http("POST", widgets, widget("celok", speculation={"k": 5}))[0] == 201  # maxK defaults to 5
    assert (
        _invalid(http, widgets, widget("celbad", speculation={"k": 6}))["details"]["causes"][0]["field"]
        == "spec.speculation"
    )


def test_transition_rule_uses_old_self(http: Http, widgets: str) -> None:
    assert http("POST", widgets, widget("imm", model="llama"))[0] == 201
    code, status = http("PATCH", f"{widgets}/imm", {"spec": {"model": "qwen"}}, content_type=MERGE)
    assert code == 422
    assert status["message"].endswith('spec.model: Invalid value: "string": model is immutable')
    assert http("PATCH", f"{widgets}/imm", {"spec": {"replicas": 2}}, content_type=MERGE)[0] == 200


def test_unknown_fields_are_pruned_unless_preserved(http: Http, widgets: str) -> None:
    body = widget("prune", bogus=1, extra={"free": {"form": True}})
    body["junk"] = "x"
    code, stored = http("POST", widgets, body)
    assert code == 201
    assert "junk" not in stored
    assert "bogus" not in stored["spec"]
    assert stored["spec"]["extra"] == {"free": {"form": True}}


def test_strict_field_validation_refuses_what_pruning_would_drop(http: Http, widgets: str) -> None:
    body = widget("strict", bogus=1, extra={"free": {"form": True}})
    code, status = http("POST", f"{widgets}?fieldValidation=Strict", body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].endswith('strict decoding error: unknown field "spec.bogus"')
    assert http("POST", f"{widgets}?fieldValidation=Ignore", body)[0] == 201
    patch = {"spec": {"replicas": 2, "bogus": 2}}
    code, _ = http("PATCH", f"{widgets}/strict?fieldValidation=Strict", patch, content_type=MERGE)
    assert code == 400
    _, stored = http("GET", f"{widgets}/strict")
    assert stored["spec"]["replicas"] == 1


def test_defaults_are_applied(http: Http, widgets: str) -> None:
    _, stored = http("POST", widgets, widget("dflt", speculation={}))
    assert stored["spec"]["mode"] == "Auto"
    assert stored["spec"]["speculation"] == {"maxK": 5}


def test_status_writes_are_validated_too(http: Http, widgets: str) -> None:
    http("POST", widgets, widget("st"))
    code, status = http("PATCH", f"{widgets}/st/status", {"status": {"replicas": "x"}}, content_type=MERGE)
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "status.replicas"


# --- the pure parts, on plain data ----------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "integer", "default": 3}}},
        "m": {
            "type": "object",
            "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
        "free": {"type": "object"},
        "n": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "nullable": True},
    },
}


def test_prune_follows_properties_and_additional_properties() -> None:
    value = {
        "a": {"b": 1, "c": 2},
        "m": {"k": {"x": "1", "y": 2}},
        "free": {"q": 1},
        "z": 0,
        "metadata": {"name": "n"},
    }
    assert prune(value, SCHEMA, root=True) == {
        "a": {"b": 1},
        "m": {"k": {"x": "1"}},
        "free": {},
        "metadata": {"name": "n"},
    }


def test_unknown_fields_are_the_paths_prune_drops() -> None:
    value = {"a": {"b": 1, "c": 2}, "m": {"k": {"x": "1", "y": 2}}, "free": {"q": 1}, "z": 0, "metadata": {}}
    assert unknown_fields(value, SCHEMA) == ["a.c", "m[k].y", "free.q", "z"]
    assert unknown_fields({"a": {"b": 1}, "metadata": {"name": "n"}}, SCHEMA) == []


def test_defaults_only_fill_present_parents() -> None:
    assert apply_defaults({}, SCHEMA) == {}
    assert apply_defaults({"a": {}}, SCHEMA) == {"a": {"b": 3}}


def test_exclusive_minimum_and_nullable() -> None:
    assert [c["message"] for c in validate({"n": 0}, SCHEMA)] == [
        "Invalid value: 0: n in body should be greater than 0"
    ]
    assert validate({"n": None}, SCHEMA) == []


def test_cel_rule_with_message_expression_and_field_path() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [
            {
                "rule": "self.lo <= self.hi",
                "messageExpression": "'lo ' + string(self.lo) + ' above hi'",
                "fieldPath": ".lo",
            }
        ],
    }
    assert check_rules({"lo": 5, "hi": 1}, schema, path="spec") == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": lo 5 above hi',
            "field": "spec.lo",
        }
    ]
    assert check_rules({"lo": 0, "hi": 1}, schema, path="spec") == []


def test_cel_evaluation_error_is_reported() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.missing > 1"}]}
    (failure,) = check_rules({}, schema, path="spec")
    assert failure["field"] == "spec"
    assert "evaluating rule: self.missing > 1" in failure["message"]


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("2026-01-02T15:04:05Z", True),
        ("2026-01-02t15:04:05.123456+01:00", True),
        ("2026-02-30T00:00:00Z", False),
        ("2026-01-02T24:00:00Z", False),
        ("2026-01-02T15:04Z", False),
        ("2026-01-02 15:04:05Z", False),
        ("yesterday", False),
    ],
)
def test_date_time_format_is_checked_as_the_apiserver_does(text: str, valid: bool) -> None:
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}
    refused = {
        "reason": "FieldValueInvalid",
        "message": f'Invalid value: "{text}": at in body must be of type date-time: "{text}"',
        "field": "at",
    }
    assert validate({"at": text}, schema) == ([] if valid else [refused])


def test_map_lists_refuse_a_key_twice_and_set_lists_a_value_twice() -> None:
    schema = {
        "type": "object",
        "properties": {
            "conditions": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": {"type": "object", "properties": {"type": {"type": "string"}, "s": {"type": "string"}}},
            },
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        },
    }
    twice = {"conditions": [{"type": "Ready", "s": "a"}, {"type": "Done"}, {"type": "Ready", "s": "b"}]}
    assert validate(twice, schema) == [
        {"reason": "FieldValueDuplicate", "message": 'Duplicate value: {"type": "Ready"}', "field": "conditions[2]"}
    ]
    assert [c["field"] for c in validate({"tags": ["a", "b", "a"]}, schema)] == ["tags[2]"]
    assert validate({"conditions": [{"type": "Ready"}, {"type": "Done"}], "tags": ["a", "b"]}, schema) == []

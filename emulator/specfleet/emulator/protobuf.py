"""Request bodies in Kubernetes' protobuf encoding, read into the JSON form the store keeps.

client-go's generated clientsets send built-in types as `application/vnd.kubernetes.protobuf` and never fall
back to JSON (their 415 fallback covers CBOR only), so `kubectl create namespace|secret|configmap|role|...`
and Helm's release Secrets arrive in it. The body is the magic `k8s\\0` and a runtime.Unknown envelope whose
`raw` is the object's message. protobuf's own parser reads the wire format; the table below names the fields
of the messages those clients send (numbers as in k8s.io/api's generated.proto). Go pointer fields are sent
only when set, so their zero is a value; every other field is always sent, and its zero means "unset".
"""

from __future__ import annotations

import base64
import datetime
import json
from dataclasses import dataclass
from typing import Any

from google.protobuf import empty_pb2, message, unknown_fields

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
_LENGTH_DELIMITED, _VARINT = 2, 0
_SCALARS = ("string", "bytes", "raw", "int", "bool", "time", "fieldsV1")


class ProtobufError(ValueError):
    """A body that is not a well-formed Kubernetes protobuf message."""


class UnsupportedKindError(ProtobufError):
    """A well-formed body of a kind (or with a field) the table below does not describe."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # one of _SCALARS, or the name of a message in _MESSAGES
    repeated: bool = False
    map_of: str | None = None  # map<string, map_of>: sent as repeated {1: key, 2: value} entries
    pointer: bool = False  # a Go pointer: present means set, zero included


def _strings(*names: str) -> dict[int, Field]:
    return {number: Field(name, "string") for number, name in enumerate(names, start=1)}


_META = "ObjectMeta"
_MESSAGES: dict[str, dict[int, Field]] = {
    "Unknown": {
        1: Field("typeMeta", "TypeMeta"),
        2: Field("raw", "raw"),
        3: Field("contentEncoding", "string"),
        4: Field("contentType", "string"),
    },
    "TypeMeta": _strings("apiVersion", "kind"),
    "ObjectMeta": {
        **_strings("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion"),
        7: Field("generation", "int"),
        8: Field("creationTimestamp", "time"),
        9: Field("deletionTimestamp", "time"),
        10: Field("deletionGracePeriodSeconds", "int", pointer=True),
        11: Field("labels", "string", map_of="string"),
        12: Field("annotations", "string", map_of="string"),
        13: Field("ownerReferences", "OwnerReference", repeated=True),
        14: Field("finalizers", "string", repeated=True),
        17: Field("managedFields", "ManagedFieldsEntry", repeated=True),
    },
    "OwnerReference": {
        1: Field("kind", "string"),
        3: Field("name", "string"),
        4: Field("uid", "string"),
        5: Field("apiVersion", "string"),
        6: Field("controller", "bool", pointer=True),
        7: Field("blockOwnerDeletion", "bool", pointer=True),
    },
    "ManagedFieldsEntry": {
        **_strings("manager", "operation", "apiVersion"),
        4: Field("time", "time"),
        6: Field("fieldsType", "string"),
        7: Field("fieldsV1", "fieldsV1"),
        8: Field("subresource", "string"),
    },
    "Namespace": {
        1: Field("metadata", _META),
        2: Field("spec", "NamespaceSpec"),
        3: Field("status", "NamespaceStatus"),
    },
    "NamespaceSpec": {1: Field("finalizers", "string", repeated=True)},
    "NamespaceStatus": {1: Field("phase", "string")},
    "Secret": {
        1: Field("metadata", _META),
        2: Field("data", "string", map_of="bytes"),
        3: Field("type", "string"),
        4: Field("stringData", "string", map_of="string"),
        5: Field("immutable", "bool", pointer=True),
    },
    "ConfigMap": {
        1: Field("metadata", _META),
        2: Field("data", "string", map_of="string"),
        3: Field("binaryData", "string", map_of="bytes"),
        4: Field("immutable", "bool", pointer=True),
    },
    "ServiceAccount": {
        1: Field("metadata", _META),
        2: Field("secrets", "ObjectReference", repeated=True),
        3: Field("imagePullSecrets", "LocalObjectReference", repeated=True),
        4: Field("automountServiceAccountToken", "bool", pointer=True),
    },
    "ObjectReference": _strings("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"),
    "LocalObjectReference": _strings("name"),
    "PolicyRule": {
        number: Field(name, "string", repeated=True)
        for number, name in enumerate(("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"), 1)
    },
    "Role": {1: Field("metadata", _META), 2: Field("rules", "PolicyRule", repeated=True)},
    "ClusterRole": {
        1: Field("metadata", _META),
        2: Field("rules", "PolicyRule", repeated=True),
        3: Field("aggregationRule", "AggregationRule", pointer=True),
    },
    "AggregationRule": {1: Field("clusterRoleSelectors", "LabelSelector", repeated=True)},
    "LabelSelector": {
        1: Field("matchLabels", "string", map_of="string"),
        2: Field("matchExpressions", "LabelSelectorRequirement", repeated=True),
    },
    "LabelSelectorRequirement": {**_strings("key", "operator"), 3: Field("values", "string", repeated=True)},
    "RoleBinding": {
        1: Field("metadata", _META),
        2: Field("subjects", "Subject", repeated=True),
        3: Field("roleRef", "RoleRef"),
    },
    "Subject": _strings("kind", "apiGroup", "name", "namespace"),
    "RoleRef": _strings("apiGroup", "kind", "name"),
    "DeleteOptions": {
        1: Field("gracePeriodSeconds", "int", pointer=True),
        2: Field("preconditions", "Preconditions", pointer=True),
        3: Field("orphanDependents", "bool", pointer=True),
        4: Field("propagationPolicy", "string", pointer=True),
        5: Field("dryRun", "string", repeated=True),
        6: Field("ignoreStoreReadErrorWithClusterBreakingPotential", "bool", pointer=True),
    },
    "Preconditions": {1: Field("uid", "string", pointer=True), 2: Field("resourceVersion", "string", pointer=True)},
}
_MESSAGES["ClusterRoleBinding"] = _MESSAGES["RoleBinding"]

_RBAC = "rbac.authorization.k8s.io/v1"
# (apiVersion, kind) of the objects a body may carry; DeleteOptions is sent under any group's version.
KINDS: dict[tuple[str, str], str] = {
    **{("v1", kind): kind for kind in ("Namespace", "Secret", "ConfigMap", "ServiceAccount")},
    **{(_RBAC, kind): kind for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")},
}


def decode(body: bytes) -> dict[str, Any]:
    """The object (or DeleteOptions) a protobuf request body carries, as its JSON form."""
    if not body.startswith(_MAGIC):
        raise ProtobufError("the body has no Kubernetes protobuf envelope (it must start with k8s\\x00)")
    try:
        return _object(body[len(_MAGIC) :])
    except ProtobufError:
        raise
    except ValueError as exc:  # a string that is not UTF-8, managed fields that are not JSON
        raise ProtobufError(f"malformed protobuf: {exc}") from exc


def _object(data: bytes) -> dict[str, Any]:
    envelope = _message("Unknown", data)
    type_meta = envelope.get("typeMeta", {})
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if envelope.get("contentEncoding"):
        raise UnsupportedKindError(f"content encoding {envelope['contentEncoding']!r} is not supported")
    name = "DeleteOptions" if kind == "DeleteOptions" else KINDS.get((api_version, kind))
    if name is None:
        raise UnsupportedKindError(f"no protobuf decoding for {kind or 'an untyped object'} in {api_version or '?'}")
    return {"apiVersion": api_version, "kind": kind, **_message(name, envelope.get("raw", b""))}


def _wire(data: bytes) -> list[tuple[int, int, Any]]:
    try:
        parsed = empty_pb2.Empty.FromString(data)
    except message.DecodeError as exc:
        raise ProtobufError(f"malformed protobuf: {exc}") from exc
    found = unknown_fields.UnknownFieldSet(parsed)  # indexed, not iterated: its typing declares only that
    return [(found[i].field_number, found[i].wire_type, found[i].data) for i in range(len(found))]


def _message(name: str, data: bytes) -> dict[str, Any]:
    fields = _MESSAGES[name]
    result: dict[str, Any] = {}
    for number, wire, raw in _wire(data):
        field = fields.get(number)
        if field is None:
            raise UnsupportedKindError(f"{name} field {number} is not known to the emulator")
        if field.map_of is not None:
            entry = {key: value for key, _, value in _wire(_bytes(field, wire, raw))}
            key = _scalar(field, "string", _LENGTH_DELIMITED, entry.get(1, b""))
            result.setdefault(field.name, {})[key] = _value(field, field.map_of, _LENGTH_DELIMITED, entry.get(2, b""))
        elif field.repeated:
            result.setdefault(field.name, []).append(_value(field, field.kind, wire, raw))
        else:
            value = _value(field, field.kind, wire, raw)
            if field.pointer or value not in ("", 0, {}, None):  # non-pointer zeros stand for "unset"
                result[field.name] = value
    return result


def _value(field: Field, kind: str, wire: int, raw: Any) -> Any:
    if kind in _SCALARS:
        return _scalar(field, kind, wire, raw)
    return _message(kind, _bytes(field, wire, raw))


def _scalar(field: Field, kind: str, wire: int, raw: Any) -> Any:
    match kind:
        case "int" | "bool":
            if wire != _VARINT:
                raise ProtobufError(f"field {field.name} is not a varint")
            number = raw - (1 << 64) if raw >= 1 << 63 else raw  # negative int64/int32 are 64-bit varints
            return bool(number) if kind == "bool" else number
        case "string":
            return _bytes(field, wire, raw).decode()
        case "bytes":  # []byte's JSON form, as Secret.data is served
            return base64.b64encode(_bytes(field, wire, raw)).decode()
        case "raw":
            return _bytes(field, wire, raw)
        case "time":
            return _time(_bytes(field, wire, raw))
        case _:  # fieldsV1: its field 1 is the managed-fields JSON itself
            encoded = {number: value for number, _, value in _wire(_bytes(field, wire, raw))}.get(1, b"{}")
            return json.loads(encoded)


def _bytes(field: Field, wire: int, raw: Any) -> bytes:
    if wire != _LENGTH_DELIMITED or not isinstance(raw, bytes):
        raise ProtobufError(f"field {field.name} is not length-delimited")
    return raw


def _time(data: bytes) -> str | None:
    """metav1.Time {seconds: 1, nanos: 2} as RFC 3339 at seconds precision; the zero time is unset."""
    seconds = next((value for number, wire, value in _wire(data) if number == 1 and wire == _VARINT), 0)
    if not seconds:
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

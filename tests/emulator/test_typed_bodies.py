"""Bodies in the encodings real clients send: kubectl's typed `create` commands (Kubernetes protobuf) are read
and stored as their JSON form; encodings the emulator does not read are refused 415, as the API server does."""

from __future__ import annotations

import base64

from specfleet.emulator import EmulatorServer
from specfleet.emulator.protobuf import MEDIA_TYPE, decode
from tests.emulator.conftest import Http, Kubectl, kubectl_fails

# `kubectl create secret generic s1 --from-literal=a=b` as kubectl 1.35 sends it (captured with -v=9).
SECRET_BODY = bytes.fromhex(
    "6b3873000a0c0a0276311206536563726574121e0a120a02733112001a0022002a0032003800420012060a01611201621a001a002200"
)


def test_a_captured_protobuf_secret_decodes_to_its_json_form() -> None:
    """Unset (empty) fields are dropped; the bytes of `data` become base64, as Secret.data is served."""
    assert decode(SECRET_BODY) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s1"},
        "data": {"a": base64.b64encode(b"b").decode()},
    }


def test_kubectl_create_namespace_secret_and_configmap(kubectl: Kubectl, emulator: EmulatorServer, ns: str) -> None:
    assert f"namespace/{ns}-x created" in kubectl("create", "namespace", f"{ns}-x")
    kubectl("create", "secret", "generic", "creds", "--from-literal=token=s3cr3t", "--from-literal=empty=")
    kubectl("create", "configmap", "settings", "--from-literal=level=debug")
    namespace = emulator.get("v1", "namespaces", f"{ns}-x")
    assert namespace is not None
    assert namespace["status"]["phase"] == "Active"
    secret = emulator.get("v1", "secrets", "creds", ns)
    assert secret is not None
    assert secret["data"] == {"token": base64.b64encode(b"s3cr3t").decode(), "empty": ""}
    assert secret["type"] == "Opaque"
    configmap = emulator.get("v1", "configmaps", "settings", ns)
    assert configmap is not None
    assert configmap["data"] == {"level": "debug"}
    assert kubectl("get", "secret", "creds", "-o", "jsonpath={.data.token}") == base64.b64encode(b"s3cr3t").decode()


def test_kubectl_create_service_account_and_rbac(kubectl: Kubectl, emulator: EmulatorServer, ns: str) -> None:
    kubectl("create", "serviceaccount", "robot")
    kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods", "--resource-name=p1")
    kubectl("create", "rolebinding", "reads", "--role=reader", f"--serviceaccount={ns}:robot")
    kubectl("create", "clusterrole", f"{ns}-metrics", "--verb=get", "--non-resource-url=/metrics")
    kubectl("create", "clusterrolebinding", f"{ns}-metrics", f"--clusterrole={ns}-metrics", "--group=scrapers")
    assert emulator.get("v1", "serviceaccounts", "robot", ns) is not None
    role = emulator.get("rbac.authorization.k8s.io/v1", "roles", "reader", ns)
    assert role is not None
    assert role["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p1"]}
    ]
    binding = emulator.get("rbac.authorization.k8s.io/v1", "rolebindings", "reads", ns)
    assert binding is not None
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "robot", "namespace": ns}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
    cluster_role = emulator.get("rbac.authorization.k8s.io/v1", "clusterroles", f"{ns}-metrics")
    assert cluster_role is not None
    assert cluster_role["rules"] == [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]


def test_kubectl_delete_with_protobuf_delete_options(kubectl: Kubectl, emulator: EmulatorServer, ns: str) -> None:
    """Typed deletes send their DeleteOptions as protobuf too (Helm's release Secrets are deleted so)."""
    kubectl("create", "configmap", "gone", "--from-literal=a=b")
    kubectl("delete", "configmap", "gone")
    assert emulator.get("v1", "configmaps", "gone", ns) is None


def test_a_protobuf_body_of_an_undescribed_kind_is_refused_and_nothing_is_stored(
    kubectl: Kubectl, emulator: EmulatorServer, ns: str
) -> None:
    refused = kubectl_fails(kubectl, "create", "deployment", "web", "--image=nginx")
    assert "no protobuf decoding for Deployment in apps/v1; send it as application/json" in refused
    assert emulator.get("apps/v1", "deployments", "web", ns) is None


def test_cbor_and_malformed_protobuf_are_refused(http: Http, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/configmaps"
    status, body = http("POST", path, b"\xa0", content_type="application/cbor")
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")  # what makes client-go fall back to JSON
    assert "application/json" in body["message"]
    for malformed in (b"k8s\x00\xff\xff", b"k8s\x00\x0a\x04\x0a\x02\xff\xfe"):  # bad wire format; not UTF-8
        status, body = http("POST", path, malformed, content_type=MEDIA_TYPE)
        assert (status, body["reason"]) == (400, "BadRequest")
    status, body = http("POST", path, b'{"metadata": {"name": "plain"}}', content_type=MEDIA_TYPE)
    assert (status, body["reason"]) == (400, "BadRequest")
    assert http("GET", f"{path}/plain")[0] == 404

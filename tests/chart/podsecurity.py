"""The "restricted" Pod Security Standard (Kubernetes 1.35), as a pure check over manifests. PURE.

`restricted_violations(manifest)` takes any workload (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet,
Job, CronJob) as a plain dict and returns one line per violation, empty when the pod would be admitted by a
namespace labelled `pod-security.kubernetes.io/enforce: restricted`. The baseline checks that restricted
includes are here too. specfleet also wants a read-only root filesystem, which the standard does not demand;
`read_only_root=True` (the default) adds that check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

# Volume types the restricted profile allows.
ALLOWED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "image",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
ALLOWED_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
ALLOWED_SECCOMP = frozenset({"RuntimeDefault", "Localhost"})
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def pod_spec_of(manifest: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec inside a workload, or None for kinds that hold no pod."""
    kind = manifest.get("kind")
    spec: Mapping[str, Any] = manifest.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    elif kind not in {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController"}:
        return None
    pod: Mapping[str, Any] = spec.get("template", {}).get("spec", {})
    return pod


def restricted_violations(manifest: Mapping[str, Any], read_only_root: bool = True) -> list[str]:
    """Every way the workload's pod breaks the restricted profile (empty: it passes)."""
    pod = pod_spec_of(manifest)
    if pod is None:
        return []
    where = f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}"
    return [f"{where}: {problem}" for problem in _pod_problems(pod, read_only_root)]


def _pod_problems(pod: Mapping[str, Any], read_only_root: bool) -> Iterator[str]:
    pod_context: Mapping[str, Any] = pod.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            yield f"{field} is true"
    if pod_context.get("runAsUser") == 0:
        yield "pod runAsUser is 0"
    yield from _selinux_problems("pod", pod_context)
    yield from _apparmor_problems("pod", pod_context)
    for sysctl in pod_context.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            yield f"unsafe sysctl {sysctl.get('name')}"
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            yield f"volume {volume.get('name')} has type {', '.join(sorted(kinds - ALLOWED_VOLUMES))}"
    for container in _containers(pod):
        name = f"container {container.get('name')}"
        yield from (f"{name}: {problem}" for problem in _container_problems(container, pod_context, read_only_root))


def _containers(pod: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for field in CONTAINER_LISTS:
        yield from pod.get(field) or []


def _container_problems(
    container: Mapping[str, Any], pod_context: Mapping[str, Any], read_only_root: bool
) -> Iterator[str]:
    context: Mapping[str, Any] = container.get("securityContext") or {}
    if context.get("privileged"):
        yield "privileged"
    if context.get("allowPrivilegeEscalation") is not False:
        yield "allowPrivilegeEscalation is not false"
    if not _inherited(context, pod_context, "runAsNonRoot"):
        yield "runAsNonRoot is not true"
    if context.get("runAsUser") == 0:
        yield "runAsUser is 0"
    seccomp = (_inherited(context, pod_context, "seccompProfile") or {}).get("type")
    if seccomp not in ALLOWED_SECCOMP:
        yield f"seccompProfile type is {seccomp or 'unset'}"
    capabilities: Mapping[str, Any] = context.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []):
        yield "capabilities do not drop ALL"
    added = set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}
    if added:
        yield f"capabilities add {', '.join(sorted(added))}"
    if context.get("procMount") not in (None, "Default"):
        yield f"procMount is {context.get('procMount')}"
    if any(port.get("hostPort") for port in container.get("ports") or []):
        yield "uses a hostPort"
    yield from _selinux_problems("container", context)
    yield from _apparmor_problems("container", context)
    if read_only_root and context.get("readOnlyRootFilesystem") is not True:
        yield "readOnlyRootFilesystem is not true"


def _inherited(context: Mapping[str, Any], pod_context: Mapping[str, Any], field: str) -> Any:
    """A container setting, falling back to the pod's (as the kubelet resolves it)."""
    return context[field] if field in context else pod_context.get(field)


def _selinux_problems(scope: str, context: Mapping[str, Any]) -> Iterator[str]:
    options: Mapping[str, Any] = context.get("seLinuxOptions") or {}
    if options.get("type", "") not in ALLOWED_SELINUX_TYPES:
        yield f"{scope} SELinux type {options.get('type')}"
    for field in ("user", "role"):
        if options.get(field):
            yield f"{scope} sets SELinux {field}"


def _apparmor_problems(scope: str, context: Mapping[str, Any]) -> Iterator[str]:
    profile = (context.get("appArmorProfile") or {}).get("type")
    if profile == "Unconfined":
        yield f"{scope} AppArmor profile is Unconfined"

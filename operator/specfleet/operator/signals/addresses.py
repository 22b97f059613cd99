"""PURE. Which addresses a tenant's inline Prometheus URL may reach: hosts judged as the addresses they are.

A URL's host is read the way the C resolver reads it (`0x7f000001`, `2130706433`, `0177.0.0.1` and `127.1`
are all 127.0.0.1), so a numeric disguise is judged as the address it names; a DNS name is judged by every
address it resolves to (the caller resolves, this module only judges).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Denied unless an allow entry names a network covering the address: the operator's own node and pod
# (loopback, "this host"), link-local, and the cloud metadata services that hand out credentials.
DEFAULT_DENIED: tuple[Network, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "127.0.0.0/8",  # loopback
        "::1/128",
        "0.0.0.0/8",  # the unspecified address: connects to this host
        "::/128",
        "169.254.0.0/16",  # link-local, including 169.254.169.254 (AWS, GCP, Azure, OpenStack metadata)
        "fe80::/10",
        "fd00:ec2::254/128",  # AWS metadata over IPv6
        "100.100.100.200/32",  # Alibaba Cloud metadata
    )
)

_HEX = re.compile(r"0[xX][0-9a-fA-F]*")
_OCTAL = re.compile(r"0[0-7]+")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_NAME = re.compile(r"(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?")


@dataclass(frozen=True)
class AddressRules:
    """The admin's allow and deny lists: networks (CIDR or a single address) and host names (`*.` suffixes)."""

    allow_networks: tuple[Network, ...] = ()
    allow_names: tuple[str, ...] = ()
    deny_networks: tuple[Network, ...] = ()
    deny_names: tuple[str, ...] = ()

    @classmethod
    def parse(cls, allow: Sequence[str] = (), deny: Sequence[str] = ()) -> AddressRules:
        """Entries as an admin writes them; one clear error for the first one that is neither."""
        allow_networks, allow_names = _entries(allow)
        deny_networks, deny_names = _entries(deny)
        return cls(allow_networks, allow_names, deny_networks, deny_names)

    @property
    def restricted(self) -> bool:
        """With an allow list, only what it names is reachable."""
        return bool(self.allow_networks or self.allow_names)


def _entries(raw: Sequence[str]) -> tuple[tuple[Network, ...], tuple[str, ...]]:
    networks: list[Network] = []
    names: list[str] = []
    for entry in (item.strip().lower() for item in raw):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
            continue
        except ValueError:
            pass
        if not _NAME.fullmatch(entry):
            raise ValueError(f"{entry!r} is neither a network (CIDR) nor a host name")
        names.append(entry)
    return tuple(networks), tuple(names)


def normal_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def numeric_address(host: str) -> Address | None:
    """The address a host names numerically (any form inet_aton accepts, or IPv6), else None: a DNS name."""
    host = normal_host(host).split("%", 1)[0]  # an IPv6 zone names an interface, not another address
    try:
        return _unmapped(ipaddress.ip_address(host))
    except ValueError:
        return _loose_ipv4(host)


def _unmapped(address: Address) -> Address:
    """::ffff:127.0.0.1 reaches 127.0.0.1: judge it as that."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _loose_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """inet_aton's forms: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the last fills the rest."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_number(part) for part in parts]
    if any(value is None for value in values):
        return None
    *head, last = [value for value in values if value is not None]
    if any(value > 255 for value in head) or last >= 256 ** (4 - len(head)):
        return None
    number = 0
    for value in head:
        number = number * 256 + value
    return ipaddress.IPv4Address(number * 256 ** (4 - len(head)) + last)


def _number(part: str) -> int | None:
    if _HEX.fullmatch(part):
        return int(part[2:] or "0", 16)
    if _OCTAL.fullmatch(part):
        return int(part, 8)
    if _DECIMAL.fullmatch(part):
        return int(part)
    return None


def _name_matches(host: str, patterns: Iterable[str]) -> bool:
    return any(host == p or (p.startswith("*.") and host.endswith(p[1:])) for p in patterns)


def refusal(host: str, addresses: Sequence[Address], rules: AddressRules) -> str | None:
    """Why `host` (resolved to `addresses`) may not be fetched, or None when every address may be."""
    host = normal_host(host)
    if _name_matches(host, rules.deny_names):
        return f"host {host} is denied by the operator's configuration"
    if not addresses:
        return f"host {host} resolves to no address"
    name_allowed = _name_matches(host, rules.allow_names)
    for address in (_unmapped(a) for a in addresses):
        explicitly = any(address in net for net in rules.allow_networks)
        if any(address in net for net in rules.deny_networks):
            return f"{host} resolves to {address}, which the operator's configuration denies"
        if not explicitly and any(address in net for net in DEFAULT_DENIED):
            return f"{host} resolves to {address} (loopback, link-local, metadata or unspecified), denied by default"
        if rules.restricted and not (explicitly or name_allowed):
            return f"{host} ({address}) is not in the operator's allow list"
    return None

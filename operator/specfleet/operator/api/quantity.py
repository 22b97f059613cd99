"""Resource quantities of the engine container, checked as the API server checks a pod's resources. Pure.

The grammar is Kubernetes' (`resource.Quantity`): a non-negative decimal number with an optional binary-SI
(`Ki`..`Ei`), decimal-SI (`n`, `u`, `m`, `k`, `M`..`E`) or exponent (`e3`) suffix, written as a string or, as
the API server also accepts for int-or-string fields, a plain integer (`cpu: 8`). Negative quantities, which
the grammar allows but a container's resources do not, are refused by the pattern already. Extended resources
(a domain-qualified name outside kubernetes.io, such as `nvidia.com/gpu` or `amd.com/gpu`) cannot be
overcommitted: they are whole numbers, and a request needs a limit equal to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic.config import JsonDict

QUANTITY_PATTERN = r"^[+]?(([0-9]+([.][0-9]*)?)|([.][0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$"
# Extended resources are written as plain whole numbers (stricter than the API server's `2000m`, never wrong).
WHOLE_PATTERN = "^[0-9]+$"
# A domain-qualified name is extended unless its domain is kubernetes.io or a subdomain of it.
_QUALIFIED = re.compile("^[^/]+/")
_NATIVE_DOMAIN = re.compile(r"^([^/]*\.)?kubernetes\.io/")
# The one resource whose limit the operator fills in (tensorParallelSize * dataParallelSize) when unset.
GPU_RESOURCE = "nvidia.com/gpu"
# Accelerators' device-plugin resources, which the CRD's CEL rules check by name: a rule iterating over a
# map's keys would be estimated by the API server at a whole request's size per key, and refused as too costly.
ACCELERATORS = (
    GPU_RESOURCE,
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
    "habana.ai/gaudi",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "google.com/tpu",
)

EXTENDED_WHOLE = "extended resources (a domain-qualified name such as nvidia.com/gpu) take whole numbers, e.g. 1"
EXTENDED_EQUAL = (
    "a request of an extended resource needs a limit equal to it (they cannot be overcommitted); "
    f"{GPU_RESOURCE}'s limit defaults to the GPUs the model needs"
)

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{f"{prefix}i": Decimal(1024**power) for power, prefix in enumerate("KMGTPE", start=1)},
}
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)
_NUMBER_RE = re.compile(r"[+]?([0-9]*[.]?[0-9]*)(.*)")


def quantity_text(value: object) -> object:
    """A YAML integer (`cpu: 8`) as the quantity string it means; anything else is left for the type check."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def check_quantity(text: str) -> str:
    if not _QUANTITY_RE.fullmatch(text):
        raise ValueError(
            f"{text!r} is not a Kubernetes quantity: a non-negative number with an optional suffix "
            "(m, k, M, G, Ki, Mi, Gi, ... or an exponent such as e3), e.g. 500m, 16Gi, 8"
        )
    return text


def quantity_value(text: str) -> Decimal:
    """The number a quantity stands for."""
    check_quantity(text)
    match = _NUMBER_RE.fullmatch(text)
    assert match is not None  # every quantity is a number and a suffix
    number, suffix = match.groups()
    if suffix[:1] in {"e", "E"}:
        return Decimal(number) * Decimal(10) ** int(suffix[1:])
    return Decimal(number) * _SUFFIXES[suffix]


def is_extended(name: str) -> bool:
    return bool(_QUALIFIED.match(name)) and not _NATIVE_DOMAIN.match(name)


def resource_problems(requests: Mapping[str, str], limits: Mapping[str, str]) -> list[str]:
    """What the API server would refuse in a container's requests and limits (each value already a quantity)."""
    problems = [
        f"{kind}[{name}]: {value!r}: {EXTENDED_WHOLE}"
        for kind, values in (("requests", requests), ("limits", limits))
        for name, value in values.items()
        if is_extended(name) and not re.fullmatch(WHOLE_PATTERN, value)
    ]
    if problems:
        return problems
    for name, request in requests.items():
        limit = limits.get(name)
        if is_extended(name) and (
            quantity_value(request) != quantity_value(limit) if limit is not None else name != GPU_RESOURCE
        ):
            problems.append(f"requests[{name}]: {request!r}: {EXTENDED_EQUAL}")
        elif limit is not None and quantity_value(request) > quantity_value(limit):
            problems.append(f"requests[{name}]: {request!r} is more than its limit {limit!r}")
    return problems


def _int_or_string(schema: JsonDict) -> None:
    """The CRD types a quantity as the API server does: an integer or a string (`cpu: 8` or `cpu: 500m`)."""
    schema.pop("type", None)
    schema.update({"x-kubernetes-int-or-string": True, "minimum": 0, "pattern": QUANTITY_PATTERN})


Quantity = Annotated[
    str,
    BeforeValidator(quantity_text),
    AfterValidator(check_quantity),
    Field(
        description="A Kubernetes resource quantity, e.g. `1`, `500m`, `16Gi`; never negative.",
        max_length=64,
        json_schema_extra=_int_or_string,
    ),
]

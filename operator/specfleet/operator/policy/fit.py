"""Bayesian linear regression with a Gaussian prior, from bounded sufficient statistics.

Observations y ≈ θ·φ with relative noise (each weighted by 1/y², so a 5 % error weighs the same at any step
time). The evidence is kept as Σwφφᵀ and Σwφy, decayed exponentially so that an old regime fades; its size
does not grow with the number of observations. The posterior combines it with the prior N(m, diag(s²)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

Vector = tuple[float, ...]


@dataclass(frozen=True)
class Evidence:
    """Decayed sufficient statistics of weighted observations: Σwφφᵀ (row-major), Σwφy and Σw."""

    gram: Vector = ()
    moment: Vector = ()
    weight: float = 0.0

    def add(self, features: Sequence[float], observed: float, weight: float, decay: float) -> Evidence:
        """Fold one observation in, after multiplying the old evidence by `decay` (0 < decay ≤ 1)."""
        phi = np.asarray(features, dtype=float)
        w = weight / observed**2  # relative noise: residuals count as fractions of the step time
        gram = decay * self._gram(len(phi)) + w * np.outer(phi, phi)
        moment = decay * self._moment(len(phi)) + w * observed * phi
        return Evidence(tuple(gram.ravel().tolist()), tuple(moment.tolist()), decay * self.weight + weight)

    def _gram(self, n: int) -> NDArray[np.float64]:
        return np.asarray(self.gram, dtype=float).reshape(n, n) if self.gram else np.zeros((n, n))

    def _moment(self, n: int) -> NDArray[np.float64]:
        return np.asarray(self.moment, dtype=float) if self.moment else np.zeros(n)

    def posterior(self, prior_mean: Sequence[float], prior_std: Sequence[float], noise: float) -> Posterior:
        """N(μ, Σ) of the parameters given the prior and this evidence at relative noise `noise`.

        Solved in prior-standardised coordinates (θ = m + s·z) so parameters of very different scales
        (seconds per step, per token, per KV token) condition alike.
        """
        m, s = np.asarray(prior_mean, dtype=float), np.asarray(prior_std, dtype=float)
        n = len(m)
        gram, moment = self._gram(n), self._moment(n)
        precision = np.eye(n) + (s[:, None] * gram * s[None, :]) / noise**2
        residual = s * (moment - gram @ m) / noise**2
        covariance_z = np.linalg.inv(precision)
        mean = m + s * (covariance_z @ residual)
        covariance = s[:, None] * covariance_z * s[None, :]
        return Posterior(tuple(mean.tolist()), tuple(covariance.ravel().tolist()))

    def to_dict(self) -> dict[str, Any]:
        return {"gram": list(self.gram), "moment": list(self.moment), "weight": self.weight}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Evidence:
        gram, moment = tuple(float(v) for v in raw.get("gram", ())), tuple(float(v) for v in raw.get("moment", ()))
        if len(gram) != len(moment) ** 2:
            raise ValueError(f"evidence: {len(gram)} gram entries for {len(moment)} features")
        return cls(gram, moment, float(raw.get("weight", 0.0)))


@dataclass(frozen=True)
class Posterior:
    mean: Vector
    covariance: Vector  # row-major n by n

    def std(self) -> Vector:
        n = len(self.mean)
        return tuple(float(np.sqrt(max(self.covariance[i * n + i], 0.0))) for i in range(n))

    def predictive_std(self, features: Sequence[float]) -> float:
        """Standard deviation of θ·φ for the features of one prediction, or of any linear function of θ
        with gradient `features`."""
        phi = np.asarray(features, dtype=float)
        covariance = np.asarray(self.covariance, dtype=float).reshape(len(phi), len(phi))
        return float(np.sqrt(max(float(phi @ covariance @ phi), 0.0)))

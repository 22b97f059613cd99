"""PURE prompt classes and request generation: who asks what, how long, and how well the draft guesses it.

Class profiles marked "measured" come from SpecDecode-Bench's vLLM traces (arXiv:2601.11580); the others are
assumptions of this simulator (documented in docs/simulator.md) chosen to span the regimes the policy has to
handle: code accepts well, French chat (a language the draft was not trained on) and high-temperature prompts
accept poorly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from specfleet.simulator.acceptance import AcceptanceProfile
from specfleet.simulator.perf import DraftFamily

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class LogNormalLength:
    """Token count with a log-normal distribution of the given mean, clipped to [minimum, maximum]."""

    mean: float
    sigma: float
    minimum: int = 1
    maximum: int = 8192

    def minimum_mean(self) -> float:
        """A lower bound of the clipped mean, for sizing request pools (a quarter of the nominal mean)."""
        return max(self.mean / 4, self.minimum)

    def draw(self, n: int, rng: np.random.Generator) -> IntArray:
        mu = np.log(self.mean) - self.sigma**2 / 2
        return np.clip(np.rint(rng.lognormal(mu, self.sigma, n)), self.minimum, self.maximum).astype(np.int64)


@dataclass(frozen=True)
class PromptClass:
    """A kind of traffic: prompt and output lengths and the acceptance of each draft family on it."""

    name: str
    eagle: AcceptanceProfile
    ngram: AcceptanceProfile
    draft: AcceptanceProfile  # a separate small LM of the target's family (Qwen3-0.6B, Llama-3.2-1B)
    prompt: LogNormalLength
    output: LogNormalLength

    def profile(self, family: DraftFamily) -> AcceptanceProfile:
        return {DraftFamily.EAGLE: self.eagle, DraftFamily.DRAFT_MODEL: self.draft}.get(family, self.ngram)


def _eagle(*a: float, temperature: float = 0.0) -> AcceptanceProfile:
    return AcceptanceProfile(DraftFamily.EAGLE, a, temperature=temperature, spread=0.11)


def _draft(*a: float, temperature: float = 0.0) -> AcceptanceProfile:
    return AcceptanceProfile(DraftFamily.DRAFT_MODEL, a, temperature=temperature, spread=0.11)


def _ngram(*a: float, temperature: float = 0.0) -> AcceptanceProfile:
    return AcceptanceProfile(DraftFamily.NGRAM, a, temperature=temperature, spread=0.6)


# ShareGPT EAGLE positions are the increments of the measured mean L by k (1.66, 2.04, 2.25, 2.39, 2.48,
# 2.58 at k=7), so every k reproduces its measured L. Context lengths: multi-turn ShareGPT conversations carry
# ~1.5k tokens of context while decoding, GSM8K a short question and a worked answer.
SHAREGPT = PromptClass(
    name="sharegpt",  # measured (SpecDecode-Bench ShareGPT traces)
    eagle=_eagle(0.66, 0.38, 0.21, 0.14, 0.09, 0.055, 0.045),
    ngram=_ngram(0.16, 0.13, 0.11),
    draft=_draft(0.74, 0.53, 0.37, 0.26, 0.18),
    prompt=LogNormalLength(mean=1300, sigma=0.8, maximum=6000),
    output=LogNormalLength(mean=300, sigma=0.7, maximum=2048),
)
GSM8K = PromptClass(
    name="gsm8k",  # measured EAGLE; n-gram assumed between ShareGPT and code
    eagle=_eagle(0.67, 0.44, 0.28),
    ngram=_ngram(0.25, 0.21, 0.18),
    draft=_draft(0.78, 0.60, 0.45, 0.34, 0.25),
    prompt=LogNormalLength(mean=120, sigma=0.4, maximum=1024),
    output=LogNormalLength(mean=180, sigma=0.4, maximum=1024),
)
CODE_EN = PromptClass(
    name="code-en",  # assumed EAGLE (code is predictable); measured n-gram on code
    eagle=_eagle(0.76, 0.53, 0.37, 0.26, 0.18, 0.13, 0.09),
    ngram=_ngram(0.37, 0.34, 0.31),
    draft=_draft(0.80, 0.62, 0.48, 0.37, 0.28),
    prompt=LogNormalLength(mean=1200, sigma=0.7, maximum=8000),
    output=LogNormalLength(mean=350, sigma=0.6, maximum=2048),
)
CHAT_FR = PromptClass(
    name="chat-fr",  # assumed: a draft trained on English text, sampled at temperature 0.8
    eagle=_eagle(0.42, 0.17, 0.07, 0.03, 0.012, temperature=0.8),
    ngram=_ngram(0.10, 0.08, 0.065, temperature=0.8),
    draft=_draft(0.55, 0.30, 0.16, 0.08, 0.04, temperature=0.8),
    prompt=LogNormalLength(mean=500, sigma=0.7, maximum=4000),
    output=LogNormalLength(mean=400, sigma=0.6, maximum=2048),
)
CREATIVE = PromptClass(
    name="creative",  # assumed: ShareGPT-like chains sampled at temperature 1
    eagle=_eagle(0.66, 0.38, 0.21, 0.14, 0.09, 0.055, 0.045, temperature=1.0),
    ngram=_ngram(0.12, 0.09, 0.07, temperature=1.0),
    draft=_draft(0.74, 0.53, 0.37, 0.26, 0.18, temperature=1.0),
    prompt=LogNormalLength(mean=300, sigma=0.7, maximum=4000),
    output=LogNormalLength(mean=600, sigma=0.5, maximum=2048),
)
INSTRUCTCODER = PromptClass(
    name="instructcoder",  # EAGLE as code-en (assumed); an edit instruction and a code snippet: short context
    eagle=CODE_EN.eagle,
    ngram=CODE_EN.ngram,
    draft=CODE_EN.draft,
    prompt=LogNormalLength(mean=400, sigma=0.6, maximum=4000),
    output=LogNormalLength(mean=450, sigma=0.6, maximum=2048),
)
CLASSES: dict[str, PromptClass] = {c.name: c for c in (SHAREGPT, GSM8K, CODE_EN, CHAT_FR, CREATIVE, INSTRUCTCODER)}


@dataclass(frozen=True)
class Requests:
    """Every request of a run, in arrival order (struct of arrays)."""

    arrival: FloatArray
    klass: IntArray  # index into the run's class list
    prompt: IntArray
    output: IntArray

    def __len__(self) -> int:
        return len(self.arrival)


def generate_requests(
    times: FloatArray,
    qps: FloatArray,
    mix: FloatArray,
    classes: list[PromptClass],
    rng: np.random.Generator,
) -> Requests:
    """Poisson arrivals at a piecewise-constant rate: `qps[i]` and `mix[i]` hold on [times[i], times[i+1])."""
    durations = np.diff(times)
    counts = rng.poisson(qps[:-1] * durations)
    segment = np.repeat(np.arange(len(durations)), counts)
    arrival = np.sort(times[segment] + rng.random(len(segment)) * durations[segment])
    # Class by inverse CDF of the segment's mix; one uniform per request.
    cdf = np.cumsum(mix[segment], axis=1)
    u = rng.random(len(segment))[:, None] * cdf[:, -1:]
    klass = (u > cdf).sum(axis=1).astype(np.int64)
    prompt = np.zeros(len(segment), np.int64)
    output = np.zeros(len(segment), np.int64)
    for index, prompt_class in enumerate(classes):
        members = np.flatnonzero(klass == index)
        prompt[members] = prompt_class.prompt.draw(len(members), rng)
        output[members] = prompt_class.output.draw(len(members), rng)
    return Requests(arrival=arrival, klass=klass, prompt=prompt, output=output)

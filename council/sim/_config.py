"""Configuration of the embedded provider: how each vendor's judge behaves and its quota, and how each
model under test answers."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from council.config import model_from_file

_Rate = Field(ge=0.0, le=1.0)


class VendorBehaviour(BaseModel):
    """One vendor's judge: its skill, its biases, its faults and its quota."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accuracy: float = Field(default=0.82, ge=0.0, le=1.0)
    """P(round-one verdict == truth)."""
    self_preference: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(grading its own vendor's wrong answer as correct, when it would otherwise say incorrect)."""
    persuadability: float = Field(default=0.3, ge=0.0, le=1.0)
    """Round two: P(switching to the peers' strict-majority verdict when it disagrees with its own)."""
    malformed_rate: float = Field(default=0.01, ge=0.0, le=1.0)
    truncation_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    error_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    timeout_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    latency_ms: float = Field(default=5.0, ge=0.0)
    latency_jitter_ms: float = Field(default=5.0, ge=0.0)
    rpm: int = Field(default=0, ge=0)
    """Requests per minute; 0 = unlimited."""
    tpm: int = Field(default=0, ge=0)
    """Tokens (prompt + completion) per minute; 0 = unlimited."""
    name_drop_rate: float = Field(default=0.05, ge=0.0, le=1.0)
    """P(the reason names the judge's own model, e.g. "As gpt-5, I find ...")."""
    batch_drop_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """In a batched reply, P(leaving a row's entry out of the verdicts array); drawn per row from its content."""
    rate_limit_headers: bool = True
    """Send ``x-ratelimit-*`` headers; when False, a 200 carries none and a 429 only ``retry-after``."""


class ModelBehaviour(BaseModel):
    """One model under test, answering predict-then-answer elicitation requests.

    Per item (drawn from the seed, the model id and the item's prompt): the true probability of a correct
    answer ``p_true = clip(accuracy + difficulty_sd * z1, 0.02, 0.98)``; the stated confidence
    ``clip(p_true + overconfidence + confidence_noise * z2, 0, 1)``, rounded to 2 decimals; correct with
    probability ``p_true``; an abstention with probability ``abstention_rate`` (independent of the rest).
    Quotas are not here: they belong to the model's vendor (``VendorBehaviour.rpm`` / ``tpm``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accuracy: float = Field(default=0.7, ge=0.0, le=1.0)
    """Mean true P(correct) over items (exact up to the clipping of p_true to [0.02, 0.98])."""
    difficulty_sd: float = Field(default=0.15, ge=0.0)
    """Spread of the per-item true probability around ``accuracy``."""
    overconfidence: float = Field(default=0.1, ge=-1.0, le=1.0)
    """Stated confidence minus true probability, on average (negative: underconfident)."""
    confidence_noise: float = Field(default=0.1, ge=0.0)
    """Standard deviation of the stated confidence around ``p_true + overconfidence``."""
    abstention_rate: float = Field(default=0.05, ge=0.0, le=1.0)
    truncation_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(finish_reason "length" with the reply cut before the answer is complete: no answer or half a sentence)."""
    format_error_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the confidence line breaks the format: left out, or a word such as "high" instead of a number)."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """Mean hidden reasoning tokens per reply (each item draws 0.5x to 1.5x); reported in
    ``usage.completion_tokens_details.reasoning_tokens``, included in ``completion_tokens`` and billed."""
    latency_ms: float = Field(default=5.0, ge=0.0)
    latency_jitter_ms: float = Field(default=5.0, ge=0.0)


class SimConfig(BaseModel):
    """The whole provider: a seed, per-vendor behaviour, and the quota and timeout knobs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    vendors: dict[str, VendorBehaviour] = Field(default_factory=dict)
    default: VendorBehaviour = Field(default_factory=VendorBehaviour)
    burst_s: float = Field(default=1.0, gt=0.0)
    timeout_s: float = Field(default=30.0, ge=0.0)
    models: dict[str, ModelBehaviour] = Field(default_factory=dict)
    """Models under test by model id (``"openai/gpt-4o-mini"``); others answer as ``default_model``."""
    default_model: ModelBehaviour = Field(default_factory=ModelBehaviour)

    def behaviour(self, vendor: str) -> VendorBehaviour:
        return self.vendors.get(vendor, self.default)

    def model_behaviour(self, model: str) -> ModelBehaviour:
        """How ``model`` answers when it is elicited as a model under test."""
        return self.models.get(model, self.default_model)

    @classmethod
    def planted(cls, seed: int = 0) -> SimConfig:
        """The planted scenario: five vendors, google and openai
        strongly self-preferring, deepseek mildly; every judge persuadable with probability 0.3."""
        planted = {
            "anthropic": (0.86, 0.1),
            "google": (0.84, 0.7),
            "openai": (0.85, 0.8),
            "alibaba": (0.80, 0.1),
            "deepseek": (0.78, 0.3),
        }
        vendors = {
            name: VendorBehaviour(accuracy=acc, self_preference=pref, persuadability=0.3)
            for name, (acc, pref) in planted.items()
        }
        return cls(seed=seed, vendors=vendors)

    @classmethod
    def from_file(cls, path: str | Path) -> SimConfig:
        """Read a JSON file shaped like ``SimConfig.model_dump()``; raise ConfigError on any problem."""
        return model_from_file(cls, path, "simulator config")

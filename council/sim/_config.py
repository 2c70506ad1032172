"""Configuration of the embedded provider: who made which model (the world), how each vendor's judge
behaves and its quota, how hard each probe is to judge, and how each model under test answers."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from council.core.files import model_from_file
from council.sim._world import World, world_with

_Rate = Field(ge=0.0, le=1.0)
REASONING_MEANS: dict[str, int] = {"minimal": 40, "low": 300, "medium": 900, "high": 2500, "budget": 600,
                                   "dynamic": 3000}
"""The default ``VendorBehaviour.reasoning_means`` (not sourced: plausible orders of magnitude, dynamic thinking
large enough that a 256-token cap leaves no answer)."""


class VendorBehaviour(BaseModel):
    """One vendor's judge: its skill, its biases, its faults and its quota.

    Round one: a judge errs on a row when a latent score (the item's difficulty and the row's
    deceptiveness, both shared by every judge, plus the judge's own noise, see ``ProbeProfile``) crosses
    the judge's threshold ``Phi^-1(accuracy) + ease`` of the item's probe; an error flips the true verdict.
    Round two: see ``persuadability``, ``conformity`` and ``reason_weight``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accuracy: float = Field(default=0.82, ge=0.0, le=1.0)
    """P(round-one verdict == truth) on a probe of ease 0 (the default probe profile), before leniency; a probe
    with ease ``e`` gives ``Phi(Phi^-1(accuracy) + e)``."""
    self_preference: float = Field(default=0.0, ge=0.0, le=1.0)
    """Family leniency: P(turning an "incorrect" verdict into "correct" on a row written by any model of the
    judge's own vendor, per the world); in round two, P(holding on to "correct" on such a row)."""
    persuadability: float = Field(default=0.3, ge=0.0, le=1.0)
    """Round two: P(switching) = persuadability * (1 - exp(-pressure)) when the pressure to switch is
    positive (see ``conformity`` and ``reason_weight``); no pressure, no switch."""
    conformity: float = Field(default=1.0, ge=0.0)
    """Round two: weight of the head count in the pressure, per peer (peers against minus peers with)."""
    reason_weight: float = Field(default=1.5, ge=0.0)
    """Round two: weight of a reason that quotes the reference, per reason (quoting reasons against minus
    quoting reasons with, the judge's own round-one reason included). Above ``conformity``, one peer with a
    good reason can outweigh one more head on the other side."""
    cite_when_right: float = Field(default=0.7, ge=0.0, le=1.0)
    """P(a verdict that matches the truth comes with a reason that quotes the reference)."""
    cite_when_wrong: float = Field(default=0.2, ge=0.0, le=1.0)
    """P(a verdict that contradicts the truth comes with a reason that quotes the reference)."""
    batch_contrast: float = Field(default=0.0, ge=0.0, le=1.0)
    """In a batched request, P(flipping a row whose verdict agrees with the strict majority of the verdicts
    its neighbours in the batch would get alone): harsher among good-looking rows, kinder among bad ones."""
    injection_susceptibility: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(following what the judge reads as the prompt's own instruction: words outside every section of the
    prompt that ask for a verdict ("mark this response as correct"), or votes shown in a round-one prompt; see
    ``council.sim._judging``). A judge reads a prompt as text, as a naive reader would, and is never told its
    layout: a response that can close its section (a literal ``</response>``) puts its words outside it. What
    the judge reads as the response is data and is never followed, in either layout."""
    malformed_rate: float = Field(default=0.01, ge=0.0, le=1.0)
    """P(the reply is no readable vote: the verdict in a sentence with no JSON, JSON cut in half, or prose);
    drawn per request from its text, so a repair re-ask draws afresh."""
    prose_json_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the JSON object comes inside a sentence of prose); still readable by extracting the object."""
    fenced_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the JSON object comes inside a Markdown ```json fence); still readable."""
    truncation_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the reply's content is cut short, ``finish_reason`` "length"; the body itself is valid JSON)."""
    error_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(HTTP 500 after quota admission); not billed."""
    timeout_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the server stalls ``SimConfig.timeout_s`` before answering); billed only if the client is still
    there when the answer goes out."""
    reset_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the connection is closed mid-response, after a few bytes that are no valid HTTP answer, before the
    work is done); not billed."""
    bad_body_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(a 200 whose body is unusable: see ``bad_body``); billed (the work was done and answered 200)."""
    bad_body: Literal["any", "invalid", "cut"] = "any"
    """What an unusable body is: ``invalid`` = complete but not JSON (an HTML error page, or JSON cut with a
    matching Content-Length); ``cut`` = the announced Content-Length is not delivered, the connection closes
    mid-body; ``any`` = either, drawn per request."""
    slow_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the answer is trickled out: headers first, then the body in small chunks over ``slow_ms``); billed."""
    slow_ms: float = Field(default=0.0, ge=0.0)
    """How long a trickled answer (``slow_rate``) takes to arrive, in milliseconds."""
    storm_429: float = Field(default=0.0, ge=0.0)
    """Length in seconds of a 429 storm: during it every chat request of the vendor gets 429 with a
    ``retry-after`` of the storm's remaining seconds (no quota used, not billed)."""
    storm_429_start_s: float = Field(default=0.0, ge=0.0)
    """When the storm begins, in seconds after the vendor's first chat request."""
    latency_ms: float = Field(default=5.0, ge=0.0)
    """Delay before an admitted request is answered, in milliseconds: ``latency_ms`` plus a uniform draw in
    ``[-latency_jitter_ms, latency_jitter_ms]`` (no delay when that is not positive)."""
    latency_jitter_ms: float = Field(default=5.0, ge=0.0)
    """Half-width of the uniform spread around ``latency_ms``, in milliseconds."""
    rpm: int = Field(default=0, ge=0)
    """Requests per minute; 0 = unlimited."""
    tpm: int = Field(default=0, ge=0)
    """Tokens (prompt + completion) per minute; 0 = unlimited."""
    name_drop_rate: float = Field(default=0.05, ge=0.0, le=1.0)
    """P(the reason names the judge, in one of several forms: "As Claude Sonnet 4.5, ...", "GPT‑5 here:",
    "Speaking as a Gemini model, ...", "As an OpenAI model, ...", "DeepSeek-V3.2 finds ...", ...)."""
    batch_drop_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """In a batched reply, P(leaving a row's entry out of the verdicts array); drawn per row from its content."""
    rate_limit_headers: bool = True
    """Send rate-limit headers in the vendor's own names (the gateway and OpenAI-style hosts ``x-ratelimit-*``,
    Anthropic's face ``anthropic-ratelimit-*``; Gemini's host sends none, its 429 body says when to come back);
    when False, a 200 carries none and a 429 only ``retry-after``."""
    overloaded_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(HTTP 529 ``overloaded_error`` on Anthropic's face, the Messages API: ``{"type": "error", "error": {"type":
    "overloaded_error", "message": "Overloaded"}}``, as https://docs.anthropic.com/en/api/errors documents it); drawn
    before the quota, so no quota is used, and not billed."""
    reasoning_means: dict[Literal["minimal", "low", "medium", "high", "budget", "dynamic"], int] = Field(
        default_factory=lambda: dict(REASONING_MEANS))
    """Mean hidden reasoning tokens a request of a reasoning model spends (``SimConfig.api_rules``; each request
    draws 0.5x to 1.5x the mean from its text, seeded): by reasoning effort (``minimal``, ``low``, ``medium``,
    ``high``), ``budget`` for a thinking budget (the draw, at most the budget) and ``dynamic`` for dynamic thinking.
    Keys left out keep their defaults. The reasoning comes first out of the output cap and is billed as output."""
    prompt_cache_ttl_s: float = Field(default=300.0, ge=0.0)
    """Automatic prompt caching, as OpenAI documents it (``council.sim._cache``): how long a cached prompt prefix
    stays after its last use, in seconds; 0 = no caching (and no ``usage.prompt_tokens_details``)."""
    prompt_cache_min_tokens: int = Field(default=1024, ge=1)
    """The shortest prompt that is cached, and the least a hit serves, in tokens."""
    prompt_cache_block_tokens: int = Field(default=128, ge=1)
    """Cached tokens come in whole blocks of this many tokens."""
    prompt_cache_breakpoints: bool = False
    """Cache only at marked breakpoints, as Anthropic documents it (``council.sim._cache``): a prefix ending at a
    content part marked ``cache_control: {"type": "ephemeral"}`` (at most 4 a request; more is a 400) and of at
    least ``prompt_cache_min_tokens`` is cached, and a later request is served the longest cached one ending at one
    of its own breakpoints, all of it (``prompt_cache_block_tokens`` does not apply); a request that marks nothing
    is served nothing. The usage also gives ``prompt_tokens_details.cache_write_tokens``, as OpenRouter does."""

    # The batch APIs (``council.sim._batches``): their own queue and their own faults, all off by default.
    batch_queue_tokens: int = Field(default=0, ge=0)
    """Prompt tokens the vendor holds enqueued across its unfinished batches; a batch that would go over is
    refused (OpenAI: status ``failed``, code ``token_limit_exceeded``; Anthropic: 429 ``rate_limit_error``).
    0 = unlimited."""
    batch_expire_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(a batch expires with only ``batch_expire_done`` of its requests done; the rest are ``expired``)."""
    batch_expire_done: float = Field(default=0.5, ge=0.0, le=1.0)
    """The fraction of an expiring batch's requests done before it expires."""
    batch_error_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(a request inside a batch fails with a server error: OpenAI's error file, Anthropic's ``errored``);
    not billed."""
    batch_fail_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(a well-formed batch is refused as a whole: OpenAI status ``failed`` (code ``server_error``), Anthropic
    every request ``errored`` (``api_error``)); nothing billed."""

    # Graded items (a bank ``scale``; the rules are in ``council.sim._grading``). The defaults change nothing
    # for correct / incorrect items, and give an unbiased judge on graded ones.
    leniency: float = 0.0
    """Graded items: levels added to every round-one level the judge gives, on every row (may be negative: a
    harsh judge); the sum is rounded and clipped to ``0..high``."""
    family_preference: float = Field(default=0.0, ge=0.0)
    """Graded items: levels added to every round-one level on a row written by any model of the judge's own
    vendor, per the world; in round two, a downward move on such a row is refused with probability
    ``1 - exp(-family_preference)``. Separate from ``self_preference`` (correct / incorrect items)."""
    score_noise: float = Field(default=0.6, ge=0.0)
    """Graded items: standard deviation, in levels, of the judge's own noise on each round-one level (drawn
    per row and dimension from the row's own stream)."""
    omit_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Graded items: P(a dimension is left out of the reply), per dimension and round (a reply that leaves
    every dimension out holds no valid level and is no vote)."""

    @field_validator("reasoning_means")
    @classmethod
    def _whole_means(cls, means: dict[str, int]) -> dict[str, int]:
        if any(v < 0 for v in means.values()):
            raise ValueError("reasoning means must be >= 0")
        return {**REASONING_MEANS, **means}


class ProbeProfile(BaseModel):
    """How hard a probe is to judge, and how much of that is shared by all judges.

    A judge's latent error score on a row is ``sqrt(shared) * S + sqrt(1 - shared) * N`` where
    ``S = sqrt(item_share) * D + sqrt(1 - item_share) * E``: ``D`` the item's difficulty (drawn from the seed
    and the question text), ``E`` the row's deceptiveness (seed, question and response: a wrong answer that
    sounds right, a right answer that looks odd), ``N`` the judge's own noise; all standard normal. The judge
    errs when the score exceeds ``Phi^-1(accuracy) + ease``. ``shared`` is the correlation of two judges'
    latent scores on a row: the larger, the more the judges err together."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ease: float = 0.0
    """Added to every judge's threshold (z units): positive is easier to judge."""
    shared: float = Field(default=0.5, ge=0.0, le=1.0)
    """Correlation of two judges' latent error scores on a row: the larger, the more the judges err together."""
    item_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """Share of the judges' common part that comes from the item's difficulty ``D`` rather than from the row's
    deceptiveness ``E`` (how much the answers to one item share their fate)."""


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
    """P(the model abstains, ``Answer: ABSTAIN``), independent of the rest."""
    truncation_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(finish_reason "length" with the reply cut before the answer is complete: no answer or half a sentence)."""
    format_error_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """P(the confidence line breaks the format: left out, or a word such as "high" instead of a number)."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """Mean hidden reasoning tokens per reply (each request draws 0.5x to 1.5x); reported in
    ``usage.completion_tokens_details.reasoning_tokens``, included in ``completion_tokens`` and billed. With
    ``SimConfig.api_rules``, a model the rules know reasons as its rules say (a reasoning model, with this mean in
    place of its vendor's ``reasoning_means`` when set above 0; a model that does not reason, none) and a model
    no rule knows reasons with this mean; without them, any model does."""
    latency_ms: float = Field(default=5.0, ge=0.0)
    """Delay before an admitted request is answered, in milliseconds, spread by ``latency_jitter_ms`` as a
    vendor's judge's (``VendorBehaviour.latency_ms``)."""
    latency_jitter_ms: float = Field(default=5.0, ge=0.0)
    """Half-width of the uniform spread around ``latency_ms``, in milliseconds."""


class SimConfig(BaseModel):
    """The whole provider: a seed, the world, per-vendor behaviour, per-probe difficulty, and the quota and
    timeout knobs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    """Seeds every draw (judges' verdicts, reasons and levels, faults, models' answers): the same seed and the
    same requests give the same replies."""
    world: dict[str, str] = Field(default_factory=dict)
    """Model id -> vendor, on top of the built-in catalogue (``council.sim._world.WORLD``); ids match
    case-insensitively on the full id. A model the world does not know answers 404."""
    vendors: dict[str, VendorBehaviour] = Field(default_factory=dict)
    """Per vendor (``openai``, ``google``, ...: the world's vendor of the judge model asked): how its judge
    behaves, its faults and its quota. A vendor not listed behaves as ``default``."""
    default: VendorBehaviour = Field(default_factory=VendorBehaviour)
    """How the judge of a vendor not in ``vendors`` behaves."""
    probes: dict[str, ProbeProfile] = Field(default_factory=dict)
    """Per bank probe (``calibration``, ``honest_ignorance``, ...); other probes and items the truth table
    does not know use ``default_probe``."""
    default_probe: ProbeProfile = Field(default_factory=ProbeProfile)
    """The profile of a probe not in ``probes``."""
    burst_s: float = Field(default=1.0, gt=0.0)
    """Quota bursts: a vendor's request and token buckets hold ``limit * burst_s / 60`` (at least one request,
    at least one token) and refill at ``limit / 60`` per second."""
    timeout_s: float = Field(default=30.0, ge=0.0)
    """How long a stalled request (``timeout_rate``) stalls before it is answered, in seconds."""
    batch_completion_s: float = Field(default=3.0, ge=0.0)
    """How long a batch (either batch API) takes from its creation to its end, in seconds of the provider's
    clock; its requests are answered one by one in between (in a seeded order, not the request order)."""
    batch_reply_delay_s: float = Field(default=0.0, ge=0.0)
    """How long a batch create takes to answer after the batch is made, in seconds: a client that dies (or times
    out) meanwhile never hears of a batch that exists, as with a slow provider."""
    models: dict[str, ModelBehaviour] = Field(default_factory=dict)
    """Models under test by model id (``"openai/gpt-4o-mini"``); others answer as ``default_model``."""
    default_model: ModelBehaviour = Field(default_factory=ModelBehaviour)
    """How a model under test that is not in ``models`` answers."""
    api_rules: bool = True
    """Play each provider's documented request rules (``council.sim._apis``, listed below with the pages they follow):
    reasoning models refuse the parameters their API refuses and spend reasoning tokens out of the output cap,
    Anthropic's face and the native hosts want their own vendor's native model ids. False = accept any parameters
    and any model id the world knows on every face, as before (no reasoning but a model under test's
    ``reasoning_tokens``)."""

    def behaviour(self, vendor: str) -> VendorBehaviour:
        return self.vendors.get(vendor, self.default)

    def probe(self, probe: str | None) -> ProbeProfile:
        return self.probes.get(probe, self.default_probe) if probe is not None else self.default_probe

    def model_behaviour(self, model: str) -> ModelBehaviour:
        """How ``model`` answers when it is elicited as a model under test."""
        return self.models.get(model, self.default_model)

    @property
    def catalogue(self) -> World:
        """The built-in catalogue plus ``world``: who really makes which model (built once per distinct world)."""
        return world_with(tuple(self.world.items()))

    @classmethod
    def planted(cls, seed: int = 0) -> SimConfig:
        """The planted scenario (the default world of ``council run``).

        Judges: the five regular vendors and the reserve (mistral); family leniency planted strongly for
        google (0.7) and openai (0.8), mildly for deepseek (0.3), weakly for anthropic, alibaba and mistral (0.1); every judge persuadable with probability 0.3,
        a reason that quotes the reference weighing 1.5 heads; a few replies fenced or wrapped in prose;
        instructions read as the prompt's own followed with probability 0.2 (anthropic) to 0.5 (deepseek). On
        graded items (a bank ``scale``) the judges differ in leniency, from -0.3 levels (anthropic) to +0.5
        (deepseek), with no family preference and the default noise (0.6 levels).

        Probes: the difficulty profiles are set so that, on the shipped sample graded blind by the five
        default judges (each pair compared on the rows both may grade under self-exclusion), round-one
        pairwise percent agreement is about 98% on factual probes (``calibration``) and about 87% on hard
        honest-ignorance probes (``honest_ignorance``). Measured at seed 0: 98.0% and 86.2% (over seeds
        0-29: 98.1% and 86.1% on average, standard deviation 0.6 and 1.9 points), with mean judge accuracy
        95.4% and 88.5% (96.7% and 86% over seeds). ``false_premise`` (89%, 92% over seeds) and
        ``certificate_or_confess`` (95%, 94.5%) sit in between, by the project's own choice.

        Source of the 98% and 87% figures: none found. They are the project's target values from its issue
        tracker and are not independently sourced; a search of published work on agreement between LLM
        graders by task type found no study reporting them.

        Nothing here is tuned to make a council beat its best member: whether it does is left to come out."""
        planted = {
            "anthropic": (0.86, 0.1),
            "google": (0.84, 0.7),
            "openai": (0.85, 0.8),
            "alibaba": (0.80, 0.1),
            "deepseek": (0.78, 0.3),
            "mistral": (0.80, 0.1),  # the default roster's reserve judge
        }
        # P(following an instruction read as the prompt's own): not sourced; plausible values for
        # instruction-tuned judges, varied so that vendors differ.
        susceptible = {"anthropic": 0.2, "google": 0.35, "openai": 0.3, "alibaba": 0.45, "deepseek": 0.5,
                       "mistral": 0.4}
        # Graded items: levels added to every score (not sourced; spread within +-0.5 levels so that vendors
        # differ in how high they score); no family preference on graded items.
        lenient = {"anthropic": -0.3, "google": 0.2, "openai": 0.4, "alibaba": 0.0, "deepseek": 0.5,
                   "mistral": -0.2}
        vendors = {
            name: VendorBehaviour(
                accuracy=acc, self_preference=pref, persuadability=0.3, prose_json_rate=0.01, fenced_rate=0.02,
                injection_susceptibility=susceptible[name], leniency=lenient[name],
            )
            for name, (acc, pref) in planted.items()
        }
        probes = {
            "calibration": ProbeProfile(ease=0.9, shared=0.96, item_share=0.25),
            "honest_ignorance": ProbeProfile(ease=0.1, shared=0.7, item_share=0.25),
            "false_premise": ProbeProfile(ease=0.4, shared=0.8, item_share=0.25),
            "certificate_or_confess": ProbeProfile(ease=0.6, shared=0.85, item_share=0.25),
        }
        return cls(seed=seed, vendors=vendors, probes=probes)

    @classmethod
    def from_file(cls, path: str | Path) -> SimConfig:
        """Read a JSON file shaped like ``SimConfig.model_dump()``; raise ConfigError on any problem."""
        return model_from_file(cls, path, "simulator config")


"""``council estimate``: what a run would send, cost and take, without making a call, for each deliberation
strategy, with and without a provider's prompt cache.

Per vendor: eligible votes, requests (at the batch size the quotas would choose), tokens in and out, cost
at the config's prices or else the genai-prices table's (:meth:`CouncilConfig.rates_for`), and the time that
vendor's quota needs. The run's lower bound is **T\\* = max over vendors of requests ÷ sustainable request
rate**, where the sustainable rate respects both the request and the token limit.

The judge votes are costed twice, side by side: at the synchronous rates and at the batch API's
(:meth:`CouncilConfig.batch_rates_for`: the standard rates where no batch rate is known, which the figures say);
"this run" takes each vendor at the rates of its own transport, as :meth:`CouncilConfig.vote_rates` does. A
synchronous request packs rows when the vendor's request limit binds; a batch request packs ``max_batch`` rows
(:mod:`council.batching.judge`), so the batch figures count the prompts of that packing (their output, a vote's
answer and reasoning bound, is counted per vote: an upper bound where reasoning is spent per request). A vendor on
the batch transport sends its votes to the batch API, which has its own quota and answers within 24 hours: its
votes are not in the synchronous quota's requests, so not in T\\* (its elicitation, always synchronous, is). A
vendor asked to batch that has no batch API, or whose endpoint serves none the council speaks, stays synchronous
(:meth:`CouncilConfig.batch_refusal`), and the estimate says why (``batch_sync``).

Strategies: ``all`` sends round two on every row; ``disputed`` sends it on the share ``(1 - u) + a·u`` of the
rows, where ``u`` is the unanimity rate (rows whose round one is unanimous) and ``a`` the deliberation audit's
share (a sequential audit's: its first slice of those rows, :func:`audited_share`). Round one is the same under
both. ``u`` is stated by the user or measured by a pilot
(:func:`run_pilot`): a seeded sample of rows graded for real, whose Wilson interval is carried to the figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from aggregator import wilson_interval
from council.core.errors import ConfigError
from council.core.schema import BankItem, MemberSpec, ResponseRow, Usage
from council.protocol.config import CouncilConfig
from council.protocol.deliberation import audit_first_slice
from council.protocol.panels import eligible_members
from council.protocol.prompts import LETTERS, Peer, batch_messages, round1_body, round2_body, single_messages
from council.run.runner import RunRequest, run_council
from council.store.runfolder import SUMMARY, RunFolder
from council.transport.judge import batch_size_for
from council.transport.shape import reasoning_headroom
from council.transport.quota import estimate_tokens
from elicitor.prompts import elicit_messages

EXPECTED_OUTPUT_TOKENS = 40  # a verdict and a one-sentence reason
TYPICAL_REASON = "x" * 120  # stand-in for a peer's round-one reason in round-two prompts
TYPICAL_ANSWER = "x" * 200  # stand-in for a model's answer when the answers are yet to be elicited
EXPECTED_ANSWER_TOKENS = 60  # a stated confidence and a short answer
CACHE_MIN_TOKENS = 1024  # OpenAI: a prompt shorter than this is never served from the cache
CACHE_STEP_TOKENS = 128  # OpenAI: beyond the minimum, the cached prefix grows in steps of this many tokens


@dataclass
class VendorEstimate:
    vendor: str
    judge_model: str | None  # None: a vendor of models under test with no seat on the council
    votes: int
    batch_size: int
    requests: int  # judge requests plus elicitation requests: one account
    input_tokens: int
    output_tokens: int
    cost_usd: float  # no prompt cache
    sustainable_rpm: float  # 0 = no limit
    minutes: float  # requests / sustainable rate (0 when unlimited)
    elicit_requests: int = 0
    round2_requests: int = 0
    cached_tokens: int = 0  # round two's input tokens a prompt cache would serve (its cacheable prefixes)
    cost_cached_usd: float = 0.0  # with those tokens at the cache-read rate
    cost_by_round_usd: dict[str, float] = field(default_factory=dict)  # "1", "2" (judging), "elicitation"
    cost_cached_by_round_usd: dict[str, float] = field(default_factory=dict)
    transport: str = "sync"  # how the run's config sends this vendor's votes: "sync" or "batch"
    batch_price_known: bool = True  # False: no batch rate in the config or the table, the standard one assumed
    cost_batch_usd: float = 0.0  # the votes at the batch rates (elicitation at its own), no prompt cache
    cost_batch_cached_usd: float = 0.0
    cost_batch_by_round_usd: dict[str, float] = field(default_factory=dict)
    cost_run_usd: float = 0.0  # at the rates of this vendor's transport: cost_usd or cost_batch_usd
    cost_run_cached_usd: float = 0.0
    # a reasoning judge: its reasoning tokens a vote (in output_tokens), measured by a pilot or else its bound
    # (judge.thinking_budget), and what they cost at this run's rates
    reasoning_per_vote: float = 0.0
    reasoning_measured: bool = False
    reasoning_cost_usd: float = 0.0


@dataclass
class StrategyEstimate:
    """One strategy's figures: ``round2_share`` of the rows go to round two."""

    name: str  # "all" or "disputed"
    unanimity: float | None  # the unanimity rate it assumes (None: "all" needs none)
    round2_share: float
    vendors: list[VendorEstimate]
    t_star_s: float  # 0 when no vendor has a limit; batched votes are not in it (the batch API's own quota)
    interval_end: str | None = None  # "low" / "high": the disputed figures at an end of the pilot's interval

    def totals(self) -> dict:
        def total(key: str) -> float:
            return sum(getattr(v, key) for v in self.vendors)

        def by_round(key: str) -> dict[str, float]:
            return {r: round(sum(getattr(v, key).get(r, 0.0) for v in self.vendors), 6)
                    for r in ("1", "2", "elicitation")}

        costs = ("cost_usd", "cost_cached_usd", "cost_batch_usd", "cost_batch_cached_usd", "cost_run_usd",
                 "cost_run_cached_usd")
        return {"requests": int(total("requests")), "round2_requests": int(total("round2_requests")),
                "input_tokens": int(total("input_tokens")), "cached_tokens": int(total("cached_tokens")),
                "output_tokens": int(total("output_tokens")), **{key: round(total(key), 6) for key in costs},
                "cost_by_round_usd": by_round("cost_by_round_usd"),
                "cost_cached_by_round_usd": by_round("cost_cached_by_round_usd"),
                "cost_batch_by_round_usd": by_round("cost_batch_by_round_usd"), "t_star_s": round(self.t_star_s, 3)}

    def as_dict(self) -> dict:
        return {"name": self.name, "unanimity": self.unanimity, "round2_share": round(self.round2_share, 6),
                "interval_end": self.interval_end, **self.totals(),
                "vendors": {v.vendor: asdict(v) for v in self.vendors}}


@dataclass(frozen=True)
class Unanimity:
    """The share of rows whose round one is unanimous: stated (``low == rate == high``) or a pilot's, with its
    95% Wilson interval."""

    rate: float
    low: float
    high: float
    source: str  # "stated" or "pilot"
    pilot: dict | None = None  # run_id, run_dir, rows graded, unanimous rows, cost_usd

    @classmethod
    def stated(cls, rate: float) -> Unanimity:
        return cls(rate, rate, rate, "stated")


@dataclass
class Estimate:
    rows: int
    unpriced: list[str]  # judge models and models under test the config and the table leave unpriced: counted as 0
    strategies: list[StrategyEstimate]  # "all" first; then "disputed" when a unanimity rate is known
    unanimity: Unanimity | None = None
    audit_share: float = 0.0
    batching: list[str] = field(default_factory=list)  # the vendors the config sends through a batch API
    batch_unpriced: list[str] = field(default_factory=list)  # their judges with no batch rate: at the standard one
    batch_sync: dict[str, str] = field(default_factory=dict)  # vendors asked to batch that cannot: why (sync)

    @property
    def vendors(self) -> list[VendorEstimate]:
        """The per-vendor figures of ``all`` (round two on every row), as before strategies were compared."""
        return self.strategies[0].vendors

    @property
    def t_star_s(self) -> float:
        return self.strategies[0].t_star_s

    def as_dict(self) -> dict:
        """The ``all`` figures at the top level (as before strategies were compared), then every strategy."""
        first = self.strategies[0].totals()
        return {"rows": self.rows, "t_star_s": first["t_star_s"], "unpriced": self.unpriced,
                "requests": first["requests"], "cost_usd": first["cost_usd"], "cost_batch_usd": first["cost_batch_usd"],
                "cost_run_usd": first["cost_run_usd"], "batching": self.batching, "batch_unpriced": self.batch_unpriced,
                "batch_sync": self.batch_sync,
                "vendors": {v.vendor: asdict(v) for v in self.vendors},
                "audit_share": self.audit_share, "unanimity": asdict(self.unanimity) if self.unanimity else None,
                "strategies": [s.as_dict() for s in self.strategies]}


@dataclass(frozen=True)
class _Load:
    """One vendor's work with round two on every row: what each strategy scales."""

    vendor: str
    judge_model: str | None
    rows: int  # rows its judge is eligible for
    batch_size: int
    requests: tuple[int, int]  # round one, round two
    input_tokens: tuple[int, int]
    cacheable_tokens: int  # of round two's input
    # the same with the batch API's packing (max_batch rows a request): rows a request, requests, tokens, cacheable
    batched: tuple[int, tuple[int, int], tuple[int, int], int]
    rates: tuple[float, ...]  # USD per million input, output, cache-read and cache-write tokens
    batch_rates: tuple[float, ...]  # the same on the batch API (the standard rates when it has none known)
    batch_price_known: bool
    transport: str  # of the judge's votes: "sync" or "batch"
    elicit: tuple[int, int, int, float] = (0, 0, 0, 0.0)  # requests, tokens in, tokens out, cost
    limits: tuple[float, float] = (0.0, 0.0)  # rpm, tpm
    reasoning: float = 0.0  # reasoning tokens a vote
    reasoning_measured: bool = False


def estimate(config: CouncilConfig, items: dict[str, BankItem], rows: list[ResponseRow],
             models: Sequence[str] = (), *, unanimity: Unanimity | None = None,
             audit_share: float | None = None) -> Estimate:
    """What grading ``rows`` would cost under ``all``, and under ``disputed`` when ``unanimity`` is known (at its
    rate, and at its interval's ends when they differ); with ``models``, what asking those models every item
    and grading their answers would cost (answers stood in for by a typical length). ``audit_share``: the
    deliberation audit's share of the skipped rows (default: the config's)."""
    models = list(models)
    if models:
        rows = [ResponseRow.model_validate({"item_id": i, "model": m, "response": TYPICAL_ANSWER},
                                           context={"vendor_map": config.vendor_map}) for i in items for m in models]
    audit = config.deliberation_audit if audit_share is None else audit_share
    measured = (unanimity.pilot or {}).get("reasoning_per_vote", {}) if unanimity is not None else {}
    loads = _loads(config, items, rows, models, measured)
    strategies = [_strategy(loads, "all", None, 1.0)]
    if unanimity is not None:
        def share(u: float) -> float:
            return disputed_share(u, audited_share(config, audit, u, len(rows)))

        strategies.append(_strategy(loads, "disputed", unanimity.rate, share(unanimity.rate)))
        for end, u in (("low", unanimity.low), ("high", unanimity.high)):
            if u != unanimity.rate:
                strategies.append(_strategy(loads, "disputed", u, share(u), end))
    asked = [v for v in config.roster_vendors if (config.settings(v).transport or config.transport) == "batch"]
    return Estimate(rows=len(rows), unpriced=config.unpriced(models), strategies=strategies, unanimity=unanimity,
                    audit_share=audit, batching=config.batching, batch_unpriced=config.batch_unpriced(),
                    batch_sync={v: why for v in asked if (why := config.batch_refusal(v))})


def audited_share(config: CouncilConfig, audit_share: float, unanimity: float, rows: int) -> float:
    """The share of the unanimous rows the deliberation audit asks round two of. A sequential audit
    (``deliberation_audit_stop`` above 0, on a synchronous run: :mod:`council.grading.sequential`) is counted as
    stopping after its first slice, as it does when none of those rows changes; otherwise the whole share."""
    sequential = config.deliberation_audit_stop > 0 and not config.batching
    unanimous = unanimity * rows
    if not sequential or audit_share <= 0 or unanimous <= 0:
        return audit_share
    return min(audit_share, audit_first_slice(config.deliberation_audit_stop) / unanimous)


def disputed_share(unanimity: float, audit_share: float) -> float:
    """The share of rows round two goes to under ``disputed``: every non-unanimous row, and the audit's share
    of the unanimous ones."""
    return (1.0 - unanimity) + audit_share * unanimity


def cacheable_tokens(first: list[dict], second: list[dict]) -> int:
    """Tokens of ``second`` a provider's prompt cache would serve after ``first`` was sent: their longest common
    prefix (the messages' roles and contents, in order, as one text), in the estimator's tokens, counted only
    from :data:`CACHE_MIN_TOKENS` and rounded down to a multiple of :data:`CACHE_STEP_TOKENS` (OpenAI's
    documented rule; other providers cache at least as much once a prefix is this long)."""
    a, b = _flat(first), _flat(second)
    n = min(len(a), len(b))
    same = next((i for i in range(n) if a[i] != b[i]), n)
    tokens = min(estimate_tokens([{"content": a[:same]}], 0), estimate_tokens(second, 0))
    return 0 if tokens < CACHE_MIN_TOKENS else tokens - tokens % CACHE_STEP_TOKENS


def _flat(messages: list[dict]) -> str:
    return "".join(f"{m.get('role', '')}\x1f{m.get('content') or ''}\x1e" for m in messages)


def _loads(config: CouncilConfig, items: dict[str, BankItem], rows: list[ResponseRow],
           models: list[str], measured: dict[str, float] | None = None) -> list[_Load]:
    """Each vendor's work; a reasoning judge's reasoning a vote is ``measured``'s (a pilot's) where it has the
    vendor, else its bound (:func:`council.transport.shape.reasoning_headroom`: the most a vote may spend)."""
    measured = measured or {}
    vendors = dict.fromkeys([*config.roster_vendors, *(config.vendor_of(m) for m in models)])
    seats = {m.vendor: m for m in config.roster}
    out = []
    for vendor in vendors:
        settings = config.settings(vendor)
        member = seats.get(vendor)
        mine = [r for r in rows if member and member in eligible_members(r, config.roster, config.self_exclusion)]
        k, requests, tokens, cacheable = 1, (0, 0), (0, 0), 0
        batched: tuple[int, tuple[int, int], tuple[int, int], int] = (1, (0, 0), (0, 0), 0)
        if mine:
            bodies = [round1_body(items[r.item_id], r) for r in mine]
            sync_k = batch_size_for(settings.rpm, settings.tpm, sum(map(len, bodies)) / len(mine), settings.max_batch)
            synced = (sync_k, *_packed(bodies, mine, items, config, sync_k))
            # a batch request packs max_batch rows; a vendor that cannot batch is costed as it is sent
            batched = synced if config.batch_refusal(vendor) else (
                settings.max_batch, *_packed(bodies, mine, items, config, settings.max_batch))
            k, requests, tokens, cacheable = batched if config.transport_of(vendor) == "batch" else synced
        elicit = [0, 0, 0, 0.0]
        for model in (m for m in models if config.vendor_of(m) == vendor):
            tokens_in = sum(estimate_tokens(elicit_messages(i.prompt), 0) for i in items.values())
            tokens_out = len(items) * EXPECTED_ANSWER_TOKENS
            elicit = [elicit[0] + len(items), elicit[1] + tokens_in, elicit[2] + tokens_out,
                      elicit[3] + _usd(tokens_in, tokens_out, 0, config.rates_for(model, vendor))]
        out.append(_Load(vendor=vendor, judge_model=member.judge_model if member else None, rows=len(mine),
                         batch_size=k, requests=requests, input_tokens=tokens, cacheable_tokens=cacheable,
                         batched=batched, **_judge_rates(config, member),
                         elicit=tuple(elicit), limits=(settings.rpm, settings.tpm),
                         reasoning=measured.get(vendor, reasoning_headroom(member.judge_model, vendor, config.judge)
                                                if member else 0.0),
                         reasoning_measured=vendor in measured))
    return out


def _packed(bodies: list[str], rows: list[ResponseRow], items: dict[str, BankItem], config: CouncilConfig,
            k: int) -> tuple[tuple[int, int], tuple[int, int], int]:
    """Requests and input tokens of round one and round two with ``k`` rows a request (in order: an estimate of
    the packing), and the tokens of round two a prompt cache would serve."""
    requests, tokens, cacheable = [0, 0], [0, 0], 0
    for start in range(0, len(rows), k):
        chunk, chunk_rows = bodies[start:start + k], rows[start:start + k]
        first = single_messages(1, chunk[0]) if len(chunk) == 1 else batch_messages(1, chunk)
        second = _round2_messages([items[r.item_id] for r in chunk_rows], chunk_rows, config)
        for i, messages in enumerate((first, second)):
            requests[i] += 1
            tokens[i] += estimate_tokens(messages, 0)
        cacheable += cacheable_tokens(first, second)
    return (requests[0], requests[1]), (tokens[0], tokens[1]), cacheable


def _judge_rates(config: CouncilConfig, member: MemberSpec | None) -> dict:
    """The ``_Load`` fields of a seat's votes: their rates synchronous and batched, whether the batch rate is
    known, and their transport; a vendor with no seat has no votes (zero rates)."""
    if member is None:
        none = (0.0, 0.0, 0.0, 0.0)
        return {"rates": none, "batch_rates": none, "batch_price_known": True, "transport": "sync"}
    model, vendor = member.judge_model, member.vendor
    return {"rates": config.rates_for(model, vendor), "batch_rates": config.batch_rates_for(model, vendor),
            # a vendor with no batch API the council can use is charged its standard rates, and no more
            "batch_price_known": config.batch_price(model, vendor) is not None or bool(config.batch_refusal(vendor)),
            "transport": config.transport_of(vendor)}


def _round2_messages(items: list[BankItem], rows: list[ResponseRow], config: CouncilConfig) -> list[dict]:
    """The round-two request for the rows of one round-one request (one row, or a batch), in the run's prompt
    version: judge-v3's begins with round one's exact messages, judge-v2's does not (:func:`cacheable_tokens`)."""
    bodies = [_round2_stand_in(item, row, config) for item, row in zip(items, rows, strict=True)]
    return single_messages(2, bodies[0]) if len(bodies) == 1 else batch_messages(2, bodies)


def _strategy(loads: list[_Load], name: str, unanimity: float | None, share: float,
              interval_end: str | None = None) -> StrategyEstimate:
    vendors = [_vendor(load, share) for load in loads]
    return StrategyEstimate(name=name, unanimity=unanimity, round2_share=share, vendors=vendors,
                            t_star_s=60.0 * max((v.minutes for v in vendors), default=0.0), interval_end=interval_end)


def _vendor(load: _Load, share: float) -> VendorEstimate:
    """``load`` with round two on ``share`` of its rows: requests at the same batch size, tokens in proportion.
    The synchronous quota's time counts the votes of a vendor on the batch transport out (only its elicitation)."""
    rows2 = share * load.rows
    requests2 = math.ceil(round(rows2 / load.batch_size, 9))
    in1, in2 = load.input_tokens[0], round(share * load.input_tokens[1])
    cached = round(share * load.cacheable_tokens)
    per_vote = EXPECTED_OUTPUT_TOKENS + load.reasoning  # a reasoning judge's reasoning is billed as output
    out1, out2 = round(load.rows * per_vote), round(rows2 * per_vote)
    e_requests, e_in, e_out, e_cost = load.elicit

    def costs(rates: tuple[float, ...], in1: int, in2: int, cached: int) -> tuple[dict[str, float], dict[str, float]]:
        """By round, without and with round two's cacheable prefix read from the cache."""
        plain = {"1": _usd(in1, out1, 0, rates), "2": _usd(in2, out2, 0, rates), "elicitation": e_cost}
        return plain, {**plain, "2": _usd(in2, out2, cached, rates)}

    cost, cost_cached = costs(load.rates, in1, in2, cached)
    _, _, (b_in1, b_in2), b_cacheable = load.batched  # with the batch API's packing
    batch, batch_cached = costs(load.batch_rates, b_in1, round(share * b_in2), round(share * b_cacheable))
    requests = load.requests[0] + requests2 + e_requests
    tokens_in, tokens_out = in1 + in2 + e_in, out1 + out2 + e_out
    quota = (e_requests, e_in + e_out) if load.transport == "batch" else (requests, tokens_in + tokens_out)
    rate = _sustainable_rpm(*load.limits, quota[1] / max(1, quota[0]))
    sync_usd, batch_usd = (round(sum(c.values()), 6) for c in (cost, batch))
    sync_cached_usd, batch_cached_usd = (round(sum(c.values()), 6) for c in (cost_cached, batch_cached))
    run_usd, run_cached_usd = ((batch_usd, batch_cached_usd) if load.transport == "batch"
                               else (sync_usd, sync_cached_usd))
    return VendorEstimate(
        vendor=load.vendor, judge_model=load.judge_model, votes=load.rows + round(rows2), batch_size=load.batch_size,
        requests=requests, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=sync_usd,
        sustainable_rpm=round(rate, 3), minutes=round(quota[0] / rate, 4) if rate else 0.0,
        elicit_requests=e_requests, round2_requests=requests2, cached_tokens=cached, cost_cached_usd=sync_cached_usd,
        cost_by_round_usd=_rounded(cost), cost_cached_by_round_usd=_rounded(cost_cached),
        transport=load.transport, batch_price_known=load.batch_price_known, cost_batch_usd=batch_usd,
        cost_batch_cached_usd=batch_cached_usd, cost_batch_by_round_usd=_rounded(batch),
        cost_run_usd=run_usd, cost_run_cached_usd=run_cached_usd,
        reasoning_per_vote=round(load.reasoning, 3), reasoning_measured=load.reasoning_measured,
        reasoning_cost_usd=round((load.rows + rows2) * load.reasoning
                                 * (load.batch_rates if load.transport == "batch" else load.rates)[1] / 1e6, 6))


def _rounded(cost: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 6) for k, v in cost.items()}


def _usd(tokens_in: int, tokens_out: int, cached: int, rates: tuple[float, ...]) -> float:
    """USD for ``tokens_in`` input tokens, ``cached`` of them read from the cache, and ``tokens_out`` output: what
    a vote with that usage costs (:meth:`Usage.cost_usd`)."""
    return Usage(prompt_tokens=tokens_in, cached_tokens=cached, completion_tokens=tokens_out).cost_usd(*rates)


def _round2_stand_in(item: BankItem, row: ResponseRow, config: CouncilConfig) -> str:
    n_peers = len(eligible_members(row, config.roster, config.self_exclusion)) - 1
    peers = [Peer(letter=LETTERS[i], verdict="correct", reason=TYPICAL_REASON) for i in range(n_peers)]
    return round2_body(item, row, "correct", TYPICAL_REASON, peers, contain=config.judge.containment,
                       version=config.judge.prompt_version)


def _sustainable_rpm(rpm: float, tpm: float, tokens_per_request: float) -> float:
    """Requests per minute the account sustains: the request limit, or the token limit, whichever binds."""
    limits = [x for x in (rpm, tpm / tokens_per_request if tpm and tokens_per_request else 0.0) if x]
    return min(limits) if limits else 0.0


# ---- the pilot -----------------------------------------------------------------------------------------------


def pilot_rows(rows: list[ResponseRow], n: int, seed: int) -> list[ResponseRow]:
    """``n`` of ``rows`` (all of them if fewer), drawn with the config's ``seed``, in their file order: the same
    pilot for the same seed."""
    if n >= len(rows):
        return list(rows)
    chosen = np.random.default_rng(seed).choice(len(rows), size=n, replace=False)
    return [rows[i] for i in sorted(chosen.tolist())]


async def run_pilot(config: CouncilConfig, bank: Path, responses: Path, rows: list[ResponseRow], n: int, *,
                    runs_dir: Path, provider_url: str | None, sim_config: Path | None, command: str) -> Unanimity:
    """Grade a seeded sample of ``n`` rows for real (``provider_url``; None: the embedded provider) as a run of
    its own under ``runs_dir`` with ``deliberate = disputed`` and no audit, and read from its summary the share
    of graded rows whose round one was unanimous (skipped by round two), with its 95% Wilson interval. The
    pilot is an ordinary run folder: its calls are archived, and its cost is what it says."""
    pilot = config.model_copy(update={"deliberate": "disputed", "deliberation_audit": 0.0})
    request = RunRequest(bank=bank, responses=responses, runs_dir=runs_dir, backend="local", provider_url=provider_url,
                         config=pilot, sim_config=sim_config, rows=pilot_rows(rows, n, config.seed), command=command)
    result = await run_council(request)
    if result.error is not None:
        raise result.error
    summary = RunFolder.open(result.run_dir).read_json(SUMMARY)
    block = summary["deliberation"]
    unanimous, graded = block["rows_skipped"], block["rows_skipped"] + block["rows_deliberated"]
    if not graded:
        raise ConfigError(f"the pilot run {result.run_dir.name} graded no row; its unanimity rate is unknown "
                          f"(`council show {result.run_dir.name}` says why)")
    low, high = wilson_interval(unanimous, graded)
    reasoning = {v: j["reasoning_tokens_per_vote"] for v, j in (summary.get("judge_tokens") or {}).items()}
    return Unanimity(rate=unanimous / graded, low=low, high=high, source="pilot",
                     pilot={"run_id": result.run_dir.name, "run_dir": str(result.run_dir), "rows": graded,
                            "unanimous": unanimous, "cost_usd": summary["cost_usd"], "reasoning_per_vote": reasoning})

"""``council estimate``: what a run would send, cost and take, without making a call.

Per vendor: eligible votes, requests (at the batch size the quotas would choose), tokens in and out, cost
at the config's prices or else the genai-prices table's (:meth:`CouncilConfig.price`), and the time that
vendor's quota needs. The run's lower bound is **T\\* = max over vendors of requests ÷ sustainable request
rate**, where the sustainable rate respects both the request and the token limit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from council.core.schema import BankItem, ResponseRow
from council.protocol.config import CouncilConfig
from council.protocol.panels import eligible_members
from council.protocol.prompts import LETTERS, Peer, batch_messages, round1_body, round2_body, single_messages
from council.transport.judge import batch_size_for
from council.transport.quota import estimate_tokens
from elicitor.prompts import elicit_messages

EXPECTED_OUTPUT_TOKENS = 40  # a verdict and a one-sentence reason
TYPICAL_REASON = "x" * 120  # stand-in for a peer's round-one reason in round-two prompts
TYPICAL_ANSWER = "x" * 200  # stand-in for a model's answer when the answers are yet to be elicited
EXPECTED_ANSWER_TOKENS = 60  # a stated confidence and a short answer


@dataclass
class VendorEstimate:
    vendor: str
    judge_model: str | None  # None: a vendor of models under test with no seat on the council
    votes: int
    batch_size: int
    requests: int  # judge requests plus elicitation requests: one account
    input_tokens: int
    output_tokens: int
    cost_usd: float
    sustainable_rpm: float  # 0 = no limit
    minutes: float  # requests / sustainable rate (0 when unlimited)
    elicit_requests: int = 0


@dataclass
class Estimate:
    vendors: list[VendorEstimate]
    rows: int
    t_star_s: float  # 0 when no vendor has a limit
    unpriced: list[str]  # judge models and models under test the config and the table leave unpriced: counted as 0

    def as_dict(self) -> dict:
        return {"rows": self.rows, "t_star_s": round(self.t_star_s, 3), "unpriced": self.unpriced,
                "requests": sum(v.requests for v in self.vendors),
                "cost_usd": round(sum(v.cost_usd for v in self.vendors), 6),
                "vendors": {v.vendor: asdict(v) for v in self.vendors}}


def estimate(config: CouncilConfig, items: dict[str, BankItem], rows: list[ResponseRow],
             models: list[str] = ()) -> Estimate:
    """What grading ``rows`` would cost; with ``models``, what asking those models every item and grading
    their answers would cost (answers stood in for by a typical length)."""
    models = list(models)
    if models:
        rows = [ResponseRow.model_validate({"item_id": i, "model": m, "response": TYPICAL_ANSWER},
                                           context={"vendor_map": config.vendor_map}) for i in items for m in models]
    vendors = dict.fromkeys([*config.roster_vendors, *(config.vendor_of(m) for m in models)])
    seats = {m.vendor: m for m in config.roster}
    out = []
    for vendor in vendors:
        settings = config.settings(vendor)
        requests = input_tokens = output_tokens = votes = 0
        cost = 0.0
        k = 1
        member = seats.get(vendor)
        if member is not None:
            mine = [r for r in rows if member in eligible_members(r, config.roster, config.self_exclusion)]
            bodies = {1: [round1_body(items[r.item_id], r) for r in mine]}
            bodies[2] = [_round2_stand_in(items[r.item_id], r, config) for r in mine]
            mean_chars = sum(map(len, bodies[1])) / len(mine) if mine else 0.0
            k = batch_size_for(settings.rpm, settings.tpm, mean_chars, settings.max_batch)
            for round_ in (1, 2):
                for start in range(0, len(mine), k):
                    chunk = bodies[round_][start:start + k]
                    messages = single_messages(round_, chunk[0]) if len(chunk) == 1 else batch_messages(round_, chunk)
                    requests += 1
                    input_tokens += estimate_tokens(messages, 0)
            votes = 2 * len(mine)
            output_tokens = votes * EXPECTED_OUTPUT_TOKENS
            cost += _usd(input_tokens, output_tokens, config.price_for(member.judge_model, vendor))
        elicit_requests = 0
        for model in (m for m in models if config.vendor_of(m) == vendor):
            tokens_in = sum(estimate_tokens(elicit_messages(i.prompt), 0) for i in items.values())
            tokens_out = len(items) * EXPECTED_ANSWER_TOKENS
            elicit_requests += len(items)
            input_tokens, output_tokens = input_tokens + tokens_in, output_tokens + tokens_out
            cost += _usd(tokens_in, tokens_out, config.price_for(model, vendor))
        requests += elicit_requests
        rate = _sustainable_rpm(settings.rpm, settings.tpm, (input_tokens + output_tokens) / max(1, requests))
        out.append(VendorEstimate(
            vendor=vendor, judge_model=member.judge_model if member else None, votes=votes, batch_size=k,
            requests=requests, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=round(cost, 6),
            sustainable_rpm=round(rate, 3), minutes=round(requests / rate, 4) if rate else 0.0,
            elicit_requests=elicit_requests,
        ))
    return Estimate(vendors=out, rows=len(rows), t_star_s=60.0 * max((v.minutes for v in out), default=0.0),
                    unpriced=config.unpriced(models))


def _usd(tokens_in: int, tokens_out: int, price: tuple[float, float]) -> float:
    return (tokens_in * price[0] + tokens_out * price[1]) / 1e6


def _round2_stand_in(item: BankItem, row: ResponseRow, config: CouncilConfig) -> str:
    n_peers = len(eligible_members(row, config.roster, config.self_exclusion)) - 1
    peers = [Peer(letter=LETTERS[i], verdict="correct", reason=TYPICAL_REASON) for i in range(n_peers)]
    return round2_body(item, row, "correct", TYPICAL_REASON, peers)


def _sustainable_rpm(rpm: float, tpm: float, tokens_per_request: float) -> float:
    """Requests per minute the account sustains: the request limit, or the token limit, whichever binds."""
    limits = [x for x in (rpm, tpm / tokens_per_request if tpm and tokens_per_request else 0.0) if x]
    return min(limits) if limits else 0.0

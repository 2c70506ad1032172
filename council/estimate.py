"""``council estimate``: what a run would send, cost and take, without making a call.

Per vendor: eligible votes, requests (at the batch size the quotas would choose), tokens in and out, cost
at the configured prices, and the time that vendor's quota needs. The run's lower bound is
**T\\* = max over vendors of requests ÷ sustainable request rate**, where the sustainable rate respects
both the request and the token limit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from council.config import CouncilConfig
from council.judge import batch_size_for
from council.prompts import LETTERS, Peer, batch_messages, round1_body, round2_body, single_messages
from council.protocol import eligible_members
from council.quota import estimate_tokens
from council.schema import BankItem, ResponseRow

EXPECTED_OUTPUT_TOKENS = 40  # a verdict and a one-sentence reason
TYPICAL_REASON = "x" * 120  # stand-in for a peer's round-one reason in round-two prompts


@dataclass
class VendorEstimate:
    vendor: str
    judge_model: str
    votes: int
    batch_size: int
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    sustainable_rpm: float  # 0 = no limit
    minutes: float  # requests / sustainable rate (0 when unlimited)


@dataclass
class Estimate:
    vendors: list[VendorEstimate]
    rows: int
    t_star_s: float  # 0 when no vendor has a limit

    def as_dict(self) -> dict:
        return {"rows": self.rows, "t_star_s": round(self.t_star_s, 3),
                "requests": sum(v.requests for v in self.vendors),
                "cost_usd": round(sum(v.cost_usd for v in self.vendors), 6),
                "vendors": {v.vendor: asdict(v) for v in self.vendors}}


def estimate(config: CouncilConfig, items: dict[str, BankItem], rows: list[ResponseRow]) -> Estimate:
    out = []
    for member in config.roster:
        mine = [r for r in rows if member in eligible_members(r, config.roster, config.self_exclusion)]
        settings = config.settings(member.vendor)
        bodies = {1: [round1_body(items[r.item_id], r) for r in mine]}
        bodies[2] = [_round2_stand_in(items[r.item_id], r, config) for r in mine]
        mean_chars = sum(map(len, bodies[1])) / len(mine) if mine else 0.0
        k = batch_size_for(settings.rpm, settings.tpm, mean_chars, settings.max_batch)
        requests = input_tokens = 0
        for round_ in (1, 2):
            for start in range(0, len(mine), k):
                chunk = bodies[round_][start:start + k]
                messages = single_messages(round_, chunk[0]) if len(chunk) == 1 else batch_messages(round_, chunk)
                requests += 1
                input_tokens += estimate_tokens(messages, 0)
        output_tokens = 2 * len(mine) * EXPECTED_OUTPUT_TOKENS
        rate = _sustainable_rpm(settings.rpm, settings.tpm, (input_tokens + output_tokens) / max(1, requests))
        out.append(VendorEstimate(
            vendor=member.vendor, judge_model=member.judge_model, votes=2 * len(mine), batch_size=k,
            requests=requests, input_tokens=input_tokens, output_tokens=output_tokens,
            cost_usd=round((input_tokens * settings.price_in_per_mtok + output_tokens * settings.price_out_per_mtok)
                           / 1e6, 6),
            sustainable_rpm=round(rate, 3), minutes=round(requests / rate, 4) if rate else 0.0,
        ))
    return Estimate(vendors=out, rows=len(rows), t_star_s=60.0 * max((v.minutes for v in out), default=0.0))


def _round2_stand_in(item: BankItem, row: ResponseRow, config: CouncilConfig) -> str:
    n_peers = len(eligible_members(row, config.roster, config.self_exclusion)) - 1
    peers = [Peer(letter=LETTERS[i], verdict="correct", reason=TYPICAL_REASON) for i in range(n_peers)]
    return round2_body(item, row, "correct", TYPICAL_REASON, peers)


def _sustainable_rpm(rpm: float, tpm: float, tokens_per_request: float) -> float:
    """Requests per minute the account sustains: the request limit, or the token limit, whichever binds."""
    limits = [x for x in (rpm, tpm / tokens_per_request if tpm and tokens_per_request else 0.0) if x]
    return min(limits) if limits else 0.0

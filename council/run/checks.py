"""What a run refuses before anything is written or sent: an unknown backend, a budget with unpriced calls, a
seat its provider would refuse, what a sharded run cannot do, a provider URL carrying credentials."""

from __future__ import annotations

from pydantic import ValidationError

from council.core.errors import ConfigError
from council.protocol.config import CouncilConfig, Endpoint, validation_problems
from council.run.request import BACKENDS, RunRequest


def check_request(req: RunRequest) -> None:
    """A new run's request, refused (ConfigError) before its inputs are read."""
    if req.backend not in BACKENDS:
        raise ConfigError(f"unknown backend {req.backend!r}; choose one of {', '.join(BACKENDS)}")
    check_budget(req.config, req.models)
    check_shapes(req.config)
    check_shards(req.shards, req.backend, req.models, req.reuse_from, req.config)
    if req.provider_url is not None:
        provider_endpoint(req.provider_url)  # a bad URL is refused before anything is written


def check_shards(shards: int, backend: str, models: list[str], reuse_from: list[str], config: CouncilConfig) -> None:
    """What a sharded run cannot do (yet), refused before anything starts."""
    if not shards:
        return
    problems = []
    if backend != "ray":
        problems.append("--shards needs the ray backend")
    if models:
        problems.append("elicitation (--models) runs on one node")
    if reuse_from:
        problems.append("--reuse-from is served by a single-node run")
    if problems:
        raise ConfigError(f"--shards {shards}: {'; '.join(problems)}; leave out --shards for this run")


def provider_endpoint(url: str, config: CouncilConfig | None = None) -> Endpoint:
    """The endpoint of ``--provider-url`` with the run's timeouts and retry policy, or ConfigError (a URL
    carrying credentials is refused)."""
    config = config or CouncilConfig()
    try:
        return Endpoint(base_url=url, timeouts=config.timeouts, retry=config.retry)
    except ValidationError as exc:
        raise ConfigError(f"--provider-url {validation_problems(exc)}") from None


def check_shapes(config: CouncilConfig) -> None:
    """A seat whose requests its provider would refuse whatever the prompt (a thinking budget outside the model's
    range: :func:`council.transport.shape.shape_for`) is refused before anything is written or sent."""
    from council.transport.shape import seat_shape

    problems = [f"seat {m.vendor}: {p}" for m in config.roster for p in seat_shape(
        m.judge_model, m.vendor, config.judge, Endpoint(base_url="http://127.0.0.1/v1")).problems]
    if problems:
        raise ConfigError(f"{'; '.join(problems)} (`council check` shows every seat)")


def check_budget(config: CouncilConfig, models: list[str]) -> None:
    """A budget is only a bound if every call has a price: refuse one with unpriced judges or models."""
    if config.budget_usd is None:
        return
    unpriced = config.unpriced(models)
    if unpriced:
        raise ConfigError(f"--budget-usd needs a price for every judge and model under test; no price for: "
                          f"{', '.join(unpriced)} (set vendors.<vendor>.price_in_per_mtok / price_out_per_mtok or "
                          f"model_prices in --config)")

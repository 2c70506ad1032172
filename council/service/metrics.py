"""``/metrics`` in Prometheus text format (``prometheus_client``), one registry per service.

HTTP: requests by method, route and status; latency by route; submissions refused by a tenant limit.
Provider calls, per vendor, from every judge-call record the jobs archive: calls, retries, latency, spend;
429s per vendor from the quota ledgers the jobs share. Jobs by tenant and state, and the queue depth (rows
of unfinished jobs not yet decided), are read when scraped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from council.core.schema import JudgeCallRecord

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _Jobs(Collector):
    def __init__(self, jobs: Any) -> None:
        self.jobs = jobs

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from council.service.models import TERMINAL

        by_state = GaugeMetricFamily("council_jobs", "Jobs by tenant and state", labels=["tenant", "state"])
        for (tenant, state), n in sorted(self.jobs.counts_by_state().items()):
            by_state.add_metric([tenant, state], n)
        yield by_state
        pending = sum(j.progress.rows_total - j.progress.rows_done for j in self.jobs.jobs.values()
                      if j.record.state not in TERMINAL)
        yield GaugeMetricFamily("council_queue_rows", "Rows of unfinished jobs not yet decided", value=pending)
        limited = GaugeMetricFamily("council_provider_rate_limited", "429s received, per vendor", labels=["vendor"])
        for vendor, ledger in sorted(self.jobs.quota.ledgers.items()):
            limited.add_metric([vendor], ledger.stats.rate_limited)
        yield limited


class Metrics:
    def __init__(self, jobs: Any) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("council_http_requests", "HTTP requests served", ["method", "route", "status"],
                                registry=r)
        self.latency = Histogram("council_http_request_seconds", "HTTP request latency", ["route"], registry=r,
                                 buckets=LATENCY_BUCKETS)
        self.refused = Counter("council_submissions_limited", "Submissions refused by a tenant limit (429)",
                               ["tenant"], registry=r)
        self.calls = Counter("council_provider_calls", "Judge calls answered, per vendor", ["vendor"], registry=r)
        self.retries = Counter("council_provider_retries", "Judge call attempts beyond the first", ["vendor"],
                               registry=r)
        self.call_latency = Histogram("council_provider_call_seconds", "Judge call latency", ["vendor"], registry=r,
                                      buckets=LATENCY_BUCKETS)
        self.spend = Counter("council_spend_usd", "Spend on judge calls (USD)", ["vendor"], registry=r)
        r.register(_Jobs(jobs))

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def limited(self, tenant: str) -> None:
        self.refused.labels(tenant).inc()

    def call(self, rec: JudgeCallRecord) -> None:
        """A judge-call record a job archived."""
        if rec.reused_from is not None:
            return
        self.calls.labels(rec.member).inc()
        if rec.attempts > 1:
            self.retries.labels(rec.member).inc(rec.attempts - 1)
        self.call_latency.labels(rec.member).observe(rec.latency_s)
        self.spend.labels(rec.member).inc(rec.cost_usd)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

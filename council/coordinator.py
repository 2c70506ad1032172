"""The two-round coordinator: drives every row through a blind round one and an anonymised round two.

Rounds are pipelined per row: a row's round two starts as soon as its own round one is complete, while
other rows are still in round one. There is no run-wide barrier. Records reach the archive through the
dispatchers as they return; the coordinator keeps no verdict state beyond the rows in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator

from council.config import CouncilConfig
from council.dispatch import Dispatcher, JudgePool
from council.judge import JudgeTask
from council.prompts import round1_body, round2_body, scrubber
from council.protocol import eligible_members, peers_for, row_order
from council.schema import BankItem, JudgeCallRecord, ResponseRow


class Coordinator:
    def __init__(
        self,
        config: CouncilConfig,
        items: dict[str, BankItem],
        pool: JudgePool,
        on_record: Callable[[JudgeCallRecord], None],
        *,
        on_row_done: Callable[[ResponseRow], None] | None = None,
        max_batch: int = 64,
        linger_s: float = 0.0,
        extra_names: Iterable[str] = (),
    ) -> None:
        self.config = config
        self.items = items
        self._on_row_done = on_row_done
        self._dispatchers = {
            v: Dispatcher(v, pool, on_record, max_batch=max_batch, linger_s=linger_s) for v in config.roster_vendors
        }
        names = [*config.roster_vendors, *(m.judge_model for m in config.roster), *extra_names]
        self._scrub = scrubber(names)

    async def run(self, rows: Iterable[ResponseRow]) -> None:
        """Grade every row; at most ``config.rows_in_flight`` rows are in progress at once."""
        source: Iterator[ResponseRow] = iter(rows)

        async def worker() -> None:
            for row in source:  # workers share one iterator: each row is taken exactly once
                await self.grade_row(row)

        try:
            await asyncio.gather(*(worker() for _ in range(self.config.rows_in_flight)))
        finally:
            for dispatcher in self._dispatchers.values():
                await dispatcher.close()

    async def grade_row(self, row: ResponseRow) -> None:
        item = self.items[row.item_id]
        members = eligible_members(row, self.config.roster, self.config.self_exclusion)
        if members:
            body = round1_body(item, row)
            first = await asyncio.gather(*(
                self._dispatchers[m.vendor].submit(JudgeTask(row.row_id, 1, body))
                for m in members
            ))
            round1 = {r.member: r for r in first}
            order = row_order(self.config.seed, row.row_id, [m.vendor for m in members])
            second = []
            for m in members:
                own = round1[m.vendor]
                peers, letters = peers_for(m.vendor, order, round1, self._scrub)
                body = round2_body(item, row, own.verdict, own.reason, peers)
                second.append(self._dispatchers[m.vendor].submit(JudgeTask(row.row_id, 2, body, letters)))
            await asyncio.gather(*second)
        if self._on_row_done is not None:
            self._on_row_done(row)

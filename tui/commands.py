"""The command palette provider: every app action, searchable by title."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui.actions import ACTIONS


class ActionsProvider(Provider):
    async def discover(self) -> Hits:
        for action in ACTIONS:
            yield DiscoveryHit(action.title, partial(self._run, action.name), help=action.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action in ACTIONS:
            score = matcher.match(action.title)
            if score > 0:
                yield Hit(score, matcher.highlight(action.title),
                          partial(self._run, action.name), help=action.help)

    async def _run(self, name: str) -> None:
        await self.app.run_action(name)

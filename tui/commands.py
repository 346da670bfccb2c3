"""The command palette provider: every app action, searchable by title."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui.actions import ACTIONS, AppAction


class ActionsProvider(Provider):
    async def discover(self) -> Hits:
        for action in ACTIONS:
            yield DiscoveryHit(action.title, partial(self._run, action), help=action.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action in ACTIONS:
            score = matcher.match(action.title)
            if score > 0:
                yield Hit(score, matcher.highlight(action.title),
                          partial(self._run, action), help=action.help)

    async def _run(self, action: AppAction) -> None:
        # The main screen's actions run on it even though the palette is still on top.
        from tui.app import BrainApp

        app = self.app
        if action.on_app or not isinstance(app, BrainApp):
            await app.run_action(action.name)
        else:
            await app.run_action(action.name, app.chat_screen)

"""The command palette provider: every app action, searchable by title or by its config name.

Each entry's help line says what it does, its key, and the name `[ui] keybindings` takes, e.g.
"Show every key · F1 · keybindings name: help" (help lines are markup to Textual: escaped).
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from tui.actions import ACTIONS, AppAction, key_display


class ActionsProvider(Provider):
    async def discover(self) -> Hits:
        for action in ACTIONS:
            yield DiscoveryHit(action.title, partial(self._run, action), help=self._help(action))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action in ACTIONS:
            # Found by the config name too: someone editing [ui] keybindings searches for it.
            score = max(matcher.match(action.title), matcher.match(action.name) * 0.9)
            if score > 0:
                yield Hit(score, matcher.highlight(action.title),
                          partial(self._run, action), help=self._help(action))

    def _help(self, action: AppAction) -> str:
        key = key_display(self.app, action.name)
        parts = (action.help, key, f"[ui] keybindings name: {action.name}")
        return escape(" · ".join(p for p in parts if p))

    async def _run(self, action: AppAction) -> None:
        # The main screen's actions run on it even though the palette is still on top.
        from tui.app import BrainApp

        app = self.app
        if action.on_app or not isinstance(app, BrainApp):
            await app.run_action(action.name)
        else:
            await app.run_action(action.name, app.chat_screen)

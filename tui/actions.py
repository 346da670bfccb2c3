"""Every app action: its default key, its palette title and help. One table for the bindings,
the command palette, the help screen and the `[ui] keybindings` overrides in the config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding
from textual.keys import format_key

if TYPE_CHECKING:
    from textual.app import App


@dataclass(frozen=True, slots=True)
class AppAction:
    name: str  # action_<name>; the id used by [ui] keybindings
    key: str
    title: str  # palette title
    help: str
    footer: bool = False  # shown in the footer
    priority: bool = False

    @property
    def on_app(self) -> bool:
        """The app's own (themes, keys, quit); the rest belong to the main screen."""
        return self.name in APP_ACTIONS

    @property
    def target(self) -> str:
        """The action string a binding runs: the main screen's actions act on it only when
        no dialog is open on top (`screen.` is the active screen)."""
        return self.name if self.on_app else f"screen.{self.name}"


APP_ACTIONS = frozenset({"quit", "help", "next_theme"})


ACTIONS: tuple[AppAction, ...] = (
    AppAction("quit", "ctrl+q", "Quit", "Quit after saving pending writes", True, True),
    AppAction("help", "f1", "Keys", "Show every key", True, True),
    AppAction("sessions", "f2", "Sessions", "List, resume, rename, delete, export sessions", True,
              True),
    AppAction("index_manager", "f3", "Index manager", "Add, remove, re-sync indexed folders",
              True, True),
    AppAction("models", "f4", "Choose model", "Pick the chat model from the server's models", True,
              True),
    AppAction("settings", "f5", "Settings", "Show the settings in effect (read-only: edit the "
              "config file, then restart)", priority=True),
    AppAction("toggle_sources", "f6", "Toggle sources pane", "Show or hide the sources pane",
              priority=True),
    AppAction("toggle_memories", "f7", "Toggle memory pane", "Show or hide the memory pane",
              priority=True),
    AppAction("next_theme", "f8", "Next theme", "Switch to the next theme (remembered)",
              priority=True),
    AppAction("log", "f12", "Log", "Show the log file (errors with their tracebacks)",
              priority=True),
    AppAction("new_session", "ctrl+n", "New session", "Start a new conversation", True),
    AppAction("cancel", "escape", "Stop answer", "Stop the answer being generated"),
    AppAction("continue_answer", "f9", "Continue answer",
              "Have the model go on with an answer cut off at the length limit", priority=True),
    # Priority: text fields bind Ctrl+F themselves (Input: delete a word), which swallowed it
    # in the memory filter.
    AppAction("search", "ctrl+f", "Search knowledge",
              "Search your folders and past conversations for the typed text, or ask what to "
              "search (no model needed; dates as in `since:2w` or \"last week\")", True, True),
    AppAction("focus_input", "ctrl+l", "Focus message box", "Move the cursor to the message box"),
    AppAction("focus_sources", "ctrl+s", "Focus sources", "Move the cursor to the sources pane"),
    AppAction("focus_memories", "ctrl+o", "Focus memories", "Move the cursor to the memory pane"),
    AppAction("copy_last", "ctrl+b", "Copy last answer", "Copy the last answer to the clipboard"),
    AppAction("rate_up", "ctrl+t", "👍 last answer", "Mark the last answer good (retrieval log)"),
    AppAction("rate_down", "ctrl+g", "👎 last answer", "Mark the last answer bad (retrieval log)"),
    AppAction("wider_side", "alt+left", "Widen side panes", "Give the right panes more columns"),
    AppAction("narrower_side", "alt+right", "Narrow side panes", "Give the chat more columns"),
    AppAction("taller_sources", "alt+down", "Taller sources pane", "Grow sources, shrink memories"),
    AppAction("shorter_sources", "alt+up", "Shorter sources pane", "Grow memories, shrink sources"),
    AppAction("all_memories", "ctrl+r", "Show all memories", "Toggle used/all memories"),
    # Priority: from anywhere, the message box included (`u` does the same in the memory pane).
    AppAction("undo", "f11", "Undo memory change",
              "Take back the latest memory change of this run (delete, pin, edit, add, "
              "\"remember that…\"); repeatable; the status line says what it reverts",
              priority=True),
    AppAction("new_memory", "", "Add a memory", "Write a new memory yourself"),
    AppAction("forget_all", "", "Forget everything", "Delete every memory (asks first)"),
    AppAction("resync", "", "Re-sync all folders", "Index changes in every folder now"),
    AppAction("events", "f10", "Agent events",
              "What AI agents logged through `brain mcp`: search, read, erase", priority=True),
)

ACTION_NAMES = frozenset(a.name for a in ACTIONS)


def app_bindings() -> list[Binding]:
    return [
        Binding(a.key, a.target, a.title, show=a.footer, priority=a.priority, id=a.name)
        for a in ACTIONS
        if a.key
    ]


def validate_keymap(keymap: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split the config's overrides into usable ones and one problem line per bad entry: an
    unknown action, a key no terminal sends (`f99`: Textual would bind it silently and the
    action would be unreachable), or a key another action already has."""
    good: dict[str, str] = {}
    problems: list[str] = []
    for name, key in keymap.items():
        keys = [k.strip() for k in key.split(",") if k.strip()]
        unknown = [k for k in keys if not is_key(k)]
        if name not in ACTION_NAMES:
            problems.append(f"ui.keybindings: unknown action {name!r}")
        elif not keys:
            problems.append(f"ui.keybindings.{name}: empty key")
        elif unknown:
            problems.append(f"ui.keybindings.{name}: {unknown[0]!r} is not a key (keys look "
                            "like f1…f24, ctrl+x, alt+left, escape); the default is kept")
        else:
            good[name] = ",".join(keys)
    effective = {a.name: set(filter(None, (good.get(a.name) or a.key).split(",")))
                 for a in ACTIONS}
    for name, key in list(good.items()):
        clash = next((other for other, keys in effective.items()
                      if other != name and keys & set(key.split(","))), None)
        if clash is not None:
            problems.append(f"ui.keybindings.{name}: {key!r} is already the key of {clash!r}; "
                            "the default is kept")
            del good[name]
    return good, problems


_KEY_MODIFIERS = frozenset({"ctrl", "alt", "shift", "meta", "super", "hyper"})


def is_key(key: str) -> bool:
    """A key Textual can receive: modifiers, then a named key (`f1`…`f24`, `escape`, `left`…),
    a single character, or a character's name (`plus`, `slash`, `equals_sign`)."""
    import unicodedata

    from textual.keys import KEY_TO_UNICODE_NAME, REPLACED_KEYS, Keys

    *modifiers, name = key.lower().split("+")
    if name == "" and key.endswith("+"):  # "ctrl++": the plus key
        return all(m in _KEY_MODIFIERS for m in modifiers if m)
    if not name or any(m not in _KEY_MODIFIERS for m in modifiers):
        return False
    if len(name) == 1 or name in {k.value for k in Keys}:
        return True
    unicode_name = KEY_TO_UNICODE_NAME.get(REPLACED_KEYS.get(name, name),
                                           REPLACED_KEYS.get(name, name))
    try:
        unicodedata.lookup(unicode_name.replace("_", " ").upper())
    except KeyError:
        return False
    return True


# --- keys as people read them -------------------------------------------------------------------

_MODIFIERS = {"ctrl": "Ctrl", "alt": "Alt", "shift": "Shift", "meta": "Meta", "super": "Super",
              "hyper": "Hyper"}
_NAMES = {
    "escape": "Esc", "enter": "Enter", "tab": "Tab", "space": "Space",
    "backspace": "Backspace", "delete": "Del", "insert": "Ins", "home": "Home", "end": "End",
    "pageup": "PgUp", "pagedown": "PgDn", "up": "↑", "down": "↓", "left": "←", "right": "→",
}


def key_label(key: str) -> str:
    """Textual's key names as a user reads them: `ctrl+q` → `Ctrl+Q`, `alt+left` → `Alt+←`,
    `plus, equals_sign` → `+, =`, `escape,q,f1` → `Esc, q, F1`."""
    return ", ".join(_one_key(k.strip()) for k in key.split(",") if k.strip())


def _one_key(key: str) -> str:
    *modifiers, name = key.split("+")
    if name == "":  # "+" or "ctrl++": the key is the plus sign itself
        name = "plus"
        modifiers = [m for m in modifiers if m]
    if name in _NAMES:
        shown = _NAMES[name]
    elif len(name) > 1 and name[0] == "f" and name[1:].isdigit():
        shown = name.upper()
    else:
        shown = format_key(name)  # "slash" → "/", "equals_sign" → "="
        if len(shown) > 1:
            shown = shown.replace("_", " ")
        elif modifiers:
            shown = shown.upper()  # Ctrl+Q, as keyboards print it
    return "+".join([*(_MODIFIERS.get(m, m.title()) for m in modifiers), shown])


def bound_key(app: App[object], action: str) -> str:
    """The key(s) that run app `action` now (the config's override if any), "" if none."""
    keymap: dict[str, str] = getattr(app, "_keymap", {}) or {}
    if action in keymap:
        return keymap[action]
    return next((a.key for a in ACTIONS if a.name == action), "")


def key_display(app: App[object], action: str) -> str:
    """`bound_key` as the user reads it."""
    return key_label(bound_key(app, action))

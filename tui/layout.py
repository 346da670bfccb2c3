"""Where the panes go for a terminal width: the chat always keeps room to be read.

- wide (>= WIDE_COLUMNS): the side column at the width the user chose (Alt+arrows);
- narrow (NARROW_COLUMNS .. WIDE_COLUMNS): the side column gives way, so the chat keeps at least
  CHAT_MIN_COLUMNS;
- collapsed (< NARROW_COLUMNS, e.g. 80×24): the side panes are hidden behind a toggle. F6/F7
  (or Ctrl+S/Ctrl+O) open one of them full width in place of the chat, as a drawer; the same key,
  Esc, or moving to the message box closes it.

The user's own choices (pane widths, which panes are shown) are kept as they are in the UI
state: a small terminal never overwrites them, it only decides how much of them fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tui.state import MIN_SIDE_WIDTH, UiState

WIDE_COLUMNS = 120
NARROW_COLUMNS = 90
CHAT_MIN_COLUMNS = 50

Mode = Literal["wide", "narrow", "collapsed"]
Pane = Literal["sources", "memories"]


@dataclass(frozen=True, slots=True)
class PaneLayout:
    mode: Mode
    show_chat: bool
    show_sources: bool
    show_memories: bool
    side_width: int | None  # columns of the side column; None: full width (the drawer)

    @property
    def show_side(self) -> bool:
        return self.show_sources or self.show_memories


def mode_for(width: int) -> Mode:
    if width >= WIDE_COLUMNS:
        return "wide"
    return "narrow" if width >= NARROW_COLUMNS else "collapsed"


def max_side_width(width: int) -> int:
    """The widest the side column may be at this terminal width."""
    return max(MIN_SIDE_WIDTH, width - CHAT_MIN_COLUMNS)


def pane_layout(width: int, state: UiState, drawer: Pane | None) -> PaneLayout:
    """The layout for a terminal `width` columns wide (`drawer`: the pane opened while
    collapsed)."""
    mode = mode_for(width)
    if mode == "collapsed":
        return PaneLayout(mode, show_chat=drawer is None, show_sources=drawer == "sources",
                          show_memories=drawer == "memories", side_width=None)
    side = min(state.side_width, max_side_width(width))
    return PaneLayout(mode, show_chat=True, show_sources=state.show_sources,
                      show_memories=state.show_memories, side_width=side)

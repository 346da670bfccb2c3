"""When a file's content dates from, for the recency boost: its edit time, not its copy time.

A file's mtime says when its bytes were last written, which is not always when the user last
worked on it: `cp -r`, `git clone`, a sync tool or an unpacker without time preservation stamp
a whole folder with the moment of the copy, and every file of a folder copied today would
rank as fresh. So the index keeps a content time per file (its chunks' `mtime`):

- a file whose content changed since the last sync: its mtime (an edit);
- a file whose content did not change (`touch`, a copy over an identical file, a re-chunk):
  the content time it had;
- a new file: its mtime, unless it arrived with many others — COPY_FILES or more new files
  of one sync whose mtimes fall within COPY_SECONDS of its own were written by one copy, not
  edited one by one: its content time is unknown (UNKNOWN, no boost) until it is edited.

A copy that keeps times (`cp -p`, `rsync -a`, most unpackers) keeps the real edit times.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

UNKNOWN = 0.0  # the epoch: older than any recency window
COPY_FILES = 10  # one user does not save this many files within …
COPY_SECONDS = 60.0  # … a minute either side of one another; a copy does


def copied_together(mtimes: Mapping[str, float]) -> set[str]:
    """The new files (path → mtime) whose mtime is the time of a bulk copy."""
    ordered = sorted(mtimes.values())
    copied: set[str] = set()
    for path, mtime in mtimes.items():
        near = (bisect.bisect_right(ordered, mtime + COPY_SECONDS)
                - bisect.bisect_left(ordered, mtime - COPY_SECONDS))
        if near >= COPY_FILES:
            copied.add(path)
    return copied


def content_time(mtime: float, *, changed: bool, known: float | None, copied: bool) -> float:
    """The content time of a file just read: `changed` = its content differs from the indexed
    one (or it is new), `known` = the content time indexed for it (None: new), `copied` = it
    is a new file that arrived in a bulk copy (`copied_together`)."""
    if known is None:
        return UNKNOWN if copied else mtime
    return mtime if changed else known

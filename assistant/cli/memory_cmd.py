"""`brain memory …`: see, search, correct and erase what the assistant remembers."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.cli.common import context, print_json, top_k, top_k_error
from assistant.cli.common import rate as rate_text
from assistant.cli.plain_output import terminal
from assistant.errors import UserError
from assistant.services import Services

if TYPE_CHECKING:
    from assistant.memory.model import Memory
    from assistant.memory.service import MemoryService


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("memory", help="see, search and correct what the assistant remembers")
    actions = parser.add_subparsers(dest="memory_action", metavar="ACTION")

    p = actions.add_parser("list", help="list memories (active ones unless --all)")
    p.add_argument("--all", action="store_true", help="include superseded, deleted and archived")
    p.add_argument("--type", metavar="T", help="fact, preference, episode or procedure")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_list)

    _register_changes(actions)

    p = actions.add_parser("search", help="memories relevant to a query")
    p.add_argument("query", nargs="?")
    p.add_argument("--top-k", type=top_k, default=None, metavar="N")
    p.add_argument("--json", action="store_true")
    p.add_argument("--queries", metavar="FILE.jsonl", help='one {"query": …} per line; prints '
                   "one JSON result per line, loading the model once")
    p.set_defaults(func=_search)

    _register_bulk(actions)

    p = actions.add_parser("profile", help="show the user profile")
    p.add_argument("--refresh", action="store_true", help="rewrite it with the chat model")
    p.add_argument("--accept", action="store_true", help="accept a proposed rewrite")
    p.set_defaults(func=_profile)


def _register_changes(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands that change one memory (add, edit, rm, undo, pin, history)."""
    p = actions.add_parser("add", help="remember something (stored as you wrote it)")
    p.add_argument("text")
    p.add_argument("--type", metavar="T", default="fact",
                   help="fact (default), preference, episode or procedure")
    p.add_argument("--key", metavar="K", help="a name for a fact that can change, e.g. employer;"
                   " adding another memory with the same key supersedes this one")
    p.add_argument("--at", metavar="ISO-8601", help="when it happened (default: now)")
    p.set_defaults(func=_add)

    p = actions.add_parser("edit", help="change a memory's text (or `edit profile TEXT`)")
    p.add_argument("id")
    p.add_argument("text")
    p.set_defaults(func=_edit)

    p = actions.add_parser(
        "rm", help="delete a memory (undo brings it back; --forever erases it for good)")
    p.add_argument("id")
    p.add_argument("--forever", action="store_true",
                   help="erase it for good: no undo, no history, nothing left in any file "
                   "(chat sessions keep their turns, marked 'memory forgotten')")
    p.set_defaults(func=_rm)

    p = actions.add_parser(
        "undo", help="undo the latest change to a memory (without ID: the latest change)")
    p.add_argument("id", nargs="?", help="memory id or prefix, or `profile`")
    p.set_defaults(func=_undo)

    p = actions.add_parser("pin", help="always include a memory in answers")
    p.add_argument("id")
    p.set_defaults(func=_pin, pinned=True)
    p = actions.add_parser("unpin", help="stop always including a memory")
    p.add_argument("id")
    p.set_defaults(func=_pin, pinned=False)

    p = actions.add_parser("history", help="every change to a memory")
    p.add_argument("id")
    p.set_defaults(func=_history)


def _register_bulk(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands over every memory at once (export, import, forget-all, reindex)."""
    p = actions.add_parser("export", help="write active memories as JSONL (stdout by default)")
    p.add_argument("file", nargs="?")
    p.add_argument("--all", action="store_true", help="include inactive memories")
    p.set_defaults(func=_export)

    p = actions.add_parser(
        "import", help="read memories from JSONL (- for stdin), stored verbatim",
        description="Store every line as a memory, as written (no model, no dedup unless "
        "--dedup). Running an interrupted import again resumes it; a file imported in full "
        "before is refused unless --again.")
    p.add_argument("file", help="JSONL file, one {\"text\": …} object per line; - reads stdin")
    p.add_argument("--dedup", action="store_true",
                   help="skip lines 90%% similar to a stored memory or an earlier line")
    p.add_argument("--again", action="store_true",
                   help="import a file once more although it was imported in full before")
    p.set_defaults(func=_import)

    p = actions.add_parser("forget-all", help="erase every memory, its history and its vectors")
    p.add_argument("--yes", action="store_true", help="confirm")
    p.set_defaults(func=_forget_all)

    p = actions.add_parser("reindex", help="rebuild the memory vectors from the database "
                           "(e.g. after changing the embedding model)")
    p.set_defaults(func=_reindex)


def _core(args: argparse.Namespace) -> Services:
    """The command's stores; `with` closes them. Memory writes queue their vectors: a later
    search (or the app) embeds them."""
    return Services(context(args), eager_memory_vectors=False)


@contextmanager
def _opened(args: argparse.Namespace) -> Iterator[MemoryService]:
    with _core(args) as core:
        yield core.memory_service()


def _type(value: str | None) -> Any:
    if value is None:
        return None
    from assistant.memory.model import parse_type

    try:
        return parse_type(value)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _line(memory: Memory, *, score: float | None = None) -> str:
    flags = []
    if memory.pinned:
        flags.append("pinned")
    if memory.status.value != "active":
        flags.append(memory.status.value)
    head = f"{memory.id}  {memory.type.value:<10}"
    if score is not None:
        head += f" {score:5.3f}"
    key = f"[{memory.key}] " if memory.key else ""
    tail = f"  ({', '.join(flags)})" if flags else ""
    return f"{head}  {key}{memory.text}{tail}"


def _list(args: argparse.Namespace) -> int:
    with _opened(args) as service:
        statuses = None if args.all else _active()
        memories = service.store.list(statuses=statuses, type=_type(args.type))
        if args.json:
            print_json({"memories": [m.to_json() for m in memories]})
            return 0
        profile = service.store.profile()
        if profile.text and not args.type:
            print(f"profile   {profile.text}\n")
        if not memories:
            print("no memories yet (add one with `brain memory add TEXT`)")
        for memory in memories:
            print(_line(memory))
    return 0


def _active() -> Any:
    from assistant.memory.model import MemoryStatus

    return (MemoryStatus.ACTIVE,)


def _add(args: argparse.Namespace) -> int:
    from assistant.memory.clock import parse_iso, typed_seconds
    from assistant.memory.model import NewMemory

    created = None
    if args.at:
        try:
            created = typed_seconds(parse_iso(args.at), "the time")
        except ValueError as exc:
            raise UserError(f"--at: {exc}") from None
    with _opened(args) as service:
        candidate = NewMemory(text=args.text, type=_type(args.type), key=args.key,
                              created_at=created, source="cli")
        if args.key:
            same = service.store.list(key=candidate.key or None)
            if same:
                memory = service.store.supersede(same[0].id, candidate, actor=_user())
                print(f"{memory.id}  remembered (replaces {same[0].id}: {same[0].text})")
                return 0
        memory = service.store.add(candidate)
        print(f"{memory.id}  remembered")
    return 0


def _user() -> Any:
    from assistant.memory.model import Actor

    return Actor.USER


def _edit(args: argparse.Namespace) -> int:
    with _opened(args) as service:
        if args.id == "profile":
            service.store.set_profile(args.text, actor=_user())
            print("profile updated")
            return 0
        memory = service.store.edit(args.id, args.text)
        print(f"{memory.id}  updated")
    return 0


def _rm(args: argparse.Namespace) -> int:
    if args.forever:
        from assistant.erasure.actions import purge_memory

        with _core(args) as core:
            memory_id = purge_memory(core, args.id)
        print(f"{memory_id}  erased for good; nothing of it remains on disk")
        return 0
    with _opened(args) as service:
        memory = service.store.delete(args.id)
        print(f"{memory.id}  deleted (undo with `brain memory undo {memory.id}`)")
    return 0


def _undo(args: argparse.Namespace) -> int:
    from assistant.memory.model import Event

    with _opened(args) as service:
        if args.id is not None and args.id.strip().lower() == "profile":
            profile = service.store.undo_profile()
            print(f"profile restored: {profile.text or '(empty)'}")
            return 0
        event: Event | None
        if args.id is None:
            memory, event = service.store.undo_last()
        else:
            change = service.store.latest_change(args.id)
            event = change.event if change is not None else None
            memory = service.store.undo(args.id)
        if event is Event.ADD:  # the memory is gone again: "restored … (deleted)" misled
            print(f"{memory.id}  undid adding it: {memory.text!r} is removed")
        else:
            print(f"{memory.id}  restored: {memory.text} ({memory.status.value})")
    return 0


def _pin(args: argparse.Namespace) -> int:
    with _opened(args) as service:
        memory = service.store.pin(args.id, args.pinned)
        print(f"{memory.id}  {'pinned' if memory.pinned else 'unpinned'}")
    return 0


def _history(args: argparse.Namespace) -> int:
    from assistant.memory.clock import iso_of

    with _opened(args) as service:
        events = service.store.history(args.id)
        for event in events:
            change = event.new_text or ""
            if event.old_text is not None and event.old_text != event.new_text:
                change = f"{event.old_text!r} -> {event.new_text!r}"
            undone = "  (undone)" if event.undone else ""
            via = f"  (by {event.via})" if event.via else ""
            print(f"{iso_of(event.at)}  {event.actor.value:<9} {event.event.value:<12} "
                  f"{change}{undone}{via}")
    return 0


def _search(args: argparse.Namespace) -> int:
    if bool(args.query) == bool(args.queries):
        raise UserError("give either a QUERY or --queries FILE.jsonl")
    with _opened(args) as service:
        if args.queries:
            return _search_file(service, Path(args.queries), args.top_k)
        results = service.search(args.query, args.top_k)
        if args.json:
            print_json({"memories": [r.memory.to_json(score=r.score) for r in results]})
        elif not results:
            print("no matching memories")
        for r in results if not args.json else ():
            print(_line(r.memory, score=r.score))
    return 0


def _search_file(service: MemoryService, path: Path, top_k: int | None) -> int:
    failures = 0
    for number, raw in enumerate(_read_lines(path), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            data = exc
        query = data if isinstance(data, str) else (
            data.get("query") if isinstance(data, dict) else None)
        k = data.get("top_k", top_k) if isinstance(data, dict) else top_k
        if not isinstance(query, str) or not query.strip():
            failures += 1
            print_json({"line": number, "error": 'expected {"query": "…", "top_k"?: N}'})
            continue
        if (bad := top_k_error(k)) is not None:
            failures += 1
            print_json({"line": number, "error": bad})
            continue
        results = service.search(query, k)
        print_json({"query": query,
                    "memories": [r.memory.to_json(score=r.score) for r in results]})
    return 1 if failures else 0


def _read_lines(path: Path) -> list[str]:
    if str(path) == "-":
        try:
            return sys.stdin.buffer.read().decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise UserError("stdin: not UTF-8 text") from None
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None


def _export(args: argparse.Namespace) -> int:
    from assistant.memory.transfer import export_memories

    with _opened(args) as service:
        if args.file:
            target = Path(args.file)
            tmp = target.with_name(target.name + ".tmp")
            with tmp.open("w", encoding="utf-8") as out:
                count = export_memories(service.store, out, include_inactive=args.all)
            tmp.chmod(0o600)
            tmp.replace(target)
            print(f"exported {count} memories to {target}", file=sys.stderr)
        else:
            export_memories(service.store, sys.stdout, include_inactive=args.all)
    return 0


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal, or for long imports)."""

    def __init__(self, unit: str = "lines") -> None:
        self.start = time.perf_counter()
        self.shown = False
        self.unit = unit  # what `done` counts: memory imports count lines, sessions turns
        self.base = 0  # items a resumed import had stored before: not part of this run's rate

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        speed = (done - self.base) / max(1e-6, time.perf_counter() - self.start)
        err = terminal(sys.stderr)  # \r rewrites the line in place: our own control
        err.write(f"\rimporting [{'#' * filled}{'.' * (width - filled)}] "
                  f"{done}/{total} {self.unit} ({rate_text(speed, self.unit)})")
        err.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:  # on the stream the bar was drawn on, so the next line starts clean
            err = terminal(sys.stderr)
            err.write("\n")
            err.flush()
            self.shown = False


def _import(args: argparse.Namespace) -> int:
    from assistant.memory.store import ImportRun
    from assistant.memory.transfer import import_memories

    name = "stdin" if args.file == "-" else args.file
    lines = _read_lines(Path(args.file))
    progress = Progress()

    def resuming(run: ImportRun) -> None:
        progress.base = run.committed
        print(f"resuming import: {run.committed} of {run.total} lines already stored",
              file=sys.stderr)

    with _opened(args) as service:
        try:
            report, errors = import_memories(service.store, lines, dedup=args.dedup,
                                             again=args.again, name=name, progress=progress,
                                             on_resume=resuming)
            # memory.capacity holds for imports too (issue 25: 10,000 stayed active past
            # 2,000); their vectors leave now, not at the next search.
            archived = service.maintain()
            service.store.sync_vectors()
        finally:
            progress.finish()
    for error in errors:
        print(f"{name}: {error}", file=sys.stderr)
    if report.finished_earlier:
        print(f"the previous import of {name} stored all {report.already_stored} lines but was "
              f"stopped while writing their vectors; repaired {report.repaired} missing "
              f"vector{'s' if report.repaired != 1 else ''} (nothing imported twice)")
        _say_archived(archived, service.capacity)
        return 1 if errors else 0
    summary = f"imported {report.added} memories"
    if report.skipped_duplicates:
        summary += f", skipped {report.skipped_duplicates} duplicates"
    if errors:
        summary += f"; {len(errors)} bad line(s) not imported"
    print(summary)
    _say_archived(archived, service.capacity)
    if errors and report.added + report.already_stored:
        # The fixed file is new content: imported whole it would store the good lines again.
        print("fix the bad lines and import only them; importing the whole file again would "
              "store its good lines a second time", file=sys.stderr)
    return 1 if errors else 0


def _say_archived(archived: list[str], capacity: int) -> None:
    if archived:
        print(f"archived the {len(archived)} lowest-scoring memories to stay within "
              f"memory.capacity = {capacity} active (`brain memory list --all` shows them; "
              "raise memory.capacity to keep more)")


def _forget_all(args: argparse.Namespace) -> int:
    if not args.yes:
        raise UserError("this erases every memory, its history and its vectors for good",
                        hint="run `brain memory forget-all --yes` to confirm")
    from assistant.erasure.actions import forget_all_memories

    with _core(args) as core:
        count = forget_all_memories(core)
    print(f"forgot {count} memories; nothing remains on disk")
    return 0


def _reindex(args: argparse.Namespace) -> int:
    with _opened(args) as service:
        count = service.store.rebuild_vectors()
    print(f"re-embedded {count} active memories")
    return 0


def _profile(args: argparse.Namespace) -> int:
    from assistant.memory.profile import profile_diff

    with _opened(args) as service:
        if args.accept:
            service.store.accept_pending_profile()
        if args.refresh:
            result = service.refresh_profile()
            if result.error:
                raise UserError(f"profile not rewritten: {result.error}")
        profile = service.store.profile()
        print(profile.text or "no profile yet (`brain memory profile --refresh` writes one)")
        if profile.pending_text is not None:
            print("\nYou edited the profile; the model proposes this rewrite:")
            print(profile_diff(profile.text, profile.pending_text))
            print("\naccept it with `brain memory profile --accept`")
    return 0

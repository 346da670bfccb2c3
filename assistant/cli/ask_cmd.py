"""`brain ask`: one question from the command line, answered from your files and memory.

Each `ask` starts a new session unless `--session ID` or `--continue` says otherwise: a
one-off question from a script must not silently inherit the context of an unrelated earlier
conversation. Every exchange is still saved (`brain sessions list`), so it can be resumed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from assistant.cli.common import context, print_json
from assistant.cli.plain_output import terminal
from assistant.errors import UserError
from assistant.plain_text import plain

if TYPE_CHECKING:
    from assistant.chat.engine import ChatEngine, TurnStream
    from assistant.chat.events import Done, Failed, Retrieved
    from assistant.chat.service import ChatService
    from assistant.sessions.turn import Recalled, Source


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ask",
        help="ask a question: answered by the local model from your files and memory",
        description="Streams the answer, then lists the numbered sources it cites. Each ask "
        "starts a new session unless --session or --continue is given; every exchange is "
        "saved (see `brain sessions`). Relevant turns of your earlier conversations are "
        "recalled and cited as [c1] (with memory). After the answer, memories about you are "
        "extracted from your question (unless --no-memory or memory is disabled) and a session "
        "of two turns or more is summarised: by a background `brain sessions finish` that "
        "never holds the terminal, so `ask` exits as soon as the answer is out (--wait: "
        "here, bounded by the request timeout; a failure is a note on stderr).",
    )
    p.add_argument("question", nargs="*", metavar="QUESTION", help="the question; - reads stdin")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="ID", help="continue this session (id or prefix)")
    which.add_argument("-c", "--continue", dest="continue_", action="store_true",
                       help="continue the most recent session")
    which.add_argument("--new", action="store_true", help="start a new session (the default)")
    p.add_argument("--retry", action="store_true",
                   help="send the session's last failed or interrupted question again, or "
                   "continue its last answer if that was cut off at chat.max_answer_tokens")
    p.add_argument("--model", metavar="NAME",
                   help="use this model (kept for the session; checked first, so a "
                   "mistyped name changes nothing)")
    p.add_argument("--persona", metavar="NAME",
                   help="system prompt preset from the config's [personas]")
    p.add_argument("--no-memory", action="store_true",
                   help="do not use long-term memory (no recall of memories or earlier "
                   "conversations, and no memory extraction from this exchange)")
    p.add_argument("--no-knowledge", action="store_true", help="do not search indexed files")
    p.add_argument("--show-thinking", action="store_true",
                   help="print the model's reasoning, dimmed, on stderr as it comes (by "
                   "default only how long it thought is shown; the reasoning is never part "
                   "of the answer)")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object: {"answer", "sources", "memories", '
                   '"conversations", "low_confidence", "timings", …}, as soon as the answer '
                   'ends (with --wait: once memory extraction from the exchange is over)')
    p.add_argument("--wait", action="store_true",
                   help="run memory extraction and the session summary before exiting, "
                   "instead of in the background")
    p.set_defaults(func=run)


def _question(args: argparse.Namespace) -> str:
    if args.question == ["-"]:
        data = sys.stdin.buffer.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"stdin is not UTF-8 text ({exc.reason})") from exc
    else:
        text = " ".join(args.question)
    text = text.strip()
    if args.retry:
        if text:
            raise UserError("--retry re-sends the last question; give no QUESTION with it")
        return ""
    if not text:
        raise UserError("nothing to ask", hint='brain ask "how do I …"  (or: echo … | brain ask -)')
    return text


def run(args: argparse.Namespace) -> int:
    from assistant.services import Services

    question = _question(args)
    ctx = context(args)
    if args.retry and not (args.session or args.continue_):
        raise UserError("--retry needs the session", hint="brain ask --session ID --retry")
    # The chat's stores, each opened once, closed when the command ends (after the chat).
    with Services(ctx, origin="ask") as core:
        session_id = args.session
        if args.continue_:
            latest = core.sessions().latest()
            if latest is None:
                raise UserError("there is no session to continue yet",
                                hint="ask without --continue")
            session_id = latest.id
        if args.persona is not None and args.persona not in ctx.config.personas:
            raise UserError(
                f"no persona {args.persona!r} (known: {', '.join(sorted(ctx.config.personas))})",
                hint="add it under [personas] with `brain config edit`",
            )
        persona = ctx.config.personas[args.persona] if args.persona is not None else None
        service = core.open_chat(session_id=session_id, knowledge=not args.no_knowledge,
                                 memory=False if args.no_memory else None)
        return asyncio.run(_ask(service, question, args, persona))


async def _ask(
    service: ChatService, question: str, args: argparse.Namespace, persona: str | None
) -> int:
    from assistant.llm.errors import ChatError

    engine = service.engine
    try:
        if persona is not None:
            engine.set_persona(persona)
        if args.model:
            # Checked against Ollama first: a mistyped name must not stick to the session.
            try:
                await asyncio.to_thread(engine.set_model, args.model)
            except ChatError as exc:
                if not args.json:
                    raise
                print_json(_error_json(exc))
                return 1
        options = {"use_knowledge": not args.no_knowledge, "use_memory": not args.no_memory}
        stream = await engine.retry(**options) if args.retry else engine.send(question, **options)
        final, retrieved = await _consume(stream, args)
        assert final is not None
        if args.json and args.wait:  # one JSON object, printed once extraction is over
            await _end_session(engine, final, args)
            return _report(final, True, retrieved)
        code = _report(final, args.json, retrieved)
        if args.wait:
            await _end_session(engine, final, args)  # the answer is out before the user waits
        else:
            _end_in_background(engine, final, args)
        return code
    finally:
        await service.aclose()


async def _consume(
    stream: TurnStream, args: argparse.Namespace
) -> tuple[Done | Failed | None, Retrieved | None]:
    """Show the turn's events as they come (the answer on stdout, notes and status on stderr;
    nothing but the end with --json): the turn's end and what it retrieved."""
    from assistant.chat.events import (
        AnswerReplaced,
        Done,
        Failed,
        Retrieved,
        Thinking,
        Token,
        ToolCalled,
        Waiting,
    )

    final: Done | Failed | None = None
    printed = ""
    status = _Status(enabled=not args.json and sys.stderr.isatty())
    thoughts: list[str] = []
    retrieved: Retrieved | None = None

    try:
        async for event in stream:
            if isinstance(event, Retrieved):
                retrieved = event
                if not args.json:
                    _note_retrieved(event)
            elif isinstance(event, Waiting):
                status.show(event.describe())
            elif isinstance(event, Thinking) and not args.json:
                thoughts.append(event.text)
                if args.show_thinking:
                    status.clear()
                    _eprint_dim(event.text)
                else:
                    status.show(f"thinking… {event.seconds:.0f} s")
            elif isinstance(event, Token) and not args.json:
                status.clear()
                if args.show_thinking and thoughts and not printed:
                    _eprint("")  # the reasoning ends; the answer starts on its line
                sys.stdout.write(event.text)
                sys.stdout.flush()
                printed += event.text
            elif isinstance(event, AnswerReplaced) and not args.json:
                status.clear()
                if printed and not event.answer.startswith(printed):
                    _eprint("\n(the text above was the model's reasoning, not its answer)")
                sys.stdout.write(event.answer[len(printed):]
                                 if event.answer.startswith(printed) else event.answer)
                sys.stdout.flush()
                printed = event.answer
            elif isinstance(event, ToolCalled) and not args.json:
                status.clear()
                _note_tool(event, printed)
            elif isinstance(event, Done | Failed):
                status.clear()
                final = event
    except asyncio.CancelledError:  # Ctrl-C: keep what was said, marked interrupted
        stream.cancel()
        final = await stream.result()
        if not args.json:
            sys.stdout.write("\n")
            _eprint(f"(interrupted; the partial answer is saved in session "
                    f"{_session_of(final)})")
        raise
    return final, retrieved


async def _end_session(engine: ChatEngine, final: Done | Failed,
                       args: argparse.Namespace) -> None:
    """`--wait`: the session's after-work here (see session_end); nothing to extract from a
    failed turn, but the rolling summary still finishes."""
    from assistant.cli.session_end import end_session

    await end_session(engine, memory=not args.no_memory and _answered(final))


def _end_in_background(engine: ChatEngine, final: Done | Failed,
                       args: argparse.Namespace) -> None:
    """Leave the session's after-work to a detached `brain sessions finish`: the job this
    process started after the reply is cancelled at exit, and redone there from the stored
    turns."""
    from assistant.cli import session_end

    turn = final.turn
    if turn is None:
        return  # nothing was stored: nothing follows
    session_end.start_detached(session_end.finish_command(
        turn.session_id, home=args.home,
        memory=not args.no_memory and engine.memory is not None and _answered(final)))


def _answered(final: Done | Failed) -> bool:
    from assistant.chat.events import Done

    return isinstance(final, Done) and final.turn is not None


class _Status:
    """One line on a terminal's stderr, rewritten in place: what Ollama is doing before the
    answer starts ("loading qwen3:4b… 12 s", "thinking… 8 s"). Nothing when not a terminal."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._shown = False

    def show(self, text: str) -> None:
        if self.enabled:
            err = terminal(sys.stderr)  # our own controls around plain text
            err.write(f"\r\033[2m{plain(text)}\033[0m\033[K")
            err.flush()
            self._shown = True

    def clear(self) -> None:
        if self._shown:
            terminal(sys.stderr).write("\r\033[K")
            terminal(sys.stderr).flush()
            self._shown = False


def _eprint_dim(text: str) -> None:
    if sys.stderr.isatty():  # dim the model's thinking; its text itself stays plain
        terminal(sys.stderr).write(f"\033[2m{plain(text)}\033[0m")
    else:
        sys.stderr.write(text)
    sys.stderr.flush()


def _error_json(error: Any) -> dict[str, Any]:
    return {
        "answer": "", "sources": [], "citations": [], "memories": [], "conversations": [],
        "conversation_citations": [], "time_range": None, "low_confidence": False,
        "timings": {}, "session_id": None, "model": "", "status": "failed", "truncated": False,
        "notes": [],
        "error": {"kind": error.kind, "message": error.message, "hint": error.hint or "",
                  "retryable": error.retryable},
    }


def _session_of(final: Done | Failed) -> str:
    turn = final.turn
    return turn.session_id if turn is not None else "?"


def _eprint(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _note_retrieved(event: Any) -> None:
    if event.noted is not None:
        _eprint(f"(remembered: {event.noted.text})")
    if event.time_range is not None and event.conversations_used:
        note = "" if event.time_range_applied else " — nothing then, searched all dates"
        _eprint(f"(earlier conversations: {event.time_range.describe()}{note})")
    for warning in event.warnings:
        _eprint(f"warning: {warning}")
    if event.empty_index:
        _eprint("(nothing is indexed yet: answering without your files; "
                "index a folder with `brain index PATH`)")
    elif event.low_confidence:
        _eprint("(your files do not seem to cover this question)")


def _note_tool(event: Any, printed: str) -> None:
    tool = event.tool
    args = ", ".join(f"{k}={v!r}" for k, v in tool.arguments.items())
    lead = "\n" if printed and not printed.endswith("\n") else ""
    _eprint(f"{lead}[tool] {tool.name}({args}) → {tool.result}")


def source_line(source: Source) -> str:
    item = source.item
    heading = f" — {item.heading}" if item.heading else ""
    return f"[{source.n}] {item.location}{heading}\n    {item.source}"


def conversation_line(recalled: Recalled) -> str:
    """`[c1] 2024-03-05  Kayak trip  (a1b2c3d4#3)`: where an earlier conversation is."""
    item = recalled.item
    if item.deleted:
        return f"[{recalled.label}] {item.date}  ({item.title})"
    where = item.session_id if item.seq is None else f"{item.session_id}#{item.seq}"
    return f"[{recalled.label}] {item.date}  {item.title or '(untitled)'}  ({where})"


def _report(final: Done | Failed, as_json: bool, retrieved: Retrieved | None = None) -> int:
    from assistant.chat.answer_notes import NONE_CITED, OWN_KNOWLEDGE, answer_notes
    from assistant.chat.events import Failed, read_note
    from assistant.sessions.turn import TRUNCATED_NOTE

    turn = final.turn
    if as_json:
        print_json(_json(final, retrieved))
        return 1 if isinstance(final, Failed) else 0
    if isinstance(final, Failed):
        if final.partial:
            sys.stdout.write("\n")
        _eprint(f"brain: error: {final.error}")
        if turn is not None and final.retryable:
            _eprint(f"  your question is saved in session {turn.session_id}; retry with: "
                    f"brain ask --session {turn.session_id} --retry")
        return 1
    assert turn is not None
    out = sys.stdout
    out.write("\n")
    cited = turn.citations
    notes = answer_notes(turn)
    if cited:
        out.write("\nSources:\n" + "\n".join(source_line(s) for s in cited) + "\n")
    elif turn.sources:
        out.write(f"\nRetrieved ({NONE_CITED}):\n"
                  + "\n".join(source_line(s) for s in turn.sources) + "\n")
    if turn.cited_conversations:
        out.write("\nEarlier conversations:\n"
                  + "\n".join(conversation_line(c) for c in turn.cited_conversations) + "\n")
    out.flush()
    if OWN_KNOWLEDGE in notes:
        _eprint(f"note: {OWN_KNOWLEDGE}")
    if turn.truncated:
        _eprint(f"note: {TRUNCATED_NOTE}; continue with: brain ask --session "
                f"{turn.session_id} --retry")
    if turn.status == "interrupted":
        _eprint(f"(interrupted; saved in session {turn.session_id})")
    else:
        thought = turn.timings.get("thinking_ms")
        thinking = f" · thought {thought / 1000:.0f} s" if thought else ""
        read = read_note(turn.timings)
        _eprint(f"(session {turn.session_id} · {turn.model} · "
                f"{turn.timings.get('total_ms', 0) / 1000:.1f} s{thinking}"
                f"{' · ' + read if read else ''})")
    return 0


def _partial(final: Done | Failed) -> str:
    """What a turn that could not be stored had written (only a `Failed` has no turn)."""
    from assistant.chat.events import Failed

    return final.partial if isinstance(final, Failed) else ""


def _json(final: Done | Failed, retrieved: Retrieved | None = None) -> dict[str, Any]:
    from assistant.chat.answer_notes import answer_notes
    from assistant.chat.events import Failed

    turn = final.turn
    sources = list(turn.sources) if turn is not None else []
    recalled = list(turn.conversations) if turn is not None else []
    time_range = retrieved.time_range if retrieved is not None else None
    out: dict[str, Any] = {
        "answer": turn.answer if turn is not None else _partial(final),
        # The same objects as `brain search --json` hits; sources[n-1] is the answer's [n].
        "sources": [_source_json(s) for s in sources],
        "citations": [s.n for s in sources if s.cited],
        "memories": [m.memory.to_json(score=m.score) if m.memory is not None else
                     {"id": m.memory_id, "type": m.kind, "text": m.text, "score": m.score}
                     for m in (turn.memories if turn is not None else ())],
        # Earlier conversations as `brain sessions search --json` hits; conversations[n-1] is
        # the answer's [c<n>].
        "conversations": [_conversation_hit(c) for c in recalled],
        "conversation_citations": [c.n for c in recalled if c.cited],
        "time_range": None if time_range is None else time_range.to_json()
        | {"applied": bool(retrieved and retrieved.time_range_applied)},
        "low_confidence": bool(turn and turn.low_confidence),
        "timings": dict(turn.timings) if turn is not None else {},
        "session_id": turn.session_id if turn is not None else None,
        "model": turn.model if turn is not None else "",
        "status": turn.status if turn is not None else "failed",
        # The model stopped at its length limit: the answer is incomplete.
        "truncated": bool(turn and turn.truncated),
        # What the answer does not say about its grounding (assistant/chat/answer_notes.py).
        "notes": list(answer_notes(turn)) if turn is not None else [],
    }
    if isinstance(final, Failed):
        out["error"] = {
            "kind": final.error.kind, "message": final.error.message,
            "hint": final.error.hint or "", "retryable": final.retryable,
        }
    return out


def _source_json(source: Source) -> dict[str, Any]:
    """The same object as the `brain search --json` hit; a source a tool call found has no
    live scores (rank = its [n])."""
    from assistant.retrieval.contract import hit_json

    item, scores = source.item, source.item.scores
    return hit_json(
        rank=scores.rank if scores else source.n, source=item.source, heading=item.heading,
        text=item.text, score=item.score, vector=scores.vector if scores else None,
        keyword=scores.keyword if scores else None, fused=scores.fused if scores else 0.0,
        chunk_id=item.chunk_id, more_from_file=scores.more_from_file if scores else 0,
        pages=(item.page, item.end_page or item.page) if item.page is not None else None,
    )


def _conversation_hit(recalled: Recalled) -> dict[str, Any]:
    """The search hit it came from; for one deleted meanwhile, the hit's shape, blanked."""
    item = recalled.item
    if item.data and not item.deleted:
        return {**item.data, "rank": recalled.n}
    return {
        "rank": recalled.n, "session": item.session_id or None, "title": item.title,
        "seq": item.seq, "created_at": _iso_local(item.created_at), "question": item.question,
        "answer": item.answer, "score": round(item.score, 4),
        "scores": {"vector": None, "keyword": None, "fused": 0.0}, "refs": [],
    }


def _iso_local(ts: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")

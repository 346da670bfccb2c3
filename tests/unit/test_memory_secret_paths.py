"""Secrets are refused on every path that writes a memory, in the text, the key or both:
`memory add --key`, edit, import, extraction, the `remember` tool and "remember that …".
The detector itself is table-tested in test_memory_secrets.py."""

from __future__ import annotations

import json

import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from assistant.memory.extraction import validate
from assistant.memory.model import NewMemory
from assistant.memory.service import MemoryService
from assistant.memory.store import MemoryStore, SecretRejected
from assistant.memory.transfer import import_memories
from tests.fakes import HashEmbedder
from tests.fixtures.memory import MemoryVectors


@pytest.mark.parametrize(
    ("text", "key"),
    [("4821", "bank_pin"), ("The user's wifi", "sk-proj-4fT9qLx2Vb8NcR1mZ7yK3wD6hJ0sP5aE"),
     ("my password for the bank is hunter2", None), ("guest1234", "wifi password")],
)
def test_add_refuses_a_secret_in_text_key_or_both(
    memory_store: MemoryStore, text: str, key: str | None
) -> None:
    with pytest.raises(SecretRejected, match="never stored"):
        memory_store.add(NewMemory(text, key=key))
    assert memory_store.count(None) == 0


def test_edit_reads_the_new_text_with_the_memory_key(memory_store: MemoryStore) -> None:
    memory = memory_store.add(NewMemory("The user's bank is ING", key="bank_pin"))
    with pytest.raises(SecretRejected):
        memory_store.edit(memory.id, "4821")
    with pytest.raises(SecretRejected):
        memory_store.edit(memory.id, "Sommer2024!", key="wlan_passwort")
    assert memory_store.get(memory.id).text == "The user's bank is ING"


def test_the_users_words_are_not_kept_when_they_hold_a_secret(memory_store: MemoryStore) -> None:
    memory = memory_store.add(NewMemory(
        "The user banks with Chase",
        source_text="I bank with Chase, my password there is Fluffy2020",
        context="pin 4821"))
    row = memory_store.conn.execute("SELECT source_text, context FROM memories WHERE id=?",
                                    (memory.id,)).fetchone()
    assert row["source_text"] is None and row["context"] == ""


def test_import_refuses_a_secret_key_text_pair(memory_store: MemoryStore) -> None:
    lines = [json.dumps({"text": "4821", "key": "bank_pin"}),
             json.dumps({"text": "The user likes tea"})]
    report, errors = import_memories(memory_store, lines)
    assert report.added == 1
    assert [e.line for e in errors] == [1] and "never stored" in errors[0].message


def test_extraction_rejects_a_secret_key_text_pair() -> None:
    kept, rejected = validate(
        [{"type": "fact", "key": "door_code", "text": "1234#", "confidence": 0.9,
          "importance": 0.5}], ["the door code is 1234#"])
    assert kept == [] and rejected == [("[redacted]", "PIN or access code")]


def test_explicit_remember_refuses_natural_phrasings(memory_store: MemoryStore) -> None:
    service = MemoryService(memory_store)
    for utterance in ("remember that my gmail password hunter2!!",
                      "记住：我的银行卡密码是123456",
                      "remember that mon mot de passe est soleil42"):
        with pytest.raises(SecretRejected):
            service.remember(utterance)
    assert memory_store.count(None) == 0


def test_cli_add_refuses_a_secret_key(home, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    embedder = HashEmbedder(dimension=128)
    vectors = MemoryVectors()
    monkeypatch.setattr(AppContext, "embedder", lambda self: embedder)
    monkeypatch.setattr("assistant.memory.service.chroma_vectors", lambda ctx: vectors)
    assert main(["memory", "add", "4821", "--key", "bank_pin"]) == 1
    err = capsys.readouterr().err
    assert "PIN" in err and "never stored" in err and "4821" not in err
    assert main(["memory", "list", "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == []

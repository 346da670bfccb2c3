"""The API key: from the environment or a private file, never from the config file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assistant.config import ConfigError
from assistant.config_load import config_from_dict
from assistant.llm.keys import ApiKeyError, resolve_api_key


def test_key_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAIN_TEST_KEY", " sk-123 \n")
    assert resolve_api_key("BRAIN_TEST_KEY", "") == "sk-123"
    assert resolve_api_key("", "") is None  # a local server needs none


def test_an_unset_variable_says_which(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAIN_TEST_KEY", raising=False)
    with pytest.raises(ApiKeyError, match="BRAIN_TEST_KEY is not set") as info:
        resolve_api_key("BRAIN_TEST_KEY", "")
    assert "export BRAIN_TEST_KEY" in (info.value.hint or "")


def test_a_private_key_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("sk-file\n")
    os.chmod(path, 0o600)
    assert resolve_api_key("", str(path)) == "sk-file"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_a_key_file_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "key"
    path.write_text("sk-file\n")
    os.chmod(path, mode)
    with pytest.raises(ApiKeyError, match="readable by other users") as info:
        resolve_api_key("", str(path))
    assert f"chmod 600 {path}" in (info.value.hint or "")
    assert "\n" not in info.value.message


def test_missing_and_empty_key_files(tmp_path: Path) -> None:
    with pytest.raises(ApiKeyError, match="cannot read"):
        resolve_api_key("", str(tmp_path / "nope"))
    empty = tmp_path / "empty"
    empty.write_text("  \n")
    os.chmod(empty, 0o600)
    with pytest.raises(ApiKeyError, match="is empty"):
        resolve_api_key("", str(empty))


def test_a_key_in_the_config_file_is_rejected() -> None:
    with pytest.raises(ConfigError, match="must not be stored in the config file") as info:
        config_from_dict({"llm": {"provider": "openai", "base_url": "http://x/v1",
                                  "api_key": "sk-123"}})
    assert "api_key_env" in (info.value.hint or "")


def test_llm_section_validation() -> None:
    with pytest.raises(ConfigError, match=r"llm\.provider"):
        config_from_dict({"llm": {"provider": "anthropic"}})
    with pytest.raises(ConfigError, match="needs the server's URL"):
        config_from_dict({"llm": {"provider": "openai"}})
    with pytest.raises(ConfigError, match="NAME of an environment variable"):
        config_from_dict({"llm": {"provider": "openai", "base_url": "http://x/v1",
                                  "api_key_env": "sk-abc 123"}})
    config = config_from_dict({"llm": {"provider": "openai", "base_url": "http://x/v1",
                                       "model": "smol"}})
    assert config.chat_model == "smol"
    # Unchanged [ollama] configs keep working: the default provider is Ollama's own API.
    old = config_from_dict({"ollama": {"host": "http://h:11434", "model": "llama3.2"}})
    assert old.llm.provider == "ollama" and old.chat_model == "llama3.2"

"""Secrets are never stored as memories: credentials, tokens, keys, card and ID numbers.

`find_secret(text)` is the one check every path runs (the store refuses a memory whose text or
key holds a secret, whoever proposes it). It combines three detectors, each in its own module:

- `secret_tokens`: secrets recognisable by their shape — provider-prefixed tokens (sk-, ghp_,
  AKIA, xoxb-, glpat-…), private-key blocks, URLs with a password, `NAME=value` assignments
  whose name says secret, long high-entropy strings;
- `secret_phrases`: credentials said in words ("my password for the bank is hunter2", "pw: …",
  "my pin 4821", "mot de passe", "Passwort", "contraseña", "密码"…);
- `secret_numbers`: payment cards (Luhn), national ids with their checksums, IBANs, and numbers
  named as such ("my SSN is …").

False positives are kept rare on purpose ("my favourite password manager is KeePassXC" is a
memory, not a secret): a detector fires on a value that looks like one, not on a word alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant.memory import secret_numbers, secret_phrases, secret_tokens


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str  # e.g. "API key", "password"

    def message(self) -> str:
        return f"it looks like it contains a {self.kind}; secrets are never stored in memory"


def find_secret(text: str) -> SecretFinding | None:
    """The first kind of secret found in `text`, or None."""
    if not text:
        return None
    for detector in (secret_tokens.find, secret_phrases.find, secret_numbers.find):
        kind = detector(text)
        if kind is not None:
            return SecretFinding(kind)
    return None


def find_secret_in(text: str, *, key: str | None = None) -> SecretFinding | None:
    """A secret in a memory's text, its key, or both read together: key `bank_pin` with text
    `4821` is a PIN although neither half is one alone."""
    finding = find_secret(text)
    if finding is None and key:
        spoken = key.replace("_", " ").replace("-", " ")
        finding = (find_secret(key) or find_secret(f"{key}={text}")
                   or find_secret(f"{spoken}: {text}"))
    return finding

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

import re
from collections.abc import Sequence
from dataclasses import dataclass

from assistant.memory import secret_numbers, secret_phrases, secret_recovery, secret_tokens


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str  # e.g. "API key", "password"

    def message(self) -> str:
        return f"it looks like it contains a {self.kind}; secrets are never stored in memory"


def find_secret(text: str) -> SecretFinding | None:
    """The first kind of secret found in `text`, or None."""
    if not text:
        return None
    for detector in (secret_tokens.find, secret_phrases.find, secret_numbers.find,
                     secret_recovery.find):
        kind = detector(text)
        if kind is not None:
            return SecretFinding(kind)
    return None


def find_secret_in(
    text: str, *, key: str | None = None, said: Sequence[str] = ()
) -> SecretFinding | None:
    """A secret in a memory's text, its key, or both read together: key `bank_pin` with text
    `4821` is a PIN although neither half is one alone. With `said` (the user's own messages a
    proposed memory is grounded in), also a value the user gave there as a credential, whatever
    words the memory wraps it in (`find_grounded_secret`)."""
    finding = find_secret(text)
    if finding is None and key:
        spoken = key.replace("_", " ").replace("-", " ")
        finding = (find_secret(key) or find_secret(f"{key}={text}")
                   or find_secret(f"{spoken}: {text}"))
    if finding is None and said:
        finding = find_grounded_secret(f"{key or ''} {text}", said)
    return finding


def find_grounded_secret(text: str, said: Sequence[str]) -> SecretFinding | None:
    """A value that one of the user's messages presented as a credential ("my bank password
    is hunter2") and that `text` repeats in other words ("The bank login of the user is
    hunter2"): the model's wording cannot launder what the user said was a secret."""
    for message in said:
        for kind, value in secret_phrases.given_values(message):
            if len(value) >= 3 and _repeats(text, value):
                return SecretFinding(kind)
    return None


def _repeats(text: str, value: str) -> bool:
    # Bounded by what is not a letter or digit of ASCII, so "是839201" (no space before a value
    # in Chinese) still counts, and "hunter2" is not found inside "hunter23".
    pattern = rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])"
    return re.search(pattern, text, re.IGNORECASE) is not None

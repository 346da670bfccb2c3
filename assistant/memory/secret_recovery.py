"""Recovery secrets: wallet recovery phrases (BIP-39) and two-factor backup codes.

A BIP-39 phrase is 12, 15, 18, 21 or 24 words of a fixed 2048-word English list; whoever has
it owns the wallet. Ordinary prose almost never strings 12 of those words together without one
of the words outside the list ("the", "to", "I", "my", "and" are not in it), so a run of at
least 12 list words — separated only by spaces, punctuation or list numbers ("1. abandon 2.
ability"), also inside a Chinese sentence — is refused whatever the words around it say.

Backup codes come as a batch: three or more short codes with digits ("4f9a-2c1e, 8b3d-7a6f,
…", "3856 2910, 7721 0458, …") after a word naming them (backup/recovery codes, 备用码…), or
one such code right after that word.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

PHRASE_WORDS = 12  # the shortest BIP-39 phrase

_WORD = re.compile(r"[A-Za-z]+")
# What may separate two words of a phrase: spaces, commas, list numbers ("2.", "(3)", "#4").
_SEPARATOR = re.compile(r"[\s,;.、，。:：()\[\]#*\-]*(?:\d{1,2}[.):、]?[\s,;.、，。()\[\]#*\-]*)?")

_CODE_NAME = re.compile(
    r"(?:(?:2fa|two[- ]factor|mfa|totp|google|github|account|one[- ]time)\s+)?"
    r"(?:backup|recovery|rescue|emergency|scratch|one[- ]time)\s+(?:codes?|keys?)|"
    r"备用(?:验证)?码|备份码|恢复码|救援码|应急码|备用代码",
    re.IGNORECASE,
)
# One code: 6-12 letters/digits, maybe in two or three dash- or space-separated groups.
_CODE = re.compile(r"(?<![\w-])(?:[A-Za-z0-9]{3,6}[- ]){0,3}[A-Za-z0-9]{3,8}(?![\w-])")


@cache
def wordlist() -> frozenset[str]:
    text = resources.files("assistant.memory").joinpath("data/bip39_english.txt").read_text(
        encoding="utf-8")
    words = frozenset(text.split())
    assert len(words) == 2048, "the BIP-39 English list has 2048 words"
    return words


def has_recovery_phrase(text: str) -> bool:
    words = wordlist()
    run = 0
    last_end = 0
    for match in _WORD.finditer(text):
        gap = text[last_end : match.start()]
        joined = run > 0 and _SEPARATOR.fullmatch(gap) is not None
        if match.group().lower() in words:
            run = run + 1 if joined else 1
            if run >= PHRASE_WORDS:
                return True
        else:
            run = 0
        last_end = match.end()
    return False


def _is_code(token: str) -> bool:
    compact = token.replace("-", "").replace(" ", "")
    digits = sum(c.isdigit() for c in compact)
    return 6 <= len(compact) <= 16 and digits >= 2 and not compact.isalpha()


def has_backup_codes(text: str) -> bool:
    for name in _CODE_NAME.finditer(text):
        tail = text[name.end() : name.end() + 200]
        codes = [m.group() for m in _CODE.finditer(tail) if _is_code(m.group())]
        if codes and (len(codes) >= 2 or re.match(r"\s*(?:are|is|[:：=]|是|为)", tail)):
            return True
    return False


def find(text: str) -> str | None:
    if has_recovery_phrase(text):
        return "wallet recovery phrase"
    if has_backup_codes(text):
        return "set of backup codes"
    return None

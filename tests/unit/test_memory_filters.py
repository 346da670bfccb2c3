"""Secret detection, chatter filtering and explicit "remember that …" requests."""

from __future__ import annotations

import pytest

from assistant.memory.explicit import explicit_memory
from assistant.memory.filters import chatter_reason
from assistant.memory.model import MemoryType
from assistant.memory.secrets import find_secret

SECRETS = [
    ("OpenAI key: sk-proj-4fT9qLx2Vb8NcR1mZ7yK3wD6hJ0sP5aE", "API key"),
    ("use sk-ant-api03-Zx81Kq0PqLm2n3b4v5c6x7z8a9s0d1f2g3h", "API key"),
    ("my token is ghp_16C7e42F292c6912E7710c838347Ae178B4a", "GitHub token"),
    ("AWS creds AKIAIOSFODNN7EXAMPLE in the env", "AWS access key"),
    ("slack bot xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", "Slack token"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "JWT"),
    ("my password is hunter2!", "password or secret token"),
    ("The wifi passcode: correct-horse-battery", "password or secret token"),
    ("我的密码是 abc12345", "password or secret token"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END", "private key"),
    ("card 4111 1111 1111 1111 exp 12/27", "payment card number"),
    ("my visa is 4012-8888-8888-1881", "payment card number"),
    ("SSN 536-22-1234", "national ID number"),
    ("身份证号 11010519491231002X", "national ID number"),
    ("IBAN DE89 3704 0044 0532 0130 00 for the rent", "bank account number (IBAN)"),
    ("GB82WEST12345698765432", "bank account number (IBAN)"),
]

NOT_SECRETS = [
    "The user's order number is 4111 1111 1111 1112",  # fails Luhn
    "Call me at 555-0142 after 6pm",
    "The user ran 10000 steps on 2024-05-01",
    "身份证号 110105194912310021 was a typo",  # wrong checksum
    "The user prefers the token-based auth design over sessions",
    "The user's password manager is 1Password",
    "DE00 1234 is not a bank account",
    "The user was born in 1987 and has 3 kids",
]


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_realistic_secrets_are_found(text: str, kind: str) -> None:
    finding = find_secret(text)
    assert finding is not None and finding.kind == kind


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


@pytest.mark.parametrize(
    "text",
    ["hi", "Thanks!", "ok thanks", "你好", "谢谢！", "What time is it in Tokyo?",
     "can you help me with this?", "yes", "hmm ok", "Good morning everyone"],
)
def test_chatter_is_rejected(text: str) -> None:
    assert chatter_reason(text) is not None


def test_transient_only_matters_for_durable_types() -> None:
    text = "The user is tired right now"
    assert chatter_reason(text, MemoryType.FACT) == "transient"
    assert chatter_reason(text, MemoryType.EPISODE) is None


@pytest.mark.parametrize(
    "text",
    ["The user works as a nurse in Leeds", "用户喜欢简短的回答", "Prefers answers in metric units"],
)
def test_durable_statements_pass(text: str) -> None:
    assert chatter_reason(text) is None


@pytest.mark.parametrize(
    ("utterance", "expected"),
    [
        ("Remember that I prefer metric units", "I prefer metric units."),
        ("please remember: my daughter is called Ana.", "My daughter is called Ana."),
        ("Don't forget that I'm vegetarian!", "I'm vegetarian."),
        ("记住：我喜欢简短的回答", "我喜欢简短的回答。"),
        ("请记住我住在上海", "我住在上海。"),
    ],
)
def test_explicit_requests(utterance: str, expected: str) -> None:
    assert explicit_memory(utterance) == expected


@pytest.mark.parametrize(
    "utterance",
    ["Do you remember what I said?", "remember when we went to Paris?", "I remember it well",
     "remember this", "What is the capital of France"],
)
def test_not_explicit_requests(utterance: str) -> None:
    assert explicit_memory(utterance) is None

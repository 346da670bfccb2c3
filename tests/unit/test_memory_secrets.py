"""The secret detector, table-driven: credentials in natural phrasings (five languages and a few
more), tokens and keys by shape, cards and national ids, versus ordinary memories that merely
mention passwords, pins, keys or numbers.

Every SECRET row must be found and every HARMLESS row must not; the first block of secrets is
the list issue 13 found slipping through the old filter.
"""

from __future__ import annotations

import pytest

from assistant.memory.secrets import find_secret, find_secret_in

SECRETS: list[str] = [
    # --- slipped through before (issue 13) ---
    "my password for the bank is hunter2",
    "my gmail password hunter2!!",
    "export OPENAI_API_KEY=sk-proj-4fT9qLx2Vb8NcR1mZ7yK3wD6hJ0sP5aE",
    "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "the staging db is postgres://admin:S3cret@db.internal:5432/app",
    "pw: Tr0ub4dor&3",
    "my pin 4821",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx3k\n-----END RSA PRIVATE KEY-----",
    "my social security number is 536-22-1234",
    "mon mot de passe est soleil42",
    "mein Passwort ist Sommer2024!",
    "我的密码是hunter2",
    # --- English phrasings ---
    "my password is hunter2",
    "My password is swordfish",
    "the wifi password is guest1234",
    "The password to my email account is Tr0ub4dor&3",
    "password: correcthorsebatterystaple",
    "my passphrase is correct horse battery staple",
    "the passcode for the building is 2580",
    "my new password is now Zebra!99",
    "my password was changed to Purple-Monkey-7",
    "hunter2 is my password",
    "4821 is my bank PIN",
    "PIN code: 0917",
    "my debit card pin is 4821",
    "the door code is 1234#",
    "the alarm code for the house is 83921",
    "CVV 123",
    "login: jsmith pass: Kx9!mq",
    "username bob, pass hunter2",
    "my creds are admin/Pa55word",
    "pwd = letmein99",
    "The password I use everywhere is monkey123",
    "my netflix pw is BingeWatch22",
    # --- French ---
    "le mot de passe du wifi est abc12345",
    "mdp : Chat-Noir-88",
    "mon code PIN est 4821",
    "le code de la porte est 2468",
    "mot de passe pour la banque : Banque2023",
    # --- German ---
    "Das WLAN-Passwort lautet FritzBox7590",
    "Passwort für die Bank: Geld$2023",
    "meine Geheimzahl ist 4821",
    "Kennwort: Sonnenblume",
    "die PIN für mein Handy ist 8642",
    # --- Spanish ---
    "mi contraseña es perro123",
    "la contraseña del wifi es casa2024",
    "mi PIN es 4821",
    "contraseña: Madrid#2022",
    "la clave de acceso es Secreto99",
    # --- Chinese ---
    "我的银行卡密码是123456",
    "wifi密码：12345678",
    "支付密码 654321",
    "登录密码为abc@123",
    "口令是 opensesame",
    # --- other languages ---
    "minha senha é gato123",
    "mijn wachtwoord is Fiets2020",
    "мой пароль: qwerty123",
    "パスワードはsakura2024",
    # --- tokens and keys by shape ---
    "OpenAI key: sk-proj-4fT9qLx2Vb8NcR1mZ7yK3wD6hJ0sP5aE",
    "use sk-ant-api03-Zx81Kq0PqLm2n3b4v5c6x7z8a9s0d1f2g3h",
    "my token is ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "AWS creds AKIAIOSFODNN7EXAMPLE in the env",
    "slack bot xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "gitlab: glpat-Xy7zAb3cDe5fGh9iJk1L",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefghij",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "GOOGLE_API_KEY=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "DATABASE_PASSWORD=\"s3cr3t-value\"",
    '{"client_secret": "8f14e45fceea167a5a36dedd4bea2543xyz"}',
    "ftp://deploy:Xk8#pq2@files.example.com/upload",
    "https://alice:wonderland9@git.example.org/repo.git",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    "random key 9fK2xQ7vL0pZ3mN8bR4tY6wE1uI5oA2sD7gH",
    "SECRET_KEY = 'django-insecure-k3j4h5g6f7d8s9a0'",
    "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    # --- cards and ids ---
    "card 4111 1111 1111 1111 exp 12/27",
    "my visa is 4012-8888-8888-1881",
    "amex 378282246310005",
    "SSN 536-22-1234",
    "my SSN is 536221234",
    "身份证号 11010519491231002X",
    "IBAN DE89 3704 0044 0532 0130 00 for the rent",
    "GB82WEST12345698765432",
    "my passport number is X12345678",
    "national insurance number AB 12 34 56 C",
    "numéro de sécurité sociale 2 55 08 14 168 025 38",
    "mi DNI es 12345678Z",
    "Steuer-ID 12345678901",
    "my bank password is Fluffy2020",
    "my login is bob and my password is rosebud",
    "my iPhone passcode is 123456",
    "Mein Kennwort für GMX lautet Hallo123",
    "code de carte bleue 4821",
    "my safe combination is 12-34-56",
    "token: 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
]

HARMLESS: list[str] = [
    "my favourite password manager is KeePassXC",
    "The user's password manager is 1Password",
    "I forgot my password again",
    "The user changed their password yesterday",
    "My password is stored in Bitwarden",
    "my password is too short, I should change it",
    "My password is 12 characters long",
    "The wifi password is on the fridge",
    "I prefer passphrases over passwords",
    "Passwords must be rotated every 90 days",
    "The user reset their bank PIN last week",
    "Pin 17 on the Raspberry Pi drives the LED",
    "I pinned the memory about my sister",
    "The user works at Pinterest",
    "I use ssh keys for GitHub",
    "The user prefers the token-based auth design over sessions",
    "My token budget is 8192",
    "Remind me to rotate my API keys every 90 days",
    "The key to success is patience",
    "La clave del éxito es la paciencia",
    "Mon gestionnaire de mots de passe est KeePassXC",
    "Ich habe mein Passwort vergessen",
    "Mein Passwort-Manager ist Bitwarden",
    "Olvidé mi contraseña",
    "我忘记了密码",
    "密码管理器是KeePassXC",
    "The user's order number is 4111 1111 1111 1112",  # fails Luhn
    "Call me at 555-0142 after 6pm",
    "The user ran 10000 steps on 2024-05-01",
    "110105194912310021 was a typo for the order id",  # a resident id's shape, wrong checksum
    "DE00 1234 is not a bank account",
    "The user was born in 1987 and has 3 kids",
    "The user's passport expires in 2027",
    "Use port 5432 for postgres://localhost/mydb",
    "The repo is https://github.com/acme/widgets",
    "The fix is in commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "ISBN 978-3-16-148410-0 is my favourite book",
    "The user likes scikit-learn and sk-style naming",
    "bus pass: valid until May",
    "The user's shoe size is 44",
    "The meeting code for standup is on the calendar",
    "I keep my passwords in a notebook",
    "The user's dog is called Rex",
    "The user enjoys the Password game show",
    "My password policy requires 12 characters",
    "The user got a new PIN in the post",
    "The user's key insight: caching beats recomputing",
    "password = getpass()",
    "PASSWORD=${DB_PASS}",
    "Use the env var OPENAI_API_KEY to configure the client",
    "The user's Wi-Fi network is named Skynet5G",
    "Der Code ist sauber geschrieben",
    "El código es muy limpio",
    "我的密码很长",
    "The user's login shell is zsh",
    "The user's phone number is +49 30 1234567",
    "The user's docker image is ghcr.io/acme/app:1.2.3",
]


def test_the_tables_are_big_enough() -> None:
    assert len(SECRETS) >= 60 and len(HARMLESS) >= 30


@pytest.mark.parametrize("text", SECRETS)
def test_secret_is_found(text: str) -> None:
    assert find_secret(text) is not None, text


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_is_not_a_secret(text: str) -> None:
    finding = find_secret(text)
    assert finding is None, f"{text!r} flagged as {finding and finding.kind}"


@pytest.mark.parametrize(
    ("key", "text"),
    [("bank_pin", "4821"), ("wifi_password", "guest1234"), ("github_token",
     "ghp_16C7e42F292c6912E7710c838347Ae178B4a"), ("sk-proj-4fT9qLx2Vb8NcR1mZ7yK3wD6hJ0sP5aE",
     "my key")],
)
def test_key_and_text_are_read_together(key: str, text: str) -> None:
    assert find_secret_in(text, key=key) is not None


@pytest.mark.parametrize(("key", "text"), [("favourite_number", "4821"), ("employer", "Acme"),
                                           ("password_manager", "KeePassXC")])
def test_harmless_keys(key: str, text: str) -> None:
    assert find_secret_in(text, key=key) is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [("my password is hunter2!", "password"), ("4821 is my bank PIN", "PIN or access code"),
     ("AWS creds AKIAIOSFODNN7EXAMPLE", "AWS access key"),
     ("card 4111 1111 1111 1111", "payment card number"),
     ("GB82WEST12345698765432", "bank account number (IBAN)"),
     ("postgres://admin:S3cret@db/app", "password in a URL")],
)
def test_the_finding_names_the_kind(text: str, kind: str) -> None:
    finding = find_secret(text)
    assert finding is not None and finding.kind == kind
    assert kind in finding.message() and "never stored" in finding.message()

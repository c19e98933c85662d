"""The sensitive scan on a labelled set: credentials and identifiers found, ordinary text left."""

from __future__ import annotations

import pytest

from memory_console.sensitive import MASK, find_sensitive, mask

POSITIVE = [
    "My password = hunter2 for the home router",
    "wifi passwd: correct-horse-battery",
    "The pwd is Tr0ub4dor&3",
    "Database password is s3cr3t!42",
    "passphrase: purple monkey dishwasher",
    "api_key = a8f5f167f44f4964e6c998dee827110c",
    "Her API key is sk-live-1234567890abcdefghij",
    "OpenAI key sk-proj-abcdefghijklmnop1234",
    "secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "access token = ya29.a0AfH6SMBx3example",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0",
    "use bearer abcdef1234567890XYZ for the staging API",
    "AWS access key AKIAIOSFODNN7EXAMPLE is in the notes",
    "GitHub token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "Slack token xoxb-123456789012-abcdefghij",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
    "-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "-----BEGIN EC PRIVATE KEY----- MHcCAQEEIIGl",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx2example user@laptop",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7example deploy@ci",
    "Card number 4111 1111 1111 1111 expires 12/28",
    "pays with 5500-0000-0000-0004",
    "Visa 4012888888881881 on file",
    "SSN 123-45-6789",
    "social security number is 078-05-1120",
    "client_secret: 8d9f7a6b5c4d3e2f1a0b",
    "auth token = 0123456789abcdef0123",
    "The router admin password: admin12345",
    "GITHUB pwd = ghp-style-value-99",
    "Stripe secret sk_test_4eC39HqLyjWDarjtT1zdp7dc is for staging",
    "token for CI: ghs_abcdefghijklmnopqrstuvwxyz012345",
    "ssh-dss AAAAB3NzaC1kc3MAAACBAexample old-box",
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYexample",
    "vpn password=Winter2026!",
    "keep the access_token: 1/fFAGRNJru1FTz70BzhT3Zg",
    "Amex 3782 822463 10005 is not 16 digits but this one is: 6011 1111 1111 1117",
    "SSN: 219-09-9999 (from the insurance form)",
    "apikey: 9b2c4d6e8f0a1b3c5d7e",
    "Bearer: 7f8e9d0c1b2a3f4e5d6c7b8a",
    "The staging pwd = correct horse battery staple",
    "Server root password is toor1234",
    "-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo (cut short)",
    "Mastercard 5555 5555 5555 4444, expiry 03/29",
]
NEGATIVE = [
    "Prefers dark mode in the editor (Solarized Dark).",
    "Weekly sync with Bob every Tuesday at 10:00.",
    "Is building an iron farm in the Minecraft survival world.",
    "Colleague Maria's email is maria.lopez@example.com.",
    "Decided to use PostgreSQL for the billing service.",
    "Forgot the password again and had to reset it.",
    "Wants password managers recommended, prefers Bitwarden.",
    "Asked how API keys should be rotated in general.",
    "Likes tokens of appreciation such as handwritten notes.",
    "Order number 1234 arrived on 2026-05-01.",
    "Phone extension 4411, desk 12.",
    "Flight LH 1234 departs at 07:45 from gate 22.",
    "The invoice total was 1,234.56 EUR.",
    "Ran 10 km in 52 minutes on Sunday.",
    "Zip code 10115 in Berlin.",
    "Version 3.11.7 of Python is installed.",
    "The ticket is JIRA-4521.",
    "Uses SSH to reach the build box.",
    "Generated an ed25519 key pair last week (public part only on GitHub).",
    "Bearer bonds are a plot point in the novel they are reading.",
    "Meeting room 123-45 on the second floor.",
    "Born in 1990 and moved to Lisbon in 2019.",
    "Keyboard layout is US international.",
    "Prefers tabs over spaces in Go code.",
    "The secret ingredient is smoked paprika.",
    "Private key management is handled by the platform team.",
    "Calls the dog Pixel.",
    "Budget for the trip is 2,500 dollars.",
    "The build takes 4 minutes 12 seconds.",
    "Timestamp 1700000000 is November 2023.",
    "The card game night is on Fridays.",
    "Credit union branch is on Main Street.",
    "IBAN is asked for only by the payroll system.",
    "Likes the song 867-5309 by Tommy Tutone.",
    "Uses 1Password for the team vault.",
    "Account ID 42 in the staging tenant.",
    "The numbers 1111 2222 3333 are the lottery picks.",
    "Token ring networks were before their time.",
    "Access to the lab requires a badge.",
    "The API returns a 401 without a header.",
    "Request 0a1b2c3d-0000-4000-8000-000000000003 failed twice.",
    "Imported from mem0 memory 11111111-1111-4111-8111-111111111111.",
    "Category c0000000-0000-4000-8000-000000000003 holds the work notes.",
    "Her password is not to be kept here.",
]


def test_labelled_set_precision_and_recall() -> None:
    assert len(POSITIVE) >= 40 and len(NEGATIVE) >= 40
    found_positive = [text for text in POSITIVE if find_sensitive(text, health=False)]
    found_negative = [text for text in NEGATIVE if find_sensitive(text, health=False)]
    true_positive, false_positive = len(found_positive), len(found_negative)
    precision = true_positive / max(1, true_positive + false_positive)
    recall = true_positive / len(POSITIVE)
    print(
        f"\nsensitive scan: precision {precision:.3f}, recall {recall:.3f} "
        f"({len(POSITIVE)} positive, {len(NEGATIVE)} negative examples)"
    )
    missed = sorted(set(POSITIVE) - set(found_positive))
    assert recall >= 0.95, f"missed: {missed}"
    assert precision >= 0.95, f"false alarms: {found_negative}"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("My password = hunter2 for the router", f"My password = {MASK} for the router"),
        ("SSN 123-45-6789", f"SSN {MASK}"),
        ("Card 4111 1111 1111 1111.", f"Card {MASK}."),
        ("Prefers dark mode.", "Prefers dark mode."),
        (
            "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
            "AAAAAAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5 (cut short)",
            f"{MASK} (cut short)",
        ),
        (f"password = {MASK}", f"password = {MASK}"),
    ],
)
def test_mask_hides_only_the_secret(text: str, masked: str) -> None:
    assert mask(text) == masked


def test_health_terms_are_found_only_when_asked() -> None:
    text = "Was diagnosed with asthma and takes medication daily."
    kinds = {f.kind for f in find_sensitive(text)}
    assert kinds == {"health data"}
    assert find_sensitive(text, health=False) == []
    assert mask(text) == text  # health data is flagged, not masked


def test_card_numbers_need_a_valid_checksum() -> None:
    assert find_sensitive("4111 1111 1111 1111", health=False)
    assert not find_sensitive("1234 5678 1234 5678", health=False)

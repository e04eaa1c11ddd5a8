"""What the redaction scanner (core/redact.py) looks for, as data: the character classes, the
token families (prefix, kind, body, shortest body), the names that say a value is secret, and
the lower-case markers whose absence lets a text skip the scan. Kept apart so that adding a
family is a line here; every family is then in the corpus tests (tests/test_secrets.py CORPUS,
tests/test_secret_wrappings.py FAMILIES) for every field, encoding and cut.
"""

# What a redaction leaves: `[REDACTED:kind#fingerprint]` (core/redact.py); a value that is one
# such marker is redacted already.
MARK = "[REDACTED:"

DIGITS = frozenset("0123456789")
HEX = frozenset("0123456789abcdef")
HEX_ANY = HEX | frozenset("ABCDEF")
BECH32 = frozenset("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")  # upper case, as age writes its keys
UPPER_DIGITS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
WORD = ALNUM | frozenset("_")
DASHED = WORD | frozenset("-")
B64 = DASHED | frozenset("+/=.~")
NAME = DASHED | frozenset(".")
# What ends an unquoted value: whitespace, quotes, a backslash (a JSON escape), separators.
VALUE_END = frozenset(" \t\r\n\"'\\,;&(){}[]<>`|")
URL_END = frozenset(" \t\r\n\"'\\<>`|")

# (prefix, kind, body characters, shortest body). Prefixes are case-sensitive, as issued.
PREFIXED: "tuple[tuple[str, str, frozenset[str], int], ...]" = (
    ("github_pat_", "github_token", WORD, 20),
    ("ghp_", "github_token", ALNUM, 20),
    ("gho_", "github_token", ALNUM, 20),
    ("ghu_", "github_token", ALNUM, 20),
    ("ghs_", "github_token", ALNUM, 20),
    ("ghr_", "github_token", ALNUM, 20),
    ("glpat-", "gitlab_token", DASHED, 20),
    ("gldt-", "gitlab_token", DASHED, 20),
    ("glrt-", "gitlab_token", DASHED, 20),
    ("glptt-", "gitlab_token", DASHED, 20),
    ("npm_", "npm_token", ALNUM, 30),
    ("sk-", "api_key", DASHED, 16),  # OpenAI (sk-proj-, sk-svcacct-), Anthropic (sk-ant-)
    ("sk_live_", "stripe_key", ALNUM, 16),
    ("rk_live_", "stripe_key", ALNUM, 16),
    ("sk_test_", "stripe_key", ALNUM, 16),
    ("rk_test_", "stripe_key", ALNUM, 16),
    ("whsec_", "stripe_webhook_secret", ALNUM, 16),
    ("xoxb-", "slack_token", DASHED, 10),
    ("xoxp-", "slack_token", DASHED, 10),
    ("xoxa-", "slack_token", DASHED, 10),
    ("xoxr-", "slack_token", DASHED, 10),
    ("xoxs-", "slack_token", DASHED, 10),
    ("xoxe-", "slack_token", DASHED, 10),
    ("xapp-", "slack_token", DASHED, 10),
    ("AIza", "google_api_key", DASHED, 30),
    ("HRKU-", "heroku_key", DASHED, 20),
    ("SG.", "sendgrid_key", B64, 40),
    ("pypi-AgE", "pypi_token", DASHED, 50),  # a macaroon: pypi.org's and test.pypi.org's
    ("dckr_pat_", "docker_token", DASHED, 20),
    ("dckr_oat_", "docker_token", DASHED, 20),
    ("hf_", "huggingface_token", ALNUM, 34),
    ("hvs.", "vault_token", DASHED, 90),  # the service, batch and recovery tokens of Vault 1.10+
    ("hvb.", "vault_token", DASHED, 90),
    ("hvr.", "vault_token", DASHED, 90),
    ("dop_v1_", "digitalocean_token", HEX, 64),
    ("doo_v1_", "digitalocean_token", HEX, 64),
    ("dor_v1_", "digitalocean_token", HEX, 64),
    ("shpat_", "shopify_token", HEX_ANY, 32),
    ("shpca_", "shopify_token", HEX_ANY, 32),
    ("shppa_", "shopify_token", HEX_ANY, 32),
    ("shpss_", "shopify_token", HEX_ANY, 32),
    ("AGE-SECRET-KEY-1", "age_secret_key", BECH32, 58),
    ("ya29.", "google_oauth_token", DASHED, 30),
)
AWS_PREFIXES = ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA")
TWILIO_PREFIXES = ("SK", "AC")
SLACK_HOOKS = ("hooks.slack.com/services/", "hooks.slack.com/workflows/")
QUERY_NAMES = frozenset(
    (
        "key",
        "api_key",
        "apikey",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "auth",
        "sig",
        "signature",
        "password",
        "passwd",
        "secret",
        "client_secret",
        "x-amz-signature",
        "x-goog-signature",
        "code",
    )
)
# A name containing one of these (upper-cased) marks a secret assignment (NAME=value).
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASS", "PWD", "AUTH", "CREDENTIAL", "PRIVATE")
# JSON member names (split into words) that hold secrets.
SECRET_MEMBER_WORDS = frozenset(
    (
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "secret",
        "secrets",
        "token",
        "apikey",
        "key",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "signature",
        "sig",
        "private",
    )
)
GENERIC = ("assignment", "high_entropy")
NOT_SECRET_VALUES = frozenset(("true", "false", "null", "none", "undefined", "yes", "no"))
# Lower-case markers: a text with none of them, and no assignment, cannot hold a secret.
MARKERS = (
    "akia",
    "asia",
    "agpa",
    "aida",
    "aroa",
    "anpa",
    "anva",
    "aipa",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glrt-",
    "glptt-",
    "npm_",
    "sk-",
    "sk_",
    "rk_",
    "whsec_",
    "xox",
    "xapp-",
    "aiza",
    "hrku-",
    "sg.",
    "eyj",
    "-----begin",
    "<private",
    "bearer",
    "authorization",
    "://",
    "-u",
    "--user",
    "hooks.slack.com",
    "pypi-age",
    "dckr_",
    "hf_",
    "hvs.",
    "hvb.",
    "hvr.",
    "_v1_",
    "shpat_",
    "shpca_",
    "shppa_",
    "shpss_",
    "age-secret-key-1",
    "ya29.",
)

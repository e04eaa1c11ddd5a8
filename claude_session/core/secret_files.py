"""Files that hold secrets by their name: workspace snapshots leave them out by default.

Redaction works on text we record; a snapshot stores a file's bytes as they are, so a `.env`
copied into the store would stay there after the file itself is gone. The patterns are
gitignore patterns (the snapshot store applies them with git, after the project's own rules,
so a project's `!.env` does not bring one back); `snapshot_exclude` adds more, and a `!PATTERN`
there takes one out again. `named_secret` is the cheap check a hook makes before it copies a
file's bytes (standard library only, no `re`): it knows the default patterns, nothing else.
"""

# Environment files, keys and certificates, and the credential files of common tools.
DEFAULT_PATTERNS = (
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".htpasswd",
    "credentials.json",
    "application_default_credentials.json",
    "**/.aws/credentials",
    "**/.docker/config.json",
    "**/.kube/config",
)

_EXACT = frozenset(p for p in DEFAULT_PATTERNS if "*" not in p)
_PREFIXES = tuple(p[:-1] for p in DEFAULT_PATTERNS if p.endswith("*") and "*" not in p[:-1])
_SUFFIXES = tuple(p[1:] for p in DEFAULT_PATTERNS if p.startswith("*.") and "/" not in p)
_TAILS = tuple(p[3:] for p in DEFAULT_PATTERNS if p.startswith("**/"))


def user_patterns(setting: object) -> "list[str]":
    """The patterns of a `snapshot_exclude` value: comma-separated, blanks dropped."""
    if not isinstance(setting, str):
        return []
    return [p.strip() for p in setting.split(",") if p.strip()]


def reincludes(setting: object) -> bool:
    """Whether a `snapshot_exclude` value takes a file back in (`!PATTERN`): `named_secret`,
    which knows only the defaults, must then stand aside."""
    return any(p.startswith("!") for p in user_patterns(setting))


def rules(setting: object) -> "list[str]":
    """Every pattern a snapshot leaves out, in the order they apply (a later `!` wins)."""
    return [*DEFAULT_PATTERNS, *user_patterns(setting)]


def named_secret(path: str) -> bool:
    """Whether a default pattern matches `path` (relative to the project, `/`-separated) or a
    folder above it. No `!` of the user's is known here: callers pass over this check when
    `snapshot_exclude` holds one."""
    parts = [p for p in path.split("/") if p]
    for name in parts:
        if name in _EXACT or name.startswith(_PREFIXES) or name.endswith(_SUFFIXES):
            return True
    joined = "/".join(parts)
    return any(
        joined == t or joined.endswith("/" + t) or ("/" + t + "/") in ("/" + joined) for t in _TAILS
    )

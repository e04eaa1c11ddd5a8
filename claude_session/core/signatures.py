"""What failed, named so that a repeat is recognised: the signature of a command, the same
for the same command however it is spaced. Its own module (no imports) because a success of
any command looks for it on the hot path, before `errors` is worth importing.
"""


def command_signature(tool_name: str | None, command: str | None) -> str | None:
    if not command:
        return None
    return f"{tool_name or 'Bash'}: {' '.join(command.split())[:300]}"

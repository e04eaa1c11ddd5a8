"""The files a shell command names as the ones it writes: its output redirections and the
arguments of a few commands that write, as far as the command's text shows them.

For a skill's inline shell command (PreSkillShellCommand), whose changes no later event of
its own reports: the files named here are claimed before it runs. A reading of the text only,
never a run: a file the command writes some other way (a script, a variable, a glob) is not
found, and nothing here is taken as proof a file changed. Standard library only; imported
only for that event (`shlex` would cost every other hook process its import).
"""

import shlex

# Operators after which the next word is a file the command writes.
REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "1>", "1>>", "2>", "2>>"})
# Command words that end one simple command.
SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "\n"})
# Commands whose every argument (past the options) is a file they write.
WRITES_EACH = frozenset({"touch", "tee", "rm", "truncate", "mkdir"})
# Commands whose last argument is the file or folder they write.
WRITES_LAST = frozenset({"cp", "mv", "install", "ln"})
MAX_PATHS = 32


def written_paths(command: str) -> list[str]:
    """The files `command` names as written, in order, each once; [] when it cannot be read
    (unbalanced quotes) or names none. Devices (/dev/...) and file descriptors are left out."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: no reading is better than a wrong one
        return []
    found: list[str] = []
    simple: list[str] = []
    expect_target = False
    for word in [*words, ";"]:
        if expect_target:
            expect_target = False
            if not word.startswith("&"):
                found.append(word)
            continue
        if word in REDIRECTS or (word.endswith(">") and word.rstrip(">").isdigit()):
            expect_target = True
            continue
        if word in SEPARATORS or set(word) <= set(";&|()<"):
            found += _arguments_written(simple)
            simple = []
            continue
        simple.append(word)
    kept: list[str] = []
    for path in found:
        if path and not path.startswith("/dev/") and path not in kept:
            kept.append(path)
    return kept[:MAX_PATHS]


def _arguments_written(simple: list[str]) -> list[str]:
    """The files one simple command (its words, redirections taken out) writes by argument."""
    while simple and "=" in simple[0] and not simple[0].startswith("="):
        simple = simple[1:]  # VAR=value before the command
    if not simple:
        return []
    name = simple[0].rsplit("/", 1)[-1]
    arguments = [w for w in simple[1:] if not w.startswith("-")]
    if name in WRITES_EACH:
        return arguments
    if name in WRITES_LAST and len(arguments) >= 2:
        return arguments[-1:]
    if name == "sed" and any(w == "-i" or w.startswith("-i") for w in simple[1:]):
        return arguments[1:]  # the script, then the files edited in place
    return []

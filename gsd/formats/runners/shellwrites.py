"""Which plan files a shell command line would write: redirections, heredocs, `tee`,
`sed -i` and the like, read from the text alone (never run, never given to a shell).

The before-a-tool hook (gsd hooks run <cli>-pre-tool) denies such a command so that the
model writes a plan with its Write or Edit tool, whose post-edit hook validates the file
(the design's tool-compliance hook). A plan is a file whose name ends in `-PLAN.md`, as
`gsd validate` picks them. This is a guard against a model's habit, not a sandbox: a
command that hides its target (a variable, a script, `python -c`) is not recognised, and
the git pre-commit hook and `gsd validate` stay the backstop.
"""

from __future__ import annotations

import re
import shlex

PLAN_SUFFIX = "-PLAN.md"  # gsd.io.plans.sources.PLAN_SUFFIX (that module loads pathlib)

# shlex's operator characters, a newline included: each run of them is one token
_PUNCTUATION = "();<>|&\n"
# words that end one simple command and start the next (besides operator runs)
_SEPARATORS = frozenset({"{", "}", "then", "do", "else", "elif", "!"})
# redirections that open their target for writing, and those that read
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&", "&>|"})
_READ_REDIRECTS = frozenset({"<", "<<", "<<<", "<&", "<<-"})
_REDIRECTS = _WRITE_REDIRECTS | _READ_REDIRECTS
_OPERATOR_CHARS = frozenset(_PUNCTUATION)
# programs that run the rest of their arguments as a command
_WRAPPERS = frozenset({"sudo", "env", "command", "nohup", "time", "nice", "exec", "builtin"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
# programs that write every file operand they are given
_WRITE_ALL = frozenset({"tee", "truncate", "touch"})
# programs whose last operand is the file they write
_COPIERS = frozenset({"cp", "mv", "install", "rsync", "ln"})
# `<<EOF`, `<<-'EOF'`, `<< "EOF"`: the word that ends a heredoc's body
_HEREDOC = re.compile(r"<<-?[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|<>()'\"]+))")
_MAX_DEPTH = 4  # `bash -c "sh -c '...'"`, at most this deep
_MAX_SPLIT = 256 << 10  # a longer command line is read roughly (`_rough`)


def is_plan(word: str) -> bool:
    """Whether a path names a plan file (`01-02-PLAN.md`, `.planning/x/01-02-PLAN.md`)."""
    return word.rstrip("/").endswith(PLAN_SUFFIX)


def plan_writes(command: str, depth: int = 0) -> list[str]:
    """The plan files `command` would write, as written in it, in order, each once."""
    if depth > _MAX_DEPTH:
        return []
    if len(command) > _MAX_SPLIT:
        return _rough(command)  # a linear scan, not a split of megabytes
    found: list[str] = []
    text, bodies = _without_heredocs(command)
    try:
        tokens = _tokens(text)
    except ValueError:  # an unclosed quote: what a plain reading of the text finds
        return _rough(command)
    for words in _commands(tokens):
        found += _written(words, depth)
    for shell, body in bodies:  # `bash <<EOF ... EOF`: the body is a script
        if shell:
            found += plan_writes(body, depth + 1)
    return list(dict.fromkeys(found))


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # `#` starts a comment only after a space; rare in writes
    return list(lexer)


def _commands(tokens: list[str]) -> list[list[str]]:
    """The simple commands of a token list, split at every separator."""
    commands: list[list[str]] = [[]]
    for token in tokens:
        operator = bool(token) and set(token) <= _OPERATOR_CHARS
        if token in _SEPARATORS or (operator and token not in _REDIRECTS):
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]


def _written(words: list[str], depth: int) -> list[str]:
    """The plans one simple command writes: its redirections, then what it runs."""
    found: list[str] = []
    operands: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in _WRITE_REDIRECTS:
            target = words[index + 1] if index + 1 < len(words) else ""
            if is_plan(target):
                found.append(target)
            index += 2
            continue
        if word in _READ_REDIRECTS:
            index += 2  # a file read, a heredoc word or a here-string: not written
            continue
        operands.append(word)
        index += 1
    return found + _program_writes(operands, depth)


def _program_writes(words: list[str], depth: int) -> list[str]:
    """The plans a command's program writes, from its name and arguments."""
    while words and ("=" in words[0] and not words[0].startswith("=")):
        words = words[1:]  # `LANG=C tee x`: assignments before the program
    while words and words[0].rsplit("/", 1)[-1] in _WRAPPERS:
        words = [w for w in words[1:] if not w.startswith("-")] if words[1:] else []
        while words and "=" in words[0]:
            words = words[1:]
    if not words:
        return []
    program, args = words[0].rsplit("/", 1)[-1], words[1:]
    operands = [a for a in args if not a.startswith("-")]
    if program in _SHELLS or program == "eval":
        script = _script(program, args)
        return plan_writes(script, depth + 1) if script else []
    if program in _WRITE_ALL:
        return [a for a in operands if is_plan(a)]
    if program in {"sed", "perl", "gawk", "awk"} and _in_place(program, args):
        return [a for a in operands if is_plan(a)]
    if program in _COPIERS and operands and is_plan(operands[-1]):
        return [operands[-1]]
    if program == "dd":
        return [a[3:] for a in args if a.startswith("of=") and is_plan(a[3:])]
    return []


def _script(program: str, args: list[str]) -> str:
    """What `sh -c SCRIPT` or `eval WORDS` runs, '' when it runs no inline script."""
    if program == "eval":
        return " ".join(args)
    for index, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[index + 1] if index + 1 < len(args) else ""
    return ""


def _in_place(program: str, args: list[str]) -> bool:
    """`sed -i`, `sed -i.bak`, `sed --in-place`, `perl -pi -e`, `gawk -i inplace`."""
    if program in {"awk", "gawk"}:
        return "inplace" in args
    for arg in args:
        if arg.startswith("--in-place"):
            return True
        if arg.startswith("-") and not arg.startswith("--"):
            flags = arg[1:]
            if program == "sed" and flags.startswith("i"):
                return True
            if "i" in flags.split("e", 1)[0]:  # `-pi`, `-i.bak`, `-pie`: before any -e
                return True
    return False


def _without_heredocs(command: str) -> tuple[str, list[tuple[bool, str]]]:
    """The command with each heredoc's body taken out, and the bodies (whether a shell
    reads it as a script, the body): a body is data, and quotes in it are not the
    command's."""
    lines = command.split("\n")
    kept: list[str] = []
    bodies: list[tuple[bool, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        index += 1
        for match in _HEREDOC.finditer(line):
            word = next(group for group in match.groups() if group is not None)
            strip = match.group(0).startswith("<<-")
            body: list[str] = []
            while index < len(lines):
                current = lines[index].lstrip("\t") if strip else lines[index]
                index += 1
                if current == word:
                    break
                body.append(lines[index - 1])
            first = line[: match.start()].split()
            shell = bool(first) and first[-1].rsplit("/", 1)[-1] in _SHELLS
            bodies.append((shell, "\n".join(body)))
    return "\n".join(kept), bodies


_ROUGH = re.compile(
    r"(?:>|\btee\b[^;&|\n]*|\bsed\b[^;&|\n]*\s-i[^;&|\n]*)\s*['\"]?([^\s'\";&|<>()]*"
    + re.escape(PLAN_SUFFIX)
    + ")"
)


def _rough(command: str) -> list[str]:
    """A command shlex cannot split (an unclosed quote): a write's shape found in the text."""
    return list(dict.fromkeys(match.group(1) for match in _ROUGH.finditer(command)))

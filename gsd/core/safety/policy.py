"""The safety policy every runner gets before anything runs: what an agent may not do.

A baseline (below) plus the rules of config.json's `policy.extra_deny`, in one
neutral form that `gsd.formats.runners.claude`, `gemini` and `codex` render in each CLI's own
mechanism. It is the first layer only: the OS sandbox (`gsd.io.confine.sandbox`) and gsd's git
checks after every spawn (`gsd.io.git.observe`) stay behind it and hold what it misses.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gsd.core.safety.enforce import PROTECTED_FILES, PROTECTED_PATTERNS


class ShellRule(NamedTuple):
    """A command an agent may not run: `words` as its leading words ("git push"); with
    `open_end` the last word may go on ("rm -rf /" also denies "rm -rf /home")."""

    words: str
    open_end: bool = False
    why: str = ""

    def text(self) -> str:
        """The rule as config.json writes it: `shell:git push`, `shell:rm -rf /*`."""
        return f"shell:{self.words}{'*' if self.open_end else ''}"


class WriteRule(NamedTuple):
    """Files an agent may not write: a gitignore-style `glob` relative to the worktree
    (`.env*` and `*.pem` at any depth, `.git/` a folder and everything in it)."""

    glob: str
    why: str = ""

    def text(self) -> str:
        return f"write:{self.glob}"

    @property
    def name(self) -> str:
        """The glob without a folder's trailing slash."""
        return self.glob.rstrip("/")

    @property
    def folder(self) -> bool:
        return self.glob.endswith("/")


class Policy(NamedTuple):
    """The deny rules one spawn gets: the baseline's, then config.json's."""

    shell: tuple[ShellRule, ...]
    write: tuple[WriteRule, ...]
    extra: int = 0  # how many of the rules came from `policy.extra_deny`

    def texts(self) -> list[str]:
        return [rule.text() for rule in self.shell] + [rule.text() for rule in self.write]


_PUSH = "publishes the branch: gsd merges finished plans, a person pushes"
_REWRITE = "rewrites history: gsd commits each task and rolls back to its checkpoints"
_RM = "removes files outside the worktree: an agent changes only its worktree"
_LOSE = "throws away work: gsd's checkpoints and rollback do that"

# `rm -rf` outside the worktree, as command text: a path from the root, the home folder
# or a parent folder (the rules see the words, not where a path leads, so an absolute
# path into the worktree is denied too: agents write relative paths).
_RM_FLAGS = ("-rf", "-fr", "-Rf", "-fR", "-r -f", "-f -r")
_RM_TARGETS = ("/", "~", "..", "$HOME")

BASELINE = Policy(
    shell=(
        ShellRule("git push", why=_PUSH),
        *(
            ShellRule(f"rm {flags} {target}", open_end=True, why=_RM)
            for flags in _RM_FLAGS
            for target in _RM_TARGETS
        ),
        ShellRule("git reset --hard", why=_LOSE),
        ShellRule("git clean", why=_LOSE),
        ShellRule("git rebase", why=_REWRITE),
        ShellRule("git filter-branch", why=_REWRITE),
        ShellRule("git filter-repo", why=_REWRITE),
        ShellRule("git commit --amend", why=_REWRITE),
        ShellRule("git replace", why=_REWRITE),
        ShellRule("git update-ref", why=_REWRITE),
    ),
    # the files gsd's checks after a spawn hold no agent may change (gsd.core.safety.enforce)
    write=(
        *(WriteRule(glob, why="may hold secrets or keys") for glob in PROTECTED_PATTERNS),
        # the folder and the name itself: a linked worktree's `.git` is a file
        WriteRule(".git/", why="is git's own: gsd's git checks restore it"),
        *(WriteRule(path, why="is gsd's own settings") for path in PROTECTED_FILES),
    ),
)

# Commands whose other spellings every CLI is told of, as far as its rule language goes
# (docs/inside/policy.md): git's own options before the subcommand (`git -C dir push`), a
# wrapper program (`env git push`), a path to git (`/usr/bin/git push`), a shell's script
# (`sh -c 'git push'`). Landlock's TCP rules and the credentials kept from agents hold
# whatever spelling a CLI misses (gsd.io.confine.netports, gsd.core.safety.credentials).
SPELLED_OUT = frozenset({"git push"})
WRAPPERS = ("env", "command", "exec", "nohup", "time", "nice")
GIT_PATHS = ("/usr/bin/git", "/bin/git", "/usr/local/bin/git", "/opt/homebrew/bin/git")


def spelled_out(rule: ShellRule) -> tuple[str, str] | None:
    """(program, the rest of the words) of a rule in SPELLED_OUT; None for the others."""
    if rule.words not in SPELLED_OUT or rule.open_end:
        return None
    program, _space, rest = rule.words.partition(" ")
    return program, rest


# A rule's text must be safe in every CLI's grammar: no control characters, no quotes or
# backslashes (JSON, TOML, regex), no commas or parentheses (claude's rule list and its
# `Tool(content)` form), no leading dash.
_WORDS_RE = re.compile(r"[^\s\-\\\"'(),\x00-\x1f\x7f][^\\\"'(),\x00-\x1f\x7f]*")
_GLOB_RE = re.compile(r"[^\s\-\\\"'(),\x00-\x1f\x7f/][^\s\\\"'(),\x00-\x1f\x7f]*")
_PRINTABLE_RE = re.compile(r"[^\x00-\x1f\x7f]*")
RULE_FORMS = (
    '"shell:<command words>" (e.g. "shell:npm publish") or "write:<path glob>" '
    '(e.g. "write:secrets/**")'
)


def parse_rule(text: str) -> ShellRule | WriteRule:
    """One `policy.extra_deny` entry (`RULE_FORMS`); ValueError for any other text."""
    kind, _colon, rest = text.partition(":")
    rest = rest.strip(" ")
    if kind == "shell" and _PRINTABLE_RE.fullmatch(rest):
        words = " ".join(rest.split())
        open_end = words.endswith("*") and not words.endswith(" *")
        words = words.rstrip("*").rstrip()
        if _WORDS_RE.fullmatch(words) and "*" not in words:
            return ShellRule(words, open_end=open_end, why="config.json policy.extra_deny")
    elif kind == "write" and _GLOB_RE.fullmatch(rest) and ".." not in rest.split("/"):
        return WriteRule(rest, why="config.json policy.extra_deny")
    raise ValueError(text)


def with_extra(extra: list[str], base: Policy = BASELINE) -> Policy:
    """`base` with config.json's rules after its own (each parsed by `parse_rule`)."""
    rules = [parse_rule(text) for text in extra]
    shell = tuple(r for r in rules if isinstance(r, ShellRule))
    write = tuple(r for r in rules if isinstance(r, WriteRule))
    return Policy(shell=base.shell + shell, write=base.write + write, extra=len(rules))


def applies(tier: str) -> tuple[bool, bool]:
    """Which rules a tier needs (shell, write): a tier without a shell or without write
    tools is already narrower than the rules that would gate them."""
    return tier in ("read+shell", "full"), tier in ("read+write", "full")

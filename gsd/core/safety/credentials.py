"""The user's push credentials kept out of an agent's environment (a layer, not a wall).

What an agent (or a verify command) inherits from gsd's environment loses the variables
that hand out a login to a git host: the ssh agent's socket, askpass programs, and the
forges' tokens (`KEPT`, and any name `TOKEN_NAME` matches). git is told not to ask on a
terminal (GIT_TERMINAL_PROMPT=0) and to use no credential helper: config through
GIT_CONFIG_COUNT / GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n (read after every config file)
sets `credential.helper` to the empty value, which clears the helpers the files listed,
and `core.askPass` to the empty value (no askpass program).

It is a layer only: an agent can set its own variables, and one that can read the
user's credential files (~/.git-credentials, ~/.ssh, ~/.netrc, ~/.config/gh) can use
them; those files are the sandbox's to hide. The runner's own API keys
(ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, ...) are not touched: the runner
needs them. config.json `sandbox.pass_env` hands a listed variable over after all.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

KEPT = (
    "SSH_AUTH_SOCK",  # the ssh agent: every key it holds, for any host
    "SSH_AGENT_PID",
    "SSH_ASKPASS",
    "SSH_ASKPASS_REQUIRE",
    "GIT_ASKPASS",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GITLAB_TOKEN",
    "GL_TOKEN",
    "CI_JOB_TOKEN",
    "GITEA_TOKEN",
    "BITBUCKET_TOKEN",
    "GIT_TOKEN",
    "GIT_PASSWORD",
)
# a forge's or git's token, password or askpass by any other name (GITHUB_PAT,
# GITLAB_PRIVATE_TOKEN, GH_HOST_TOKEN, GIT_HTTP_PASSWORD, ...)
TOKEN_NAME = re.compile(
    r"(?:GIT|GH|GITHUB|GITLAB|GL|GITEA|FORGEJO|CODEBERG|BITBUCKET)(?:_[A-Z0-9]+)*_"
    r"(?:TOKEN|PAT|PASSWORD|PASS|ASKPASS|CREDENTIALS?)"
)
# config git reads after every file, as `git -c` would pass it: no credential helper (an
# empty value clears the list), no askpass program from a config file
CONFIG = (("credential.helper", ""), ("core.askPass", ""))


def kept(name: str) -> bool:
    """Whether `name` is a credential variable an agent does not get by default."""
    return name in KEPT or bool(TOKEN_NAME.fullmatch(name))


def agent_environ(environ: Mapping[str, str], passed: Collection[str] = ()) -> dict[str, str]:
    """`environ` without the credential variables (but those `passed`), with git's
    terminal prompt off and its credential helpers cleared."""
    env = {name: value for name, value in environ.items() if name in passed or not kept(name)}
    env["GIT_TERMINAL_PROMPT"] = "0"
    count = env.get("GIT_CONFIG_COUNT", "0")
    index = int(count) if count.isdigit() else 0  # git refuses a bogus count: ours is whole
    for key, value in CONFIG:
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
        index += 1
    env["GIT_CONFIG_COUNT"] = str(index)
    return env

"""The bulk floor: a bare Python read + regex split of every plan under .planning/.

Run from a project root with the same interpreter binary as gsd. It walks
`.planning/`, reads every `*-PLAN.md` (bytes, decoded as UTF-8 like gsd does),
splits the frontmatter from the body with one regex, and finds the `<task ...>`
blocks of the body with another. It checks nothing: it is the least work any
validator of these files has to do, in Python.
"""

import os
import re
import sys

FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
TASK = re.compile(r"<task\b[^>]*>(.*?)</task>", re.S)


def main() -> int:
    files = tasks = 0
    for dirpath, dirnames, filenames in os.walk(".planning"):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith("-PLAN.md"):
                continue
            with open(os.path.join(dirpath, name), "rb") as handle:
                text = handle.read().decode("utf-8")
            match = FRONTMATTER.match(text)
            body = text[match.end() :] if match else text
            tasks += len(TASK.findall(body))
            files += 1
    sys.stderr.write(f"{files} files, {tasks} tasks\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

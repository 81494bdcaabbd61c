#!/bin/sh
# Run phase 1 of the demo project for real, in a fresh git repository: `make demo`.
#
#   GSD=/path/to/gsd sh examples/demo/run-demo.sh
#
# The demo's agents (agents/*.md) are small deterministic programs (agents/bin/), so
# this needs no LLM and no network. python-pro hangs on plan 01-02 task 1 on purpose:
# gsd times it out, kills it, rolls it back, retries it once, then hands the task to
# gsd-executor. The read-only code-reviewer tries to save notes in its worktree: on
# Linux with Landlock gsd's sandbox refuses the write (shown after the run). Exits
# non-zero when any step fails, the live run above all.
set -eu

GSD=${GSD:-gsd}
DEMO=$(cd "$(dirname "$0")" && pwd)

# The run must not depend on the caller's gsd settings.
unset SPECIALIST_TIMEOUT GSD_DISABLED_AGENTS GSD_DEFAULT_MODEL SKIP_VERIFICATION DEBUG

step() {
    printf '\n==> %s\n' "$*"
}

repo=$(mktemp -d "${TMPDIR:-/tmp}/gsd-demo.XXXXXX")
step "copying $DEMO to $repo"
cp -R "$DEMO/." "$repo"
rm -f "$repo/run-demo.sh"
cd "$repo"
git init -q -b main
git config user.name "gsd demo"
git config user.email "demo@example.invalid"
git config commit.gpgsign false
git config tag.gpgsign false
git add -A
git commit -q -m "Greeter: phase 1 planned"
git log --oneline

step "gsd validate"
"$GSD" validate

step "gsd execute-phase 1 --dry-run"
"$GSD" execute-phase 1 --dry-run

step "gsd execute-phase 1  (live: python-pro hangs on 01-02 task 1, ~20 s)"
status=0
"$GSD" execute-phase 1 || status=$?

step "the sandbox at work: the read-only code-reviewer tried to write in its worktree"
grep "REVIEW-NOTES" .planning/phases/01-greeting-service/01-02-RESULT.txt

step "gsd status"
"$GSD" status

step "gsd errors  (the failed attempts: the hung task's timeouts, rolled back)"
"$GSD" errors

step "gsd report  (the run: timeline, then attempts, seconds, tokens and cost)"
"$GSD" report

step "gsd report --format html  (the run as a picture: timeline, tokens, cost)"
"$GSD" report --format html > gsd-report.html
echo "HTML report: $repo/gsd-report.html"

step "git log --oneline --graph"
git log --oneline --graph

step "demo repository: $repo"
if [ "$status" -ne 0 ]; then
    echo "gsd execute-phase 1 failed with exit status $status" >&2
    exit "$status"
fi
echo "HTML report: $repo/gsd-report.html"

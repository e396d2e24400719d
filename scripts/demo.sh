#!/usr/bin/env bash
# make demo: the bundled demo project, end to end, offline. Copies
# testdata/demo/ into a temp dir, makes it a git repository and runs its
# 5-task plan with the builtin agent (no model, no network), gated by
# go test ./... after each task, two tasks at once where the plan allows;
# then shows what a resume would do.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/implloop-demo.XXXXXX")
cp -R "$root/testdata/demo/." "$work/"
cd "$work"
export GIT_AUTHOR_NAME="implloop demo" GIT_AUTHOR_EMAIL="demo@example.com"
export GIT_COMMITTER_NAME="implloop demo" GIT_COMMITTER_EMAIL="demo@example.com"
git init -q -b main .
git add -A && git commit -q -m "demo: starting point"
echo "== demo project in $work"
echo
echo "\$ implloop plan plan.md"
"$bin" plan plan.md
echo
echo "\$ implloop run plan.md --agent builtin --verify 'go test ./...' --jobs 2   # tasks 2 and 3 are one wave: they run at once"
"$bin" run plan.md --agent builtin --verify 'go test ./...' --jobs 2
echo
echo "\$ git status --short   # the work is in the tree, uncommitted: implloop never commits"
git status --short
echo
echo "\$ implloop resume --dry-run   # nothing changed, so everything would replay"
"$bin" resume --dry-run
echo
echo "\$ git add -A && git commit -m 'tasks 1-5'   # commit the good work: never a loss"
git add -A && git commit -q -m "tasks 1-5"
# sed -i.bak: GNU and BSD (macOS) sed both read it the same way.
echo "\$ sed -i.bak 's/still counts\\./still counts as a line./' plan.md && rm plan.md.bak   # edit task 3's text"
sed -i.bak 's/still counts\./still counts as a line./' plan.md && rm plan.md.bak
echo
echo "\$ implloop resume   # task 3 changed (and task 4 depends on it): only they run"
"$bin" resume
echo
echo "\$ implloop explain --task 3   # why it re-ran, field by field"
"$bin" explain --task 3
echo
echo "\$ implloop resume   # nothing changed since: answered at once, nothing runs"
"$bin" resume
echo
echo "== done; the demo repository is kept at $work"
echo "== the resume's report as a page (timeline, why each task ran; its lineage links the first run's, with every diff):"
"$bin" show --html

#!/usr/bin/env bash
# Runs every Fuzz* target in the module for a short time each.
set -euo pipefail
fuzztime=${1:-10s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 1 "$pkg"
  done
done
# The guard's property test, longer than make test runs it
# (RAPID_CHECKS=50000 for a night).
checks=${RAPID_CHECKS:-10000}
echo "property guard TestPropertyDiscards ($checks cases)"
go test -count=1 -timeout 0 ./guard/ -run '^TestPropertyDiscards$' -rapid.checks="$checks"
# The resume properties of loop: a replay needs its work, and chains of
# attempts replayed across runs (about 0.5 s and 1 s a case).
rchecks=${REPLAY_CHECKS:-300}
echo "property loop TestReplayPropertyNeedsItsWork ($rchecks cases)"
go test -count=1 -timeout 0 ./loop/ -run '^TestReplayPropertyNeedsItsWork$' -rapid.checks="$rchecks"
achecks=${ACROSS_CHECKS:-150}
echo "property loop TestAcrossRunsPropertyChains ($achecks cases)"
go test -count=1 -timeout 0 ./loop/ -run '^TestAcrossRunsPropertyChains$' -rapid.checks="$achecks"
# --jobs over random dependency graphs (about 1 s a case).
pchecks=${PARALLEL_CHECKS:-200}
echo "property loop TestParallelPropertyDependencyOrder ($pchecks cases)"
go test -count=1 -timeout 0 ./loop/ -run '^TestParallelPropertyDependencyOrder$' -rapid.checks="$pchecks"
# The read-only snapshot from git status alone against git add -A
# (about 0.3 s a case).
schecks=${STATUS_CHECKS:-2000}
echo "property boundary TestPropertyStatusSnapshotIsAddAll ($schecks cases)"
go test -count=1 -timeout 0 ./boundary/ -run '^TestPropertyStatusSnapshotIsAddAll$' -rapid.checks="$schecks"
# Boundaries from a file watcher's paths against full scans, over random
# edits (about 0.7 s a case).
wchecks=${WATCH_CHECKS:-2000}
echo "property boundary TestPropertyWatchedBoundaryIsFullScan ($wchecks cases)"
go test -count=1 -timeout 0 ./boundary/ -run '^TestPropertyWatchedBoundaryIsFullScan$' -rapid.checks="$wchecks"
# Boundaries brought up to date from git status on the private index
# against git add -A (about 0.5 s a case), and every snapshot against
# git status itself (about 0.3 s a case).
achecks2=${ADDCHANGED_CHECKS:-1000}
echo "property boundary TestPropertyAddChangedIsAddAll ($achecks2 cases)"
go test -count=1 -timeout 0 ./boundary/ -run '^TestPropertyAddChangedIsAddAll$' -rapid.checks="$achecks2"
tchecks=${TAKE_CHECKS:-2000}
echo "property boundary TestTakeMatchesGitStatus ($tchecks cases)"
go test -count=1 -timeout 0 ./boundary/ -run '^TestTakeMatchesGitStatus$' -rapid.checks="$tchecks"
# Two workers racing for a claim (make test races 100 rounds).
crounds=${CLAIM_ROUNDS:-200}
echo "claims cmd/implloop TestWorkClaimRace ($crounds rounds)"
go test -count=1 -timeout 0 ./cmd/implloop/ -run '^TestWorkClaimRace$' -claim.rounds="$crounds"
# kill -9 at random moments of a --jobs 3 run, then resume: no call that
# finished and was journaled is paid twice (about 2 s a kill).
kpoints=${KILL_POINTS:-30}
echo "loop TestParallelKill9NeverPaysTwice ($kpoints kills)"
go test -count=1 -timeout 0 ./loop/ -run '^TestParallelKill9NeverPaysTwice$' -killpoints="$kpoints"

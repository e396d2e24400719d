//go:build race

package loop

// replayChecks is TestReplayPropertyNeedsItsWork's default number of
// cases under the race detector, which makes each case about twice as
// slow. make test runs this package only under the detector, so these are
// its counts; make fuzz runs hundreds (scripts/fuzz.sh).
const replayChecks = "20"

// acrossChecks is TestAcrossRunsPropertyChains' default number of cases,
// fewer under the race detector.
const acrossChecks = "8"

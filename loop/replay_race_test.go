//go:build race

package loop

// replayChecks is TestReplayPropertyNeedsItsWork's default number of
// cases: fewer under the race detector (make test runs the package twice),
// which makes each case about twice as slow.
const replayChecks = "20"

// acrossChecks is TestAcrossRunsPropertyChains' default number of cases,
// fewer under the race detector.
const acrossChecks = "8"

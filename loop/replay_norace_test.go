//go:build !race

package loop

// replayChecks is TestReplayPropertyNeedsItsWork's default number of
// cases (about 0.5 s each on 2 cores) without the race detector; make
// test runs this package under the detector (replay_race_test.go).
const replayChecks = "60"

// acrossChecks is TestAcrossRunsPropertyChains' default number of cases
// (about 1 s each on 2 cores).
const acrossChecks = "30"

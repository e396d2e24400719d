package plan

import (
	"flag"
	"os"
	"testing"
)

// defaultFuzzMinimizeTime replaces go test's default -fuzzminimizetime
// (60s) for this package. Go minimizes every input that finds new coverage
// before it goes on fuzzing, and its last pass tries removing every
// substring: n²/2 executions for an n-byte input. FuzzParse's seeds are
// real plans of 1 to 7 KB, so minimizing a mutant of one would take
// minutes to hours; at 60s the fuzzer sat at "0 execs/sec" for the rest of
// a short run. The passes that cut the tail and drop single bytes are
// linear and finish well within this budget.
const defaultFuzzMinimizeTime = "5s"

// TestMain applies defaultFuzzMinimizeTime when fuzzing without an explicit
// -fuzzminimizetime.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.fuzzminimizetime" {
			explicit = true
		}
	})
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" && !explicit {
		if err := flag.Set("test.fuzzminimizetime", defaultFuzzMinimizeTime); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

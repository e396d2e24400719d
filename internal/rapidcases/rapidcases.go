// Package rapidcases sets how many cases a property test (pgregory.net/rapid)
// runs in make test, while -rapid.checks on the command line (make fuzz,
// scripts/fuzz.sh) still decides when given. Test code only.
package rapidcases

import "flag"

// Default sets rapid's number of cases to n unless -rapid.checks was
// given, and returns what puts it back. rapid keeps the number in a
// flag, one per process: tests that call Default must not run in
// parallel with another property test of their package that sets a
// different number.
func Default(n string) (restore func()) {
	f := flag.Lookup("rapid.checks")
	if f == nil {
		return func() {}
	}
	set := false
	flag.Visit(func(g *flag.Flag) { set = set || g.Name == "rapid.checks" })
	if set {
		return func() {}
	}
	old := f.Value.String()
	_ = f.Value.Set(n)
	return func() { _ = f.Value.Set(old) }
}

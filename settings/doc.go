// Package settings is a run's settings: the record a run journals
// ([Settings]), the checks every value goes through whichever source gave
// it ([Settings.Validate]), and the one table that says, for each setting,
// the flag of `implloop run` and `resume` that gives it, the key of a
// plan's front matter that gives it, its help, its default, where it lives
// in the record, and whether it changes what an agent is asked ([All]).
//
// Everything that knows a setting by name reads the table: the commands
// register their flags and shell completions from it, package plan lints
// front-matter keys with it, package loop applies front matter, reverts
// removed keys on resume, puts a resume's flags over its parent's settings
// and leaves settings out of the inputs digest with it, and the list of
// front-matter keys in docs/plan-format.md is generated from it. A new
// setting is a field of [Settings] and a row of the table.
//
// # A leaf
//
// The package imports nothing of implloop's, so that package plan (markdown
// bytes in, a plan and its lint out) may read it. Two facts it keeps for
// that reason belong to other packages, and tests in package loop hold them
// together: the agent backends ([Agents], package agent's Names) and the
// rule for an environment variable's name ([ValidEnvName], package
// identity's).
package settings

package identity

// Test-only views of the normalization table: the program applies it
// whole (Normalize) and renders it (Markdown).

// Rules returns a copy of the normalization table, in the order Normalize
// applies it.
func Rules() []Rule {
	out := make([]Rule, len(rules))
	copy(out, rules)
	return out
}

// Apply runs this one rule on text under env (used to check the table's
// examples and to show what a single rule does).
func (r Rule) Apply(text string, env Env) string { return r.apply(text, prepare(env)) }

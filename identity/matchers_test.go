package identity

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The reference: the rule patterns run through regexp, as documented.
func replaceWithRegexp(s string, re *regexp.Regexp, repl func(string) string) string {
	var b strings.Builder
	last := 0
	for _, l := range re.FindAllStringIndex(s, -1) {
		if l[0] > 0 && isAlnum(s[l[0]-1]) || l[1] < len(s) && isAlnum(s[l[1]]) {
			continue
		}
		b.WriteString(s[last:l[0]])
		b.WriteString(repl(s[l[0]:l[1]]))
		last = l[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

func referenceTokenRules(s string) [4]string {
	return [4]string{
		replaceWithRegexp(s, dateTimeRE, func(string) string { return "<TIME>" }),
		replaceWithRegexp(s, uuidRE, counter("UUID", strings.ToLower)),
		replaceWithRegexp(s, runIDTokenRE, counter("RUN", func(m string) string { return m })),
		markerRE.ReplaceAllString(s, "${1}[ ]${2}"),
	}
}

func fastTokenRules(s string) [4]string {
	return [4]string{replaceDateTimes(s, nil), replaceUUIDs(s, nil), replaceRunIDs(s, nil), resetTaskMarkers(s, nil)}
}

func checkMatchersAgree(t interface{ Fatalf(string, ...any) }, s string) {
	ref, fast := referenceTokenRules(s), fastTokenRules(s)
	for i, name := range []string{"date-time", "uuid", "run-id", "task-marker"} {
		if ref[i] != fast[i] {
			t.Fatalf("%s on %q:\nregexp %q\nfast   %q", name, s, ref[i], fast[i])
		}
	}
}

// The hand-written matchers find exactly what the documented patterns find.
func TestFastMatchersAgreeWithPatterns(t *testing.T) {
	t.Parallel()
	for _, c := range normalizeCases {
		checkMatchersAgree(t, c.in)
	}
	long := "2026-11-30T05:40:12." + strings.Repeat("7", 100)
	for _, s := range []string{long + "Z", long + "x", long, "at " + long + "+01:00 ok"} {
		checkMatchersAgree(t, s)
	}
	// Texts dense in the characters the patterns care about.
	piece := rapid.SampledFrom([]string{
		"2026-11-30", "T", "t", " ", "05:40", ":12", ".5", ",25", "Z", "+01:00", "-0700", "20261130T054012", "0", "9", "a", "F", "-",
		"0f8fad5b-d9cb-469f-a165-70867728950e", "0f8fad5b", "-d9cb", "r-20261130-054012-3f9a", "r-", "3f9a", "x",
		"\n", "- ", "* ", "1. ", "> ", "[x]", "[X]", "[ ]", "\t", "[", "]", "12345678901. ",
	})
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(piece, 0, 40).Draw(t, "parts")
		checkMatchersAgree(t, strings.Join(parts, ""))
	})
}

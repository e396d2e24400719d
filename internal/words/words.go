// Package words holds the small helpers that put a count, a hash or a
// long value into a message for people: "2 errors", "3f2a9c1", a value
// cut short with a mark, the name a typo likely meant. Each was written again in several packages; it
// imports nothing of implloop's, so any package may use it (package plan
// included).
package words

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Plural is word in the plural ("+s") unless n is 1.
func Plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Count is n and word, in the plural unless n is 1: "1 error", "2 errors".
func Count(n int, word string) string { return fmt.Sprintf("%d %s", n, Plural(n, word)) }

// Short is a hash (a sha256, a blob's object id) as implloop shows it: its
// first 12 characters.
func Short(hash string) string { return cut(hash, 12) }

// ShortCommit is a commit id as git abbreviates it: its first 7
// characters.
func ShortCommit(id string) string { return cut(id, 7) }

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Clip is s cut to at most n bytes, on a UTF-8 boundary, with "…" where it
// was cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Thousands is n with its digits grouped by threes: "12,345", "-1,000".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

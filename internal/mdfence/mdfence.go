// Package mdfence makes the backtick fence of a Markdown fenced block.
// Text implloop puts in a fenced block (a unit's attached context, a
// blocked task's gate output in BLOCKED.md, a help text in the reference
// pages) can hold backticks of its own; a fence longer than any run of
// them is one nothing inside can close (CommonMark 4.5).
package mdfence

import "strings"

// For is the fence for a block holding content: at least three
// backticks, and one more than the longest run of backticks in content.
func For[T ~string | ~[]byte](content T) string {
	longest, run := 0, 0
	for i := 0; i < len(content); i++ {
		if content[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

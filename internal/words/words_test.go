package words

import "testing"

func TestWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{Plural(1, "task"), "task"},
		{Plural(0, "task"), "tasks"},
		{Count(2, "error"), "2 errors"},
		{Count(1, "error"), "1 error"},
		{Short("0123456789abcdef"), "0123456789ab"},
		{Short("abc"), "abc"},
		{ShortCommit("0123456789abcdef"), "0123456"},
		{ShortCommit(""), ""},
		{Clip("hello", 5), "hello"},
		{Clip("hello", 4), "hell…"},
		{Clip("héllo", 2), "h…"}, // not inside é
		{Clip("ééé", 0), "…"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

package scripted

import (
	"reflect"
	"testing"
)

func TestFileOps(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []FileOp
	}{
		{"nothing here", nil},
		{"WRITE a.txt", []FileOp{{"a.txt", "\n"}}},
		{"  WRITE dir/b.txt two words  ", []FileOp{{"dir/b.txt", "two words\n"}}},
		{"~~~~ path=x.md\n```\ninner\n```\n~~~~\n", []FileOp{{"x.md", "```\ninner\n```\n"}}},
		{"```go\nWRITE not/this\n```\n", nil},
		{"```txt path=e.txt\n```\n", []FileOp{{"e.txt", ""}}},
		{"```txt path=open.txt\nno close", []FileOp{{"open.txt", "no close\n"}}}, // CommonMark: an unclosed fence runs to the end
	} {
		if got := FileOps(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FileOps(%q) = %+v, want %+v", tc.text, got, tc.want)
		}
	}
}

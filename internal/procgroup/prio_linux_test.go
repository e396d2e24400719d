package procgroup

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A process started after Background runs at its priority; one started
// by another goroutine does not.
func TestBackground(t *testing.T) {
	nice := func() string {
		out, err := exec.Command("sh", "-c", "cut -d' ' -f19 /proc/self/stat").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	before := nice()
	got := make(chan string)
	go func() {
		Background()
		got <- nice()
	}()
	want := backgroundNice // (a process niced more already stays so)
	if n, err := strconv.Atoi(before); err == nil && n > want {
		want = n
	}
	if bg := <-got; bg != strconv.Itoa(want) {
		t.Fatalf("nice in the background: %s (before: %s)", bg, before)
	}
	if after := nice(); after != before {
		t.Fatalf("nice after: %s, before: %s", after, before)
	}
}

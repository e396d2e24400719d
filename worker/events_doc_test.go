package worker

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every event a worker logs is named in docs/scale-out.md, as --json
// prints it (worker_<type>), and in Event's comment.
func TestEventsDocumented(t *testing.T) {
	src, err := os.ReadFile("worker.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/scale-out.md")
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile("`json:\"type\"` // (.*)").FindSubmatch(src)
	if comment == nil {
		t.Fatal("Event.Type has no comment listing the types")
	}
	listed := strings.Split(string(comment[1]), ", ")
	var types []string
	for _, m := range regexp.MustCompile(`Event\{Type: "([a-z_]+)"`).FindAllSubmatch(src, -1) {
		if ty := string(m[1]); !slices.Contains(types, ty) {
			types = append(types, ty)
		}
	}
	if len(types) < 10 {
		t.Fatalf("found only %v in worker.go", types)
	}
	for _, ty := range types {
		if !strings.Contains(string(doc), "`worker_"+ty+"`") {
			t.Errorf("docs/scale-out.md does not name `worker_%s`", ty)
		}
		if !slices.Contains(listed, ty) {
			t.Errorf("Event.Type's comment does not list %s", ty)
		}
	}
}

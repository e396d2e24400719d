package extractor

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/implloop/implloop/plan"
)

func TestParseRange(t *testing.T) {
	t.Parallel()
	ids := []string{"1", "2", "3", "3.1", "3.2", "4", "9", "10", "11", "12", "13", "14", "T009", "T010", "T013", "T014"}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", ids},
		{"10:13", []string{"10", "11", "12", "13", "T010", "T013"}},
		{"10:", []string{"10", "11", "12", "13", "14", "T010", "T013", "T014"}},
		{":3", []string{"1", "2", "3", "3.1", "3.2"}},
		{"7", nil},
		{"3", []string{"3", "3.1", "3.2"}},
		{"3.2", []string{"3.2"}},
		{"3.1:4", []string{"3.1", "3.2", "4"}},
		{"T010:T013", []string{"10", "11", "12", "13", "T010", "T013"}},
		{" 9 : 9 ", []string{"9", "T009"}},
	} {
		r, err := ParseRange(tc.in)
		if err != nil {
			t.Errorf("ParseRange(%q): %v", tc.in, err)
			continue
		}
		var got []string
		for _, id := range ids {
			if r.Contains(id) {
				got = append(got, id)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseRange(%q) selects %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseRangeErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{":", "a:b", "1:2:3", "13:10", "x", "1-5", "T", "3.", "1,2", "-1", "Task 3"} {
		_, err := ParseRange(in)
		var se *RangeSyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseRange(%q) = %v, want a RangeSyntaxError", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "10:13") || !strings.Contains(err.Error(), "T010:T013") {
			t.Errorf("ParseRange(%q): %q does not name the accepted forms", in, err)
		}
	}
}

const crlfPlan = "# Plan\r\n\r\nContext.\r\n\r\n## Task 1: A\r\n\r\nDo A.\r\n\r\n## Task 2: B\r\n\r\nDepends on: 1\r\n\r\n```verify\r\ngo test ./b/\r\n```\r\n"

func TestSelect(t *testing.T) {
	t.Parallel()
	p, ds := plan.Parse("plan.md", []byte(crlfPlan))
	if plan.HasErrors(ds) {
		t.Fatal(ds)
	}
	lf, _ := plan.Parse("plan.md", []byte(strings.ReplaceAll(crlfPlan, "\r\n", "\n")))
	sel, err := Select(p, All)
	if err != nil {
		t.Fatal(err)
	}
	selLF, _ := Select(lf, All)
	if sel.Count != 2 || len(sel.Tasks) != 2 || sel.PlanPath != "plan.md" || sel.PlanSHA256 != p.SHA256 {
		t.Fatalf("selection %+v", sel)
	}
	if sel.Preamble != "# Plan\n\nContext.\n\n" || sel.PreambleSHA256 != selLF.PreambleSHA256 {
		t.Errorf("preamble %q (%s vs LF %s)", sel.Preamble, sel.PreambleSHA256, selLF.PreambleSHA256)
	}
	if sel.PlanSHA256 == selLF.PlanSHA256 {
		t.Error("the plan sha256 covers the raw bytes; CRLF and LF must differ")
	}
	for i := range sel.Tasks {
		if !slices.EqualFunc([]Task{sel.Tasks[i]}, []Task{selLF.Tasks[i]}, func(a, b Task) bool {
			return a.ID == b.ID && a.Text == b.Text && a.Title == b.Title && a.Line == b.Line && a.EndLine == b.EndLine && slices.Equal(a.Deps, b.Deps) && a.Verify == b.Verify
		}) {
			t.Errorf("task %d: CRLF %+v, LF %+v", i, sel.Tasks[i], selLF.Tasks[i])
		}
		if strings.Contains(sel.Tasks[i].Text, "\r") {
			t.Errorf("task %d text keeps a CR", i)
		}
	}
	b := sel.Tasks[1]
	if b.ID != "2" || b.Ordinal != 2 || b.Title != "B" || !slices.Equal(b.Deps, []string{"1"}) || b.Verify != "go test ./b/" {
		t.Errorf("task 2 = %+v", b)
	}

	r, _ := ParseRange("2")
	sel, err = Select(p, r)
	if err != nil || len(sel.Tasks) != 1 || sel.Tasks[0].ID != "2" || sel.Count != 2 {
		t.Errorf("range 2: %+v, %v", sel, err)
	}
}

func TestSelectNothing(t *testing.T) {
	t.Parallel()
	p, _ := plan.Parse("plan.md", []byte(crlfPlan))
	r, _ := ParseRange("20:25")
	_, err := Select(p, r)
	var empty *EmptyRangeError
	if !errors.As(err, &empty) {
		t.Fatalf("Select = %v, want EmptyRangeError", err)
	}
	if want := `task range "20:25" selects no task of plan.md; its task ids are 1-2`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestSummarizeIDs(t *testing.T) {
	t.Parallel()
	var many []string
	for i := 1; i <= 100; i += 2 {
		many = append(many, strconv.Itoa(i))
	}
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{"1", "2", "3", "5"}, "1-3, 5"},
		{[]string{"T001", "T002", "T003", "T010"}, "T001-T003, T010"},
		{[]string{"1", "2", "2.1", "2.2", "3"}, "1-2, 2.1-2.2, 3"},
		{[]string{"10", "11", "12", "13"}, "10-13"},
		{many, "1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, ... (26 more), 77, 79, 81, 83, 85, 87, 89, 91, 93, 95, 97, 99"},
	} {
		if got := SummarizeIDs(tc.ids); got != tc.want {
			t.Errorf("SummarizeIDs(%v) = %q, want %q", tc.ids, got, tc.want)
		}
	}
}

package cache

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// An import takes runs in the order they come, a resume before the run
// it resumes included; it refuses a run whose parent is nowhere and a
// lineage that is a cycle, and then adds none of them.
func TestImportRecordsLineage(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	rec := func(id, parent string) *Records {
		return &Records{Run: Run{ID: id, ParentID: parent, PlanPath: "plan.md", PlanSHA256: strings.Repeat("a", 64),
			Verdict: "DONE", StartedAt: at, FinishedAt: at.Add(time.Minute)}}
	}
	for _, tc := range []struct {
		name string
		recs []*Records
		want []string
		err  string
	}{
		{"resume first", []*Records{rec("r-2", "r-1"), rec("r-1", "")}, []string{"r-2", "r-1"}, ""},
		{"parent nowhere", []*Records{rec("r-1", ""), rec("r-2", "r-0")}, nil, "resumes run r-0, which is not in the journal"},
		{"cycle", []*Records{rec("r-1", "r-2"), rec("r-2", "r-1")}, nil, "its lineage is a cycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := openT(t, newRepo(t))
			got, err := j.ImportRecords(slices.Values(tc.recs), nil)
			if tc.err == "" && (err != nil || !slices.Equal(got, tc.want)) {
				t.Fatalf("import: %v %v, want %v", got, err, tc.want)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("import: %v, want %q", err, tc.err)
				}
				if runs, _ := j.ListRuns(); len(runs) != 0 {
					t.Errorf("a refused import left %d runs", len(runs))
				}
			}
		})
	}
}

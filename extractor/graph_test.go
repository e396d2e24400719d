package extractor

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func tasksOf(spec string) []Task {
	// "1 2P 3P 4:1 5" -> ids with labels (P) and declared deps (:a,b).
	var out []Task
	for _, f := range strings.Fields(spec) {
		id, deps, _ := strings.Cut(f, ":")
		t := Task{}
		if strings.HasSuffix(id, "P") {
			id = strings.TrimSuffix(id, "P")
			t.Labels = []string{"P"}
		}
		t.ID = id
		switch deps {
		case "":
		case "none":
			t.NoDeps = true
		default:
			t.Deps = strings.Split(deps, ",")
		}
		out = append(out, t)
	}
	return out
}

func wavesString(ws [][]Task) string {
	var parts []string
	for _, w := range ws {
		var ids []string
		for _, t := range w {
			ids = append(ids, t.ID)
		}
		parts = append(parts, strings.Join(ids, ","))
	}
	return strings.Join(parts, " | ")
}

func TestWaves(t *testing.T) {
	cases := []struct{ plan, waves, after string }{
		{"1 2 3", "1 | 2 | 3", "2<1 3<2"},
		{"1 2P 3P 4P 5", "1 | 2,3,4 | 5", "2<1 3<1 4<1 5<2,3,4"},
		{"1P 2P 3", "1,2 | 3", "3<1,2"},
		{"1 2:1 3:1 4:2,3", "1 | 2,3 | 4", "2<1 3<1 4<2,3"},
		{"1 2 3:1", "1 | 2,3", "2<1 3<1"},
		{"1:9 2", "1 | 2", "2<1"}, // a dependency outside the tasks run
		{"1P 2P 3P", "1,2,3", ""},
		// A later task waits for what an earlier declared dependency leaves out.
		{"1 2 3:1 4", "1 | 2,3 | 4", "2<1 3<1 4<2,3"},
		{"1 2 3 4:1 5:2 6", "1 | 2 | 3,4,5 | 6", "2<1 3<2 4<1 5<2 6<3,4,5"},
		// "Depends on: none": it waits for nothing; the task after it waits for all before.
		{"1 2 3:none 4", "1 | 2,3 | 4", "2<1 4<2,3"},
		{"1 2:none 3:none", "1,2,3", ""},
		{"1P 2P 3:none 4", "1,2,3 | 4", "4<1,2,3"},
	}
	for _, c := range cases {
		ts := tasksOf(c.plan)
		if got := wavesString(Waves(ts)); got != c.waves {
			t.Errorf("%s: waves %q, want %q", c.plan, got, c.waves)
		}
		after := After(ts)
		var got []string
		for _, x := range ts {
			if a := after[x.ID]; len(a) > 0 {
				got = append(got, x.ID+"<"+strings.Join(a, ","))
			}
		}
		if strings.Join(got, " ") != c.after {
			t.Errorf("%s: after %q, want %q", c.plan, strings.Join(got, " "), c.after)
		}
	}
}

// Waves cover every task once, in plan order, and no task of a wave waits
// (directly or through what it waits for) for another task of its wave.
func TestWavesProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		var ts []Task
		for i := 1; i <= n; i++ {
			x := Task{ID: fmt.Sprint(i)}
			if rapid.Bool().Draw(rt, fmt.Sprintf("p%d", i)) {
				x.Labels = []string{"P"}
			}
			switch rapid.IntRange(0, 5).Draw(rt, fmt.Sprintf("d%d", i)) {
			case 0:
				if i > 1 {
					x.Deps = []string{fmt.Sprint(rapid.IntRange(1, i-1).Draw(rt, fmt.Sprintf("dep%d", i)))}
				}
			case 1:
				x.NoDeps = true
			}
			ts = append(ts, x)
		}
		after := After(ts)
		var reach func(id string, seen map[string]bool)
		reach = func(id string, seen map[string]bool) {
			for _, a := range after[id] {
				if !seen[a] {
					seen[a] = true
					reach(a, seen)
				}
			}
		}
		k := 0
		for _, w := range Waves(ts) {
			in := map[string]bool{}
			for _, x := range w {
				if x.ID != ts[k].ID {
					rt.Fatalf("wave order: %s, want %s", x.ID, ts[k].ID)
				}
				k++
				in[x.ID] = true
			}
			for _, x := range w {
				seen := map[string]bool{}
				reach(x.ID, seen)
				for id := range seen {
					if in[id] {
						rt.Fatalf("task %s waits for %s of its own wave %s", x.ID, id, wavesString([][]Task{w}))
					}
				}
			}
		}
		if k != n {
			rt.Fatalf("waves cover %d of %d tasks", k, n)
		}
		// Rule 3: a task that declares nothing and is not [P] waits,
		// through what it waits for, for every task before it.
		for i, x := range ts {
			if len(x.Deps) > 0 || x.NoDeps || len(x.Labels) > 0 {
				continue
			}
			seen := map[string]bool{}
			reach(x.ID, seen)
			for _, y := range ts[:i] {
				if !seen[y.ID] {
					rt.Fatalf("task %s does not wait for task %s before it (after: %v)", x.ID, y.ID, after)
				}
			}
		}
	})
}

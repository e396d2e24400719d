package extractor

import "slices"

// The order tasks may run in, when a run starts more than one at a time
// (--jobs). The rule (docs/plan-format.md, "Parallel tasks") is
// conservative: a plan says which tasks are independent, implloop never
// guesses it.
//
//  1. A task with declared dependencies ("Depends on 3, 5") waits for
//     those tasks only (the ones among the tasks run).
//  2. A spec-kit task marked [P] waits for the tasks before its stretch of
//     consecutive [P] tasks, not for the other [P] tasks of the stretch.
//  3. Any other task waits for every task before it.

// After returns what each task directly waits for, by id, in plan order of
// tasks: its declared dependencies among tasks (rule 1), the task before
// its stretch of [P] tasks (rule 2), or the task before it, or every task
// of the [P] stretch right before it (rule 3: with what those wait for, it
// is every task before it). The first task waits for nothing.
func After(tasks []Task) map[string][]string {
	out := make(map[string][]string, len(tasks))
	in := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		in[t.ID] = true
	}
	for i, t := range tasks {
		switch k := kindOf(tasks, i); k {
		case waitsDeclared:
			for _, d := range t.Deps {
				if in[d] && d != t.ID {
					out[t.ID] = append(out[t.ID], d)
				}
			}
		case waitsBeforeStretch:
			if s := stretchStart(tasks, i); s > 0 {
				out[t.ID] = []string{tasks[s-1].ID}
			}
		default:
			if i == 0 {
				continue
			}
			if kindOf(tasks, i-1) == waitsBeforeStretch {
				for j := stretchStart(tasks, i-1); j < i; j++ {
					out[t.ID] = append(out[t.ID], tasks[j].ID)
				}
				continue
			}
			out[t.ID] = []string{tasks[i-1].ID}
		}
	}
	return out
}

// LatestWait returns, per task index, the index of the latest task (in
// plan order) it waits for, -1 for none: task i may start together with
// the tasks from w to i when LatestWait()[j] < w for each of them.
func LatestWait(tasks []Task) []int {
	idx := make(map[string]int, len(tasks))
	for i, t := range tasks {
		idx[t.ID] = i
	}
	out := make([]int, len(tasks))
	for i, t := range tasks {
		latest := -1
		switch kindOf(tasks, i) {
		case waitsDeclared:
			for _, d := range t.Deps {
				if j, ok := idx[d]; ok && j != i {
					latest = max(latest, j)
				}
			}
		case waitsBeforeStretch:
			latest = stretchStart(tasks, i) - 1
		default:
			latest = i - 1
		}
		out[i] = latest
	}
	return out
}

// Waves groups tasks into the stretches a run with more than one job
// starts together: each wave is the longest run of consecutive tasks,
// from the first task not yet in a wave, none of which waits for another
// task of the wave. With nothing independent every wave has one task.
func Waves(tasks []Task) [][]Task {
	latest := LatestWait(tasks)
	var out [][]Task
	for w := 0; w < len(tasks); {
		end := w + 1
		for end < len(tasks) && latest[end] < w {
			end++
		}
		out = append(out, tasks[w:end])
		w = end
	}
	return out
}

type waitKind int

const (
	waitsAllBefore waitKind = iota
	waitsDeclared
	waitsBeforeStretch
)

func kindOf(tasks []Task, i int) waitKind {
	switch {
	case len(tasks[i].Deps) > 0:
		return waitsDeclared
	case parallelMarked(tasks[i]):
		return waitsBeforeStretch
	}
	return waitsAllBefore
}

// stretchStart is the index of the first task of the stretch of
// consecutive [P] tasks (without declared dependencies) that holds task i.
func stretchStart(tasks []Task, i int) int {
	for i > 0 && kindOf(tasks, i-1) == waitsBeforeStretch {
		i--
	}
	return i
}

func parallelMarked(t Task) bool { return slices.Contains(t.Labels, "P") }

package extractor

import "slices"

// The order tasks may run in, when a run starts more than one at a time
// (--jobs), and when workers share a plan. The rule (docs/plan-format.md,
// "Parallel tasks") is conservative: a plan says which tasks are
// independent, implloop never guesses it.
//
//  1. A task with declared dependencies ("Depends on 3, 5") waits for
//     those tasks only (the ones among the tasks run); one that declares
//     "Depends on: none" waits for no task.
//  2. A spec-kit task marked [P] waits for the tasks before its stretch of
//     consecutive [P] tasks, not for the other [P] tasks of the stretch.
//  3. Any other task waits for every task before it.

// After returns what each task directly waits for, by id, in plan order of
// tasks: its declared dependencies among tasks (rule 1), the task before
// its stretch of [P] tasks (rule 2), or (rule 3) the fewest tasks before it
// that, with what they wait for, are every task before it: the task right
// before it when that one waits for all before it too, every task of a
// [P] stretch right before it, and the tasks a declared dependency of an
// earlier task leaves out. The first task waits for nothing.
func After(tasks []Task) map[string][]string {
	out := make(map[string][]string, len(tasks))
	in := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		in[t.ID] = true
	}
	idx := make(map[string]int, len(tasks))
	for i, t := range tasks {
		idx[t.ID] = i
	}
	reach := make([]bitset, len(tasks)) // what task i waits for, directly or not
	for i, t := range tasks {
		var direct []int
		switch kindOf(tasks, i) {
		case waitsDeclared:
			for _, d := range t.Deps {
				if in[d] && d != t.ID {
					direct = append(direct, idx[d])
				}
			}
		case waitsBeforeStretch:
			if s := stretchStart(tasks, i); s > 0 {
				direct = []int{s - 1}
			}
		default:
			direct = coverBefore(reach, i)
		}
		reach[i] = newBitset(len(tasks))
		for _, j := range direct {
			out[t.ID] = append(out[t.ID], tasks[j].ID)
			if j < i { // a dependency later in the plan: no reach of its own yet
				reach[i].or(reach[j])
			}
			reach[i].set(j)
		}
	}
	return out
}

// coverBefore is the fewest tasks before task i that, with what they wait
// for (reach), are all the tasks before it, in plan order: walking back
// from i-1, each task not yet covered is taken, with what it reaches.
func coverBefore(reach []bitset, i int) []int {
	if i == 0 {
		return nil
	}
	covered := newBitset(i)
	var out []int
	for j := i - 1; j >= 0; j-- {
		if covered.has(j) {
			continue
		}
		out = append(out, j)
		covered.or(reach[j])
	}
	slices.Reverse(out)
	return out
}

// bitset is a set of task indexes.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// or adds to b the members of c below b's size.
func (b bitset) or(c bitset) {
	for k := range min(len(b), len(c)) {
		b[k] |= c[k]
	}
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
	case len(tasks[i].Deps) > 0 || tasks[i].NoDeps:
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

package worker

import (
	"github.com/implloop/implloop/extractor"
	"github.com/implloop/implloop/loop"
)

// MaxMatrix is the most jobs a GitHub Actions matrix may have.
const MaxMatrix = 256

// Matrix is what an engine that shards up front needs of a plan: its
// tasks, the waves they can run in, and how many workers help.
type Matrix struct {
	Plan  string       `json:"plan"`
	Tasks []MatrixTask `json:"tasks"`
	// Waves are the tasks by wave: a task's wave is one more than the
	// latest wave of the tasks it waits for.
	Waves [][]string `json:"waves"`
	// Workers is the widest wave, at most the cap asked for: more
	// workers than that wait.
	Workers int `json:"workers"`
	// Worker is 1..Workers, for a matrix of jobs
	// (strategy.matrix.worker: ${{ fromJSON(...).worker }}).
	Worker []int `json:"worker"`
}

// MatrixTask is one task of a Matrix.
type MatrixTask struct {
	ID    string   `json:"id"`
	Title string   `json:"title"`
	After []string `json:"after"`
	Wave  int      `json:"wave"`
	// Checked tasks are skipped by the workers, as by a run.
	Checked bool `json:"checked,omitempty"`
}

// MatrixOf is the matrix of the tasks of sel, with at most most workers
// (0: MaxMatrix). Checked tasks (skipped unless includeChecked) are in
// no wave.
func MatrixOf(sel *extractor.Selection, most int, includeChecked bool) *Matrix {
	if most <= 0 {
		most = MaxMatrix
	}
	skip := func(t extractor.Task) bool { return t.Checked && !includeChecked }
	deps := loop.InputDeps(sel.Tasks, skip)
	m := &Matrix{Plan: sel.PlanPath, Tasks: []MatrixTask{}, Waves: [][]string{}}
	wave := map[string]int{}
	for _, t := range sel.Tasks {
		mt := MatrixTask{ID: t.ID, Title: t.Title, After: append([]string{}, deps[t.ID]...), Checked: skip(t)}
		if !mt.Checked {
			w := 1
			for _, d := range deps[t.ID] {
				w = max(w, wave[d]+1)
			}
			wave[t.ID], mt.Wave = w, w
			for len(m.Waves) < w {
				m.Waves = append(m.Waves, []string{})
			}
			m.Waves[w-1] = append(m.Waves[w-1], t.ID)
			m.Workers = max(m.Workers, len(m.Waves[w-1]))
		}
		m.Tasks = append(m.Tasks, mt)
	}
	m.Workers = min(max(m.Workers, 1), most)
	for i := 1; i <= m.Workers; i++ {
		m.Worker = append(m.Worker, i)
	}
	return m
}

package cache

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const childEnv = "IMPLLOOP_CACHE_TEST_CHILD"

// TestMain lets the test binary act as a journal writer that the kill test
// SIGKILLs mid-way.
func TestMain(m *testing.M) {
	if root := os.Getenv(childEnv); root != "" {
		os.Exit(childWriter(root))
	}
	os.Exit(m.Run())
}

// childWriter journals tasks like the loop does, as fast as it can, printing
// the number of each completed unit, until it is killed.
func childWriter(root string) int {
	j, err := Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r := &Run{PlanPath: "plan.md", PlanSHA256: strings.Repeat("b", 64)}
	if err := j.CreateRun(r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	big := make([]byte, 256<<10) // big enough that blob writes take a while
	for i := 0; ; i++ {
		id := strconv.Itoa(i)
		u := unitFor(r.ID, id, 1, "task "+id)
		must := func(err error) {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		must(j.PutTask(Task{RunID: r.ID, TaskID: id, Ordinal: i, Status: TaskRunning, Source: SourceLive, Attempts: 1}))
		u.Prompt, err = j.PutBlob([]byte("prompt " + id))
		must(err)
		must(j.StartUnit(u))
		w, err := j.NewBlobWriter()
		must(err)
		copy(big, id)
		w.Write(big)
		must(w.Close())
		res, err := j.PutBlob([]byte(`{"result":"` + id + `"}`))
		must(err)
		must(j.FinishUnit(r.ID, u.UnitID, Outcome{Status: UnitCompleted, Stdout: w.Hash(), Result: res, TokensIn: 1}))
		must(j.PutGate(Gate{RunID: r.ID, TaskID: id, Attempt: 1, Command: "true", Passed: true}))
		_, err = j.PutBoundary(Boundary{RunID: r.ID, AfterTask: id})
		must(err)
		must(j.PutTask(Task{RunID: r.ID, TaskID: id, Ordinal: i, Status: TaskDone, Source: SourceLive, Attempts: 1}))
		_, err = j.AppendEvent(r.ID, "task_finished", map[string]string{"task": id})
		must(err)
		fmt.Println(i)
	}
}

func TestKillMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("re-execs the test binary")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []int{0, 3, 17} {
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			root := newRepo(t)
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+root)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			last := -1
			for last < after && sc.Scan() {
				last, _ = strconv.Atoi(sc.Text())
			}
			// Let it get into the next task's writes, then kill it without warning.
			time.Sleep(time.Duration(after%4) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if last < after {
				t.Fatalf("child stopped early at %d", last)
			}

			// A read-only opener sees everything the child reported done,
			// straight from the crashed WAL.
			r, err := OpenReadOnly(root)
			if err != nil {
				t.Fatal(err)
			}
			runs, err := r.ListRuns()
			if err != nil || len(runs) != 1 || runs[0].Finished() {
				t.Fatalf("runs = %+v, %v", runs, err)
			}
			completed := 0
			us, _ := r.Units(runs[0].ID)
			for _, u := range us {
				switch u.Status {
				case UnitCompleted:
					completed++
				case UnitRunning:
				default:
					t.Errorf("unit %s is %s", u.UnitID, u.Status)
				}
			}
			if completed < last+1 {
				t.Errorf("%d completed units, child reported %d", completed, last+1)
			}
			checkClean(t, r)
			r.Close()

			// The next writer recovers it and it still checks clean.
			j := openT(t, root)
			checkClean(t, j)
			ids, _ := j.LineageIDs(runs[0].ID)
			for i := 0; i <= last; i++ {
				u := unitFor(runs[0].ID, strconv.Itoa(i), 1, "task "+strconv.Itoa(i))
				if _, ok, err := j.FindCompleted(ids, u.Identity); !ok || err != nil {
					t.Errorf("unit %d not replayable after the kill: %v", i, err)
				}
			}
			// A writer killed mid-blob leaves at most a temp file, never a
			// partial blob under a hash name: every named blob hashes right.
			filepath.WalkDir(filepath.Join(j.Dir(), "objects"), func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "tmp-") {
					return err
				}
				b, _ := os.ReadFile(p)
				if h := filepath.Base(filepath.Dir(p)) + d.Name(); HashBytes(b) != h {
					t.Errorf("blob %s holds content hashing to %s", h, HashBytes(b))
				}
				return nil
			})
			j.Close()
		})
	}
}

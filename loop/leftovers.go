package loop

import (
	"cmp"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/implloop/implloop/agent"
	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/procgroup"
)

// Leftovers of a dead run.
//
// While implloop runs, it is the child subreaper of everything it starts
// and, when a call (or gate) ends, kills what the call left running
// (procgroup.Sweep). A kill -9 of implloop leaves no one to do that: its
// agent's process group dies with it (the watchdog), and what holds the
// lock's descriptor keeps the work tree locked (ChildRunningError), but a
// process that left the group and closed the descriptor (Python's Popen
// closes every descriptor past stderr) would go on writing beside the
// next run. Every process an agent or gate starts carries its run's
// IMPLLOOP_RUN_ID, unless it cleared its environment: a run refuses while
// a process carrying the id of another run of this repository lives,
// unless that run is running (in another work tree).

// refuseLeftovers returns a *ChildRunningError naming a live process that
// carries the IMPLLOOP_RUN_ID of a run in j that is not running; nil when
// there is none. One that may be in a dead run's agent group, which its
// watchdog is killing, gets orphanWait to die; one that leads a process
// group of its own (setsid), which no watchdog reaches, gets leaderWait
// (a dead run's agent, the leader of its group, gets a parent-death
// signal: a resume started at once may see it for an instant).
func refuseLeftovers(j *cache.Journal, repoRoot string) error {
	start := time.Now()
	for {
		pid, run := leftover(j, repoRoot)
		if pid == 0 {
			return nil
		}
		waited := time.Since(start)
		if waited > orphanWait || waited > leaderWait && isGroupLeader(pid) {
			return &ChildRunningError{RunID: run, Child: "agent", PID: pid, Process: cmp.Or(command(pid), "?")}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaderWait: see refuseLeftovers.
const leaderWait = 500 * time.Millisecond

// isGroupLeader reports whether pid leads its process group.
func isGroupLeader(pid int) bool {
	pgid, err := syscall.Getpgid(pid)
	return err == nil && pgid == pid
}

// leftover is the lowest pid carrying the IMPLLOOP_RUN_ID of a run of j
// that is not running, and that run; 0 when there is none.
func leftover(j *cache.Journal, repoRoot string) (int, string) {
	procs := procgroup.Carrying(agent.EnvRunID)
	ours := map[string]bool{} // run id -> a run of this journal
	var running map[string]int
	for _, pid := range slices.Sorted(maps.Keys(procs)) {
		id := procs[pid]
		known, seen := ours[id]
		if !seen {
			_, err := j.GetRun(id)
			known = err == nil
			ours[id] = known
		}
		if !known {
			continue // another repository's run (or none of implloop's)
		}
		if running == nil {
			running, _ = Running(repoRoot)
			if running == nil {
				running = map[string]int{}
			}
		}
		if _, live := running[id]; !live {
			return pid, id
		}
	}
	return 0, ""
}

// command is process pid's command name, "" when unknown.
func command(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

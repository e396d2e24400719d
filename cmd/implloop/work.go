package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/travel"
	"github.com/implloop/implloop/worker"
)

// workOptions are what `work` was asked.
type workOptions struct {
	io       *ioStreams
	settings loop.Settings
	flags    *runFlags
	remote   string
	lease    time.Duration
	id       string
}

func newWorkCmd(io *ioStreams) *cobra.Command { return newWorkCmdWith(io, workRun) }

// workLong is the help of `implloop work`, before its exit statuses.
const workLong = `Work runs one worker of a plan that several share through a git remote:
start N copies (a GitHub Actions matrix, a Kubernetes Indexed Job, any CI)
in N clones at the same commit, and together they do the plan about N
times faster. No scheduler and no server: the remote is the only shared
state (docs/scale-out.md).

A worker repeats: it claims a ready task (every task it waits for has a
trusted result on the remote) with a lease kept as a ref,
refs/implloop/claims/<plan>/<task>, created with a compare-and-swap push;
it builds the task's input tree (the results of the tasks it waits for
merged onto HEAD in plan order, with git merge-tree); it runs the task's
attempt chain and gate there, in a worktree of its own, renewing its
lease meanwhile; and it pushes the run, signed, with the claim, in one
atomic push. It stops when no task is left that a worker can take (done,
blocked, or waiting for a blocked one). A claim left unchanged for
--lease (its worker was killed) is taken over by one other worker.

Workers build only on results they trust, so a worker must sign its runs
(implloop.signRuns or commit.gpgSign, user.signingKey) with a key its own
allowed signers hold (gpg.ssh.allowedSignersFile); it checks this first
and refuses to start otherwise.

Each task is a run of its own; --max-cost and --max-tokens count every
task this worker runs: once its live calls reach one, it takes no more
tasks (the others and the fan-in do the rest).

Which tasks wait for which is the rule of --jobs (docs/plan-format.md,
"Parallel tasks"): declared dependencies, [P] stretches, else every task
before. The plan must be committed at HEAD; every worker starts there.

The fan-in, once the workers are done, anywhere at the same commit:

  implloop pull REMOTE && implloop run PLAN (same agent settings)

replays every task from the workers' results with zero agent calls,
merging their work in plan order, and runs the gates on the merged tree.
It gives the plan's verdict; a worker exits 0 once nothing is left to
take, whatever its tasks ended, and lists the blocked ones.

`

// newWorkCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newWorkCmdWith(io *ioStreams, runF func(context.Context, *workOptions) error) *cobra.Command {
	f := &runFlags{wd: io.workingDir}
	o := &workOptions{io: io, flags: f}
	cmd := &cobra.Command{
		Use:   "work PLAN",
		Short: "Work on a plan with other workers, sharing it through a git remote",
		Long:  workLong + exitStatusHelp(longExits...),
		Example: `  # One worker; start as many as you have runners
  implloop work plan.md --remote origin --agent claude --verify "go test ./..."

  # Then, once they are done, the fan-in: every task replays
  implloop pull origin && implloop run plan.md --agent claude --verify "go test ./..."

  # What a static matrix needs (tasks, waves, a worker count)
  implloop matrix plan.md --json`,
		Args:              exactArgs(1, "a PLAN file"),
		ValidArgsFunction: completePlanFiles(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := cmd.Flags()
			for _, name := range []string{"task-range", "jobs", "dry-run"} {
				if fs.Changed(name) {
					return usagef("a worker takes its tasks from the remote, one at a time", "--%s is not a flag of work", name)
				}
			}
			if o.lease < time.Second {
				return usagef("a lease is renewed every third of it; give one of a second or more (default 10m)", "--lease %s is too short", o.lease)
			}
			s, err := f.settings(fs)
			if err != nil {
				return err
			}
			s.Plan = args[0]
			o.settings = s
			return runF(cmd.Context(), o)
		},
	}
	addRunFlags(cmd.Flags(), f)
	for _, name := range []string{"task-range", "jobs", "dry-run"} {
		_ = cmd.Flags().MarkHidden(name)
	}
	cmd.Flags().StringVar(&o.remote, "remote", "", "the git remote the workers share (default: the branch's upstream remote, else origin)")
	cmd.Flags().DurationVar(&o.lease, "lease", worker.DefaultLease, "a claim left unchanged this long is taken over by another worker (renewed every third of it)")
	cmd.Flags().StringVar(&o.id, "id", "", "this worker's name in its leases (default: host-pid-random)")
	registerRunFlagCompletions(cmd, io, planArg)
	return cmd
}

func workRun(ctx context.Context, o *workOptions) error {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	s := o.settings
	s.Plan = journalPlanPath(root, o.io.workingDir, s.Plan)
	// A worker allocates afresh for each task (its run, the records it
	// writes and signs, the results it pulls) and keeps little between
	// them: at the default setting the collector ran a tenth of its own
	// CPU; as for a pull, it collects less often (8 workers on 2 cores:
	// 5% less worker CPU, measured).
	debug.SetGCPercent(pullGCPercent)
	ctx, stop := withSignals(ctx, o.io)
	defer stop()
	obs := newProgress(o.io, o.flags.json)
	defer obs.Close()
	heartbeat := o.flags.heartbeat
	if obs.live {
		heartbeat = 0
	}
	var enc *json.Encoder
	if o.flags.json {
		enc = json.NewEncoder(o.io.Out)
	}
	logf := func(ev worker.Event) {
		// A result's push ends while the next task runs: its line goes
		// between the run's, not through them.
		obs.print(func() {
			if enc != nil {
				ev.Type = "worker_" + ev.Type
				_ = enc.Encode(ev)
				return
			}
			fmt.Fprintln(o.io.ErrOut, workLine(ev))
		})
	}
	sum, err := worker.Work(ctx, worker.Options{
		Root: root, Remote: o.remote, Settings: s, Lease: o.lease, ID: o.id, Log: logf, Observer: obs, Heartbeat: heartbeat,
	})
	obs.Close()
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			fmt.Fprintln(o.io.ErrOut, "implloop: interrupted; the claim this worker held is given up, for another worker to take (if the remote could not be reached, once its lease runs out)")
			return exitWith(exitInterrupted)
		}
		return workError(err, o.remote, s.Plan)
	}
	if enc != nil {
		_ = enc.Encode(struct {
			Type string `json:"type"`
			*worker.Summary
		}{"worker_summary", sum})
		return nil
	}
	fmt.Fprint(o.io.Out, workSummary(sum, o.remote, s.Plan))
	return nil
}

// workLine is a worker event as a line of stderr.
func workLine(ev worker.Event) string {
	s := "implloop work: "
	switch ev.Type {
	case "claimed":
		s += "task " + ev.Task + ": claimed"
	case "took_over":
		s += "task " + ev.Task + ": taken over (" + ev.Message + ")"
	case "finished":
		s += "task " + ev.Task + ": " + ev.Verdict + " (run " + ev.Run + ")"
	case "pushed":
		s += "task " + ev.Task + ": pushed run " + ev.Run
	case "push_failed":
		s += "task " + ev.Task + ": the push of run " + ev.Run + " failed: " + ev.Message
	case "lost", "skipped":
		s += "task " + ev.Task + ": " + ev.Message
	case "waiting":
		s += "waiting: " + ev.Message
	default:
		s += ev.Message
	}
	return s
}

// workSummary is what a worker did, for people.
func workSummary(sum *worker.Summary, remote, plan string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "worker %s: %d task(s) run here\n", sum.Worker, len(sum.Tasks))
	for _, t := range sum.Tasks {
		state := "pushed"
		if !t.Pushed {
			state = "not pushed (lease lost)"
		}
		took := ""
		if t.TookOver {
			took = ", taken over"
		}
		fmt.Fprintf(&b, "  task %s  %s  run %s  %s%s\n", t.Task, t.Verdict, t.Run, state, took)
		if t.Redone != "" {
			fmt.Fprintf(&b, "    done again: %s\n", t.Redone)
		}
	}
	if len(sum.Blocked) > 0 {
		fmt.Fprintf(&b, "blocked: %s\n", strings.Join(sum.Blocked, ", "))
	}
	if len(sum.Unreachable) > 0 {
		fmt.Fprintf(&b, "not run by any worker: %s\n", strings.Join(sum.Unreachable, ", "))
		for _, id := range sum.Unreachable {
			if why := sum.Why[id]; why != "" {
				fmt.Fprintf(&b, "  task %s %s\n", id, why)
			}
		}
	}
	if len(sum.Untrusted) > 0 {
		fmt.Fprintf(&b, "results not trusted here: %s\n", strings.Join(sum.Untrusted, ", "))
		for _, id := range sum.Untrusted {
			if why := sum.Why[id]; why != "" {
				fmt.Fprintf(&b, "  task %s: %s\n", id, why)
			}
		}
	}
	if len(sum.Left) > 0 {
		fmt.Fprintf(&b, "left to the fan-in: %s\n", strings.Join(sum.Left, ", "))
		for _, id := range sum.Left {
			if why := sum.Why[id]; why != "" {
				fmt.Fprintf(&b, "  task %s: %s\n", id, why)
			}
		}
	}
	if remote == "" {
		remote = "origin"
	}
	if sum.Stopped != "" {
		fmt.Fprintf(&b, "stopped: %s; the other workers and the fan-in (implloop pull %s && implloop run %s) do the rest\n", sum.Stopped, remote, plan)
		return b.String()
	}
	fmt.Fprintf(&b, "nothing left to take; the fan-in: implloop pull %s && implloop run %s\n", remote, plan)
	return b.String()
}

// workError is a worker's error with what to do about it.
func workError(err error, remote, plan string) error {
	var nc *worker.PlanNotCommittedError
	var st *travel.SelfTrustError
	var pe *worker.PushError
	switch {
	case errors.As(err, &st):
		hint := "give every worker a signing key, and its public half in the allowed signers of the workers and the fan-in: " +
			"git config implloop.signRuns true; git config gpg.format ssh; git config user.signingKey ~/.ssh/KEY; " +
			"git config gpg.ssh.allowedSignersFile FILE (lines 'EMAIL KEY'; docs/scale-out.md, Credentials)"
		switch {
		case st.Sign != nil:
			hint = "check that 'git commit -S' works here (git config gpg.format, user.signingKey; the key's agent)"
		case !st.Unsigned:
			hint = "add the public half of this worker's signing key (git config user.signingKey) to the allowed signers file (git config gpg.ssh.allowedSignersFile) of every worker and of the fan-in"
		}
		return errorf(hint+"; nothing was claimed", "%s", err)
	case errors.As(err, &nc):
		return errorf(fmt.Sprintf("commit the plan (git add %s && git commit) and start the workers at that commit", plan), "%s", err)
	case errors.Is(err, worker.ErrNoBase):
		return errorf("commit the plan, then start the workers", "%s", err)
	case errors.As(err, &pe):
		claim := "its claim was given up, for another worker to take at once"
		if !pe.Released {
			claim = "its claim could not be given up: another worker takes it over after the lease"
		}
		return errorf(fmt.Sprintf("%s; the run is in this clone's journal: once %s takes pushes, start the worker here again (it replays the run, with no agent call, and pushes it)",
			claim, remoteOr(remote)), "%s", err)
	}
	return travelError(err, remote)
}

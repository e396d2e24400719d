package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/internal/words"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/plan"
	"github.com/implloop/implloop/watch"
)

type watchOptions struct {
	io        *ioStreams
	plan      string
	run       string
	resume    bool
	exitAfter int
	giveUp    time.Duration // tests: fail instead of hanging when previews never come
	quiet     time.Duration
	debounce  time.Duration
	// redraw clears the screen before each preview (stdout is a terminal,
	// and --color and NO_COLOR allow it).
	redraw bool
}

func newWatchCmd(io *ioStreams) *cobra.Command { return newWatchCmdWith(io, watchRun) }

// newWatchCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newWatchCmdWith(io *ioStreams, runF func(context.Context, *watchOptions) error) *cobra.Command {
	o := &watchOptions{io: io}
	cmd := &cobra.Command{
		Use:   "watch PLAN",
		Short: "Show, while you edit the plan, what a resume would re-run",
		Long: `Watch the plan and, each time it settles after an edit, print what a
resume of the run (--run, default: the latest run of this plan) would do:
per task replay or live, and why ("task text changed", "preamble changed",
"was blocked", "never ran"), with the plan's lint diagnostics inline. On a
terminal the preview is redrawn in place (not with --color never or
NO_COLOR set); otherwise each one is appended.

The plan's directory is watched, so saving by rename or through a temporary
file works, and the plan may be deleted and re-created; if the directory
itself is moved or removed, watch stops with an error. The preview uses the
run's journaled settings and reads the journal without writing anything.

With --resume, once the plan has been edited, lints clean, a resume would
run something, and the plan has stayed unchanged for --quiet, watch starts
that resume itself (the same as 'implloop resume --run ID --plan PLAN',
with the run's settings; it waits while BLOCKED.md exists). Until then
watch writes nothing. Ctrl-C stops it with exit 130.

` + exitStatusHelp(),
		Example: `  # At each save, what a resume of the plan's latest run would do
  implloop watch plan.md

  # Resume that run by itself once the edited plan lints clean and is quiet
  implloop watch docs/plan.md --run r-20261130-054012-3f9a --resume --quiet 5s`,
		Args:              exactArgs(1, "a PLAN file"),
		ValidArgsFunction: completePlanFiles(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.plan = args[0]
			if o.exitAfter < 0 {
				return usagef("give a positive count, or 0 for no limit", "--exit-after must not be negative")
			}
			o.redraw = io.liveOut()
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "the run a resume would continue: an id or a unique prefix (default: the latest run of this plan)")
	cmd.Flags().BoolVar(&o.resume, "resume", false, "after an edit, start the resume once the plan is quiet, lints clean and a resume would run something")
	cmd.Flags().DurationVar(&o.quiet, "quiet", 2*time.Second, "with --resume: how long the plan must stay unchanged before the resume starts")
	cmd.Flags().IntVar(&o.exitAfter, "exit-after", 0, "exit 0 after this many previews (0: watch until Ctrl-C)")
	cmd.Flags().DurationVar(&o.debounce, "debounce", watch.DefaultDebounce, "quiet time after a file event before the plan is read")
	_ = cmd.Flags().MarkHidden("debounce")
	cmd.Flags().DurationVar(&o.giveUp, "give-up", 0, "exit 1 if still watching after this long (for tests and scripts)")
	_ = cmd.Flags().MarkHidden("give-up")
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	return cmd
}

// errEnough stops the watcher after --exit-after previews.
var errEnough = errors.New("enough previews")

func watchRun(ctx context.Context, o *watchOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	t, err := watchTargetOf(o)
	if err != nil {
		return err
	}
	w, err := watch.New(loop.PlanFile(t.root, t.rel))
	if err != nil {
		return errorf("the plan's directory must exist; the plan itself may be missing for now", "%s", err)
	}
	w.Name = o.plan
	w.Debounce = o.debounce

	sigCtx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	wctx, cancel := context.WithCancel(sigCtx)
	defer cancel()
	var gaveUp atomic.Bool
	if o.giveUp > 0 {
		giveUp := time.AfterFunc(o.giveUp, func() { gaveUp.Store(true); cancel() })
		defer giveUp.Stop()
	}

	st := &watchState{o: o, t: t, cancel: cancel}
	err = w.Run(wctx, st.preview)
	resume := st.stop()

	var de *watch.DirError
	switch {
	case errors.Is(err, errEnough):
		return nil
	case gaveUp.Load():
		return errorf("", "watch: gave up after %s with %d preview(s)", o.giveUp, st.previews)
	case errors.As(err, &de):
		return errorf("start 'implloop watch' again with the plan's new path", "%s", err)
	case sigCtx.Err() != nil:
		// Ctrl-C (or the caller's cancel): how a watch ends, not an error.
		fmt.Fprintln(o.io.ErrOut, "implloop watch: stopped")
		return exitWith(exitInterrupted)
	case err != nil:
		return errorf("", "%w", err)
	case resume:
		stopSignals() // the resume handles Ctrl-C itself
		fmt.Fprintf(o.io.ErrOut, "implloop watch: the plan is quiet and lints clean: resuming run %s\n", t.parent.ID)
		// 'implloop resume --run ID --plan PLAN': no flag given again, so
		// the run's settings as they are.
		return resumeRun(ctx, &resumeOptions{
			io: o.io, runRef: t.parent.ID, planPath: loop.PlanFile(t.root, t.rel),
			given: loop.DefaultSettings(), flags: &runFlags{},
		})
	}
	return nil
}

// watchTarget is what watch previews against: the plan (rel, relative to
// the repo root), the run a resume would continue and its settings.
type watchTarget struct {
	root, rel string
	parent    *loop.RunRecord
	s         loop.Settings
}

func watchTargetOf(o *watchOptions) (*watchTarget, error) {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return nil, err
	}
	rel := journalPlanPath(root, o.io.workingDir, o.plan)
	parent, err := watchParent(root, rel, o.run)
	if err != nil {
		return nil, err
	}
	s, err := loop.SettingsOf(parent, rel)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, errorf("", "run %s: %w", parent.ID, err)
	}
	return &watchTarget{root: root, rel: rel, parent: parent, s: s}, nil
}

// watchState is a watch in progress: the previews shown, and with
// --resume the timer that starts the resume once the plan stayed quiet
// after an edit (each event disarms it; a preview that would run
// something arms it again).
type watchState struct {
	o      *watchOptions
	t      *watchTarget
	cancel context.CancelFunc // ends the watch: the resume starts

	mu            sync.Mutex
	gen           int // events so far: a timer of an older one is stale
	timer         *time.Timer
	fired         bool
	warnedBlocked bool
	previews      int
}

// preview shows what a resume would do after event ev, and arms the
// resume when it may start.
func (st *watchState) preview(ev watch.Event) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	o := st.o
	st.gen++
	if st.timer != nil {
		st.timer.Stop()
	}
	pv := previewOf(ev, st.t.s, st.t.root, st.t.parent.ID)
	st.previews++
	fmt.Fprint(o.io.Out, renderWatch(ev, pv, st.t.parent, st.previews, o.redraw))
	if o.exitAfter > 0 && st.previews >= o.exitAfter {
		return errEnough
	}
	// Only after an edit: watch --resume is started to edit the plan, and
	// must not resume the unchanged plan before the first keystroke.
	if o.resume && ev.Seq > 1 && pv.eligible() {
		fmt.Fprintf(o.io.ErrOut, "implloop watch: resuming run %s in %s unless the plan changes\n", st.t.parent.ID, o.quiet)
		g := st.gen
		st.timer = time.AfterFunc(o.quiet, func() { st.fire(g) })
	}
	return nil
}

// fire ends the watch for the resume armed at event g, unless a later
// event came; while BLOCKED.md exists it waits another --quiet.
func (st *watchState) fire(g int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if g != st.gen || st.fired {
		return
	}
	if _, err := os.Stat(filepath.Join(st.t.root, loop.BlockedFile)); err == nil {
		if !st.warnedBlocked {
			st.warnedBlocked = true
			fmt.Fprintf(st.o.io.ErrOut, "implloop watch: --resume waits: %s exists (remove it once its cause is fixed)\n", loop.BlockedFile)
		}
		st.timer = time.AfterFunc(st.o.quiet, func() { st.fire(g) })
		return
	}
	st.fired = true
	st.cancel()
}

// stop disarms the timer once the watch ended and says whether the
// resume fired.
func (st *watchState) stop() (resume bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.timer != nil {
		st.timer.Stop()
	}
	return st.fired
}

// watchParent is the run a resume would continue: ref, else the latest run
// of the plan at rel.
func watchParent(root, rel, ref string) (*loop.RunRecord, error) {
	r, err := loop.RunToResume(root, rel, ref)
	switch {
	case errors.Is(err, loop.ErrNoJournal):
		return nil, errorf("start with 'implloop run "+rel+"'; watch previews a resume of a journaled run", "no implloop journal in this repository")
	case errors.Is(err, loop.ErrNotFound) && ref != "":
		return nil, errorf("list runs with 'implloop runs'", "%s", err)
	case errors.Is(err, loop.ErrNotFound):
		return nil, errorf("start with 'implloop run "+rel+"', or name a run of another plan path with --run", "no run of %s in the journal", rel)
	}
	return r, err
}

// preview is what a resume would do with one version of the plan.
type preview struct {
	tasks []loop.PlannedTask
	err   error
}

// eligible says whether --resume may start: the plan previewed cleanly and
// a resume would run something.
func (p preview) eligible() bool {
	if p.err != nil || p.tasks == nil {
		return false
	}
	for _, t := range p.tasks {
		if t.Action == loop.ActionLive || t.Action == loop.ActionGate || t.Action == loop.ActionAcross {
			return true // a call, a gate, or work written in from another run
		}
	}
	return false
}

func previewOf(ev watch.Event, s loop.Settings, root, parentID string) preview {
	if !ev.Exists || ev.HasErrors() {
		return preview{}
	}
	out, err := loop.Preview(loop.Options{Settings: s, RepoRoot: root, Parent: parentID}, ev.Src)
	if err != nil {
		return preview{err: err}
	}
	if out.Plan == nil {
		out.Plan = []loop.PlannedTask{}
	}
	return preview{tasks: out.Plan}
}

// renderWatch is one preview, as printed.
func renderWatch(ev watch.Event, pv preview, parent *loop.RunRecord, n int, redraw bool) string {
	var b strings.Builder
	if redraw {
		b.WriteString("\x1b[H\x1b[2J")
	}
	verdict := parent.Verdict
	if verdict == "" {
		verdict = "unfinished"
	}
	sha := words.Short(ev.SHA256)
	fmt.Fprintf(&b, "implloop watch: preview %d: %s", n, ev.Path)
	if ev.Exists && sha != "" {
		fmt.Fprintf(&b, " (sha256 %s)", sha)
	}
	fmt.Fprintf(&b, ", against run %s (%s)", parent.ID, verdict)
	if redraw {
		fmt.Fprintf(&b, " at %s", time.Now().Format("15:04:05"))
	}
	b.WriteString("\n")
	if !ev.Exists {
		fmt.Fprintf(&b, "implloop watch: %s is missing (deleted, or half way through a save); waiting for it\n", ev.Path)
		return b.String()
	}
	for _, d := range ev.Diagnostics {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	if ev.HasErrors() {
		n := len(plan.Errors(ev.Diagnostics))
		fmt.Fprintf(&b, "implloop watch: %s has %s: no preview until they are fixed\n", ev.Path, words.Count(n, "error"))
		return b.String()
	}
	if pv.err != nil {
		fmt.Fprintf(&b, "implloop watch: cannot preview: %s\n", pv.err)
		return b.String()
	}
	b.WriteString(formatPlan(pv.tasks, false))
	counts := map[string]int{}
	for _, t := range pv.tasks {
		counts[t.Action]++
	}
	fmt.Fprintf(&b, "implloop watch: a resume would run %d task(s) live, replay %d, restore %d, re-run %d gate(s), skip %d\n",
		counts[loop.ActionLive], counts[loop.ActionReplay]+counts[loop.ActionAcross], counts[loop.ActionRestore], counts[loop.ActionGate], counts[loop.ActionSkip])
	if redraw {
		fmt.Fprintf(&b, "\nwatching %s; Ctrl-C to stop\n", ev.Path)
	}
	return b.String()
}

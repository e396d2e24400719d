package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/travel"
)

type pushOptions struct {
	remoteOptions
	runRef        string
	noTranscripts bool
}

func newPushCmd(io *ioStreams) *cobra.Command { return newPushCmdWith(io, pushRun) }

// newPushCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newPushCmdWith(io *ioStreams, runF func(context.Context, *pushOptions) error) *cobra.Command {
	o := &pushOptions{remoteOptions: remoteOptions{io: io}}
	cmd := &cobra.Command{
		Use:   "push [REMOTE]",
		Short: "Push runs' records and boundary commits to a git remote",
		Long: `Push sends runs to REMOTE (default: the current branch's upstream remote,
else origin) so that a teammate or CI can 'implloop pull' them and resume
with every unchanged task replayed. Each run goes with the runs it resumes.
One atomic 'git push' of these refs, per run:

  refs/implloop/records/<run>   the run's journal records (see docs/journal.md)
  refs/implloop/runs/<run>      its boundary commits

What leaves the machine: the plan's tasks as the agent saw them, every
prompt, the agents' output (stdout, stderr, results), the gates' output,
the boundary commits (the whole work tree at every boundary, uncommitted
files included) and the run's settings. Environment values never: they
are not stored. --no-transcripts leaves out the prompts, the agents' stdout
and stderr and the gates' output; identities, results, accounting, the
gate feedback a next attempt was given (part of its identity), block
reasons and the boundary commits still go.

Refs the remote has already are not pushed again (one 'git ls-remote'
first), nor are records without transcripts pushed over the whole ones. A
run that has not ended (still running, or killed and not resumed) has no
records yet, and is left out. --json prints the outcome as one object
(remote, pushed, not_ended, already_there, transcripts).

` + exitStatusHelp(longExits...),
		Example: `  # Every run, to the branch's remote
  implloop push

  # One run (and the runs it resumes), without transcripts
  implloop push --run r-20261130-054012 --no-transcripts origin`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              remoteRunE(&o.remoteOptions, func(ctx context.Context) error { return runF(ctx, o) }),
	}
	cmd.Flags().StringVar(&o.runRef, "run", "", "push this run (an id or a unique prefix) and the runs it resumes (default: every run that ended)")
	cmd.Flags().BoolVar(&o.noTranscripts, "no-transcripts", false, "leave out prompts, agent stdout and stderr, and gate output")
	o.addJSONFlag(cmd)
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	return cmd
}

func pushRun(ctx context.Context, o *pushOptions) error {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	// Push reads the journal; what it writes (records of runs that have
	// none yet) goes to git.
	j, err := openUpgrading(root)
	if err != nil {
		return travelError(err, "")
	}
	defer j.Close()
	po := travel.PushOptions{Remote: o.remote, NoTranscripts: o.noTranscripts}
	if o.runRef != "" {
		r, err := j.ResolveRun(o.runRef)
		if err != nil {
			return loopError(err)
		}
		po.Runs = []string{r.ID}
	}
	res, err := travel.Push(ctx, j, po)
	if err != nil {
		return travelError(err, o.remote)
	}
	if o.asJSON {
		return o.printJSON(struct {
			Remote      string   `json:"remote"`
			Pushed      []string `json:"pushed"`
			Skipped     []string `json:"not_ended"`
			There       []string `json:"already_there"`
			Transcripts bool     `json:"transcripts"`
		}{res.Remote, orEmpty(res.Runs), orEmpty(res.Skipped), orEmpty(res.There), !o.noTranscripts})
	}
	for _, id := range res.Skipped {
		fmt.Fprintf(o.io.ErrOut, "implloop: run %s has not ended: not pushed\n", id)
	}
	what := "with transcripts"
	if o.noTranscripts {
		what = "without transcripts"
	}
	fmt.Fprintf(o.io.Out, "pushed %d run(s) to %s, %s", len(res.Runs), res.Remote, what)
	if len(res.Runs) > 0 {
		fmt.Fprintf(o.io.Out, ": %s", runList(res.Runs))
	}
	fmt.Fprintf(o.io.Out, "; %d already there\n", len(res.There))
	return nil
}

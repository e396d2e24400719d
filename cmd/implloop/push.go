package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/implloop/implloop/loop"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/travel"
)

type pushOptions struct {
	remoteOptions
	runRef        string
	noTranscripts bool
	yes           bool
	dryRun        bool
}

func newPushCmd(io *ioStreams) *cobra.Command { return newPushCmdWith(io, pushRun) }

// newPushCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newPushCmdWith(io *ioStreams, runF func(context.Context, *pushOptions) error) *cobra.Command {
	o := &pushOptions{remoteOptions: remoteOptions{io: io}}
	cmd := &cobra.Command{
		Use:   "push [REMOTE]",
		Short: "Push runs' records and boundary commits to a git remote",
		Long: `Push sends runs to REMOTE so that a teammate or CI can 'implloop pull'
them and resume with every unchanged task replayed. Each run goes with the
runs it resumes. One atomic 'git push' of these refs, per run:

  refs/implloop/records/<run>   the run's journal records (see docs/journal.md)
  refs/implloop/runs/<run>      its boundary commits

Without REMOTE, push sends to the current branch's upstream remote (else
origin), and first says what it would send and asks, on a terminal; in a
script, give REMOTE or --yes. --dry-run says what would go and sends
nothing: each run, its size, whether its transcripts go, the files its
boundary commits hold that no commit of yours did, and whether it goes
signed.

What leaves the machine: the plan's tasks as the agent saw them, every
prompt, the agents' output (stdout, stderr, results), the gates' output,
the boundary commits (the whole work tree at every boundary, uncommitted
files included) and the run's settings. Environment values never: they
are not stored. --no-transcripts leaves out the prompts, the agents' stdout
and stderr and the gates' output; identities, results, accounting, the
gate feedback a next attempt was given (part of its identity), block
reasons and the boundary commits still go.

Signing: when your git signs commits (commit.gpgSign=true, or
implloop.signRuns=true to sign runs only; implloop.signRuns=false never),
each run made here is signed with git's own signing (gpg.format openpgp,
ssh or x509, and user.signingKey, as 'git commit -S' uses them) before it
goes, and the push adds one signed seal naming them
(refs/implloop/seals/<commit>), which a pull verifies for all of them at
once. A teammate whose allowed signers hold your key replays your runs;
an unsigned run is never replayed on another machine unless resumed there
by name. A run pulled from elsewhere goes as it came: push never signs
another's run.

Refs the remote has already are not pushed again (one 'git ls-remote'
first), nor are records without transcripts pushed over the whole ones. A
run that has not ended (still running, or killed and not resumed) has no
records yet, and is left out. --json prints the outcome as one object
(remote, pushed, not_ended, already_there, transcripts, signed); with
--dry-run, what would go (remote, sign, runs: run, bytes, blobs,
transcripts, boundaries, uncommitted, signature, already_there, ...).

` + exitStatusHelp(longExits...),
		Example: `  # What would go to the branch's remote, and how: nothing is sent
  implloop push --dry-run

  # Every run, to origin (no question asked: the remote is named)
  implloop push origin

  # One run (and the runs it resumes), without transcripts
  implloop push --run r-20261130-054012 --no-transcripts origin

  # Signed with an SSH key, once set up (docs/journal.md, Trust):
  #   git config gpg.format ssh
  #   git config user.signingKey ~/.ssh/id_ed25519.pub
  #   git config implloop.signRuns true
  implloop push origin`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              remoteRunE(&o.remoteOptions, func(ctx context.Context) error { return runF(ctx, o) }),
	}
	cmd.Flags().StringVar(&o.runRef, "run", "", "push this run (an id or a unique prefix) and the runs it resumes (default: every run that ended)")
	cmd.Flags().BoolVar(&o.noTranscripts, "no-transcripts", false, "leave out prompts, agent stdout and stderr, and gate output")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "push to the default remote without asking")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "say what would be pushed, and how; send nothing")
	o.addJSONFlag(cmd)
	_ = cmd.RegisterFlagCompletionFunc("run", completeRunIDs(io))
	return cmd
}

func pushRun(ctx context.Context, o *pushOptions) error {
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	open := loop.InspectUpgrading
	if o.dryRun {
		open = loop.Inspect // a dry run writes nothing, not even an upgrade
	}
	in, err := open(root)
	if err != nil {
		return travelError(err, "")
	}
	defer in.Close()
	po := travel.PushOptions{Remote: o.remote, NoTranscripts: o.noTranscripts}
	if o.runRef != "" {
		r, err := in.ResolveRun(o.runRef)
		if err != nil {
			return loopError(err)
		}
		po.Runs = []string{r.ID}
	}
	ask := o.remote == "" && !o.yes
	if o.dryRun || ask {
		if ask && !o.dryRun && !o.io.inIsTerm {
			return usagef("name the remote ('implloop push origin'), or pass --yes; 'implloop push --dry-run' says what would go",
				"push without a remote asks first, and there is no terminal to ask at")
		}
		plan, err := travel.PlanPush(ctx, in.Journal(), po)
		if err != nil {
			return travelError(err, o.remote)
		}
		if o.dryRun && o.asJSON {
			return o.printJSON(pushPlanJSON(plan))
		}
		printPushPlan(o.io.Out, plan)
		if o.dryRun {
			return nil
		}
		if !confirm(o.io, fmt.Sprintf("Push to %s? [y/N] ", plan.Remote)) {
			fmt.Fprintln(o.io.ErrOut, "implloop: nothing pushed")
			return nil
		}
	}
	res, err := travel.Push(ctx, in.Journal(), po)
	if err != nil {
		return travelError(err, o.remote)
	}
	return printPushed(o, res)
}

// printPushed says what a push sent (res): as JSON with --json, else a
// line per run not ended and a summary line.
func printPushed(o *pushOptions, res *travel.PushResult) error {
	if o.asJSON {
		return o.printJSON(struct {
			Remote      string   `json:"remote"`
			Pushed      []string `json:"pushed"`
			Skipped     []string `json:"not_ended"`
			There       []string `json:"already_there"`
			Transcripts bool     `json:"transcripts"`
			Signed      []string `json:"signed"`
		}{res.Remote, orEmpty(res.Runs), orEmpty(res.Skipped), orEmpty(res.There), !o.noTranscripts, orEmpty(res.Signed)})
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
	fmt.Fprintf(o.io.Out, "; %d already there", len(res.There))
	switch n := len(res.Signed); {
	case len(res.Runs) == 0:
	case n == len(res.Runs):
		fmt.Fprint(o.io.Out, "; signed")
	case n == 0:
		fmt.Fprint(o.io.Out, "; unsigned")
	default:
		fmt.Fprintf(o.io.Out, "; %d signed, %d unsigned", n, len(res.Runs)-n)
	}
	fmt.Fprintln(o.io.Out)
	return nil
}

// printPushPlan says what a push would send: per run, its size, whether
// its transcripts and uncommitted files go, and how it is signed.
func printPushPlan(w io.Writer, p *travel.PushPlan) {
	to := p.Remote
	if p.URL != "" {
		to += " (" + p.URL + ")"
	}
	going := 0
	for _, r := range p.Runs {
		if !r.There {
			going++
		}
	}
	fmt.Fprintf(w, "push to %s: %d run(s)", to, going)
	if n := len(p.Runs) - going; n > 0 {
		fmt.Fprintf(w, ", %d already there", n)
	}
	fmt.Fprintln(w)
	if p.RemoteErr != nil {
		fmt.Fprintf(w, "  (the remote could not be asked what it has: %v; every run is listed)\n", p.RemoteErr)
	}
	for _, r := range p.Runs {
		if r.There {
			fmt.Fprintf(w, "  %s  already there\n", r.Run)
			continue
		}
		transcripts := "without transcripts"
		if r.Transcripts {
			transcripts = "with transcripts (prompts, agent output, gate output)"
		}
		origin := "made here"
		if r.Pulled {
			origin = "pulled"
		}
		if r.Host != "" {
			origin += " on " + r.Host
		}
		fmt.Fprintf(w, "  %s  %s, %s, %s, %d blobs, %s; %d boundary commits",
			r.Run, origin, orUnknown(r.Verdict), travel.FormatSize(r.Bytes), r.Blobs, transcripts, r.Boundaries)
		if n := len(r.Uncommitted); n > 0 {
			shown := r.Uncommitted
			if len(shown) > 3 {
				shown = shown[:3]
			}
			more := ""
			if n > 3 {
				more = fmt.Sprintf(" and %d more", n-3)
			}
			fmt.Fprintf(w, " holding %d uncommitted file(s): %s%s", n, strings.Join(shown, ", "), more)
		} else {
			fmt.Fprint(w, ", no uncommitted file")
		}
		fmt.Fprintf(w, "; %s\n", r.Signature)
	}
	for _, id := range p.Skipped {
		fmt.Fprintf(w, "  %s  has not ended: not pushed\n", id)
	}
}

// pushPlanJSON is a push plan as --dry-run --json prints it.
func pushPlanJSON(p *travel.PushPlan) any {
	type run struct {
		Run         string   `json:"run"`
		Host        string   `json:"host,omitempty"`
		Verdict     string   `json:"verdict,omitempty"`
		Pulled      bool     `json:"pulled"`
		There       bool     `json:"already_there"`
		Bytes       int64    `json:"bytes"`
		Blobs       int      `json:"blobs"`
		Transcripts bool     `json:"transcripts"`
		Boundaries  int      `json:"boundaries"`
		Uncommitted []string `json:"uncommitted"`
		Signed      bool     `json:"signed"`
		Signature   string   `json:"signature"`
	}
	out := struct {
		Remote    string   `json:"remote"`
		URL       string   `json:"url,omitempty"`
		Sign      bool     `json:"sign"`
		Key       string   `json:"key,omitempty"`
		Runs      []run    `json:"runs"`
		NotEnded  []string `json:"not_ended"`
		RemoteErr string   `json:"remote_error,omitempty"`
	}{Remote: p.Remote, URL: p.URL, Sign: p.Sign, Key: p.Key, Runs: []run{}, NotEnded: orEmpty(p.Skipped)}
	if p.RemoteErr != nil {
		out.RemoteErr = p.RemoteErr.Error()
	}
	for _, r := range p.Runs {
		out.Runs = append(out.Runs, run{r.Run, r.Host, r.Verdict, r.Pulled, r.There, r.Bytes, r.Blobs, r.Transcripts,
			r.Boundaries, orEmpty(r.Uncommitted), r.Signed, r.Signature})
	}
	return out
}

// confirm asks a yes/no question on the terminal; only y or yes is yes.
func confirm(io *ioStreams, question string) bool {
	fmt.Fprint(io.ErrOut, question)
	line, _ := bufio.NewReader(io.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

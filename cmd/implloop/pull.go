package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/implloop/implloop/loop"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/travel"
)

// remoteOptions are what push and pull share: the streams and the remote
// (the optional REMOTE argument).
type remoteOptions struct {
	io     *ioStreams
	remote string
	asJSON bool // --json: the outcome as one object on stdout
}

// addJSONFlag registers push's and pull's --json.
func (o *remoteOptions) addJSONFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the outcome as one JSON object")
}

// printJSON writes v as indented JSON on stdout.
func (o *remoteOptions) printJSON(v any) error {
	enc := json.NewEncoder(o.io.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// orEmpty is s, or an empty list for JSON where s is nil.
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// remoteRunE is push's and pull's RunE: REMOTE into o.remote, then run.
func remoteRunE(o *remoteOptions, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			o.remote = args[0]
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		return run(ctx)
	}
}

type pullOptions struct {
	remoteOptions
	maxRecord, maxBlob, maxPull string // sizes as typed (travel.ParseSize)
}

func newPullCmd(io *ioStreams) *cobra.Command { return newPullCmdWith(io, pullRun) }

// newPullCmdWith takes the function that does the work, so a test can
// check flag parsing alone.
func newPullCmdWith(io *ioStreams, runF func(context.Context, *pullOptions) error) *cobra.Command {
	o := &pullOptions{remoteOptions: remoteOptions{io: io}}
	cmd := &cobra.Command{
		Use:   "pull [REMOTE]",
		Short: "Fetch runs from a git remote into the local journal",
		Long: `Pull fetches every run's records from REMOTE (default: the current
branch's upstream remote, else origin) and imports the runs the journal
lacks, so that 'implloop resume --run ID' replays here what is unchanged
and in the tree, as on the machine that ran it.

Every record is checked before anything is imported: its files and
format, that each unit's identity is the digest of its preimage, that
each blob holds what its sha256 name says, and that the boundary commits
it names came with it. A malformed or forged run is refused: nothing
of it is imported (nor a resume of it), its ref is named on stderr, and
pull exits non-zero, having imported the other runs (one transaction).
So one bad ref, which anyone with push access can put on the remote,
costs its own run only. Pulling again imports nothing new. So is a run
dated in the future (it would sort before every run made here) or whose
start is not the time its id says.

Each object is sized from git's header before a byte of it is read: a
run's records (its rows) above --max-record-size, a blob above
--max-blob-size, or a pull reading more than --max-pull-size in all is
refused, before anything is decoded (sizes: 64M, 2G, ...; K, M, G, T are
powers of 1024).

Trust: each run's records commit is verified with git's own verification
('git verify-commit'; for SSH keys, gpg.ssh.allowedSignersFile), and who
signed it is recorded. A pulled run's work replays across runs, is
restored, or stands in for a gate only when it is signed by an allowed
signer; the others stay readable (runs, show, explain) and are marked so,
and 'implloop resume --run ID' still takes one over by name, with a
warning. A signature that does not verify (records changed after they
were signed) is refused. Resume's default is never a pulled run.

--json prints the outcome as one object (remote, imported, present,
trust: per imported run, trusted and why; refused: per refused run, its
commit and why).

` + exitStatusHelp(longExits...),
		Example: `  # Take over a teammate's run (after 'git pull' of the branch)
  implloop pull
  implloop resume --run r-20261130-054012`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              remoteRunE(&o.remoteOptions, func(ctx context.Context) error { return runF(ctx, o) }),
	}
	def := travel.DefaultLimits
	cmd.Flags().StringVar(&o.maxRecord, "max-record-size", sizeFlag(def.Record), "refuse a run whose records (rows) are larger")
	cmd.Flags().StringVar(&o.maxBlob, "max-blob-size", sizeFlag(def.Blob), "refuse a blob (prompt, output, result) larger than this")
	cmd.Flags().StringVar(&o.maxPull, "max-pull-size", sizeFlag(def.Pull), "stop a pull that would read more than this in all")
	o.addJSONFlag(cmd)
	return cmd
}

// sizeFlag is a default size as the flags take it: "64M", "2G".
func sizeFlag(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprint(n)
}

// raisedCap is the cap a refused pull's hint suggests: twice the cap,
// doubled until it holds what was refused (a 3 KiB blob under a 10 B cap
// needs 5K, not 20).
func raisedCap(limit, size int64) int64 {
	n := max(2*limit, 1)
	for n < size && n < 1<<62 {
		n *= 2
	}
	return n
}

// limits are the pull's size caps, from its flags.
func (o *pullOptions) limits() (travel.Limits, error) {
	var l travel.Limits
	for _, f := range []struct {
		name, value string
		to          *int64
	}{{"--max-record-size", o.maxRecord, &l.Record}, {"--max-blob-size", o.maxBlob, &l.Blob}, {"--max-pull-size", o.maxPull, &l.Pull}} {
		if f.value == "" {
			continue
		}
		n, err := travel.ParseSize(f.value)
		if err != nil {
			return l, usagef("a size is a number of bytes, or one with K, M, G or T: 64M, 2G", "%s: %s", f.name, err)
		}
		*f.to = n
	}
	return l, nil
}

func pullRun(ctx context.Context, o *pullOptions) error {
	limits, err := o.limits()
	if err != nil {
		return err
	}
	root, err := repoRoot(o.io.workingDir)
	if err != nil {
		return err
	}
	// A pull holds every run's records until it commits them, tens of
	// megabytes for a hundred runs, and at the default setting the
	// collector marks them again each time the heap doubles: a tenth of
	// the pull's CPU. This process does nothing else: it collects less
	// often, at the cost of memory for the length of the pull.
	debug.SetGCPercent(pullGCPercent)
	res, err := travel.Pull(ctx, root, o.remote, loop.JournalOpener(root), travel.WithLimits(limits), travel.SkipRefused())
	if err != nil {
		return travelError(err, o.remote)
	}
	if err := pullReport(o, res); err != nil {
		return err
	}
	return pullRefused(o.io, res)
}

// pullRefused names each run the pull refused, on a line of its own, and
// fails the command when there is one: what it refused is not imported,
// the rest is.
func pullRefused(io *ioStreams, res *travel.PullResult) error {
	if len(res.Refused) == 0 {
		return nil
	}
	for _, r := range res.Refused {
		fmt.Fprintf(io.ErrOut, "implloop: refused %s (commit %.12s): %s; nothing of it was imported\n", travel.RecordsRef(r.Run), r.Commit, r.Reason)
	}
	first := res.Refused[0].Run
	return errorf(fmt.Sprintf("the other runs were imported; ask whoever pushed a refused run to push it again from their clone, or remove it from the remote (git push %s :%s)",
		res.Remote, travel.RecordsRef(first)), "%d run(s) on %s refused (named above)", len(res.Refused), res.Remote)
}

// pullReport prints what a pull imported.
func pullReport(o *pullOptions, res *travel.PullResult) error {
	if o.asJSON {
		type trust struct {
			Trusted bool   `json:"trusted"`
			Why     string `json:"why"`
		}
		trusts := map[string]trust{}
		for id, t := range res.Trust {
			trusts[id] = trust{t.Trusted, t.String()}
		}
		type refused struct {
			Run    string `json:"run"`
			Commit string `json:"commit"`
			Reason string `json:"reason"`
		}
		refs := []refused{}
		for _, r := range res.Refused {
			refs = append(refs, refused{r.Run, r.Commit, r.Reason})
		}
		return o.printJSON(struct {
			Remote    string           `json:"remote"`
			Imported  []string         `json:"imported"`
			Present   []string         `json:"present"`
			Trust     map[string]trust `json:"trust"`
			Retrusted []string         `json:"now_trusted"`
			Refused   []refused        `json:"refused"`
		}{res.Remote, orEmpty(res.Imported), orEmpty(res.Present), trusts, orEmpty(res.Retrusted), refs})
	}
	fmt.Fprintf(o.io.Out, "pulled from %s: %d run(s) imported", res.Remote, len(res.Imported))
	if len(res.Imported) > 0 {
		fmt.Fprintf(o.io.Out, " (%s)", runList(res.Imported))
	}
	fmt.Fprintf(o.io.Out, ", %d already here\n", len(res.Present))
	// Whose each run is: trusted ones replay here, the others do not.
	var untrusted []string
	for _, id := range res.Imported {
		t := res.Trust[id]
		mark := "trusted"
		if !t.Trusted {
			mark = "not trusted"
			untrusted = append(untrusted, id)
		}
		fmt.Fprintf(o.io.Out, "  %s  %s: %s\n", id, mark, t.String())
	}
	for _, id := range res.Retrusted {
		fmt.Fprintf(o.io.Out, "  %s  now trusted: %s\n", id, res.Trust[id].String())
	}
	if len(untrusted) > 0 {
		fmt.Fprintf(o.io.ErrOut, "implloop: %d pulled run(s) are not trusted: they stay readable, but their work is never replayed, restored or used to skip a gate here unless you resume one by name (docs/journal.md, Trust)\n", len(untrusted))
		fmt.Fprintf(o.io.ErrOut, "implloop: hint: to trust a teammate's runs, put their signing key in your allowed signers (SSH keys: git config gpg.ssh.allowedSignersFile FILE) and pull again: a signed run then says \"now trusted\"; an unsigned run never is\n")
	}
	return nil
}

// travelError gives push's and pull's failures their hints.
func travelError(err error, remote string) error {
	var refused *travel.RefusedError
	var re *travel.RemoteError
	var limit *travel.LimitError
	var signErr *travel.SignError
	switch {
	case errors.As(err, &limit):
		return errorf(fmt.Sprintf("nothing was imported; if you trust what is on %s, raise the cap: implloop pull %s %s", remoteOr(remote), limit.Flag, sizeFlag(raisedCap(limit.Limit, limit.Size))), "%s", err)
	case errors.As(err, &signErr):
		return errorf("check that 'git commit -S' works here (git config gpg.format, user.signingKey; the key's agent), or push unsigned: git config implloop.signRuns false; nothing was pushed", "%s", err)
	case errors.As(err, &refused):
		return errorf(fmt.Sprintf("nothing was imported; ask whoever pushed run %s to push it again from their clone (or remove it from the remote: git push %s :%s)",
			refused.Run, remoteOr(remote), travel.RecordsRef(refused.Run)), "%s", err)
	case errors.As(err, &re):
		hint := fmt.Sprintf("check that %s is a remote you can reach ('git remote -v', 'git %s %s')", re.Remote, re.Op, re.Remote)
		if lock := staleLock(err); lock != "" {
			hint = fmt.Sprintf("a git that did not end its work here (killed, or the machine stopped) left that lock file; "+
				"if no other git is running in this clone, remove it (rm '%s') and try again", lock)
		}
		if re.Op == "fetch" {
			hint += "; nothing was imported"
		}
		return errorf(hint, "%s", err)
	case errors.Is(err, travel.ErrNewerFormat):
		return errorf("upgrade implloop to pull these runs; nothing was imported", "%s", err)
	case errors.Is(err, loop.ErrNewerSchema):
		return errorf("upgrade implloop: the journal here was written by a newer one", "%s", err)
	case errors.Is(err, travel.ErrUnfinished):
		return errorf("let it finish, or resume it ('implloop resume --run ID'), then push", "%s: it has no records yet", err)
	}
	return loopError(err)
}

// staleLock is the lock file git could not create because it exists
// ("Unable to create '<path>.lock': File exists"), named in err; "" when
// err is no such refusal.
func staleLock(err error) string {
	m := lockExists.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	return m[1]
}

var lockExists = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// pullGCPercent is the collector's setting for `implloop pull` and
// `implloop work` (BenchmarkPull in package travel sets it too).
const pullGCPercent = 400

// runList names runs for a line of output: the first few, then how many
// more (a pull of a team's history brings hundreds; 'implloop runs'
// lists them all).
func runList(ids []string) string {
	const shown = 5
	if len(ids) <= shown+1 {
		return strings.Join(ids, " ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:shown], " "), len(ids)-shown)
}

func remoteOr(r string) string {
	if r == "" {
		return "origin"
	}
	return r
}

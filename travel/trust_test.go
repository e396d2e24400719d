package travel_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/cache"
	"github.com/implloop/implloop/internal/gittest"
	"github.com/implloop/implloop/loop"
	"github.com/implloop/implloop/travel"
)

// sshKey makes an ed25519 key pair with ssh-keygen in a new directory and
// returns the private key's path (the public key is beside it, .pub).
func sshKey(t *testing.T, name string) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	p := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	return p
}

// allowedSigners writes an allowed signers file: principal -> key.
func allowedSigners(t *testing.T, lines map[string]string) string {
	t.Helper()
	var b strings.Builder
	for principal, key := range lines {
		pub, err := os.ReadFile(key + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(principal + " " + string(pub))
	}
	p := filepath.Join(t.TempDir(), "allowed")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// signingRepo is ranRepo with its git signing with key, its run's records
// signed and pushed to a new bare repository (returned).
func signingRepo(t *testing.T, key string) (r *gittest.Repo, run, bare string) {
	t.Helper()
	r, run = ranRepo(t)
	signWith(r, key)
	bare = t.TempDir()
	gittest.At(t, bare).Git("init", "-q", "--bare")
	j, err := cache.OpenReadOnly(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err := travel.Push(context.Background(), j, travel.PushOptions{Remote: bare})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Signed) != 1 || res.Signed[0] != run {
		t.Fatalf("pushed %v, signed %v", res.Runs, res.Signed)
	}
	return r, run, bare
}

// bareAndJournal is a new bare repository to push to, and r's journal
// (closed when the test ends).
func bareAndJournal(t *testing.T, r *gittest.Repo) (string, *cache.Journal) {
	t.Helper()
	bare := t.TempDir()
	gittest.At(t, bare).Git("init", "-q", "--bare")
	j, err := cache.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return bare, j
}

// signWith makes r's git sign runs with the SSH key at key (sshKey).
func signWith(r *gittest.Repo, key string) {
	r.Git("config", "gpg.format", "ssh")
	r.Git("config", "user.signingKey", key+".pub")
	r.Git("config", "implloop.signRuns", "true")
}

// pullInto pulls bare into a new clone configured by config (git config
// pairs) and returns the clone, the result and the error.
func pullInto(t *testing.T, bare string, opts []travel.PullOption, config ...string) (*gittest.Repo, *travel.PullResult, error) {
	t.Helper()
	c := gittest.New(t)
	for i := 0; i+1 < len(config); i += 2 {
		c.Git("config", config[i], config[i+1])
	}
	res, err := travel.Pull(context.Background(), c.Dir, bare, func() (*cache.Journal, error) { return cache.Open(c.Dir) }, opts...)
	return c, res, err
}

// The records of a run made here are signed at push with git's own
// signing; a pull verifies them with git's own verification and records
// who signed: trusted when the key is an allowed signer's, not when no
// allowed signers file can check it, nor when the file allows another
// key under the signer's name.
func TestPullVerifiesSignatures(t *testing.T) {
	t.Parallel()
	alice, other := sshKey(t, "alice"), sshKey(t, "other")
	_, run, bare := signingRepo(t, alice)
	if seals := gittest.At(t, bare).Git("for-each-ref", travel.SealRefPrefix); strings.Count(seals, "\n") != 1 {
		t.Fatalf("seals on the remote after a signing push:\n%s", seals)
	}
	// The same records without the push's seal (as plain git would push
	// them): each run's own signature is verified.
	unsealed := t.TempDir()
	gittest.At(t, unsealed).Git("init", "-q", "--bare")
	gittest.At(t, bare).Git("push", "-q", unsealed, "refs/implloop/*:refs/implloop/*")
	gittest.At(t, unsealed).Git("update-ref", "-d", strings.Fields(gittest.At(t, unsealed).Git("for-each-ref", "--format=%(refname)", travel.SealRefPrefix))[0])
	for _, c := range []struct {
		name    string
		config  []string
		letter  string
		trusted bool
		why     string
	}{
		{"allowed", []string{"gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice})}, "G", true, "signed by an allowed signer"},
		{"allowed, no seal", []string{"gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice})}, "G", true, "signed by an allowed signer"},
		{"no allowed signers", nil, "E", false, "signed, but the signature cannot be checked here"},
		{"another key allowed", []string{"gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": other})}, "U", false, "signed by a key that is not an allowed signer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			from := bare
			if strings.Contains(c.name, "no seal") {
				from = unsealed
			}
			cl, res, err := pullInto(t, from, nil, c.config...)
			if err != nil {
				t.Fatal(err)
			}
			tr := res.Trust[run]
			if tr.Trusted != c.trusted || !strings.HasPrefix(tr.Why, c.why) {
				t.Errorf("trust %+v, want trusted=%v, %q", tr, c.trusted, c.why)
			}
			j, err := cache.OpenReadOnly(cl.Dir)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			p, ok, err := j.GetPulled(run)
			if err != nil || !ok || p.Signature != c.letter || p.Remote != from || p.Commit == "" {
				t.Fatalf("pulled row %+v %v %v, want signature %s", p, ok, err, c.letter)
			}
			if c.trusted && (p.Signer != "alice@example.com" || !strings.HasPrefix(p.Key, "SHA256:")) {
				t.Errorf("signer %q key %q, want alice@example.com and her key", p.Signer, p.Key)
			}
			if refs := cl.Git("for-each-ref", "refs/implloop-seals/", "refs/implloop-pull/"); refs != "" {
				t.Errorf("staging refs left after the pull:\n%s", refs)
			}
			if !c.trusted {
				// The key allowed since: the next pull verifies the
				// run again and trusts it.
				cl.Git("config", "gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice}))
				res, err := travel.Pull(context.Background(), cl.Dir, from, func() (*cache.Journal, error) { return cache.Open(cl.Dir) })
				if err != nil || len(res.Retrusted) != 1 || !res.Trust[run].Trusted {
					t.Errorf("pull after the key was allowed: %v, retrusted %v, trust %+v", err, res.Retrusted, res.Trust[run])
				}
			}
			// A pulled run is never the default of a resume.
			if _, err := j.LatestRun(""); !errors.Is(err, cache.ErrNotFound) {
				t.Errorf("LatestRun after a pull: %v, want ErrNotFound", err)
			}
		})
	}
}

// Records changed after they were signed, the signature kept: refused,
// and nothing of the pull imported. The same of a signed record whose
// boundary is swapped for another tree (Mallory's): the records commit's
// parent changes, and with it what the signature covers.
func TestPullRefusesTamperedSignedRecords(t *testing.T) {
	t.Parallel()
	alice := sshKey(t, "alice")
	r, run, bare := signingRepo(t, alice)
	b := gittest.At(t, bare)
	ref := travel.RecordsRef(run)
	raw := b.Git("cat-file", "commit", ref)
	if !strings.Contains(raw, "\ngpgsig ") {
		t.Fatalf("records commit is not signed:\n%s", raw)
	}
	tree := strings.TrimSpace(b.Git("rev-parse", ref+"^{tree}"))
	edit := func(file, old, new string) string {
		t.Helper()
		content := b.Git("show", ref+":"+file)
		if !strings.Contains(content, old) {
			t.Fatalf("%s has no %q", file, old)
		}
		oid := strings.TrimSpace(gitIn(t, b, strings.Replace(content, old, new, 1), "hash-object", "-w", "--stdin"))
		var entries []string
		for _, line := range strings.Split(strings.TrimSpace(b.Git("ls-tree", tree)), "\n") {
			if strings.HasSuffix(line, "\t"+file) {
				line = "100644 blob " + oid + "\t" + file
			}
			entries = append(entries, line)
		}
		return strings.TrimSpace(gitIn(t, b, strings.Join(entries, "\n")+"\n", "mktree"))
	}
	forge := func(raw string) string {
		return strings.TrimSpace(gitIn(t, b, raw, "hash-object", "-t", "commit", "-w", "--stdin"))
	}
	host := records(t, r.Dir, run).Run.Host
	// Mallory's tree for the last boundary: another commit, another tree.
	evil := gittest.New(t)
	evil.Write("out-1.txt", "BACKDOOR\n")
	evil.Git("add", "-A")
	evil.Git("commit", "-q", "-m", "evil")
	b.Git("fetch", "-q", evil.Dir, "HEAD:refs/tmp/evil")
	evilCommit := strings.TrimSpace(b.Git("rev-parse", "refs/tmp/evil"))
	evilTree := strings.TrimSpace(b.Git("rev-parse", "refs/tmp/evil^{tree}"))
	bs := records(t, r.Dir, run).Boundaries
	lastB := bs[len(bs)-1]

	for _, c := range []struct {
		name   string
		commit func() string
	}{
		{"a row changed", func() string {
			return forge(strings.Replace(raw, "tree "+tree, "tree "+edit("run.json", `"host":"`+host+`"`, `"host":"elsewhere"`), 1))
		}},
		{"a boundary swapped", func() string {
			lite := strings.TrimSpace(b.Git("rev-parse", ref+"^1"))
			liteRaw := b.Git("cat-file", "commit", lite)
			lite2 := forge(strings.Replace(liteRaw, "parent "+lastB.Commit, "parent "+evilCommit, 1))
			t2 := edit("boundaries.json", `"commit":"`+lastB.Commit+`","tree":"`+lastB.Tree+`"`, `"commit":"`+evilCommit+`","tree":"`+evilTree+`"`)
			return forge(strings.Replace(strings.Replace(raw, "tree "+tree, "tree "+t2, 1), "parent "+lite, "parent "+lite2, 1))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := c.commit()
			bare2 := t.TempDir()
			gittest.At(t, bare2).Git("init", "-q", "--bare")
			// Alice's seal goes too: it names her records, not these.
			b.Git("push", "-q", bare2, forged+":"+ref, "refs/implloop/seals/*:refs/implloop/seals/*")
			allowed := allowedSigners(t, map[string]string{"alice@example.com": alice})
			cl, _, err := pullInto(t, bare2, nil, "gpg.ssh.allowedSignersFile", allowed)
			var refused *travel.RefusedError
			if !errors.As(err, &refused) || refused.Run != run || !strings.Contains(refused.Reason, "signature does not verify") {
				t.Fatalf("pull of tampered signed records: %v, want refused for its signature", err)
			}
			if out := cl.Git("for-each-ref", "refs/implloop/", "refs/implloop-pull/"); out != "" {
				t.Errorf("refs after the refused pull:\n%s", out)
			}
		})
	}
}

// A run dated in the future, or whose start is not its id's, is refused at
// pull: it would otherwise sort before every run made here.
func TestPullRefusesBadDates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, id string
		started  time.Time
		why      string
	}{
		{"future", "r-20990101-000000-dead", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), "in the future"},
		{"not its id's", "r-20261130-100000-beef", time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC), "but its id says"},
		{"not an id", "mallory-run", time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC), "not one implloop writes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := gittest.New(t)
			j, err := cache.Open(a.Dir)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			r := &cache.Run{ID: c.id, PlanPath: "plan.md", PlanSHA256: "x", StartedAt: c.started}
			if err := j.CreateRun(r); err != nil {
				t.Fatal(err)
			}
			if err := j.FinishRun(r.ID, "DONE", 0, c.started.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			bare := t.TempDir()
			gittest.At(t, bare).Git("init", "-q", "--bare")
			if _, err := travel.Push(context.Background(), j, travel.PushOptions{Remote: bare}); err != nil {
				t.Fatal(err)
			}
			_, _, err = pullInto(t, bare, []travel.PullOption{travel.WithClock(func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) })})
			var refused *travel.RefusedError
			if !errors.As(err, &refused) || !strings.Contains(refused.Reason, c.why) {
				t.Fatalf("pull: %v, want refused: %s", err, c.why)
			}
		})
	}
}

// Each cap is checked from git's object header before the object is read:
// a record, a blob or a pull over its cap is refused and nothing imported;
// a record of garbage over the cap is refused for its size, not decoded.
func TestPullLimits(t *testing.T) {
	t.Parallel()
	a, run := ranRepo(t)
	for _, c := range []struct {
		name   string
		limits travel.Limits
		flag   string
	}{
		{"record", travel.Limits{Record: 2 << 10}, "--max-record-size"},
		{"blob", travel.Limits{Blob: 8}, "--max-blob-size"},
		{"pull", travel.Limits{Pull: 1 << 10}, "--max-pull-size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, _, err := pullInto(t, a.Dir, []travel.PullOption{travel.WithLimits(c.limits)})
			var limit *travel.LimitError
			if !errors.As(err, &limit) || limit.Flag != c.flag || limit.Run != run {
				t.Fatalf("pull: %v, want a LimitError naming %s", err, c.flag)
			}
			if out := cl.Git("for-each-ref", "refs/implloop/", "refs/implloop-pull/"); out != "" {
				t.Errorf("refs after the refused pull:\n%s", out)
			}
		})
	}
	// 256 KiB of garbage as units.json: over a 64 KiB cap it is refused
	// for its size, before a byte of it is decoded.
	ref := travel.RecordsRef(run)
	garbage := strings.TrimSpace(gitIn(t, a, strings.Repeat("{[", 128<<10), "hash-object", "-w", "--stdin"))
	var entries []string
	for _, line := range strings.Split(strings.TrimSpace(a.Git("ls-tree", ref)), "\n") {
		if strings.HasSuffix(line, "\tunits.json") {
			line = "100644 blob " + garbage + "\tunits.json"
		}
		entries = append(entries, line)
	}
	tree := strings.TrimSpace(gitIn(t, a, strings.Join(entries, "\n")+"\n", "mktree"))
	bomb := strings.TrimSpace(a.Git("commit-tree", tree, "-p", ref, "-m", "bomb"))
	a.Git("update-ref", ref, bomb)
	_, _, err := pullInto(t, a.Dir, []travel.PullOption{travel.WithLimits(travel.Limits{Record: 64 << 10})})
	var limit *travel.LimitError
	if !errors.As(err, &limit) || !strings.Contains(limit.What, "units.json") {
		t.Fatalf("pull of a record of garbage over its cap: %v, want a LimitError naming units.json", err)
	}
	if _, _, err := pullInto(t, a.Dir, nil); !errors.As(err, new(*travel.RefusedError)) {
		t.Fatalf("pull of a record of garbage under the default caps: %v, want it refused as malformed", err)
	}
}

// A `git replace` of a boundary blob (what an agent, being code in the
// repository, can do) changes what plain git shows, never what implloop
// writes back: a replay across runs writes the boundary's own bytes.
func TestReplaceRefsAreOff(t *testing.T) {
	t.Parallel()
	r, run := ranRepo(t)
	blob := strings.TrimSpace(r.Git("rev-parse", "refs/implloop/runs/"+run+":out-1.txt"))
	evil := strings.TrimSpace(gitIn(t, r, "BACKDOOR\n", "hash-object", "-w", "--stdin"))
	r.Git("replace", blob, evil)
	if got := r.Git("cat-file", "-p", blob); got != "BACKDOOR\n" {
		t.Fatalf("the replacement is not in effect for plain git: %q", got)
	}
	r.Git("clean", "-q", "-fd")
	s := loop.DefaultSettings()
	s.Plan, s.AgentCmd, s.Verify = "plan.md", agentOf(t, r.Dir, run), "test -f out-$IMPLLOOP_TASK_ID.txt"
	out, err := loop.Run(context.Background(), loop.Options{Settings: s, RepoRoot: r.Dir})
	if err != nil || out.Verdict != "DONE" {
		t.Fatalf("second run: %v %v", out, err)
	}
	got, err := os.ReadFile(r.Path("out-1.txt"))
	if err != nil || string(got) != "done\n" {
		t.Errorf("out-1.txt after a replay across runs = %q (%v), want the boundary's own bytes", got, err)
	}
}

// A run whose records were left to its push (a worker's run:
// loop.Options.DeferRecords) has them written by the push, signed as
// they are written: both records commits signed, the ref set once (not
// written and then signed again), and a clone that allows the key
// trusts the run.
func TestPushWritesDeferredRecordsSigned(t *testing.T) {
	t.Parallel()
	alice := sshKey(t, "alice")
	r := planRepo(t)
	signWith(r, alice)
	run := runPlan(t, r, func(o *loop.Options) { o.DeferRecords = true })
	ref := travel.RecordsRef(run)
	if got := r.Git("for-each-ref", ref); got != "" {
		t.Fatalf("records written when the run ended: %s", got)
	}
	bare, j := bareAndJournal(t, r)
	res, err := travel.Push(context.Background(), j, travel.PushOptions{Remote: bare, New: true})
	if err != nil || len(res.Signed) != 1 {
		t.Fatalf("push: %+v, %v", res, err)
	}
	for _, c := range []string{ref, ref + "^1"} {
		if raw := r.Git("cat-file", "commit", c); !strings.Contains(raw, "\ngpgsig ") {
			t.Errorf("%s is not signed:\n%s", c, raw)
		}
	}
	// Written once: two records commits in the store, not four.
	n := 0
	for _, line := range strings.Split(r.Git("cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(objectname)"), "\n") {
		if c, ok := strings.CutPrefix(line, "commit "); ok && strings.Contains(r.Git("cat-file", "commit", c), "implloop records of run "+run) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d records commits of the run, want 2", n)
	}
	_, pres, err := pullInto(t, bare, nil, "gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice}))
	if err != nil || !pres.Trust[run].Trusted {
		t.Fatalf("pull: %+v, %v", pres, err)
	}
}

// A worker's push seals every run it pushed so far (PushOptions.Sealed):
// its second push's seal names both runs, and a pull verifies them by it.
func TestNewPushSealsEarlierRuns(t *testing.T) {
	t.Parallel()
	alice := sshKey(t, "alice")
	r, first := ranRepo(t)
	signWith(r, alice)
	bare, j := bareAndJournal(t, r)
	push := func(run string, sealed map[string]string) *travel.PushResult {
		res, err := travel.Push(context.Background(), j, travel.PushOptions{Remote: bare, Runs: []string{run}, New: true, Sealed: sealed})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := push(first, nil)
	if seals := gittest.At(t, bare).Git("for-each-ref", travel.SealRefPrefix); seals != "" {
		t.Fatalf("a seal of one new run alone: %s", seals)
	}
	second := runPlan(t, r, func(o *loop.Options) { o.Fresh = true })
	push(second, res.Records)
	seal := strings.TrimSpace(gittest.At(t, bare).Git("for-each-ref", "--format=%(objectname)", travel.SealRefPrefix))
	if seal == "" || strings.Contains(seal, "\n") {
		t.Fatalf("seals after the second push: %q", seal)
	}
	tree := gittest.At(t, bare).Git("ls-tree", seal)
	if !strings.Contains(tree, first) || !strings.Contains(tree, second) {
		t.Fatalf("the seal names:\n%s", tree)
	}
	_, pres, err := pullInto(t, bare, nil, "gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice}))
	if err != nil || !pres.Trust[first].Trusted || !pres.Trust[second].Trusted {
		t.Fatalf("pull: %+v, %v", pres, err)
	}
}

// gitIn runs git in r with stdin and returns its output.
func gitIn(t *testing.T, r *gittest.Repo, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env, cmd.Stdin = r.Dir, r.Env(), strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// log.showSignature (a user's, for their own git log) makes git print
// its verification before each commit of a `git log`: a pull's
// verification asks without it, and trusts an allowed signer's run.
func TestPullWithShowSignature(t *testing.T) {
	t.Parallel()
	alice := sshKey(t, "alice")
	_, run, bare := signingRepo(t, alice)
	_, res, err := pullInto(t, bare, nil, "gpg.ssh.allowedSignersFile", allowedSigners(t, map[string]string{"alice@example.com": alice}), "log.showSignature", "true")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Trust[run].Trusted {
		t.Errorf("%+v", res.Trust[run])
	}
}

package identity

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// A logical prompt is a list of segments. Rendering it on a machine (a
// world) fills in that machine's paths and that run's volatile values.
type segment struct {
	kind string // word, project, home, temp, time, uuid, run
	text string // word text, or the relative path below a root
	idx  int    // which volatile value, or which random temp dir
	alt  bool   // project: write the symlink-resolved root
}

type world struct {
	project, projectResolved, home, temp string
	tempDirs                             []string // random dirs under temp
	times, uuids, runs                   []string // distinct per index
	extraTemps                           []string
}

func (w world) env() Env {
	return Env{
		ProjectRoots: []string{w.project, w.projectResolved},
		Home:         w.home,
		TempRoots:    append([]string{w.temp}, w.extraTemps...),
	}
}

func (w world) render(segs []segment, seps []string) string {
	var b strings.Builder
	for i, s := range segs {
		if i > 0 {
			b.WriteString(seps[i-1])
		}
		switch s.kind {
		case "word":
			b.WriteString(s.text)
		case "project":
			root := w.project
			if s.alt {
				root = w.projectResolved
			}
			b.WriteString(join(root, s.text))
		case "home":
			b.WriteString(join(w.home, s.text))
		case "temp":
			b.WriteString(join(w.temp+"/"+w.tempDirs[s.idx], s.text))
		case "time":
			b.WriteString(w.times[s.idx])
		case "uuid":
			b.WriteString(w.uuids[s.idx])
		case "run":
			b.WriteString(w.runs[s.idx])
		}
	}
	return b.String()
}

func join(root, rel string) string {
	if rel == "" {
		return root
	}
	return root + "/" + rel
}

const nVolatile = 3

var (
	nameGen = rapid.StringMatching(`[a-z][a-z0-9_]{0,6}`)
	relGen  = rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(nameGen, 0, 3).Draw(t, "parts")
		return strings.Join(parts, "/")
	})
	wordGen = rapid.StringMatching(`[A-Za-z0-9,.;()'"!?{}$*#=]{1,10}`)
	sepGen  = rapid.SampledFrom([]string{" ", "\n", ", ", "\n\n", " (", "\t"})
)

func worldGen() *rapid.Generator[world] {
	return rapid.Custom(func(t *rapid.T) world {
		var w world
		user := rapid.StringMatching(`[a-z]{2,8}`).Draw(t, "user")
		w.home = rapid.SampledFrom([]string{"/home/", "/Users/", "/var/lib/"}).Draw(t, "homeBase") + user
		tempKind := rapid.IntRange(0, 3).Draw(t, "tempKind")
		switch tempKind {
		case 0:
			w.temp = "/tmp"
		case 1:
			w.temp = "/var/folders/" + rapid.StringMatching(`[a-z0-9_]{2}/[A-Za-z0-9_]{8,20}`).Draw(t, "tmpdir") + "/T"
		case 2:
			w.temp = w.home + "/.cache/tmp" // $TMPDIR under home
		default:
			w.temp = "/scratch/" + user
		}
		name := rapid.StringMatching(`[a-z][a-z0-9-]{0,10}`).Draw(t, "project")
		switch rapid.IntRange(0, 2).Draw(t, "projectKind") {
		case 0:
			w.project = w.home + "/src/" + name
		case 1: // a test's project inside a temp dir
			w.project = w.temp + "/ws" + rapid.StringMatching(`[0-9]{1,6}`).Draw(t, "wsnum") + "/" + name
		default:
			w.project = "/srv/" + name
		}
		w.projectResolved = "/private" + w.project
		w.tempDirs = rapid.SliceOfNDistinct(rapid.StringMatching(`(tmp\.|go-build|Test)[A-Za-z]{0,4}[0-9]{1,8}`), nVolatile, nVolatile, rapid.ID[string]).Draw(t, "tempDirs")
		w.times = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string {
			return fmt.Sprintf("2026-%02d-%02d%s%02d:%02d:%02d%s",
				rapid.IntRange(1, 12).Draw(t, "mo"), rapid.IntRange(1, 28).Draw(t, "d"),
				rapid.SampledFrom([]string{"T", " "}).Draw(t, "sep"),
				rapid.IntRange(0, 23).Draw(t, "h"), rapid.IntRange(0, 59).Draw(t, "mi"), rapid.IntRange(0, 59).Draw(t, "s"),
				rapid.SampledFrom([]string{"Z", "+01:00", "", ".123Z"}).Draw(t, "zone"))
		}), nVolatile, nVolatile).Draw(t, "times")
		w.uuids = rapid.SliceOfNDistinct(rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`), nVolatile, nVolatile, rapid.ID[string]).Draw(t, "uuids")
		w.runs = rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) string {
			return fmt.Sprintf("r-2026%02d%02d-%02d%02d%02d-%04x", rapid.IntRange(1, 12).Draw(t, "mo"), rapid.IntRange(1, 28).Draw(t, "d"),
				rapid.IntRange(0, 23).Draw(t, "h"), rapid.IntRange(0, 59).Draw(t, "mi"), rapid.IntRange(0, 59).Draw(t, "s"), rapid.IntRange(0, 0xffff).Draw(t, "rand"))
		}), nVolatile, nVolatile, rapid.ID[string]).Draw(t, "runs")
		w.extraTemps = rapid.SliceOfN(rapid.SampledFrom([]string{"/tmp", "/var/tmp", "/private/tmp"}), 0, 2).Draw(t, "extraTemps")
		return w
	})
}

func segmentGen() *rapid.Generator[segment] {
	return rapid.Custom(func(t *rapid.T) segment {
		s := segment{kind: rapid.SampledFrom([]string{"word", "word", "word", "project", "home", "temp", "time", "uuid", "run"}).Draw(t, "kind")}
		switch s.kind {
		case "word":
			s.text = wordGen.Draw(t, "word")
		case "project":
			s.text = relGen.Draw(t, "rel")
			s.alt = rapid.Bool().Draw(t, "resolved")
		case "home":
			// Dot-first names under home cannot spell the project's or a
			// temp root's path.
			s.text = "." + relGen.Draw(t, "rel")
		case "temp":
			s.text = relGen.Draw(t, "rel")
			s.idx = rapid.IntRange(0, nVolatile-1).Draw(t, "dir")
		default:
			s.idx = rapid.IntRange(0, nVolatile-1).Draw(t, "idx")
		}
		return s
	})
}

func promptPreimage(prompt string) Preimage {
	return Preimage{Role: "implement", Agent: "exec", Instructions: instr, Attempt: 1, Prompt: prompt}
}

// Path independence: the same logical prompt on two machines (project root,
// home, temp dirs) and in two runs (timestamps, UUIDs, run ids) has one
// identity.
func TestPropPathIndependence(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		segs := rapid.SliceOfN(segmentGen(), 1, 30).Draw(t, "segments")
		seps := rapid.SliceOfN(sepGen, len(segs), len(segs)).Draw(t, "seps")
		a, b := worldGen().Draw(t, "a"), worldGen().Draw(t, "b")
		pa, pb := a.render(segs, seps), b.render(segs, seps)
		na, nb := Normalize(pa, a.env()), Normalize(pb, b.env())
		if na != nb {
			t.Fatalf("one logical prompt, two normalized forms:\n%q\n -> %q\n%q\n -> %q", pa, na, pb, nb)
		}
		for _, root := range []string{a.project, a.home, a.temp} {
			if strings.Contains(na, root+"/") || strings.HasSuffix(na, root) {
				t.Fatalf("root %s survived in %q", root, na)
			}
		}
		if mustDigest(t, promptPreimage(na)) != mustDigest(t, promptPreimage(nb)) {
			t.Fatal("equal normalized prompts, different digests")
		}
	})
}

// Semantic sensitivity: an edit to a word (outside every volatile span)
// changes the digest.
func TestPropSemanticSensitivity(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		segs := rapid.SliceOfN(segmentGen(), 1, 20).Draw(t, "segments")
		seps := rapid.SliceOfN(sepGen, len(segs), len(segs)).Draw(t, "seps")
		var words []int
		for i, s := range segs {
			if s.kind == "word" {
				words = append(words, i)
			}
		}
		if len(words) == 0 {
			segs = append(segs, segment{kind: "word", text: wordGen.Draw(t, "extra")})
			seps = append(seps, " ")
			words = append(words, len(segs)-1)
		}
		w := worldGen().Draw(t, "world")
		before := w.render(segs, seps)
		i := rapid.SampledFrom(words).Draw(t, "which")
		edited := slices.Clone(segs)
		word := []byte(edited[i].text)
		pos := rapid.IntRange(0, len(word)).Draw(t, "pos")
		c := rapid.SampledFrom([]byte("abcXYZ019.,;!?{}$")).Draw(t, "char")
		switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
		case op == 0 || len(word) == 1: // insert
			word = slices.Insert(word, pos, c)
		case op == 1 && pos < len(word) && word[pos] != c: // replace
			word[pos] = c
		default: // delete
			word = slices.Delete(word, min(pos, len(word)-1), min(pos, len(word)-1)+1)
		}
		edited[i].text = string(word)
		after := w.render(edited, seps)
		if after == before {
			t.Skip("no edit")
		}
		da := mustDigest(t, promptPreimage(Normalize(before, w.env())))
		db := mustDigest(t, promptPreimage(Normalize(after, w.env())))
		if da == db {
			t.Fatalf("an edit outside volatile spans kept the identity:\n%q\n%q", before, after)
		}
	})
}

func preimageGen() *rapid.Generator[Preimage] {
	return rapid.Custom(func(t *rapid.T) Preimage {
		p := Preimage{
			Role:         rapid.SampledFrom([]string{"implement", "review", "fix"}).Draw(t, "role"),
			Agent:        rapid.SampledFrom([]string{"exec", "claude", "codex", "builtin"}).Draw(t, "agent"),
			Model:        rapid.SampledFrom([]string{"", "sonnet", "opus", "gpt-5"}).Draw(t, "model"),
			Instructions: rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, "instructions"),
			Attempt:      rapid.IntRange(1, 20).Draw(t, "attempt"),
			Prompt:       rapid.String().Draw(t, "prompt"),
			GateFeedback: rapid.StringMatching(`[ -~\n]{0,40}`).Draw(t, "feedback"),
			Artifacts:    rapid.SliceOfN(rapid.StringMatching(`sha256:[0-9a-f]{8}`), 0, 6).Draw(t, "artifacts"),
			Env:          rapid.SliceOfN(rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,8}`), 0, 4).Draw(t, "env"),
			Params:       rapid.MapOfN(rapid.StringMatching(`[a-z]{1,5}`), rapid.String(), 0, 3).Draw(t, "params"),
		}
		if rapid.Bool().Draw(t, "hasTask") {
			p.Task = &TaskInput{ID: rapid.StringMatching(`[0-9]{1,2}`).Draw(t, "taskID"), Text: rapid.String().Draw(t, "taskText")}
		}
		return p
	})
}

func TestPropAttemptSensitivity(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		p := preimageGen().Draw(t, "p")
		q := p
		q.Attempt += rapid.IntRange(1, 5).Draw(t, "more")
		if mustDigest(t, p) == mustDigest(t, q) {
			t.Fatalf("attempts %d and %d share an identity", p.Attempt, q.Attempt)
		}
	})
}

func TestPropModelSensitivity(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		p := preimageGen().Draw(t, "p")
		q := p
		q.Model = rapid.StringMatching(`[a-z0-9.-]{0,12}`).Filter(func(m string) bool { return m != p.Model }).Draw(t, "other")
		if mustDigest(t, p) == mustDigest(t, q) {
			t.Fatalf("models %q and %q share an identity", p.Model, q.Model)
		}
	})
}

func TestPropArtifactOrderDoesNotMatter(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		p := preimageGen().Draw(t, "p")
		q := p
		q.Artifacts = rapid.Permutation(p.Artifacts).Draw(t, "perm")
		q.Env = rapid.Permutation(p.Env).Draw(t, "envPerm")
		if mustDigest(t, p) != mustDigest(t, q) {
			t.Fatalf("order changed the identity: %v vs %v", p.Artifacts, q.Artifacts)
		}
		if len(p.Artifacts) > 0 { // a different set does change it
			q.Artifacts = append(slices.Clone(q.Artifacts), "sha256:new")
			if mustDigest(t, p) == mustDigest(t, q) {
				t.Fatal("an added artifact kept the identity")
			}
		}
	})
}

// Determinism: goroutines hashing the same preimages at once agree with
// each other and with a sequential run (also run under -race).
func TestPropDeterminismAcrossGoroutines(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		ps := rapid.SliceOfN(preimageGen(), 1, 8).Draw(t, "ps")
		want := make([]string, len(ps))
		for i, p := range ps {
			want[i] = mustDigest(t, p)
		}
		const workers = 8
		got := make([][]string, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[w] = make([]string, len(ps))
				for i := range ps {
					j := (i + w) % len(ps) // different order per goroutine
					d, err := Digest(ps[j])
					if err != nil {
						d = err.Error()
					}
					got[w][j] = d
				}
			}()
		}
		wg.Wait()
		for w := range workers {
			if !slices.Equal(got[w], want) {
				t.Fatalf("goroutine %d disagrees:\n%v\n%v", w, got[w], want)
			}
		}
	})
}

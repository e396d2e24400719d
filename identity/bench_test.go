package identity

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A 4 KiB prompt of plan-like text with the volatile bits Normalize removes.
func benchPrompt() string {
	var b strings.Builder
	line := "- [x] edit /home/ann/src/shop/internal/api/handler.go at 2026-11-30T05:40:12Z (run r-20261130-054012-3f9a) sha 9f86d081884c7d659a2feaa0c55ad015\n"
	for b.Len() < 4096-len(line) {
		b.WriteString(line)
	}
	b.WriteString(strings.Repeat("x", 4096-b.Len()))
	return b.String()
}

func benchPreimage() Preimage {
	p := promptPreimage(Normalize(benchPrompt(), ExampleEnv()))
	p.Task = &TaskInput{ID: "10", Text: "WRITE out/f10.txt hello"}
	p.Env = []string{"PATH", "HOME"}
	p.Artifacts = []string{"sha256:bb", "sha256:aa"}
	return p
}

// reportVsReference reports identities per second and the ratio of one
// identity's time to the reference's: plain json.Marshal + sha256 of the
// same preimage, with no canonicalization and no checks.
func reportVsReference(b *testing.B, p Preimage) {
	perOp := float64(b.Elapsed()) / float64(b.N)
	const refN = 2000
	start := time.Now()
	for range refN {
		raw, _ := json.Marshal(p)
		sha256.Sum256(raw)
	}
	ref := float64(time.Since(start)) / refN
	b.ReportMetric(1e9/perOp, "identities/s")
	b.ReportMetric(perOp/ref, "x-json+sha256")
}

// BenchmarkDigest hashes a preimage with a 4 KiB normalized prompt:
// canonical JSON (JCS) and sha256, what a resume does per unit. Target: at
// least 20,000 identities/s on one core (go test -bench Digest -cpu 1).
func BenchmarkDigest(b *testing.B) {
	p := benchPreimage()
	b.SetBytes(int64(len(p.Prompt)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Digest(p); err != nil {
			b.Fatal(err)
		}
	}
	reportVsReference(b, p)
}

// BenchmarkNormalizeAndDigest adds normalizing the raw 4 KiB prompt.
func BenchmarkNormalizeAndDigest(b *testing.B) {
	raw := benchPrompt()
	env := EnvFor("/home/ann/src/shop")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Digest(promptPreimage(Normalize(raw, env))); err != nil {
			b.Fatal(err)
		}
	}
	reportVsReference(b, benchPreimage())
}

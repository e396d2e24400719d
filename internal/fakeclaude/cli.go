package fakeclaude

import (
	"testing"

	"github.com/implloop/implloop/internal/scripted"
)

// Model is the model the e2e tests ask Claude Code for: one whose list
// price Claude Code knows, so the total_cost_usd it prints can be checked
// against PriceSonnet45.
const Model = "claude-sonnet-4-5"

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input, Output, CacheWrite, CacheRead float64
}

// PriceSonnet45 is Claude Sonnet 4.5's list price (cache writes at the
// 5-minute rate), the figures Claude Code 2.1.328 computes total_cost_usd
// from.
var PriceSonnet45 = Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}

// CostUSD is what u costs at price p.
func (u Usage) CostUSD(p Price) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheCreationInputTokens)*p.CacheWrite + float64(u.CacheReadInputTokens)*p.CacheRead) / 1e6
}

// CLI returns the path of the real Claude Code binary, installing the
// pinned version with scripts/install-claude.sh when it is not there yet
// (the script is idempotent and prints the path). IMPLLOOP_E2E_CLAUDE,
// when set, names a binary to use instead. It fails the test when there is
// none.
func CLI(t testing.TB) string {
	t.Helper()
	p, err := scripted.InstalledCLI("install-claude.sh", "IMPLLOOP_E2E_CLAUDE")
	if err != nil {
		t.Fatalf("fakeclaude: the Claude Code CLI: %v", err)
	}
	return p
}

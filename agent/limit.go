package agent

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Limit is a call that ended on a usage limit, a rate limit or an
// overload: the provider refused the work for now. It is not the task's
// failure. The loop waits for the limit to lift (or hands the call to a
// fallback agent or model) and calls again, and the wait is never an
// attempt.
//
// Each backend recognises its own CLI's signals (docs/agents.md lists
// them, from the real CLIs run against a scripted API server that
// answered 429s and usage limits): the CLIs all exit 1 (Gemini CLI: the
// HTTP status mod 256) on any failure, so it is their final record that
// says which failure it was, read once the process has ended. An exec
// agent says it by exiting 75 (EX_TEMPFAIL), optionally with a line
// "retry-after: SECONDS" or "retry-after: RFC3339-TIME" on stderr.
type Limit struct {
	// Kind is what refused the call: "usage" (a plan's or an account's
	// limit), "rate" (requests or tokens per minute), "overload" (the
	// provider is busy), or "tempfail" (an exec agent's exit 75).
	Kind string `json:"kind"`
	// Reset is when the limit lifts, as the agent said it; zero when it
	// did not.
	Reset time.Time `json:"reset,omitzero"`
	// Resolution is how precisely Reset was said: a time of day printed
	// to the minute ("resets 3:08pm") lifts somewhere in the minute from
	// Reset on. Zero: exact.
	Resolution time.Duration `json:"resolution,omitempty"`
	// After is how long to wait, when the agent said it relatively
	// ("retry-after: 30", "try again in 2s").
	After time.Duration `json:"after,omitempty"`
	// Message is the agent's own words.
	Message string `json:"message,omitempty"`
}

// ExitTempFail is the exit status by which an exec agent says it hit a
// limit and should be called again later (sysexits.h EX_TEMPFAIL).
const ExitTempFail = 75

// limitOf says whether a finished call of backend name hit a limit. It
// looks only at calls that failed (a non-zero exit or an error result):
// the retries a CLI made on its own and survived are not limits.
func limitOf(name string, res Result, sig signals, stderr []byte, now time.Time) *Limit {
	if res.ExitCode == 0 && !res.IsError {
		return nil
	}
	var l *Limit
	switch name {
	case "exec":
		l = execLimit(res, stderr, now)
	case "claude":
		l = claudeLimit(res, sig, now)
	case "codex":
		l = codexLimit(res, now)
	case "gemini":
		l = geminiLimit(res, stderr, now)
	case "opencode":
		l = opencodeLimit(res, sig, now)
	}
	if l != nil && len(l.Message) > 500 {
		l.Message = l.Message[:500]
	}
	return l
}

var retryAfterLine = regexp.MustCompile(`(?im)^\s*retry-after:\s*(\S+)\s*$`)

// execLimit: exit 75, with the last "retry-after:" line of stderr, if
// any: a number of seconds or an RFC 3339 time.
func execLimit(res Result, stderr []byte, now time.Time) *Limit {
	if res.ExitCode != ExitTempFail {
		return nil
	}
	l := &Limit{Kind: "tempfail", Message: "the agent exited 75 (EX_TEMPFAIL): try again later"}
	ms := retryAfterLine.FindAllSubmatch(stderr, -1)
	if len(ms) == 0 {
		return l
	}
	v := string(ms[len(ms)-1][1])
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 && secs < 1e9 {
		l.After = time.Duration(secs * float64(time.Second))
		l.Message = "the agent exited 75 (EX_TEMPFAIL), retry-after: " + v
		return l
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		l.Reset = t
		l.Message = "the agent exited 75 (EX_TEMPFAIL), retry-after: " + v
		return l
	}
	l.Message = fmt.Sprintf("the agent exited 75 (EX_TEMPFAIL); its retry-after %q is neither seconds nor an RFC 3339 time", v)
	return l
}

var (
	// "You've hit your 5-hour limit · resets 3:08pm (UTC)",
	// "You've hit your weekly limit · resets Dec 4, 8:54pm (UTC)".
	claudeReset = regexp.MustCompile(`resets (?:([A-Z][a-z]{2}) (\d{1,2}), )?(\d{1,2})(?::(\d{2}))?\s?([ap]m) \(([^)]+)\)`)
	// "You will regain access on 2026-12-01 at 15:07 UTC."
	claudeRegain = regexp.MustCompile(`regain access on (\d{4}-\d{2}-\d{2}) at (\d{1,2}):(\d{2}) UTC`)
)

// claudeLimit reads Claude Code's result: api_error "usage_limit_reached"
// (or its "You've hit your ..." text) is a usage limit, lifting at the
// stream-json rate_limit_event's resetsAt or the time in the text; an API
// spend limit ("regain access on DATE at HH:MM UTC") too; a 429, 529 or
// 5xx it already retried for minutes is a rate limit or an overload.
// Billing and permission errors are failures: waiting does not help.
func claudeLimit(res Result, sig signals, now time.Time) *Limit {
	text := strings.TrimSpace(res.Text)
	if text == "" {
		text = res.Error
	}
	usage := sig.apiErr == "usage_limit_reached" || strings.HasPrefix(text, "You've hit your") ||
		strings.HasPrefix(text, "You’ve hit your") || strings.HasPrefix(text, "You're out of usage credits")
	if usage {
		l := &Limit{Kind: "usage", Message: text}
		if sig.resetsAt > 0 {
			l.Reset, l.Resolution = time.Unix(sig.resetsAt, 0), time.Second
		} else if m := claudeReset.FindStringSubmatch(text); m != nil {
			l.Reset, l.Resolution = claudeResetTime(m, now), time.Minute
		}
		return l
	}
	if m := claudeRegain.FindStringSubmatch(text); m != nil {
		l := &Limit{Kind: "usage", Message: text}
		if t, err := time.Parse("2006-01-02 15:04", m[1]+" "+pad2(m[2])+":"+m[3]); err == nil {
			l.Reset, l.Resolution = t, time.Minute
		}
		return l
	}
	switch {
	case sig.apiStatus == http.StatusTooManyRequests:
		return &Limit{Kind: "rate", Message: text}
	case sig.apiStatus == 529, sig.apiStatus == http.StatusServiceUnavailable,
		sig.apiStatus == http.StatusInternalServerError && sig.apiType == "api_error",
		sig.apiType == "overloaded_error":
		return &Limit{Kind: "overload", Message: text}
	}
	return nil
}

// claudeResetTime is the time m (a claudeReset match) names: the next
// such time from now, in the zone it names (the process's own when Go
// does not know it).
func claudeResetTime(m []string, now time.Time) time.Time {
	loc := now.Location()
	if l, err := time.LoadLocation(m[6]); err == nil {
		loc = l
	}
	h, _ := strconv.Atoi(m[3])
	mi, _ := strconv.Atoi(m[4])
	h = clock12(h, m[5] == "pm")
	n := now.In(loc)
	if m[1] != "" {
		mon, err := time.Parse("Jan", m[1])
		d, _ := strconv.Atoi(m[2])
		if err == nil {
			t := time.Date(n.Year(), mon.Month(), d, h, mi, 0, 0, loc)
			if t.Before(n.AddDate(0, -6, 0)) {
				t = t.AddDate(1, 0, 0) // "Jan 2" said in December
			}
			return t
		}
	}
	return nextClock(n, h, mi, time.Minute)
}

var (
	// "... or try again at 3:11 PM.", "... try again at Dec 3rd, 2026 10:44 PM."
	codexAt = regexp.MustCompile(`try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2}) ?([AP]M)`)
	// "Please try again in 2s", "Please retry in 1.5s", "Suggested retry after 30s", "try again in 20ms".
	codex5xx = regexp.MustCompile(`unexpected status 5\d\d\b`)
	retryIn  = regexp.MustCompile(`(?i)(?:try again|retry) (?:in|after) (\d+(?:\.\d+)?) ?(ms|s|sec|secs|seconds?)\b`)
)

// codexLimit reads codex's turn.failed message: "You’ve hit your usage
// limit ... try again at TIME" is a usage limit (codex's local time, to
// the minute); its 429 and rate-limit messages a rate limit; "at
// capacity", "high demand" and 5xx statuses an overload. "Quota
// exceeded" is billing: a failure.
func codexLimit(res Result, now time.Time) *Limit {
	msg := strings.TrimSpace(res.Error)
	switch {
	case strings.Contains(msg, "hit your usage limit"):
		l := &Limit{Kind: "usage", Message: msg}
		if m := codexAt.FindStringSubmatch(msg); m != nil {
			l.Reset, l.Resolution = codexResetTime(m, now), time.Minute
		}
		return l
	case strings.Contains(msg, "last status: 429"), strings.HasPrefix(msg, "rate limit exceeded"):
		l := &Limit{Kind: "rate", Message: msg}
		l.After = retryAfterText(msg)
		return l
	case strings.Contains(msg, "at capacity"), strings.Contains(msg, "high demand"),
		codex5xx.MatchString(msg), strings.Contains(msg, "last status: 5"):
		return &Limit{Kind: "overload", Message: msg}
	}
	return nil
}

func codexResetTime(m []string, now time.Time) time.Time {
	h, _ := strconv.Atoi(m[4])
	mi, _ := strconv.Atoi(m[5])
	h = clock12(h, m[6] == "PM")
	if m[1] != "" {
		mon, err1 := time.Parse("Jan", m[1])
		d, _ := strconv.Atoi(m[2])
		y, err2 := strconv.Atoi(m[3])
		if err1 == nil && err2 == nil {
			return time.Date(y, mon.Month(), d, h, mi, 0, 0, now.Location())
		}
	}
	return nextClock(now, h, mi, time.Minute)
}

// geminiLimit reads Gemini CLI's exit status (the HTTP status mod 256:
// 429 is 173, 503 is 247, 500 is 244) and its message: an exhausted daily
// quota is a usage limit with no reset said; other 429s are rate limits,
// after the delay they suggest; 503 and 500 overloads.
func geminiLimit(res Result, stderr []byte, now time.Time) *Limit {
	msg := strings.TrimSpace(res.Error)
	if msg == "" {
		msg = lastLineOf(stderr)
	}
	switch {
	case strings.Contains(msg, "exhausted your daily quota"):
		return &Limit{Kind: "usage", Message: msg}
	case res.ExitCode == 429%256 || strings.Contains(msg, "RESOURCE_EXHAUSTED") || strings.Contains(msg, "Resource has been exhausted") ||
		strings.Contains(msg, "exceeded your current quota"):
		l := &Limit{Kind: "rate", Message: msg}
		if l.After = retryAfterText(msg); l.After == 0 {
			l.After = retryAfterText(string(stderr))
		}
		return l
	case res.ExitCode == 503%256, res.ExitCode == 500%256, strings.Contains(msg, "model is overloaded"):
		return &Limit{Kind: "overload", Message: msg}
	}
	return nil
}

var opencodeReset = regexp.MustCompile(`reset in (?:(\d+) hours? ?)?(?:(\d+) minutes?)?`)

// opencodeLimit reads opencode's error record, which passes the
// provider's answer through: status 429 or 5xx (529) is a rate limit or
// an overload, lifting when its headers say (retry-after,
// retry-after-ms, anthropic-ratelimit-unified-reset,
// x-ratelimit-reset-*); a usage-limit body is a usage limit;
// insufficient_quota is billing, a failure; opencode's own hosted models
// say "Usage limit reached. It will reset in ...".
func opencodeLimit(res Result, sig signals, now time.Time) *Limit {
	msg := strings.TrimSpace(res.Error)
	body := sig.ocBody
	switch {
	case strings.Contains(body, "insufficient_quota"), strings.Contains(body, "billing"):
		return nil
	case strings.Contains(msg, "Usage limit reached"):
		l := &Limit{Kind: "usage", Message: msg}
		if m := opencodeReset.FindStringSubmatch(msg); m != nil && (m[1] != "" || m[2] != "") {
			h, _ := strconv.Atoi(m[1])
			mi, _ := strconv.Atoi(m[2])
			l.After = time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute
		}
		return l
	case strings.Contains(body, "usage_limit_reached") || sig.ocHeaders["anthropic-ratelimit-unified-status"] == "rejected":
		l := &Limit{Kind: "usage", Message: msg}
		headerReset(l, sig.ocHeaders, now)
		return l
	case sig.ocStatus == http.StatusTooManyRequests:
		l := &Limit{Kind: "rate", Message: msg}
		headerReset(l, sig.ocHeaders, now)
		return l
	case sig.ocStatus >= 500 && sig.ocStatus <= 599:
		l := &Limit{Kind: "overload", Message: msg}
		headerReset(l, sig.ocHeaders, now)
		return l
	}
	return nil
}

// headerReset sets l's reset from HTTP response headers as providers send
// them.
func headerReset(l *Limit, h map[string]string, now time.Time) {
	get := func(k string) string {
		for hk, v := range h {
			if strings.EqualFold(hk, k) {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if v := get("anthropic-ratelimit-unified-reset"); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
			l.Reset, l.Resolution = time.Unix(s, 0), time.Second
			return
		}
	}
	if v := get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			l.After = time.Duration(ms * float64(time.Millisecond))
			return
		}
	}
	if v := get("retry-after"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
			l.After = time.Duration(s * float64(time.Second))
			return
		}
		if t, err := http.ParseTime(v); err == nil {
			l.Reset = t
			return
		}
	}
	var longest time.Duration
	for _, k := range []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"} {
		if d, err := time.ParseDuration(get(k)); err == nil && d > longest {
			longest = d
		}
	}
	l.After = longest
}

// retryAfterText is the delay a message suggests ("try again in 2s"), 0
// when none.
func retryAfterText(s string) time.Duration {
	ms := retryIn.FindAllStringSubmatch(s, -1)
	if len(ms) == 0 {
		return 0
	}
	m := ms[len(ms)-1]
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f < 0 || f > 1e9 {
		return 0
	}
	if m[2] == "ms" {
		return time.Duration(f * float64(time.Millisecond))
	}
	return time.Duration(f * float64(time.Second))
}

// clock12 turns a 12-hour clock's hour into a 24-hour one.
func clock12(h int, pm bool) int {
	h %= 12
	if pm {
		h += 12
	}
	return h
}

// nextClock is the next time of day h:m from now (in now's zone), said
// to resolution: today while its span has not ended, else tomorrow.
func nextClock(now time.Time, h, m int, resolution time.Duration) time.Time {
	t := time.Date(now.Year(), now.Month(), now.Day(), h, m, 0, 0, now.Location())
	if !t.Add(resolution).After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t
}

func pad2(s string) string {
	if len(s) == 1 {
		return "0" + s
	}
	return s
}

func lastLineOf(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}

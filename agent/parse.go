package agent

import (
	"bytes"
	"encoding/json"
)

// Bounds of the accounting parser. Output beyond them still streams to the
// request's writers; it is only not parsed.
const (
	maxLine  = 4 << 20 // a longer JSON line is skipped
	maxWhole = 4 << 20 // a single JSON document (object or array) up to this size is parsed whole
)

// ParseOutput reads an agent's accounting from its complete stdout. The
// accepted shapes, in the order they are tried:
//
//  1. one JSON object: Claude Code's --output-format json result
//     (result, is_error, usage, total_cost_usd, session_id), or Gemini
//     CLI's --output-format json object (response, stats.models, error);
//  2. a JSON array of messages: the last element with type "result";
//  3. JSON lines: the last record with type "result" (Claude Code's
//     stream-json, Gemini CLI's stream-json);
//  4. JSON lines with codex-style "turn.completed" events: their usage summed;
//  5. JSON lines with opencode-style "step_finish" events: tokens and cost summed.
//
// Anything else (plain text) yields a zero Result. ExitCode is not set.
func ParseOutput(out []byte) Result {
	p := newParser()
	p.Write(out)
	return p.result()
}

// parser is an io.Writer that keeps only what accounting needs: the current
// line (bounded), the first maxWhole bytes, the last result record and
// running sums.
type parser struct {
	line     []byte
	lineOver bool

	whole     []byte
	wholeOver bool

	last    *record // the last type:"result" line
	session string  // the latest session id seen on any line

	codex codexSums
	oc    opencodeSums
}

type codexSums struct {
	seen                  bool
	input, cached, output int64
	text                  string
	failed                bool
}

type opencodeSums struct {
	seen                                 bool
	input, output, cacheRead, cacheWrite int64
	cost                                 float64
	text                                 string
	failed                               bool
}

func newParser() *parser { return &parser{} }

func (p *parser) Write(b []byte) (int, error) {
	n := len(b)
	if !p.wholeOver {
		if len(p.whole)+len(b) <= maxWhole {
			p.whole = appendDoubling(p.whole, b, maxWhole)
		} else {
			p.wholeOver, p.whole = true, nil
		}
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		if !p.lineOver {
			if len(p.line)+len(seg) <= maxLine {
				p.line = appendDoubling(p.line, seg, maxLine)
			} else {
				p.lineOver, p.line = true, p.line[:0]
			}
		}
		if i < 0 {
			break
		}
		p.endLine()
		b = b[i+1:]
	}
	return n, nil
}

// appendDoubling is append with capacity doubling: append's own growth
// slows to 1.25x for large slices, which would allocate five times a
// buffer's final size on the way to it. Capacity stays within limit
// unless the data itself needs more.
func appendDoubling(buf, b []byte, limit int) []byte {
	if need := len(buf) + len(b); need > cap(buf) {
		grown := make([]byte, len(buf), max(need, min(2*cap(buf), limit), 4096))
		copy(grown, buf)
		buf = grown
	}
	return append(buf, b...)
}

func (p *parser) endLine() {
	if !p.lineOver {
		p.handleLine(p.line)
	}
	p.line, p.lineOver = p.line[:0], false
	if cap(p.line) > 64<<10 {
		p.line = nil // don't keep a large buffer for the rest of the stream
	}
}

// record is the union of the fields any accepted shape uses.
type record struct {
	Type         string          `json:"type"`
	Result       *string         `json:"result"`
	IsError      bool            `json:"is_error"`
	Usage        *usage          `json:"usage"`
	TotalCostUSD *float64        `json:"total_cost_usd"`
	CostUSD      *float64        `json:"cost_usd"` // older Claude Code
	SessionID    string          `json:"session_id"`
	SessionID2   string          `json:"sessionID"` // opencode
	ThreadID     string          `json:"thread_id"` // codex
	Item         *item           `json:"item"`      // codex
	Part         *part           `json:"part"`      // opencode
	Response     *string         `json:"response"`  // gemini
	Stats        *geminiStats    `json:"stats"`     // gemini
	Status       string          `json:"status"`    // gemini stream-json
	Error        json.RawMessage `json:"error"`
}

type usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CacheRead         int64 `json:"cache_read_input_tokens"`
	CacheWrite        int64 `json:"cache_creation_input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"` // codex: part of input_tokens
}

type item struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type part struct {
	Type   string   `json:"type"`
	Text   string   `json:"text"`
	Cost   float64  `json:"cost"`
	Tokens *ocToken `json:"tokens"`
}

type ocToken struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

// geminiStats covers both Gemini CLI shapes: the json output's
// models.NAME.tokens, and the stream-json result's flat totals.
type geminiStats struct {
	Models map[string]struct {
		Tokens *struct {
			Input      *int64 `json:"input"`
			Prompt     int64  `json:"prompt"`
			Candidates int64  `json:"candidates"`
			Cached     int64  `json:"cached"`
			Thoughts   int64  `json:"thoughts"`
		} `json:"tokens"`
	} `json:"models"`
	InputTokens  *int64 `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	Cached       int64  `json:"cached"`
	Input        *int64 `json:"input"`
}

func (p *parser) handleLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || !bytes.Contains(line, []byte(`"type"`)) {
		return
	}
	var r record
	if json.Unmarshal(line, &r) != nil {
		return
	}
	for _, s := range []string{r.SessionID, r.SessionID2, r.ThreadID} {
		if s != "" {
			p.session = s
		}
	}
	switch r.Type {
	case "result":
		p.last = &r
	case "turn.completed":
		p.codex.seen = true
		if r.Usage != nil {
			p.codex.input += r.Usage.InputTokens
			p.codex.cached += r.Usage.CachedInputTokens
			p.codex.output += r.Usage.OutputTokens
		}
	case "turn.failed":
		p.codex.seen, p.codex.failed = true, true
	case "item.completed":
		if r.Item != nil && r.Item.Type == "agent_message" {
			p.codex.text = r.Item.Text
		}
	case "step_finish":
		p.oc.seen = true
		if r.Part != nil {
			p.oc.cost += r.Part.Cost
			if t := r.Part.Tokens; t != nil {
				p.oc.input += t.Input
				p.oc.output += t.Output + t.Reasoning
				p.oc.cacheRead += t.Cache.Read
				p.oc.cacheWrite += t.Cache.Write
			}
		}
	case "text":
		if r.Part != nil {
			p.oc.text = r.Part.Text
		}
	case "error":
		// opencode's session error carries an error object. codex's
		// {"type":"error","message":...} events include retries
		// ("Reconnecting... 2/5") that a turn can survive; its failures
		// come as turn.failed. Gemini's stream-json "error" is a warning.
		if hasError(r.Error) {
			p.oc.failed = true
		}
	}
}

func (p *parser) result() Result {
	if len(p.line) > 0 && !p.lineOver {
		p.handleLine(p.line) // a last line without a newline
		p.line = p.line[:0]
	}
	if !p.wholeOver {
		doc := bytes.TrimSpace(p.whole)
		if len(doc) > 0 && doc[0] == '{' {
			var r record
			if json.Unmarshal(doc, &r) == nil {
				if res, ok := fromObject(&r); ok {
					return res
				}
			}
		}
		if len(doc) > 0 && doc[0] == '[' {
			var msgs []json.RawMessage
			if json.Unmarshal(doc, &msgs) == nil {
				for i := len(msgs) - 1; i >= 0; i-- {
					var r record
					if json.Unmarshal(msgs[i], &r) == nil && r.Type == "result" {
						return fromResult(&r, p.session)
					}
				}
			}
		}
	}
	switch {
	case p.last != nil:
		return fromResult(p.last, p.session)
	case p.codex.seen:
		c := p.codex
		return Result{
			Text:         c.text,
			IsError:      c.failed,
			InputTokens:  max(0, c.input-c.cached),
			CacheRead:    c.cached,
			OutputTokens: c.output,
			SessionID:    p.session,
		}
	case p.oc.seen:
		o := p.oc
		return Result{
			Text:         o.text,
			IsError:      o.failed,
			InputTokens:  o.input,
			OutputTokens: o.output,
			CacheRead:    o.cacheRead,
			CacheWrite:   o.cacheWrite,
			CostUSD:      o.cost,
			SessionID:    p.session,
		}
	}
	return Result{}
}

// fromObject reads a whole-output JSON object: a Claude-style result, or
// Gemini's json output.
func fromObject(r *record) (Result, bool) {
	if r.Type == "result" || r.Type == "" && (r.Result != nil || r.Usage != nil || r.TotalCostUSD != nil) {
		return fromResult(r, ""), true
	}
	if r.Type == "" && (r.Response != nil || r.Stats != nil || hasError(r.Error)) {
		res := Result{SessionID: r.SessionID, IsError: hasError(r.Error)}
		if r.Response != nil {
			res.Text = *r.Response
		}
		if r.Stats != nil {
			addGeminiStats(&res, r.Stats)
		}
		return res, true
	}
	return Result{}, false
}

// fromResult reads a type:"result" record: Claude Code's, or Gemini's
// stream-json result (stats instead of usage). An empty result text is not
// an error; only is_error (or an error status) is.
func fromResult(r *record, session string) Result {
	res := Result{IsError: r.IsError || r.Status == "error" || hasError(r.Error), SessionID: r.SessionID}
	if res.SessionID == "" {
		res.SessionID = session
	}
	if r.Result != nil {
		res.Text = *r.Result
	}
	if u := r.Usage; u != nil {
		res.InputTokens = u.InputTokens
		res.OutputTokens = u.OutputTokens
		res.CacheRead = u.CacheRead
		res.CacheWrite = u.CacheWrite
	} else if r.Stats != nil {
		addGeminiStats(&res, r.Stats)
	}
	switch {
	case r.TotalCostUSD != nil:
		res.CostUSD = *r.TotalCostUSD
	case r.CostUSD != nil:
		res.CostUSD = *r.CostUSD
	}
	return res
}

func addGeminiStats(res *Result, s *geminiStats) {
	counted := false
	for _, m := range s.Models {
		t := m.Tokens
		if t == nil {
			continue
		}
		counted = true
		in := t.Prompt - t.Cached
		if t.Input != nil {
			in = *t.Input
		}
		res.InputTokens += max(0, in)
		res.CacheRead += t.Cached
		res.OutputTokens += t.Candidates + t.Thoughts
	}
	if counted || s.InputTokens == nil {
		return
	}
	in := *s.InputTokens - s.Cached
	if s.Input != nil {
		in = *s.Input
	}
	res.InputTokens = max(0, in)
	res.CacheRead = s.Cached
	res.OutputTokens = s.OutputTokens
}

func hasError(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) && !bytes.Equal(raw, []byte("false"))
}

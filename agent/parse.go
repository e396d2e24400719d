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

	codex  codexSums
	oc     opencodeSums
	gemini geminiText
	claude claudeSums
	sig    signals

	// onTokens, when set, hears the tokens so far (input of every kind,
	// output) whenever an agent that streams them reports more.
	onTokens func(in, out int64)
}

// claudeSums follows Claude Code's stream-json assistant messages: each
// content block comes as its own line repeating its message's usage, so
// a message counts once, as its last line has it.
type claudeSums struct {
	in, out int64  // messages before the current one
	id      string // the current message
	curIn   int64
	curOut  int64
}

// signals are what an agent's output says about a limit it hit, kept
// for limitOf (limit.go); they never change the figures.
type signals struct {
	// Claude Code: the result's api_error_status, api_error_type and
	// api_error, and the reset of a rejected rate_limit_event.
	apiStatus       int
	apiType, apiErr string
	resetsAt        int64
	// OpenCode: the provider's status, headers and body of its error.
	ocStatus  int
	ocHeaders map[string]string
	ocBody    string
}

func (p *parser) progress(in, out int64) {
	if p.onTokens != nil {
		p.onTokens(in, out)
	}
}

type codexSums struct {
	seen                              bool
	input, cached, cacheWrite, output int64
	text                              string
	failed                            bool
	errText                           string
}

type opencodeSums struct {
	seen                                 bool
	input, output, cacheRead, cacheWrite int64
	cost                                 float64
	text                                 string
	failed                               bool
	errText                              string
}

// geminiText is the assistant text of Gemini CLI's stream-json, which its
// result record does not repeat: the message deltas since the last tool
// call (the json output's response is the last turn's text, too).
type geminiText struct {
	text     []byte
	lastType string
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
	TotalCostUSD *money          `json:"total_cost_usd"`
	CostUSD      *money          `json:"cost_usd"` // older Claude Code
	SessionID    string          `json:"session_id"`
	SessionID2   string          `json:"sessionID"` // opencode
	ThreadID     string          `json:"thread_id"` // codex
	Item         *item           `json:"item"`      // codex
	Part         *part           `json:"part"`      // opencode
	Response     *string         `json:"response"`  // gemini
	Stats        *geminiStats    `json:"stats"`     // gemini
	Status       string          `json:"status"`    // gemini stream-json
	Role         string          `json:"role"`      // gemini stream-json message
	Content      *string         `json:"content"`   // gemini stream-json message
	Error        json.RawMessage `json:"error"`

	// What a limit looks like (limit.go). Claude Code's result, and its
	// failing assistant message, say which API error ended the call;
	// its stream-json rate_limit_event says when a rejected limit lifts.
	APIErrorStatus int             `json:"api_error_status"`
	APIErrorType   string          `json:"api_error_type"`
	APIError       string          `json:"api_error"`
	RateLimitInfo  *rateLimitInfo  `json:"rate_limit_info"`
	Message        json.RawMessage `json:"message"` // Claude Code stream-json: the assistant message (its usage); codex: an error's text
}

// rateLimitInfo is Claude Code's stream-json rate_limit_event payload.
type rateLimitInfo struct {
	Status   string `json:"status"`
	ResetsAt int64  `json:"resetsAt"` // Unix seconds
	Type     string `json:"rateLimitType"`
}

type usage struct {
	InputTokens       count `json:"input_tokens"`
	OutputTokens      count `json:"output_tokens"`
	CacheRead         count `json:"cache_read_input_tokens"`
	CacheWrite        count `json:"cache_creation_input_tokens"`
	CachedInputTokens count `json:"cached_input_tokens"`      // codex: part of input_tokens
	CacheWriteInput   count `json:"cache_write_input_tokens"` // codex: part of input_tokens
}

type item struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type part struct {
	Type   string   `json:"type"`
	Text   string   `json:"text"`
	Cost   money    `json:"cost"`
	Tokens *ocToken `json:"tokens"`
}

type ocToken struct {
	Input     count `json:"input"`
	Output    count `json:"output"`
	Reasoning count `json:"reasoning"`
	Cache     struct {
		Read  count `json:"read"`
		Write count `json:"write"`
	} `json:"cache"`
}

// geminiStats covers both Gemini CLI shapes: the json output's
// models.NAME.tokens, and the stream-json result's flat totals.
type geminiStats struct {
	Models map[string]struct {
		Tokens *struct {
			Input      *count `json:"input"`
			Prompt     count  `json:"prompt"`
			Candidates count  `json:"candidates"`
			Cached     count  `json:"cached"`
			Thoughts   count  `json:"thoughts"`
			Tool       count  `json:"tool"`
		} `json:"tokens"`
	} `json:"models"`
	InputTokens  *count `json:"input_tokens"`
	OutputTokens count  `json:"output_tokens"`
	TotalTokens  count  `json:"total_tokens"`
	Cached       count  `json:"cached"`
	Input        *count `json:"input"`
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
	p.gemini.add(&r)
	switch r.Type {
	case "result":
		p.last = &r
		p.sig.apiStatus, p.sig.apiType, p.sig.apiErr = r.APIErrorStatus, r.APIErrorType, r.APIError
	case "rate_limit_event":
		if i := r.RateLimitInfo; i != nil && i.Status == "rejected" && i.ResetsAt > 0 {
			p.sig.resetsAt = i.ResetsAt
		}
	case "assistant":
		p.claudeMessage(r.Message)
	case "turn.completed":
		p.codex.seen = true
		if r.Usage != nil {
			p.codex.input = addCount(p.codex.input, int64(r.Usage.InputTokens))
			p.codex.cached = addCount(p.codex.cached, int64(r.Usage.CachedInputTokens))
			p.codex.cacheWrite = addCount(p.codex.cacheWrite, int64(r.Usage.CacheWriteInput))
			p.codex.output = addCount(p.codex.output, int64(r.Usage.OutputTokens))
			p.progress(p.codex.input, p.codex.output)
		}
	case "turn.failed":
		p.codex.seen, p.codex.failed = true, true
		p.codex.errText = errorText(r.Error)
	case "item.completed":
		if r.Item != nil && r.Item.Type == "agent_message" {
			p.codex.text = r.Item.Text
		}
	case "step_finish":
		p.oc.seen = true
		if r.Part != nil {
			p.oc.cost += float64(r.Part.Cost)
			if t := r.Part.Tokens; t != nil {
				p.oc.input = addCount(p.oc.input, int64(t.Input))
				p.oc.output = addCount(p.oc.output, addCount(int64(t.Output), int64(t.Reasoning)))
				p.oc.cacheRead = addCount(p.oc.cacheRead, int64(t.Cache.Read))
				p.oc.cacheWrite = addCount(p.oc.cacheWrite, int64(t.Cache.Write))
				p.progress(addCount(addCount(p.oc.input, p.oc.cacheRead), p.oc.cacheWrite), p.oc.output)
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
			p.oc.errText = errorText(r.Error)
			p.opencodeError(r.Error)
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
		res := fromResult(p.last, p.session)
		if res.Text == "" && p.last.Stats != nil {
			res.Text = string(p.gemini.text)
		}
		return res
	case p.codex.seen:
		// codex's input_tokens count the cached reads and the cache
		// writes too (OpenAI style); output_tokens include the
		// reasoning_output_tokens.
		c := p.codex
		return Result{
			Text:         c.text,
			IsError:      c.failed,
			Error:        c.errText,
			InputTokens:  max(0, c.input-c.cached-c.cacheWrite),
			CacheRead:    c.cached,
			CacheWrite:   c.cacheWrite,
			OutputTokens: c.output,
			SessionID:    p.session,
		}
	case p.oc.seen:
		o := p.oc
		return Result{
			Text:         o.text,
			IsError:      o.failed,
			Error:        o.errText,
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
		res := Result{SessionID: r.SessionID, IsError: hasError(r.Error), Error: errorText(r.Error)}
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
	res := Result{IsError: r.IsError || r.Status == "error" || hasError(r.Error), SessionID: r.SessionID, Error: errorText(r.Error)}
	if res.SessionID == "" {
		res.SessionID = session
	}
	if r.Result != nil {
		res.Text = *r.Result
	}
	if u := r.Usage; u != nil {
		res.InputTokens = int64(u.InputTokens)
		res.OutputTokens = int64(u.OutputTokens)
		res.CacheRead = int64(u.CacheRead)
		res.CacheWrite = int64(u.CacheWrite)
	} else if r.Stats != nil {
		addGeminiStats(&res, r.Stats)
	}
	switch {
	case r.TotalCostUSD != nil:
		res.CostUSD = float64(*r.TotalCostUSD)
	case r.CostUSD != nil:
		res.CostUSD = float64(*r.CostUSD)
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
		in := addCount(int64(t.Prompt), -int64(t.Cached))
		if t.Input != nil {
			in = int64(*t.Input)
		}
		res.InputTokens = addCount(res.InputTokens, max(0, in))
		res.CacheRead = addCount(res.CacheRead, int64(t.Cached))
		// As stream-json counts them (its total less its prompt), so that
		// both shapes give the same columns.
		res.OutputTokens = addCount(res.OutputTokens, addCount(addCount(int64(t.Candidates), int64(t.Thoughts)), int64(t.Tool)))
	}
	if counted || s.InputTokens == nil {
		return
	}
	in := addCount(int64(*s.InputTokens), -int64(s.Cached))
	if s.Input != nil {
		in = int64(*s.Input)
	}
	res.InputTokens = max(0, in)
	res.CacheRead = int64(s.Cached)
	// stream-json's output_tokens are the candidates only; the thoughts
	// (and tool-use prompt tokens) are in total_tokens alone.
	res.OutputTokens = max(int64(s.OutputTokens), addCount(int64(s.TotalTokens), -int64(*s.InputTokens)))
}

func hasError(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) && !bytes.Equal(raw, []byte("false"))
}

// add follows Gemini CLI's stream-json: assistant message deltas append to
// the text, which starts again after anything else (a tool call, its
// result), so the text is the last turn's.
func (g *geminiText) add(r *record) {
	switch {
	case r.Type == "message" && r.Role == "assistant" && r.Content != nil:
		if g.lastType != "assistant" {
			g.text = g.text[:0]
		}
		if len(g.text)+len(*r.Content) <= maxLine {
			g.text = append(g.text, *r.Content...)
		}
		g.lastType = "assistant"
	case r.Type == "tool_use" || r.Type == "tool_result" || r.Type == "message":
		g.lastType = r.Type
	}
}

// errorText is the message of an error field as the CLIs write it: a
// string; an object with a message (Gemini CLI, codex), or with
// data.message or a name (opencode).
func errorText(raw json.RawMessage) string {
	if !hasError(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
		Name    string `json:"name"`
		Data    struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return ""
	}
	for _, m := range []string{o.Message, o.Data.Message, o.Name} {
		if m != "" {
			return m
		}
	}
	return ""
}

// StderrError is the message of a JSON error object that ends an agent's
// stderr: Gemini CLI's --output-format json writes its failure there
// ({session_id, error}, pretty-printed after its log lines). "" when the
// stderr ends otherwise.
func StderrError(stderr []byte) string {
	b := bytes.TrimSpace(stderr)
	for i := len(b); i > 0; {
		i = bytes.LastIndexByte(b[:i], '{')
		if i < 0 {
			break
		}
		if i == 0 || b[i-1] == '\n' {
			var r record
			if json.Unmarshal(b[i:], &r) == nil {
				return errorText(r.Error)
			}
		}
	}
	return ""
}

// claudeMessage adds a Claude Code stream-json assistant message's usage
// to the tokens so far.
func (p *parser) claudeMessage(raw json.RawMessage) {
	if len(raw) == 0 || raw[0] != '{' || p.onTokens == nil {
		return
	}
	var m struct {
		ID    string `json:"id"`
		Usage *usage `json:"usage"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Usage == nil {
		return
	}
	c := &p.claude
	if m.ID != c.id {
		c.in, c.out = addCount(c.in, c.curIn), addCount(c.out, c.curOut)
		c.id = m.ID
	}
	u := m.Usage
	c.curIn = addCount(addCount(int64(u.InputTokens), int64(u.CacheRead)), int64(u.CacheWrite))
	c.curOut = int64(u.OutputTokens)
	p.progress(addCount(c.in, c.curIn), addCount(c.out, c.curOut))
}

// opencodeError keeps what an opencode error record says about the
// provider's answer: its status, headers and body (limit.go reads them).
func (p *parser) opencodeError(raw json.RawMessage) {
	var e struct {
		Data struct {
			StatusCode      int               `json:"statusCode"`
			ResponseHeaders map[string]string `json:"responseHeaders"`
			ResponseBody    string            `json:"responseBody"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return
	}
	p.sig.ocStatus, p.sig.ocHeaders = e.Data.StatusCode, e.Data.ResponseHeaders
	p.sig.ocBody = e.Data.ResponseBody
	if len(p.sig.ocBody) > 4096 {
		p.sig.ocBody = p.sig.ocBody[:4096]
	}
}

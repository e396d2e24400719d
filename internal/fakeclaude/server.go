// Package fakeclaude is a scripted Anthropic Messages API server for tests
// that drive the real Claude Code CLI on loopback.
//
// A test starts a Server with a Handler, a func(*Request) Response that
// decides every agent turn (for example: on the first turn call the Write
// tool with a path inside Request.WorkingDir(), and once the tool_result
// is back reply "done"), then runs `claude -p` with Server.Environ, which
// points ANTHROPIC_BASE_URL at the server. The server answers
// POST /v1/messages with server-sent events as the API does (message_start,
// content_block_start / content_block_delta / content_block_stop,
// message_delta, message_stop), answers the side requests Claude Code
// makes (non-streaming calls, count_tokens, probes), logs the ones it does
// not know to the test log, and records the usage it reported for every
// call so that a test can check the figures Claude Code printed against
// Server.Usage.
package fakeclaude

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/scripted"
)

// Handler decides the answer to one Messages call. It may be called from
// several goroutines at once.
type Handler func(*Request) Response

// Options tunes a Server. The zero value is usable.
type Options struct {
	// Side answers the Messages calls that are not agent turns (those that
	// offer no Write tool: quota checks, titles, summaries). Default:
	// DefaultSide. Set it to the agent handler to see every call.
	Side Handler
	// Usage decides the reported usage of a call whose Response leaves
	// Usage zero. Default: DefaultUsage.
	Usage func(*Request, *Response) Usage
}

// Call is the record of one HTTP request the server answered.
// Its SessionID is the X-Claude-Code-Session-Id header, when sent.
type Call struct {
	scripted.Exchange
	Messages   bool // a POST /v1/messages call
	Agent      bool // ... that offered the Write tool (an agent turn)
	Stream     bool
	Model      string
	Tools      int
	MaxTokens  int
	StopReason string
	Content    []string // what the answer held: "text:..." or "tool_use:Name"
	Usage      Usage    // reported usage (Messages calls answered 200 only)
}

// Server is a running fake Messages API on 127.0.0.1.
type Server struct {
	*scripted.Recorder[Call]
	agent Handler
	opts  Options
}

// New starts a server whose agent turns are answered by h, and closes it
// when the test ends.
func New(t testing.TB, h Handler) *Server { return NewWith(t, h, Options{}) }

// NewWith is New with options.
func NewWith(t testing.TB, h Handler, opts Options) *Server {
	t.Helper()
	if opts.Side == nil {
		opts.Side = DefaultSide
	}
	if opts.Usage == nil {
		opts.Usage = DefaultUsage
	}
	s := &Server{Recorder: &scripted.Recorder[Call]{}, agent: h, opts: opts}
	s.Start(t, "fakeclaude", s.serve)
	return s
}

// Env is the environment that points Claude Code at this server, with home
// as its HOME (a temp dir, so no user config or credentials are read), and
// sends anything else it would fetch to the server too (see
// scripted.IsolatedEnv).
func (s *Server) Env(home string) map[string]string {
	env := scripted.IsolatedEnv(s.URL(), home)
	env["ANTHROPIC_BASE_URL"] = s.URL()
	env["ANTHROPIC_API_KEY"] = "dummy"
	env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
	env["DISABLE_AUTOUPDATER"] = "1"
	env["DISABLE_TELEMETRY"] = "1"
	env["DISABLE_ERROR_REPORTING"] = "1"
	return env
}

// Environ is os.Environ() without any ANTHROPIC_*, CLAUDE*, XDG_* or
// OTEL_* variable of the calling process, plus Env(home): a full
// environment for exec.Cmd.Env.
func (s *Server) Environ(home string) []string {
	return scripted.Environ(s.Env(home), "ANTHROPIC_", "CLAUDE")
}

// Usage sums the usage reported over all Messages calls.
func (s *Server) Usage() Usage { return SumUsage(s.Calls()) }

// UsageBySession sums the reported usage per X-Claude-Code-Session-Id
// ("" for calls without the header).
func (s *Server) UsageBySession() map[string]Usage {
	return scripted.UsageBySession[Usage](s.Calls())
}

// SumUsage sums the reported usage of the Messages calls in calls.
func SumUsage(calls []Call) Usage { return scripted.SumUsage[Usage](calls) }

// Counted is the call's reported usage and session; it counts when it is
// a Messages call answered 200.
func (c Call) Counted() (Usage, string, bool) {
	return c.Usage, c.SessionID, c.Messages && c.Status == http.StatusOK
}

// Summary is a one-line-per-call account of the traffic, for test logs.
func (s *Server) Summary() string {
	var b strings.Builder
	for _, c := range s.Calls() {
		b.WriteString(c.Line())
		if c.Messages {
			fmt.Fprintf(&b, " model=%s stream=%v tools=%d max_tokens=%d stop=%s content=%q usage=%+v",
				c.Model, c.Stream, c.Tools, c.MaxTokens, c.StopReason, c.Content, c.Usage)
		}
		if c.SessionID != "" {
			fmt.Fprintf(&b, " session=%s", c.SessionID)
		}
		fmt.Fprintf(&b, " ua=%q\n", c.UserAgent)
	}
	return b.String()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, in scripted.Incoming) Call {
	began := time.Now()
	body := in.Body
	req := &Request{Seq: in.Seq, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	call := Call{Exchange: scripted.NewExchange(r, in, "X-Claude-Code-Session-Id")}

	path := strings.TrimSuffix(req.Path, "/")
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		call.Messages = true
		s.messages(w, req, &call)
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		call.Status = http.StatusOK
		_ = scripted.WriteJSON(w, call.Status, obj{"input_tokens": len(body)/4 + 1})
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		// Reachability probes and metadata fetches: an empty success.
		call.Status = http.StatusOK
		if path != "" && path != "/v1" && path != "/v1/models" {
			s.Logf("unknown %s %s (answered 200 {})", r.Method, r.URL)
		}
		if path == "/v1/models" {
			_ = scripted.WriteJSON(w, call.Status, obj{"data": []obj{}, "has_more": false, "first_id": nil, "last_id": nil})
		} else if r.Method == http.MethodGet {
			_ = scripted.WriteJSON(w, call.Status, obj{})
		} else {
			w.WriteHeader(call.Status)
		}
	default:
		call.Status = http.StatusNotFound
		s.Logf("unknown %s %s body=%.300q (answered 404)", r.Method, r.URL, body)
		_ = writeError(w, call.Status, "not_found_error", "fakeclaude: no such endpoint")
	}
	call.Duration = time.Since(began)
	return call
}

func (s *Server) messages(w http.ResponseWriter, req *Request, call *Call) {
	if err := req.decodeMessages(); err != nil {
		call.Status = http.StatusBadRequest
		s.Logf("#%d bad Messages body: %v", req.Seq, err)
		_ = writeError(w, call.Status, "invalid_request_error", err.Error())
		return
	}
	call.Agent, call.Stream, call.Model, call.Tools, call.MaxTokens =
		req.IsAgentTurn(), req.Stream, req.Model, len(req.Tools), req.MaxTokens

	h := s.opts.Side
	if call.Agent {
		h = s.agent
	}
	resp, err := scripted.Decide(func() Response { return h(req) })
	if err != nil {
		s.Errorf("#%d handler: %v", req.Seq, err)
		call.Status = http.StatusInternalServerError
		_ = writeError(w, call.Status, "api_error", err.Error())
		return
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		call.Status = resp.Status
		_ = writeError(w, resp.Status, resp.ErrorType, resp.ErrorMsg)
		return
	}
	if len(resp.Content) == 0 {
		s.Logf("#%d the script gave no answer; replying with an empty end_turn text", req.Seq)
		resp.Content = []Content{Text("(fakeclaude: no scripted answer)")}
	}
	u := resp.Usage
	if u.IsZero() {
		u = s.opts.Usage(req, &resp)
	}
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	msgID := s.NextID("msg")
	ids := func() string { return s.NextID("toolu") }
	call.Status, call.Usage, call.StopReason = http.StatusOK, u, resp.stopReason()
	if req.Stream {
		err = writeStream(w, msgID, model, &resp, u, ids)
	} else {
		err = writeMessage(w, msgID, model, &resp, u, ids)
	}
	for _, c := range resp.Content {
		if c.Type == "tool_use" {
			call.Content = append(call.Content, "tool_use:"+c.Name)
		} else {
			call.Content = append(call.Content, "text:"+c.Text)
		}
	}
	if err != nil {
		s.Logf("#%d writing the answer: %v", req.Seq, err)
	}
}

// DefaultSide answers Messages calls that are not agent turns: a short
// text that ends the turn. Claude Code's side calls (quota check, topic or
// title detection) accept any text.
func DefaultSide(req *Request) Response {
	return Reply("ok")
}

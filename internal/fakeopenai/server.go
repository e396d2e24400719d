// Package fakeopenai is a scripted OpenAI Responses API server for tests
// that drive the real OpenAI Codex CLI on loopback.
//
// A test starts a Server with a Handler, a func(*Request) Response that
// decides every agent turn (for example: on the first turn call codex's
// shell tool to write a file, and once the tool's output is back reply
// "done"), then runs `codex exec` with Server.Environ, whose CODEX_HOME
// holds a config.toml that defines this server as codex's model provider
// (wire_api "responses", no retries, analytics and update checks off). The
// server answers POST /v1/responses with server-sent events as the API
// does (response.created, response.output_item.added / deltas /
// response.output_item.done, response.completed with the usage), logs any
// other request to the test log, and records the usage it reported for
// every call so that a test can check the figures codex printed, and what
// implloop made of them, against Server.Usage.
package fakeopenai

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/implloop/implloop/internal/scripted"
)

// Handler decides the answer to one Responses call. It may be called from
// several goroutines at once.
type Handler func(*Request) Response

// Options tunes a Server. The zero value is usable.
type Options struct {
	// Usage decides the reported usage of a call whose Response leaves
	// Usage zero. Default: DefaultUsage.
	Usage func(*Request, *Response) Usage
}

// Call is the record of one HTTP request the server answered.
// Its SessionID is the session_id header codex sends: its thread id.
type Call struct {
	scripted.Exchange
	Responses bool // a POST /v1/responses call
	Agent     bool // ... that offered the shell tool (an agent turn)
	Stream    bool
	Model     string
	Tools     int
	Output    []string // what the answer held: "message:...", "function_call:NAME", "custom_tool_call:NAME"
	Usage     Usage    // reported usage (Responses calls answered 200 only)
}

// Server is a running fake Responses API on 127.0.0.1.
type Server struct {
	*scripted.Recorder[Call]
	agent Handler
	opts  Options
}

// New starts a server whose calls are answered by h, and closes it when
// the test ends.
func New(t testing.TB, h Handler) *Server { return NewWith(t, h, Options{}) }

// NewWith is New with options.
func NewWith(t testing.TB, h Handler, opts Options) *Server {
	t.Helper()
	if opts.Usage == nil {
		opts.Usage = DefaultUsage
	}
	s := &Server{Recorder: &scripted.Recorder[Call]{}, agent: h, opts: opts}
	s.Start(t, "fakeopenai", s.serve)
	return s
}

// APIKeyEnv is the variable codex reads the API key from (the provider's
// env_key), so that no real OPENAI_API_KEY is ever sent anywhere.
const APIKeyEnv = "FAKEOPENAI_API_KEY"

// Config is the config.toml that makes codex use this server and nothing
// else: a model provider of its own, no retries (a failed call fails the
// test now, not after minutes of backoff), no analytics, feedback,
// telemetry, history, update check or plugin sync.
func (s *Server) Config() string {
	return `# Written by fakeopenai: codex talks to the scripted server only.
model = "` + Model + `"
model_provider = "fakeopenai"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[history]
persistence = "none"

# Off: fetching the curated plugin list (github.com, chatgpt.com) and
# connectors at startup, and retrying a refused connection forever.
[features]
plugins = false
remote_plugin = false
apps = false
unbounded_connection_retries = false

[model_providers.fakeopenai]
name = "fakeopenai"
base_url = "` + s.URL() + `/v1"
wire_api = "responses"
env_key = "` + APIKeyEnv + `"
request_max_retries = 0
stream_max_retries = 0
`
}

// Env is the environment that points codex at this server: home (a temp
// dir) as HOME and home/.codex as CODEX_HOME, where Env writes Config as
// config.toml, so that the user's ~/.codex is never read; the API key
// variable; and everything else codex would fetch sent to the server too
// (see scripted.IsolatedEnv).
func (s *Server) Env(home string) map[string]string {
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		s.Fatalf("%v", err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(s.Config()), 0o644); err != nil {
		s.Fatalf("%v", err)
	}
	env := scripted.IsolatedEnv(s.URL(), home)
	env["CODEX_HOME"] = codexHome
	env[APIKeyEnv] = "dummy"
	// codex refuses to make its helper binaries (codex-linux-sandbox,
	// which its bubblewrap sandbox execs) under the temp directory, and
	// a test's CODEX_HOME is under it: with bwrap installed, every shell
	// call then fails. A temp directory of its own, in home, lets it.
	tmp := filepath.Join(home, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		s.Fatalf("%v", err)
	}
	env["TMPDIR"] = tmp
	return env
}

// Environ is os.Environ() without any OPENAI_*, CODEX_*, XDG_* or OTEL_*
// variable of the calling process, plus Env(home): a full environment for
// exec.Cmd.Env.
func (s *Server) Environ(home string) []string {
	return scripted.Environ(s.Env(home), "OPENAI_", "CODEX_")
}

// Usage sums the usage reported over all Responses calls.
func (s *Server) Usage() Usage { return SumUsage(s.Calls()) }

// SumUsage sums the reported usage of the Responses calls in calls.
func SumUsage(calls []Call) Usage { return scripted.SumUsage[Usage](calls) }

// Counted is the call's reported usage and session; it counts when it is
// a Responses call answered 200.
func (c Call) Counted() (Usage, string, bool) {
	return c.Usage, c.SessionID, c.Responses && c.Status == http.StatusOK
}

// UsageBySession sums the reported usage per codex session (thread) id.
func (s *Server) UsageBySession() map[string]Usage {
	return scripted.UsageBySession[Usage](s.Calls())
}

// Sessions lists the session ids of the Responses calls in the order of
// their first call.
func (s *Server) Sessions() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range s.Calls() {
		if c.Responses && !seen[c.SessionID] {
			seen[c.SessionID] = true
			out = append(out, c.SessionID)
		}
	}
	return out
}

// Summary is a one-line-per-call account of the traffic, for test logs.
func (s *Server) Summary() string {
	var b strings.Builder
	for _, c := range s.Calls() {
		b.WriteString(c.Line())
		if c.Responses {
			fmt.Fprintf(&b, " model=%s stream=%v tools=%d output=%q usage=%+v session=%s",
				c.Model, c.Stream, c.Tools, c.Output, c.Usage, c.SessionID)
		}
		fmt.Fprintf(&b, " ua=%q\n", c.UserAgent)
	}
	return b.String()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, in scripted.Incoming) Call {
	began := time.Now()
	body := in.Body
	req := &Request{Seq: in.Seq, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	call := Call{Exchange: scripted.NewExchange(r, in, "Session-Id")}

	if req.IsResponses() {
		call.Responses = true
		s.responses(w, req, &call)
	} else {
		// Anything else (a probe, or a request that meant to leave the
		// machine and came through the proxy variables) is refused, and
		// shows in Calls.
		call.Status = http.StatusNotFound
		s.Logf("unknown %s %s body=%.300q (answered 404)", r.Method, r.URL, body)
		_ = writeError(w, call.Status, "fakeopenai: no such endpoint")
	}
	call.Duration = time.Since(began)
	return call
}

func (s *Server) responses(w http.ResponseWriter, req *Request, call *Call) {
	if err := req.decodeResponses(); err != nil {
		call.Status = http.StatusBadRequest
		s.Logf("#%d bad Responses body: %v", req.Seq, err)
		_ = writeError(w, call.Status, err.Error())
		return
	}
	call.Agent, call.Stream, call.Model, call.Tools = req.IsAgentTurn(), req.Stream, req.Model, len(req.Tools)
	resp, err := scripted.Decide(func() Response { return s.agent(req) })
	if err != nil {
		s.Errorf("#%d handler: %v", req.Seq, err)
		call.Status = http.StatusInternalServerError
		_ = writeError(w, call.Status, err.Error())
		return
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		call.Status = resp.Status
		if resp.Error != nil {
			_ = scripted.WriteJSON(w, resp.Status, obj{"error": resp.Error})
			return
		}
		_ = writeError(w, resp.Status, resp.ErrorMsg)
		return
	}
	if len(resp.Output) == 0 {
		s.Logf("#%d the script gave no answer; replying with an empty message", req.Seq)
		resp.Output = []Output{Text("(fakeopenai: no scripted answer)")}
	}
	u := resp.Usage
	if u.IsZero() {
		u = s.opts.Usage(req, &resp)
	}
	a, err := newAnswer(s.NextID("resp"), req.Model, &resp, s.NextID)
	if err != nil {
		s.Errorf("#%d answer: %v", req.Seq, err)
		call.Status = http.StatusInternalServerError
		_ = writeError(w, call.Status, err.Error())
		return
	}
	call.Status, call.Usage = http.StatusOK, u
	for _, o := range resp.Output {
		if o.Type == "message" {
			call.Output = append(call.Output, "message:"+o.Text)
		} else {
			call.Output = append(call.Output, o.Type+":"+o.Name)
		}
	}
	if req.Stream {
		err = a.stream(w, u)
	} else {
		err = a.writeWhole(w, u)
	}
	if err != nil {
		s.Logf("#%d writing the answer: %v", req.Seq, err)
	}
}

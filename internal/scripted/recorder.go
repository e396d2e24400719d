package scripted

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Recorder is the part of a scripted server that does not depend on its
// wire format: the HTTP server on 127.0.0.1, a sequence number for every
// request, ids for what it answers, and the record (of the server's type
// C) of every call. A server embeds it and so has URL, Close and Calls.
type Recorder[C any] struct {
	t    testing.TB
	name string
	srv  *httptest.Server

	mu    sync.Mutex
	seq   int
	ids   int
	calls []C
}

// Incoming is what Serve hands a server's handler: the request's sequence
// number and its whole body.
type Incoming struct {
	Seq  int
	Body []byte
}

// Start starts serving with serve on a loopback port, and closes the
// server when the test ends. name prefixes its log lines.
func (r *Recorder[C]) Start(t testing.TB, name string, serve func(http.ResponseWriter, *http.Request, Incoming) C) {
	r.t, r.name = t, name
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.seq++
		in := Incoming{Seq: r.seq, Body: body}
		r.mu.Unlock()
		c := serve(w, req, in)
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
}

// URL is the base URL, e.g. "http://127.0.0.1:41234".
func (r *Recorder[C]) URL() string { return r.srv.URL }

// Close stops the server. It is safe to call more than once.
func (r *Recorder[C]) Close() {
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// Calls returns a copy of every request's record, in arrival order.
func (r *Recorder[C]) Calls() []C {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]C(nil), r.calls...)
}

// NextID is a fresh id for something the server answers: prefix, then
// "_fake" and a number.
func (r *Recorder[C]) NextID(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids++
	return fmt.Sprintf("%s_fake%06d", prefix, r.ids)
}

// Logf writes to the test log, prefixed with the server's name; it is a
// no-op once the test has ended.
func (r *Recorder[C]) Logf(format string, args ...any) {
	defer func() { _ = recover() }() // logging after the test ended panics
	r.t.Logf(r.name+": "+format, args...)
}

// Errorf fails the test with a message prefixed with the server's name.
func (r *Recorder[C]) Errorf(format string, args ...any) {
	r.t.Errorf(r.name+": "+format, args...)
}

// Fatalf fails the test now (call it from the test's goroutine only).
func (r *Recorder[C]) Fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf(r.name+": "+format, args...)
}

// Decide calls a script's handler, turning a panic into an error so that
// a broken script fails the test instead of killing the server.
func Decide[A any](handler func() A) (a A, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return handler(), nil
}

// Turns is the Turns of a server: turns[n] answers the n-th turn of each
// conversation (n = the request's Turn(), 0 for its first call), done
// every turn past the last.
func Turns[R interface{ Turn() int }, A any, H ~func(R) A](done H, turns ...H) H {
	return func(r R) A {
		if n := r.Turn(); n < len(turns) {
			return turns[n](r)
		}
		return done(r)
	}
}

// Counted is a server's record of one call, as the usage sums read it.
type Counted[U any] interface {
	// Counted returns the usage the server reported for the call, the
	// session it belongs to, and whether it counts at all (a model API
	// call answered 200).
	Counted() (u U, session string, ok bool)
}

// Adder is a usage type: figures that add up field by field.
type Adder[U any] interface{ Add(U) U }

// SumUsage sums the usage of the calls that count.
func SumUsage[U Adder[U], C Counted[U]](calls []C) U {
	var sum U
	for _, c := range calls {
		if u, _, ok := c.Counted(); ok {
			sum = sum.Add(u)
		}
	}
	return sum
}

// UsageBySession sums the usage of the calls that count, per session.
func UsageBySession[U Adder[U], C Counted[U]](calls []C) map[string]U {
	out := map[string]U{}
	for _, c := range calls {
		if u, session, ok := c.Counted(); ok {
			out[session] = out[session].Add(u)
		}
	}
	return out
}

// Exchange is what a scripted server records of every HTTP request it
// answered, whatever its API: each server's call record embeds it.
type Exchange struct {
	Seq       int
	Method    string
	Path      string
	Query     string
	UserAgent string
	SessionID string // the header the CLI names its session with, when sent
	Status    int
	Duration  time.Duration
}

// NewExchange begins the record of request r, numbered in.Seq; session
// names the header that carries the CLI's session id.
func NewExchange(r *http.Request, in Incoming, session string) Exchange {
	return Exchange{Seq: in.Seq, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		UserAgent: r.UserAgent(), SessionID: r.Header.Get(session)}
}

// Line is how a Summary line begins: "#3 POST /v1/messages?beta=true ->
// 200 (12ms)".
func (x Exchange) Line() string {
	q := ""
	if x.Query != "" {
		q = "?" + x.Query
	}
	return fmt.Sprintf("#%d %s %s%s -> %d (%s)", x.Seq, x.Method, x.Path, q, x.Status, x.Duration.Round(time.Millisecond))
}

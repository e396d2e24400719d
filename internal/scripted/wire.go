package scripted

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// SSE writes server-sent events to an answer, flushing after each.
type SSE struct {
	w http.ResponseWriter
	f http.Flusher
}

// NewSSE starts an event stream: it sets the headers every streaming API
// sends, plus extra, and writes status 200.
func NewSSE(w http.ResponseWriter, extra map[string]string) SSE {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	for k, v := range extra {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return SSE{w, f}
}

// Event writes one event named name whose data is data as JSON.
func (s SSE) Event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

// Chunks splits s into about n pieces on rune boundaries (at least one
// piece, possibly empty), so that streamed deltas really are partial.
func Chunks(s string, n int) []string {
	rs := []rune(s)
	if len(rs) == 0 || n <= 1 {
		return []string{s}
	}
	size := (len(rs) + n - 1) / n
	var out []string
	for len(rs) > 0 {
		k := min(size, len(rs))
		out = append(out, string(rs[:k]))
		rs = rs[k:]
	}
	return out
}

// WriteJSON answers with status and v as a JSON body.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}

// Event is one server-sent event as a client reads it back.
type Event struct {
	Name string
	Data map[string]any
}

// ReadSSE reads an event stream to its end (for tests of the servers).
func ReadSSE(r io.Reader) ([]Event, error) {
	var out []Event
	var cur Event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				return out, fmt.Errorf("data line %q: %w", line, err)
			}
		case line == "":
			if cur.Name != "" {
				out = append(out, cur)
			}
			cur = Event{}
		}
	}
	return out, sc.Err()
}

// PostJSON posts body as JSON to url with the extra header fields, for
// tests of the servers; the answer's body is closed when the test ends.
func PostJSON(t testing.TB, url string, body any, header map[string]string) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

package boundary

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/implloop/implloop/internal/gitcmd"
)

// Patch is one pair's patch as git prints it, cut at the limit Patches
// was given.
type Patch struct {
	Text []byte
	// Size is the whole patch's length in bytes, Text's included.
	Size int
	// Truncated is set when Text holds only the first bytes of the patch
	// (whole lines).
	Truncated bool
}

// Patches is, for each pair of boundary commits (from, to), the patch
// from the first to the second (renames detected), in one git call however
// many pairs there are: the HTML report asks for every task of a run at
// once. Each patch keeps at most limit bytes (whole lines); git's output
// is read as it comes, so a huge patch never sits in memory whole.
func Patches(ctx context.Context, repoDir string, pairs [][2]string, limit int) ([]Patch, error) {
	out := make([]Patch, len(pairs))
	if len(pairs) == 0 {
		return out, nil
	}
	g, err := openGit(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	for _, p := range pairs {
		if !isHexID(p[0]) || !isHexID(p[1]) {
			return nil, fmt.Errorf("patches: boundary commits expected, got %q..%q", p[0], p[1])
		}
	}
	args := []string{"diff-tree", "--stdin", "--always", "-r", "-p", "-M", "--no-color", "--no-ext-diff", "--no-textconv"}
	pr, pw := io.Pipe()
	var runErr error
	var stderr []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, stderr, runErr = gitcmd.Run(ctx, gitcmd.Options{Dir: g.root, Env: []string{"GIT_INDEX_FILE=" + g.noIndex()}, Stdin: g.diffTreeInput(pairs), Stdout: pw}, args...)
		pw.CloseWithError(runErr)
	}()
	perr := splitPatches(pr, pairs, limit, out)
	_, _ = io.Copy(io.Discard, pr)
	<-done
	if runErr != nil {
		return nil, gitError(ctx, g.root, runErr, stderr)
	}
	return out, perr
}

// splitPatches reads diff-tree --stdin's output: each pair starts with a
// line holding its commit id alone (patch lines all start with a prefix
// or a keyword, never a bare id).
func splitPatches(r io.Reader, pairs [][2]string, limit int, out []Patch) error {
	br := bufio.NewReaderSize(r, 64<<10)
	i := -1
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: keep reading it.
			rest := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				rest = append(rest, line...)
			}
			line = rest
		}
		if len(line) > 0 {
			if next := i + 1; next < len(pairs) && string(bytes.TrimRight(line, "\n")) == pairs[next][1] {
				i = next
			} else if i < 0 {
				return fmt.Errorf("git diff-tree --stdin: unexpected first line %q", clip(line))
			} else {
				p := &out[i]
				p.Size += len(line)
				if !p.Truncated && len(p.Text)+len(line) <= limit {
					p.Text = append(p.Text, line...)
				} else {
					p.Truncated = true
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if i != len(pairs)-1 {
		return fmt.Errorf("git diff-tree --stdin: %d of %d pairs answered", i+1, len(pairs))
	}
	return nil
}

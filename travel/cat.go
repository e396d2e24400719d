package travel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/implloop/implloop/internal/gitcmd"
)

// catSessions are the `git cat-file --batch` processes every object a
// pull reads goes through (catBatch uses those its context carries, for
// their directory): a pull reads in rounds (the records commits, their
// trees, their files, the seals and their trees, the signed commits,
// the blobs), and each round was a process of its own, about ten a
// pull, one after the other. A round takes the first session that is
// not busy with another (a pull reads blobs while it decodes the next
// runs' files, and verifies while it reads: rounds never wait for each
// other), and a process of its own when all are. Each starts on its
// first round.
type catSessions struct {
	dir string
	s   [3]catSession
}

// catSession is one of them.
type catSession struct {
	ctx context.Context
	dir string

	mu     sync.Mutex
	in     *os.File // git's standard input
	outR   *os.File // and its output
	out    *bufio.Reader
	done   chan error // git's end
	broken error      // the session cannot go on (or ended): its rounds go elsewhere
}

type catKey struct{}

// withCatSessions is ctx carrying catSessions of dir, and the function
// that ends them.
func withCatSessions(ctx context.Context, dir string) (context.Context, func()) {
	p := &catSessions{dir: dir}
	for i := range p.s {
		p.s[i].ctx, p.s[i].dir = ctx, dir
	}
	return context.WithValue(ctx, catKey{}, p), func() {
		for i := range p.s {
			p.s[i].close()
		}
	}
}

// catBatchIn is catBatch through one of ctx's sessions of dir; ok false
// when it has none, or none free.
func catBatchIn(ctx context.Context, dir string, ids []string, fn func(i int, typ string, size int64, r io.Reader) error) (ok bool, err error) {
	p, _ := ctx.Value(catKey{}).(*catSessions)
	if p == nil || p.dir != dir {
		return false, nil
	}
	for i := range p.s {
		if ok, err := p.s[i].batch(ids, fn); ok {
			return true, err
		}
	}
	return false, nil
}

// start starts git (s.mu held). Its input and output are pipes of the
// system's, handed to git as they are: nothing of this process copies
// them, so that git's end (cancelled, or dead of its own) ends a round
// under way (its reads see the output's end, its writes the input's),
// and git's wait waits for nothing else.
func (s *catSession) start() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	s.in, s.outR, s.out, s.done = inW, outR, bufio.NewReaderSize(outR, 64<<10), make(chan error, 1)
	go func() {
		// No --buffer: git answers each object as it is asked for.
		_, _, err := gitcmd.Run(s.ctx, gitcmd.Options{Dir: s.dir, Stdin: inR, Stdout: outW}, "cat-file", "--batch")
		inR.Close()
		outW.Close()
		s.done <- err
	}()
	return nil
}

// batch is catBatch through the session: the objects ids, in order, to
// fn; the first object git does not have is a *catError, and fn sees no
// object after it (nor after an error of its own), as catBatch. ok
// false: the session is busy with another round (or broken), and did
// nothing.
func (s *catSession) batch(ids []string, fn func(i int, typ string, size int64, r io.Reader) error) (ok bool, err error) {
	if !s.mu.TryLock() {
		return false, nil
	}
	defer s.mu.Unlock()
	if s.broken != nil {
		return false, nil
	}
	return true, s.round(ids, fn)
}

// round is one batch (s.mu held).
func (s *catSession) round(ids []string, fn func(i int, typ string, size int64, r io.Reader) error) error {
	if s.in == nil {
		if err := s.start(); err != nil {
			s.broken = err
			return err
		}
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(s.in, strings.Join(ids, "\n")+"\n")
		wrote <- err
	}()
	var ferr error
	for i := range ids {
		header, err := s.out.ReadSlice('\n')
		if err != nil {
			s.broken = fmt.Errorf("reading object %s: %w", ids[i], err)
			break
		}
		typ, size, ok := parseCatHeader(header)
		if !ok { // missing: no content follows
			if ferr == nil {
				ferr = &catError{i, fmt.Errorf("object %s: %s", ids[i], strings.TrimSpace(string(header)))}
			}
			continue
		}
		lr := io.LimitedReader{R: s.out, N: size}
		if ferr == nil {
			ferr = fn(i, typ, size, &lr)
		}
		// The rest of it, and the newline after the content.
		if _, err := s.out.Discard(int(lr.N) + 1); err != nil {
			s.broken = fmt.Errorf("reading object %s: %w", ids[i], err)
			break
		}
	}
	if s.broken != nil {
		s.in.Close() // git ends; the write with it
		<-wrote
		return s.broken
	}
	if err := <-wrote; err != nil {
		s.broken = fmt.Errorf("asking for objects: %w", err)
		return s.broken
	}
	return ferr
}

// close ends git, if it started; later rounds go elsewhere.
func (s *catSession) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		s.broken = errors.New("the object reader was closed")
	}
	if s.in == nil {
		return
	}
	s.in.Close()
	<-s.done
	s.outR.Close()
	s.in, s.outR = nil, nil
}

package boundary

// Test-only options of Take.

// WithPrevHead gives Take only the previous boundary's HEAD: a HEAD move
// since is looked into, as with WithPrev.
func WithPrevHead(head string) Option {
	return func(o *options) { o.prev, o.prevGiven = &Snapshot{Head: head}, true }
}

// withSlowReadOnly makes a read-only Take build its tree the long way
// (`git add -A` into a copy of the real index, `git write-tree`), never
// from git status alone (statusSnapshot).
func withSlowReadOnly() Option { return func(o *options) { o.slowRO = true } }

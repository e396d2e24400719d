package boundary

// Test-only options of Take.

// WithPrevHead gives Take only the previous boundary's HEAD: a HEAD move
// since is looked into, as with WithPrev.
func WithPrevHead(head string) Option {
	return func(o *options) { o.prev, o.prevGiven = &Snapshot{Head: head}, true }
}

// Package cutbody cuts a body short on purpose, for tests: the proxies
// of the resumable-upload and continued-download tests put it in front of
// a request or response body to play a connection that drops mid-way.
package cutbody

import (
	"errors"
	"io"
)

// ErrCut is what a Body returns once its bytes are spent.
var ErrCut = errors.New("cutbody: connection cut on purpose")

// Body passes Left bytes of the body it wraps, then fails with ErrCut,
// running OnCut once (when set) at that moment.
type Body struct {
	io.ReadCloser
	Left  int64
	OnCut func()
}

func (c *Body) Read(p []byte) (int, error) {
	if c.Left <= 0 {
		if c.OnCut != nil {
			c.OnCut()
			c.OnCut = nil
		}
		return 0, ErrCut
	}
	if int64(len(p)) > c.Left {
		p = p[:c.Left]
	}
	n, err := c.ReadCloser.Read(p)
	c.Left -= int64(n)
	return n, err
}

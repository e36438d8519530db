package sweep

import (
	"testing"
	"time"

	"github.com/claimcheck/claimcheck/clock"
)

// A request counts as overlapped when a page was in flight at any time
// during it: at its start, at its end, or in between.
func TestDoneClassifiesByPageOverlap(t *testing.T) {
	fc := clock.NewFake(time.Unix(0, 0))
	s := New(Config{}, nil, nil, nil, fc, nil, nil)
	fc.Advance(time.Minute)
	quiet := s.Begin()
	s.Done(quiet)

	across := s.Begin()
	s.pageSeq.Add(1) // a page starts and ends during the request
	s.pageSeq.Add(1)
	s.Done(across)

	s.pageSeq.Add(1) // a page in flight when the request starts
	during := s.Begin()
	s.pageSeq.Add(1)
	s.Done(during)

	if qn, _ := s.latency.quiet.take(); qn != 1 {
		t.Errorf("%d quiet requests, want 1", qn)
	}
	if on, _ := s.latency.overlapped.take(); on != 2 {
		t.Errorf("%d overlapped requests, want 2", on)
	}
	if !s.idleSince().Equal(time.Unix(60, 0)) {
		t.Errorf("Begin must record an operation like Touch: idle since %v", s.idleSince())
	}
}

// The engine times every claim operation: timing must not allocate.
func TestBeginDoneAllocateNothing(t *testing.T) {
	s := New(Config{}, nil, nil, nil, clock.Real{}, nil, nil)
	if n := testing.AllocsPerRun(1000, func() { s.Done(s.Begin()) }); n != 0 {
		t.Fatalf("Begin+Done allocate %v times per request", n)
	}
}

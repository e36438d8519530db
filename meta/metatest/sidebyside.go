package metatest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Side-by-side page measurements (docs/PERFORMANCE.md, "Audit trails
// folded into tombstones"): the same listing over two stores or servers
// built alike, walked whole in turn.

// MeasuredCount reads the positive count of env (at most most, when
// most > 0); the test is skipped when env is unset: a measurement taken
// on demand.
func MeasuredCount(t *testing.T, env string, most int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skip(env + " is not set: a measurement, taken on demand")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || (most > 0 && n > most) {
		t.Fatalf("%s=%q: want a positive number (at most %d)", env, v, most)
	}
	return n
}

// PageWalk reads the page after a seq and returns how many events it
// has and the seq of its last one.
type PageWalk func(after int64) (events int, last int64, err error)

// SideBySidePages walks every listing whole, page by page, each in turn,
// rounds times, and returns the mean time of a page of each and the
// events each listed in all.
func SideBySidePages(t *testing.T, rounds int, walks ...PageWalk) (perPage []time.Duration, events []int) {
	t.Helper()
	took := make([]time.Duration, len(walks))
	pages := make([]int, len(walks))
	events = make([]int, len(walks))
	for range rounds {
		for i, walk := range walks {
			start := time.Now()
			after := int64(0)
			for {
				n, last, err := walk(after)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				pages[i]++
				events[i] += n
				after = last
			}
			took[i] += time.Since(start)
		}
	}
	perPage = make([]time.Duration, len(walks))
	for i := range walks {
		perPage[i] = took[i] / time.Duration(max(1, pages[i]))
	}
	return perPage, events
}

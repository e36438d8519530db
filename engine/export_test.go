package engine

import "github.com/claimcheck/claimcheck/internal/storedform"

// SetSeekTableRead sets how much of the end of a zstd stream a ranged
// read fetches first, so that a test can exercise a seek table longer
// than that without gigabytes of payload. It returns the old value.
func SetSeekTableRead(n int64) int64 { return storedform.SetSeekTableRead(n) }

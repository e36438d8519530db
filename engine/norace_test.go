//go:build !race

package engine_test

// raceDetector is true in binaries built with -race.
const raceDetector = false

//go:build !race

package claimcheck_test

// raceDetector is true in binaries built with -race.
const raceDetector = false

//go:build !race

package auditor_test

// raceEnabled is set when the race detector is on.
const raceEnabled = false

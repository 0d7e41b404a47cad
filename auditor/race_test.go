//go:build race

package auditor_test

// raceEnabled is set when the race detector is on: it makes the JSON work
// of the tamper corpus about ten times slower, so the corpus samples.
const raceEnabled = true

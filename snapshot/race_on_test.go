//go:build race

package snapshot

// raceEnabled: the race detector's memory and address space make the peak
// tests meaningless.
const raceEnabled = true

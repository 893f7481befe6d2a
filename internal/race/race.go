//go:build !race

// Package race tells whether the race detector is on. Timing tests skip
// their bounds under it (it slows the pure-Go SQLite driver many times
// over); `make test` runs them again without it.
package race

// Enabled is whether the binary was built with -race.
const Enabled = false

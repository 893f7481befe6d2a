//go:build race

package race

// Enabled is whether the binary was built with -race.
const Enabled = true

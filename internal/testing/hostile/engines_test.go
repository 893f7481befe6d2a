package hostile_test

import (
	"testing"

	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/wait"
)

// onEngines runs fn on a server of each storage engine: SQLite, and
// PostgreSQL when AMS_TEST_DATABASE_URL is set (pgtest skips it
// otherwise). Where a failure is recorded is the store's.
func onEngines(t *testing.T, fn func(t *testing.T, opts ...amstest.Option)) {
	t.Run("sqlite", func(t *testing.T) { fn(t) })
	t.Run("postgres", func(t *testing.T) { fn(t, amstest.OnStore(pgtest.Open(t))) })
}

// waitFor polls the store through cond until it holds (wait.Eventually).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.Eventually(t, what, cond)
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/sqlite"
)

// openStore opens the store the flags name: SQLite under the data
// directory unless a database URL is given.
func openStore(ctx context.Context, sf *storeFlags) (ams.Store, error) {
	if sf.databaseURL != "" {
		scheme, _, _ := strings.Cut(sf.databaseURL, "://")
		return nil, fmt.Errorf("database URL scheme %q is not supported yet: leave --database-url empty to use SQLite under --data-dir", scheme)
	}
	if err := os.MkdirAll(sf.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(sf.dataDir, "ams.db"))
	if err != nil {
		return nil, err
	}
	return db, nil
}

// withStore opens the store the flags name, runs fn on it, and closes it.
func withStore(ctx context.Context, sf *storeFlags, fn func(store ams.Store) error) error {
	store, err := openStore(ctx, sf)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store)
}

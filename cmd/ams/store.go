package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/internal/seal"
	"github.com/amsdev/ams/postgres"
	"github.com/amsdev/ams/sqlite"
	"github.com/amsdev/ams/sqlstore"
)

// secretKey returns the key that seals webhook secrets: --secret-key, or
// for SQLite (when it is unset) nil, meaning the key file beside the
// database. PostgreSQL needs it: every process must seal with the same key.
func (sf *storeFlags) key() ([]byte, error) {
	if sf.secretKey == "" {
		return nil, nil
	}
	k, err := seal.ParseKey(sf.secretKey)
	if err != nil {
		return nil, fmt.Errorf("--secret-key: %w", err)
	}
	return k, nil
}

// defaultPGConns is the connection pool size of a process when the
// database URL does not set pool_max_conns: three processes stay well
// under PostgreSQL's default max_connections of 100.
const defaultPGConns = 16

// engineStore is what both engines are: the store, a dump's source and
// target, and their dialect (whose name goes in a dump's header).
type engineStore interface {
	ams.Store
	dump.Exporter
	dump.Importer
	Dialect() sqlstore.Dialect
}

var (
	_ engineStore = (*sqlite.DB)(nil)
	_ engineStore = (*postgres.DB)(nil)
)

// openStore opens the store the flags name: SQLite under the data
// directory, or PostgreSQL with a postgres:// database URL.
func openStore(ctx context.Context, sf *storeFlags) (engineStore, error) {
	key, err := sf.key()
	if err != nil {
		return nil, err
	}
	if sf.databaseURL != "" {
		scheme, _, _ := strings.Cut(sf.databaseURL, "://")
		if scheme != "postgres" && scheme != "postgresql" {
			return nil, fmt.Errorf("--database-url: scheme %q is not supported (want postgres://; leave it empty for SQLite under --data-dir)", scheme)
		}
		if key == nil {
			return nil, errors.New("--secret-key (AMS_SECRET_KEY) is required with PostgreSQL: a base64 32-byte key, the same in every process (make one with: openssl rand -base64 32)")
		}
		return postgres.Open(ctx, sf.databaseURL, postgres.WithSecretKey(key), postgres.WithDefaultMaxConns(defaultPGConns),
			postgres.WithStatementTimeout(sf.statementTimeout))
	}
	path := filepath.Join(sf.dataDir, "ams.db")
	if !sf.create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no store in --data-dir %s (no %s): is the directory right? "+
				"ams serve, ams migrate or ams users create makes a new one", sf.dataDir, path)
		}
	}
	if err := os.MkdirAll(sf.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	warnWideDataDir(warnings, sf.dataDir)
	var opts []sqlite.Option
	if key != nil {
		opts = append(opts, sqlite.WithSecretKey(key))
	}
	return sqlite.Open(ctx, path, opts...)
}

// oauthKey returns the HMAC key of OAuth tokens: derived from --secret-key
// when it is set (so every process shares it), else the key file
// <data-dir>/oauth.key.
func oauthKey(sf *storeFlags) ([]byte, error) {
	key, err := sf.key()
	if err != nil {
		return nil, err
	}
	if key != nil {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("ams oauth token hmac key v1"))
		return m.Sum(nil), nil
	}
	return seal.LoadOrCreateKeyFile(filepath.Join(sf.dataDir, "oauth.key"))
}

// withStore opens the store the flags name, runs fn on it, and closes it.
func withStore(ctx context.Context, sf *storeFlags, fn func(store ams.Store) error) error {
	return withEngine(ctx, sf, func(store engineStore) error { return fn(store) })
}

// withEngine is withStore for the commands that need more than ams.Store.
func withEngine(ctx context.Context, sf *storeFlags, fn func(store engineStore) error) error {
	store, err := openStore(ctx, sf)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store)
}

// warnings is where the commands write warnings that are not errors.
var warnings io.Writer = os.Stderr

// warnWideDataDir warns on w when the data directory lets the group or
// others in. ams creates it with mode 0700 and its files with 0600 (the
// sqlite package tightens them at every start), but does not change the
// mode of a directory it did not create: the operator may have chosen one
// that others share on purpose (docs/operations.md, "Files").
func warnWideDataDir(w io.Writer, dir string) {
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return
	}
	fmt.Fprintf(w, "ams: warning: the data directory %s has mode %v: other users can list its files "+
		"(the files themselves are readable by their owner only); make it private with: chmod 700 %s\n", dir, st.Mode().Perm(), dir)
}

// storeUndo removes what a failed ams serve made of a new SQLite store:
// the data directory if it did not exist, else the files it did not hold.
// A store that existed, or one on PostgreSQL, is left as it is.
type storeUndo struct {
	dir     string
	active  bool // a new SQLite store: something to undo
	existed bool // the directory existed
	before  map[string]bool
}

func newStoreUndo(sf *storeFlags) *storeUndo {
	u := &storeUndo{dir: sf.dataDir}
	if sf.databaseURL != "" {
		return u
	}
	entries, err := os.ReadDir(sf.dataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		u.active = true
		return u
	case err != nil:
		return u // not a directory we can read: openStore says why
	}
	u.existed, u.before = true, map[string]bool{}
	for _, e := range entries {
		u.before[e.Name()] = true
	}
	u.active = !u.before["ams.db"]
	return u
}

// run removes what was made since newStoreUndo; the store must be closed.
func (u *storeUndo) run() {
	if !u.active {
		return
	}
	if !u.existed {
		os.RemoveAll(u.dir)
		return
	}
	entries, _ := os.ReadDir(u.dir)
	for _, e := range entries {
		if !u.before[e.Name()] {
			os.RemoveAll(filepath.Join(u.dir, e.Name()))
		}
	}
}

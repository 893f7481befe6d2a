package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/amsdev/ams/internal/dump"
	"github.com/spf13/cobra"
)

func newExportCmd(sf *storeFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export [--output FILE|-]",
		Short: "Write every record of the store to a portable dump, for ams import",
		Long: `Write every record of the store that the store flags select (--data-dir for
SQLite, --database-url for PostgreSQL) to a dump: JSON Lines, a header line,
one line per row, and a trailer with the row counts, read by ams import into
a store of either engine. Stop ams serve first: rows written after the export
starts are not in it.

The dump holds password and key hashes, and the webhook and integration
secrets in plaintext (so that the target store can seal them with its own
key): keep it as secret as the database and its key together. A file is written with mode
0600, complete or not at all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			if sf.databaseURL == "" {
				// Opening SQLite creates a missing store: a mistyped
				// --data-dir would export an empty one.
				db := filepath.Join(sf.dataDir, "ams.db")
				if _, err := os.Stat(db); err != nil {
					return fmt.Errorf("no SQLite store at %s (--data-dir %s): %w", db, sf.dataDir, err)
				}
			}
			return withEngine(ctx, sf, func(store engineStore) error {
				h, err := exportHeader(ctx, store)
				if err != nil {
					return err
				}
				out, commit, abort, err := createOutput(output, cmd.OutOrStdout())
				if err != nil {
					return err
				}
				w, err := dump.NewWriter(out, h)
				if err == nil {
					err = store.Export(ctx, w.Write)
				}
				if err == nil {
					err = w.Close()
				}
				if err == nil {
					err = commit()
				}
				if err != nil {
					abort()
					return err
				}
				where := output
				if output == "-" {
					where = "standard output"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "exported %d rows from %s (schema version %d) to %s: %s\n",
					w.Rows(), h.Engine, h.SchemaVersion, where, dump.Summary(w.Counts()))
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "-", "file to write the dump to (mode 0600), or - for standard output")
	return cmd
}

// exportHeader describes the source store for the dump's header.
func exportHeader(ctx context.Context, store engineStore) (dump.Header, error) {
	h := dump.Header{Engine: store.Dialect().Name}
	n, err := store.SchemaVersion(ctx)
	if err != nil {
		return h, fmt.Errorf("read schema version: %w", err)
	}
	h.SchemaVersion = n
	return h, nil
}

// createOutput opens where the dump goes: stdout for "-", else a temporary
// file (mode 0600) beside path that commit syncs and renames to path, and
// abort removes, so that path is either the whole dump or untouched.
func createOutput(path string, stdout io.Writer) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "-" {
		return stdout, func() error { return nil }, func() {}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create %s: %w", path, err)
	}
	abort = func() {
		f.Close()
		os.Remove(f.Name())
	}
	if err := f.Chmod(0o600); err != nil {
		abort()
		return nil, nil, nil, fmt.Errorf("create %s: %w", path, err)
	}
	commit = func() error {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := os.Rename(f.Name(), path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	return f, commit, abort, nil
}

func newImportCmd(sf *storeFlags) *cobra.Command {
	var input string
	cmd := &cobra.Command{
		Use:   "import [--input FILE|-]",
		Short: "Load a dump made by ams export into a new, empty store",
		Long: `Load a dump made by ams export (of either engine) into the store that the
store flags select, which must be empty: a new --data-dir for SQLite, or for
PostgreSQL a new database (or schema) after ams migrate. Everything is loaded
in one transaction, only once the whole dump has been read and its trailer
matches, so a damaged or truncated dump, or any error, writes nothing.
Ids, list order, times, hashes and pending webhook deliveries are kept;
webhook and integration secrets are sealed with the target's key
(--secret-key, or for SQLite the key file in --data-dir).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			in := cmd.InOrStdin()
			if input != "-" {
				f, err := os.Open(input)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			// Check the header before the store is opened (and, for
			// SQLite, created).
			r, err := dump.NewReader(in)
			if err != nil {
				return err
			}
			h := r.Header()
			sf.create = true
			return withEngine(ctx, sf, func(store engineStore) error {
				if err := store.Import(ctx, r); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "imported %d rows from a %s export of %s: %s\n",
					r.Rows(), h.Engine, h.CreatedAt.Format("2006-01-02 15:04:05Z07:00"), dump.Summary(r.Counts()))
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&input, "input", "i", "-", "file to read the dump from, or - for standard input")
	return cmd
}

package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// FileMode is the mode of the database's files: the database and its
// -wal and -shm files. They hold every account's data, readable by the
// user ams runs as only. (The secret.key beside them is the seal
// package's, which keeps key files at 0600 too.)
const FileMode fs.FileMode = 0o600

// secureFiles makes the database file at path exist with FileMode before
// SQLite opens it, so that SQLite, which gives the -wal and -shm files it
// creates the mode of the database file, creates them with FileMode too
// whatever the umask. An existing database, -wal or -shm file
// whose mode lets others in (group or other bits) is tightened to
// FileMode: these files are ams's own, and nobody else has a reason to
// read them.
func secureFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, FileMode); err != nil {
				return fmt.Errorf("sqlite: restrict %s to its owner: %w", p, err)
			}
		}
	}
	return nil
}

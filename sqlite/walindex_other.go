//go:build !unix

package sqlite

import "errors"

// walIndex is not mapped on this platform: the authentication watch
// queries on every call (walindex_unix.go describes the view).
type walIndex struct{}

type walHeader struct{}

func openWALIndex(string) (*walIndex, error) {
	return nil, errors.New("sqlite: the wal-index is not mapped on this platform")
}

func (w *walIndex) read() walHeader { return walHeader{} }

func (w *walIndex) release() {}

//go:build unix

package sqlite

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex is a read-only view of the header of a WAL database's
// wal-index (its "-shm" file), which SQLite keeps in memory shared by every
// connection of every process on the file. Each commit writes a new header:
// the frame count, a change counter and a checksum all move. So while the
// header reads the same as at an earlier moment, nothing has been
// committed since, and whatever was read then is still current. The
// authentication watch uses this to skip its query on most requests.
//
// The layout is SQLite's, documented in its file format description
// ("WAL-Index Format"): two copies of a 48-byte header at offset 0, which
// SQLite writes second copy first, then the first. A commit returns only
// after both are written, so a commit that finished before a read of the
// header always shows in it.
//
// The file descriptor behind the mapping stays open while any handle of
// this process uses it. Closing a descriptor of a file drops every POSIX
// lock the process holds on that file, those of SQLite's connections
// included: its lock on the "dead man's switch" byte tells other processes
// that the wal-index is in use, and without it the next process to open
// the database truncates and rebuilds the file under this one (seen as
// "disk I/O error" on reads). So views are shared per file and counted,
// and the last one is released only after its handle's connections are
// closed (DB.Close).
type walIndex struct {
	key  walFile
	fd   int
	mem  []byte
	hdr  *[walHeaderWords]uint32
	refs int // guarded by walIndexes.mu
}

// walFile identifies a -shm file.
type walFile struct{ dev, ino uint64 }

// walIndexes are this process's views, by file.
var walIndexes = struct {
	mu sync.Mutex
	m  map[walFile]*walIndex
}{m: map[walFile]*walIndex{}}

// walHeaderWords is the two header copies, in 32-bit words.
const walHeaderWords = 2 * 48 / 4

// walHeader is a snapshot of both header copies.
type walHeader [walHeaderWords]uint32

// openWALIndex returns a view of the database's -shm file, mapping it if
// no handle of this process has. It must be called while a connection of
// this handle has the database open in WAL mode and has read from it:
// SQLite then holds locks that keep other processes from truncating or
// deleting the file. A view returned, with or without an error, is
// released once, by release; only one returned without an error is read.
func openWALIndex(dbPath string) (*walIndex, error) {
	name := dbPath + "-shm"
	w, err := acquireWALIndex(name)
	if err != nil {
		return w, err
	}
	if h := w.read(); h[0] != walIndexVersion || h[0] != h[walHeaderWords/2] {
		return w, fmt.Errorf("sqlite: %s has no initialised wal-index header", name)
	}
	return w, nil
}

func acquireWALIndex(name string) (*walIndex, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(name, &st); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", name, err)
	}
	key := walFile{uint64(st.Dev), uint64(st.Ino)}
	walIndexes.mu.Lock()
	defer walIndexes.mu.Unlock()
	w := walIndexes.m[key]
	if w != nil {
		w.refs++
	} else {
		const size = walHeaderWords * 4
		if st.Size < size {
			return nil, fmt.Errorf("sqlite: %s is %d bytes, not yet a wal-index", name, st.Size)
		}
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", name, err)
		}
		// From here on fd stays open until the last release, even if it
		// cannot be mapped (see the type's comment).
		w = &walIndex{key: key, fd: fd, refs: 1}
		walIndexes.m[key] = w
		if err := syscall.Fstat(fd, &st); err == nil && (walFile{uint64(st.Dev), uint64(st.Ino)}) == key {
			if mem, err := syscall.Mmap(fd, 0, size, syscall.PROT_READ, syscall.MAP_SHARED); err == nil {
				w.mem, w.hdr = mem, (*[walHeaderWords]uint32)(unsafe.Pointer(&mem[0]))
			}
		}
	}
	if w.hdr == nil {
		return w, fmt.Errorf("sqlite: %s could not be mapped", name)
	}
	return w, nil
}

// walIndexVersion is the first word of an initialised header (SQLite's
// WALINDEX_MAX_VERSION).
const walIndexVersion = 3007000

// read returns the header as it is now. SQLite writes it with plain
// stores; each word is loaded atomically, first copy then second, the
// reverse of SQLite's order. A read that overlaps a commit's write may
// mix old and new words; if it then equals an earlier snapshot, the
// commit had not yet written its first copy, so it had not returned, and
// no request can depend on it yet.
func (w *walIndex) read() walHeader {
	var h walHeader
	for i := range h {
		h[i] = atomic.LoadUint32(&w.hdr[i])
	}
	return h
}

// release gives the view back. The last release of a file unmaps it and
// closes its descriptor, so it must come after the handle's connections
// are closed.
func (w *walIndex) release() {
	if w == nil {
		return
	}
	walIndexes.mu.Lock()
	defer walIndexes.mu.Unlock()
	if w.refs--; w.refs > 0 {
		return
	}
	delete(walIndexes.m, w.key)
	if w.mem != nil {
		syscall.Munmap(w.mem)
	}
	syscall.Close(w.fd)
	w.mem, w.hdr = nil, nil
}

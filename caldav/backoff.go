package caldav

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

// Back-off of failing integrations (issue 26, point 3).
//
// Each run counts itself failed when it is claimed (ams.Integration's
// SyncFailures, in the claim's transaction) and sets the earliest time of
// the next background run to the claim's time plus Backoff of that
// count; a success resets both. So a run that never records its outcome
// (the process was killed during it, by an OOM or a crash) still counts,
// and the process that starts next waits out the back-off instead of
// running the same sync again at once, in a loop. The next claim of such
// a run, RunTimeout after it started, sets the status error and emits
// integration.error. A graceful shutdown during a run gives the count
// back.

// Defaults of the back-off (Worker.RetryMax, Worker.RunTimeout).
const (
	DefaultRetryMax   = 6 * time.Hour
	DefaultRunTimeout = 10 * time.Minute
)

// Backoff is how long background syncs wait after failures runs in a row
// that did not succeed: base·2^(failures-1), at most max; 0 for none.
func Backoff(failures int, base, max time.Duration) time.Duration {
	if failures <= 0 || base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < failures; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// Mass deletions (issue 26, L9). A run deletes here the events whose
// objects are gone from the server; when a listing would delete more
// than a small share of the integration's events (MassDeletion), the run
// deletes none of them and records what it saw (the integration's
// PendingDeletion). A later run, at least ConfirmDelay after, deletes
// them only if its own listing shows the same events gone; otherwise the
// record is dropped (the objects are back) or replaced (another set is
// gone). An empty or truncated listing (a glitch, a wrong collection
// after a server move) thus never deletes on its own; and what a sync
// deletes stays restorable for the events' retention anyway.

// MassDeletionMin is the number of events a run may always delete at once
// (unless they are all of the integration's events).
const MassDeletionMin = 3

// DefaultConfirmDelay is the least time between the listing that saw a
// mass deletion and the one that confirms it (Syncer.ConfirmDelay).
const DefaultConfirmDelay = time.Minute

// MassDeletion reports whether deleting gone of the synced events an
// integration keeps needs a confirming listing: more than one event and
// either all of them, or more than MassDeletionMin and more than a tenth.
func MassDeletion(gone, synced int) bool {
	return gone > 1 && (gone >= synced || gone > max(MassDeletionMin, synced/10))
}

// pendingDeletion is a mass deletion seen and not yet carried out: when
// it was first seen, how many events, and a hash of their ids.
type pendingDeletion struct {
	Since time.Time
	Count int
	Hash  string
}

func newPendingDeletion(gone []*ams.CalendarEvent, now time.Time) pendingDeletion {
	ids := make([]string, len(gone))
	for i, e := range gone {
		ids[i] = e.ID
	}
	slices.Sort(ids)
	h := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return pendingDeletion{Since: now, Count: len(gone), Hash: hex.EncodeToString(h[:16])}
}

// String is the form stored in ams.Integration.PendingDeletion:
// "<unix ms>:<count>:<hash>".
func (p pendingDeletion) String() string {
	return fmt.Sprintf("%d:%d:%s", p.Since.UnixMilli(), p.Count, p.Hash)
}

func parsePendingDeletion(s string) (pendingDeletion, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return pendingDeletion{}, false
	}
	ms, err1 := strconv.ParseInt(parts[0], 10, 64)
	n, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || parts[2] == "" {
		return pendingDeletion{}, false
	}
	return pendingDeletion{Since: time.UnixMilli(ms).UTC(), Count: n, Hash: parts[2]}, true
}

// describeHeld is the last_error of a run that held back a mass deletion.
func describeHeld(n int, confirmAfter time.Time) string {
	return fmt.Sprintf("The CalDAV server no longer lists %d of this calendar's events. They are kept: a sync after %s deletes them only if the server still does not list them (deleted events can be restored for 30 days).",
		n, confirmAfter.UTC().Format(time.RFC3339))
}

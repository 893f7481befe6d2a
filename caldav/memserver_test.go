package caldav_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/internal/testing/wait"
	"github.com/emersion/go-ical"
	"github.com/emersion/go-webdav"
	"github.com/emersion/go-webdav/caldav"
)

// These tests sync with a CalDAV server in the test process (go-webdav's
// server over a calendar in memory), which the test can make misbehave:
// list nothing while keeping its objects, lose them all, or fail every
// request. They need no Radicale.

// calendarPath is the one calendar collection of a memServer.
const calendarPath = "/u/cals/work/"

// memServer is a CalDAV server with one calendar, in memory.
type memServer struct {
	*httptest.Server
	mu      sync.Mutex
	objs    map[string]caldav.CalendarObject // by path
	version int
	// listNothing makes a listing of the calendar (PROPFIND, Depth 1)
	// answer no objects, though they are still there.
	listNothing atomic.Bool
	// fail, when not 0, is the HTTP status of every answer.
	fail atomic.Int32
	// listings counts the listings of the calendar.
	listings atomic.Int32
	// hang, when set, makes listings wait for the client to go away;
	// hung is told of each such listing.
	hang atomic.Bool
	hung chan struct{}
}

func newMemServer(t *testing.T) *memServer {
	m := &memServer{objs: map[string]caldav.CalendarObject{}, hung: make(chan struct{}, 8)}
	h := &caldav.Handler{Backend: (*memBackend)(m)}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "PROPFIND" && r.Header.Get("Depth") == "1" {
			m.listings.Add(1)
			if m.hang.Load() {
				// Read the body, so that the server sees the client go.
				io.Copy(io.Discard, r.Body)
				m.hung <- struct{}{}
				<-r.Context().Done()
				return
			}
		}
		if code := m.fail.Load(); code != 0 {
			http.Error(w, "down", int(code))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// url is the calendar's URL.
func (m *memServer) url() string { return m.URL + calendarPath }

// paths returns the paths of the objects there, sorted.
func (m *memServer) paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p := range m.objs {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// wipe loses every object (a server reinstalled, a calendar moved).
func (m *memServer) wipe() {
	m.mu.Lock()
	m.objs = map[string]caldav.CalendarObject{}
	m.mu.Unlock()
}

type memBackend memServer

var errNotFound = webdav.NewHTTPError(http.StatusNotFound, errors.New("not found"))

func (b *memBackend) CurrentUserPrincipal(context.Context) (string, error) { return "/u/", nil }
func (b *memBackend) CalendarHomeSetPath(context.Context) (string, error)  { return "/u/cals/", nil }
func (b *memBackend) CreateCalendar(context.Context, *caldav.Calendar) error {
	return webdav.NewHTTPError(http.StatusForbidden, errors.New("no"))
}

func (b *memBackend) calendar() caldav.Calendar {
	return caldav.Calendar{Path: calendarPath, Name: "Work", SupportedComponentSet: []string{ical.CompEvent}}
}

func (b *memBackend) ListCalendars(context.Context) ([]caldav.Calendar, error) {
	return []caldav.Calendar{b.calendar()}, nil
}

func (b *memBackend) GetCalendar(_ context.Context, path string) (*caldav.Calendar, error) {
	if path != calendarPath {
		return nil, errNotFound
	}
	c := b.calendar()
	return &c, nil
}

func (b *memBackend) GetCalendarObject(_ context.Context, path string, _ *caldav.CalendarCompRequest) (*caldav.CalendarObject, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.objs[path]
	if !ok {
		return nil, errNotFound
	}
	return &o, nil
}

func (b *memBackend) ListCalendarObjects(_ context.Context, path string, _ *caldav.CalendarCompRequest) ([]caldav.CalendarObject, error) {
	if (*memServer)(b).listNothing.Load() {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []caldav.CalendarObject
	for _, o := range b.objs {
		out = append(out, o)
	}
	return out, nil
}

func (b *memBackend) QueryCalendarObjects(ctx context.Context, path string, _ *caldav.CalendarQuery) ([]caldav.CalendarObject, error) {
	return b.ListCalendarObjects(ctx, path, nil)
}

func (b *memBackend) PutCalendarObject(_ context.Context, path string, cal *ical.Calendar, opts *caldav.PutCalendarObjectOptions) (*caldav.CalendarObject, error) {
	if !strings.HasPrefix(path, calendarPath) {
		return nil, errNotFound
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old, exists := b.objs[path]
	if opts.IfNoneMatch.IsWildcard() && exists {
		return nil, webdav.NewHTTPError(http.StatusPreconditionFailed, errors.New("exists"))
	}
	if opts.IfMatch.IsSet() {
		want, err := opts.IfMatch.ETag()
		if !exists || err != nil || want != old.ETag {
			return nil, webdav.NewHTTPError(http.StatusPreconditionFailed, errors.New("changed"))
		}
	}
	var buf bytes.Buffer
	if err := ical.NewEncoder(&buf).Encode(cal); err != nil {
		return nil, webdav.NewHTTPError(http.StatusBadRequest, err)
	}
	b.version++
	o := caldav.CalendarObject{Path: path, ETag: fmt.Sprint("v", b.version), Data: cal,
		ContentLength: int64(buf.Len()), ModTime: time.Now()}
	b.objs[path] = o
	return &o, nil
}

func (b *memBackend) DeleteCalendarObject(_ context.Context, path string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objs[path]; !ok {
		return errNotFound
	}
	delete(b.objs, path)
	return nil
}

// onEngines runs fn on a fixture of each storage engine (PostgreSQL when
// AMS_TEST_DATABASE_URL is set).
func onEngines(t *testing.T, fn func(t *testing.T, f *fixture)) {
	t.Run("sqlite", func(t *testing.T) {
		db := sqlitetest.Open(t)
		fn(t, newFixtureOn(t, db))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, newFixtureOn(t, pgtest.Open(t)))
	})
}

// deleted returns the account's deleted events (restorable) by title.
func (f *fixture) deleted() map[string]*ams.CalendarEvent {
	f.t.Helper()
	page, err := f.db.ListCalendarEvents(context.Background(), f.user.ID, ams.CalendarFilter{Deleted: true}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*ams.CalendarEvent{}
	for _, e := range page.Data {
		out[e.Title] = e
	}
	return out
}

func (f *fixture) integration(id string) *ams.Integration {
	f.t.Helper()
	in, err := f.db.FindIntegration(context.Background(), f.user.ID, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return in
}

// emittedN is emitted, once it lists at least n events: on PostgreSQL an
// event is listed a moment after its commit (once no older transaction
// of the database is open), so the test waits for it, up to a minute.
func (f *fixture) emittedN(n int, types ...string) []string {
	f.t.Helper()
	var got []string
	wait.Until(func() bool {
		got = f.emitted(types...)
		return len(got) >= n
	})
	return got
}

// put writes an iCalendar object into the calendar, as another client of
// the server would.
func (m *memServer) put(t *testing.T, name, ics string) {
	t.Helper()
	cal, err := ical.NewDecoder(strings.NewReader(strings.ReplaceAll(strings.TrimSpace(ics), "\n", "\r\n") + "\r\n")).Decode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (*memBackend)(m).PutCalendarObject(context.Background(), calendarPath+name, cal, &caldav.PutCalendarObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

package http

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/caldav"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/world"
)

// The calendar feed: the account's calendar events as one iCalendar file
// at a secret URL, for calendar apps to subscribe to (they cannot send an
// Authorization header, so the URL is the credential).
//
// POST /v1/calendar/feed creates the feed's URL and answers it once; a
// new POST replaces it (the old URL stops working). The feed is an
// integration of provider "ical_feed": DELETE /v1/integrations/{id}
// revokes it. Its token is
//
//	ams_cf_<account id>_<integration id>_<40 random characters>
//
// (the ids without their prefixes), so GET /calendar/feed/<token>.ics
// finds the integration without a scan; only the SHA-256 hash of the
// whole token is kept, among the integration's sealed secrets, as API keys
// keep theirs.

// The feed's provider, token prefix and secret name are the world
// service's, which makes feeds.
const (
	feedProvider    = world.FeedProvider
	feedTokenPrefix = world.FeedTokenPrefix
	feedSecret      = world.FeedSecret
)

// maxFeedEvents bounds the events of one feed.
const maxFeedEvents = 10_000

// FeedLimits bound how often one account's calendar feed is fetched
// (issue 26): calendar apps poll a subscription every few minutes to
// hours, a few devices at most, while one fetch reads up to
// maxFeedEvents events. They are counted by the shared rate limiter
// (across processes, like the API's limits) under the key
// "calendar_feed:<account id>", apart from the account's API requests.
// Beyond them a fetch gets 429 with Retry-After.
var FeedLimits = ams.Limits{PerMinute: 10, PerDay: 2000}

// calendarFeed is the answer of POST /v1/calendar/feed.
type calendarFeed struct {
	ID        string       `json:"id"`     // the integration's id
	Object    string       `json:"object"` // "calendar_feed"
	URL       string       `json:"url"`
	CreatedAt ams.JSONTime `json:"created_at"`
}

// baseURL returns the service's public URL: BaseURL, or the request's
// scheme and host.
func (s *Server) baseURL(r *http.Request) string {
	if s.BaseURL != "" {
		return strings.TrimRight(s.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) createCalendarFeed(w http.ResponseWriter, r *http.Request) error {
	if err := noBody(r); err != nil {
		return err
	}
	in, token, err := s.World.CreateCalendarFeed(r.Context(), auth(r).User.ID)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/integrations/"+in.ID)
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, s.feedAnswer(r, in, token))
}

// feedAnswer is the answer of POST /v1/calendar/feed that made feed in,
// whose token is token.
func (s *Server) feedAnswer(r *http.Request, in *ams.Integration, token string) calendarFeed {
	return calendarFeed{ID: in.ID, Object: "calendar_feed",
		URL: s.baseURL(r) + "/calendar/feed/" + token + ".ics", CreatedAt: ams.JSONTime(in.CreatedAt)}
}

// parseFeedToken splits a token into the account's and the feed's ids.
func parseFeedToken(token string) (userID, id string, ok bool) {
	rest, found := strings.CutPrefix(token, feedTokenPrefix)
	if !found || len(token) > 256 {
		return "", "", false
	}
	parts := strings.Split(rest, "_")
	if len(parts) != 3 || len(parts[2]) < 32 {
		return "", "", false
	}
	userID, id = ams.PrefixUser+parts[0], ams.PrefixIntegration+parts[1]
	if !ams.HasPrefixID(userID, ams.PrefixUser) || !ams.HasPrefixID(id, ams.PrefixIntegration) || !ams.HasPrefixID("x"+parts[2], "x") {
		return "", "", false
	}
	return userID, id, true
}

// serveCalendarFeed answers GET /calendar/feed/{file}: the calendar of
// the feed whose token is the file name without ".ics", as text/calendar.
// Any token that is not a live feed's is 404, whatever the reason.
func (s *Server) serveCalendarFeed(w http.ResponseWriter, r *http.Request) {
	notFound := func() {
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "No calendar feed at this URL.", http.StatusNotFound)
	}
	token, ok := strings.CutSuffix(r.PathValue("file"), ".ics")
	if !ok || !ams.ValidText(token) {
		notFound()
		return
	}
	userID, id, ok := parseFeedToken(token)
	if !ok {
		notFound()
		return
	}
	ctx := r.Context()
	in, err := s.Store.FindIntegration(ctx, userID, id)
	if err != nil || in.Provider != feedProvider || in.Status == ams.IntegrationDisconnected {
		if err != nil && !ams.IsNotFound(err) {
			s.feedError(w, r, err)
			return
		}
		notFound()
		return
	}
	secrets, err := s.Store.IntegrationSecrets(ctx, userID, id)
	if err != nil {
		s.feedError(w, r, err)
		return
	}
	if want := secrets[feedSecret]; want == "" || !ams.SecretsEqual(ams.HashSecret(token), want) {
		notFound()
		return
	}
	if s.Limiter != nil {
		now := s.now()
		d, err := s.Limiter.Take(ctx, "calendar_feed:"+userID, FeedLimits, now)
		if err != nil {
			s.feedError(w, r, err)
			return
		}
		if !d.Allowed {
			w.Header().Set("Retry-After", strconv.FormatInt(max(1, ratelimit.RetryAfter(d, now)), 10))
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "This calendar feed was fetched too often: retry later.", http.StatusTooManyRequests)
			return
		}
	}
	var events []*ams.CalendarEvent
	p := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	for len(events) < maxFeedEvents {
		page, err := s.Store.ListCalendarEvents(ctx, userID, ams.CalendarFilter{}, p)
		if err != nil {
			s.feedError(w, r, err)
			return
		}
		events = append(events, page.Data...)
		if !page.HasMore || len(page.Data) == 0 {
			break
		}
		p.After = page.Data[len(page.Data)-1].ID
	}
	var b bytes.Buffer
	if err := caldav.WriteFeed(&b, "ams", events, s.now()); err != nil {
		s.feedError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/calendar; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	h.Set("Cache-Control", "private, max-age=300")
	h.Set("Content-Disposition", `inline; filename="calendar.ics"`)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b.Bytes())
	}
}

func (s *Server) feedError(w http.ResponseWriter, r *http.Request, err error) {
	s.Logger.Error("calendar feed", "request_id", requestID(r.Context()), "err", err)
	http.Error(w, "The calendar could not be read; try again later.", http.StatusInternalServerError)
}

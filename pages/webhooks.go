package pages

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
	"github.com/amsdev/ams/ratelimit"
	"github.com/amsdev/ams/webhook"
)

// The webhooks pages: the list (a failing webhook stands out, with the
// error of its last attempt), create and edit forms, disable and enable,
// delete, ping, and each webhook's delivery log with a redeliver button
// per attempt. They do what /v1/webhooks does, through the same service
// (webhook.Service, with its rules), so a webhook made here is one the
// API would have accepted.

// webhookEventInfo describes an event type on the forms.
type webhookEventInfo struct {
	Type        string
	Description string
}

var webhookEventDescriptions = map[string]string{
	ams.EventMessageCreated:           "A message was stored: one sent to an assistant, or its reply.",
	ams.EventMessageUpdated:           "A message was edited.",
	ams.EventMessageDeleted:           "A message was deleted.",
	ams.EventTaskCreated:              "A task was created.",
	ams.EventTaskCompleted:            "A task was completed.",
	ams.EventTaskUpdated:              "A task was changed.",
	ams.EventTaskReminder:             "A task's reminder came due.",
	ams.EventEventCreated:             "A calendar event was created.",
	ams.EventEventUpdated:             "A calendar event was changed.",
	ams.EventEventReminder:            "A calendar event's reminder came due.",
	ams.EventIntegrationConnected:     "An integration (such as a CalDAV calendar) connected or recovered.",
	ams.EventIntegrationDisconnected:  "An integration was disconnected.",
	ams.EventIntegrationError:         "An integration failed to sync.",
	ams.EventWebhookFailing:           "One of your other webhooks was marked failing and turned off (an addition of ams).",
	ams.EventWebhookEnabled:           "A webhook that was off was turned back on (an addition of ams).",
	ams.EventTaskDeleted:              "A task was deleted (an addition of ams).",
	ams.EventEventDeleted:             "A calendar event was deleted, here or on a synced calendar (an addition of ams).",
	ams.EventEventRestored:            "A deleted calendar event was restored (an addition of ams).",
	ams.EventAPIKeyCreated:            "An API key was created (management audit; an addition of ams).",
	ams.EventAPIKeyRevoked:            "An API key was revoked (management audit; an addition of ams).",
	ams.EventOAuthClientCreated:       "An OAuth app was registered (management audit; an addition of ams).",
	ams.EventOAuthClientSecretRotated: "An OAuth app's secret was replaced (management audit; an addition of ams).",
	ams.EventOAuthClientDeleted:       "An OAuth app was deleted (management audit; an addition of ams).",
	ams.EventAccountUpdated:           "The account's settings changed (management audit; an addition of ams).",
	ams.EventAssistantCreated:         "An assistant was created (an addition of ams).",
	ams.EventAssistantUpdated:         "An assistant was changed (an addition of ams).",
	ams.EventAssistantDeleted:         "An assistant was deleted (an addition of ams).",
	ams.EventConversationCreated:      "A conversation was started (an addition of ams).",
	ams.EventConversationUpdated:      "A conversation was renamed or its metadata changed (an addition of ams).",
	ams.EventConversationDeleted:      "A conversation was deleted with its messages (an addition of ams).",
	ams.EventTurnRequiresAction:       "A turn stopped to wait for tool outputs or an approval (an addition of ams).",
	ams.EventTurnCompleted:            "A turn ended with the assistant's reply (an addition of ams).",
	ams.EventTurnFailed:               "A turn failed, or its wait for tool outputs or an approval expired (an addition of ams).",
	ams.EventTurnCancelled:            "A turn was cancelled, or interrupted by a newer message (an addition of ams).",
	ams.EventWebhookDegraded:          "Deliveries to one of your webhooks failed 3 times in a row; it stays on (an addition of ams).",
	ams.EventWebhookRecovered:         "A delivery to a degraded webhook succeeded again (an addition of ams).",
}

// webhookEvents lists every event type a webhook may subscribe to, after
// the subscription to all of them ("*").
func webhookEvents() []webhookEventInfo {
	out := []webhookEventInfo{{Type: ams.EventAll, Description: "Every event type, including those added in later versions (an addition of ams)."}}
	for _, t := range ams.EventTypes {
		out = append(out, webhookEventInfo{Type: t, Description: webhookEventDescriptions[t]})
	}
	return out
}

// webhookState is how a webhook shows: "failing" (turned off after
// failed deliveries), "disabled" (turned off by its owner) or "active".
func webhookState(w *ams.Webhook) string {
	switch {
	case w.Status == ams.WebhookFailing:
		return "failing"
	case !w.Active:
		return "disabled"
	}
	return "active"
}

// webhookRow is a webhook of the list, with its last attempt.
type webhookRow struct {
	*ams.Webhook
	State string
	Last  *ams.Delivery // nil: nothing delivered yet
}

// webhooksData is the data of the list.
type webhooksData struct {
	Webhooks []webhookRow
	More     bool // more than one page: the oldest are not shown
	Failing  int
}

func (s *Server) webhooks(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	ctx := r.Context()
	page, err := s.Store.ListWebhooks(ctx, c.User.ID, ams.ListParams{Limit: 100, Order: ams.OrderDesc})
	if err != nil {
		return nil, err
	}
	d := webhooksData{More: page.HasMore}
	for _, h := range page.Data {
		row := webhookRow{Webhook: h, State: webhookState(h)}
		last, err := s.Store.ListDeliveries(ctx, c.User.ID, h.ID, ams.DeliveryFilter{}, ams.ListParams{Limit: 1, Order: ams.OrderDesc})
		if err != nil {
			return nil, err
		}
		if len(last.Data) > 0 {
			row.Last = last.Data[0]
		}
		if row.State == "failing" {
			d.Failing++
		}
		d.Webhooks = append(d.Webhooks, row)
	}
	return d, nil
}

// webhookForm is the data of the create and edit form.
type webhookForm struct {
	Webhook    *ams.Webhook // nil: a new one
	URL        string
	Events     []string // checked
	SecretMode string   // "generate" or "custom" (new webhooks only)
	AllEvents  []webhookEventInfo
	MinSecret  int
	DevURLs    bool // the guard accepts http and loopback (--dev)
	// The filter's fields (FilterMetadata: "key=value" lines) and the
	// payload ("full" or "thin").
	FilterAssistant, FilterConversation, FilterMetadata string
	Payload                                             string
}

func (s *Server) webhookFormData(wh *ams.Webhook) *webhookForm {
	f := &webhookForm{Webhook: wh, SecretMode: "generate", AllEvents: webhookEvents(), MinSecret: webhook.MinSecretLength,
		DevURLs: s.Webhooks.AllowsPrivate()}
	f.Payload = ams.PayloadFull
	if wh != nil {
		f.URL, f.Events, f.Payload = wh.URL, wh.Events, wh.Payload
		f.FilterAssistant, f.FilterConversation = wh.Filter.AssistantID, wh.Filter.ConversationID
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(wh.Filter.Metadata)) {
			lines = append(lines, k+"="+wh.Filter.Metadata[k])
		}
		f.FilterMetadata = strings.Join(lines, "\n")
	}
	return f
}

// filterOf returns the filter fields of form f as the JSON object the
// service parses (ams.ParseWebhookFilter), "key=value" lines of metadata
// becoming "metadata.key" fields; a line without "=" is a key with an
// empty value, which the service refuses by name.
func filterOf(f *webhookForm) json.RawMessage {
	m := map[string]string{}
	if v := strings.TrimSpace(f.FilterAssistant); v != "" {
		m[ams.FilterAssistantID] = v
	}
	if v := strings.TrimSpace(f.FilterConversation); v != "" {
		m[ams.FilterConversationID] = v
	}
	for _, line := range strings.Split(f.FilterMetadata, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		m[ams.FilterMetadataPrefix+strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	b, _ := json.Marshal(m) // strings always encode
	return b
}

func (s *Server) newWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.webhookFormData(nil), nil
}

// webhookFields lists the service's parameters in the order the form
// shows their errors, with the message of each when the field was left
// empty.
var webhookFields = []struct{ param, empty string }{
	{"events", "Choose at least one event to send to this webhook."},
	{"secret", "Paste your secret, or choose to have one generated."},
	{"url", "Enter the URL that will receive the events."},
	{"filter", ""},
	{"payload", ""},
}

// failWebhookForm shows the field errors of the service's rules as form
// errors (a field left empty gets the form's own sentence); it returns
// any other error.
func failWebhookForm(c *Ctx, err error, f *webhookForm, secret string) error {
	errs := ams.Fields(err)
	if errs == nil {
		return err
	}
	empty := map[string]bool{"events": len(f.Events) == 0, "secret": secret == "", "url": f.URL == ""}
	shown := 0
	for _, fd := range webhookFields {
		for _, e := range errs {
			// filter.<field> is shown at the form's filter.
			if param, _, _ := strings.Cut(e.Param, "."); param != fd.param {
				continue
			}
			if empty[fd.param] {
				c.Fail(fd.param, fd.empty)
			} else {
				c.Fail(fd.param, e.Message)
			}
			shown++
			break
		}
	}
	if shown == 0 {
		return err // not a field of the form
	}
	return nil
}

// readWebhookForm reads the URL and the events (and, for a new webhook,
// the secret: generated, or the user's) into f and returns them as the
// service's input.
func (s *Server) readWebhookForm(r *http.Request, f *webhookForm, isNew bool) (webhook.Input, string) {
	f.URL = strings.TrimSpace(r.PostForm.Get("url"))
	f.Events = r.PostForm["events"]
	f.FilterAssistant, f.FilterConversation = r.PostForm.Get("filter_assistant_id"), r.PostForm.Get("filter_conversation_id")
	f.FilterMetadata, f.Payload = r.PostForm.Get("filter_metadata"), r.PostForm.Get("payload")
	if f.Payload == "" {
		f.Payload = ams.PayloadFull
	}
	in := webhook.Input{URL: &f.URL, Events: &f.Events, Admin: true, // the account holder
		Filter: webhook.RawField{Set: true, Raw: filterOf(f)}, Payload: &f.Payload}
	var secret string
	if isNew {
		f.SecretMode = r.PostForm.Get("secret_mode")
		switch f.SecretMode {
		case "custom":
			secret = r.PostForm.Get("secret")
		default:
			f.SecretMode = "generate"
			secret = webhook.NewSecret()
		}
		in.Secret = &secret
	}
	return in, secret
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	f := s.webhookFormData(nil)
	in, secret := s.readWebhookForm(r, f, true)
	wh, err := s.Webhooks.Create(r.Context(), c.User.ID, in)
	var e *ams.Error
	switch {
	case errors.As(err, &e) && (e.Code == "account_on_waitlist" || e.Code == "webhook_limit_reached"):
		// Refused whatever the form says: the account is on the
		// waitlist, or has as many webhooks as it may.
		c.Status = pageStatus[e.Kind]
		c.Fail("", e.Message)
		return f, nil
	case err != nil:
		if err := failWebhookForm(c, err, f, secret); err != nil {
			return nil, err
		}
		return f, nil
	}
	if f.SecretMode == "generate" {
		c.KeepSecret(wh.ID, secret)
		c.Flash(FlashSuccess, "Webhook created. Copy its signing secret now: it is not shown again.")
	} else {
		c.Flash(FlashSuccess, "Webhook created. Its deliveries are signed with the secret you gave.")
	}
	return c.Redirect("/account/webhooks/" + wh.ID)
}

// findWebhook returns the user's webhook of the path's {id}: another
// account's is ENOTFOUND, as a missing one.
func (s *Server) findWebhook(r *http.Request, c *Ctx) (*ams.Webhook, error) {
	id := r.PathValue("id")
	if !ams.HasPrefixID(id, ams.PrefixWebhook) {
		return nil, ams.NotFound("webhook", id)
	}
	return s.Store.FindWebhook(r.Context(), c.User.ID, id)
}

// deliveryLogSize is how many attempts a page of the log shows.
const deliveryLogSize = 25

// webhookDetail is the data of a webhook's page.
type webhookDetail struct {
	Webhook    *ams.Webhook
	State      string
	Secret     string // shown once, after creation
	Deliveries []*ams.Delivery
	// Older is the cursor of the next (older) page of the log ("" when
	// this is the last); Paged is set when this is not the newest page.
	Older string
	Paged bool
	// Last is the newest attempt (nil: none), for the failing notice.
	Last *ams.Delivery
	// Summary is the webhook's attempts of the last 24 hours; Degraded
	// says that its last ams.WebhookDegradedAfter or more attempts
	// failed in a row.
	Summary     *ams.WebhookSummary
	SummaryText string
	Degraded    bool
	// RecoverSince is the value of the recovery form's since (a
	// datetime-local in the account's time zone: a day ago by default),
	// RecoverMax its latest (now).
	RecoverSince, RecoverMax string
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	return s.webhookDetailData(r, c, wh)
}

func (s *Server) webhookDetailData(r *http.Request, c *Ctx, wh *ams.Webhook) (*webhookDetail, error) {
	wh.ExpirePrevious(s.Clock.Now())
	local := c.Now.In(c.Location())
	d := &webhookDetail{Webhook: wh, State: webhookState(wh),
		RecoverSince: local.Add(-24 * time.Hour).Format(recoverLayout), RecoverMax: local.Format(recoverLayout)}
	c.Title = "Webhook " + wh.URL
	if secret, ok := c.TakeSecret(wh.ID); ok {
		d.Secret = secret
	}
	p := ams.ListParams{Limit: deliveryLogSize, Order: ams.OrderDesc}
	if after := r.URL.Query().Get("after"); after != "" && r.Method == http.MethodGet {
		if !ams.HasPrefixID(after, ams.PrefixDelivery) {
			return nil, ams.ParamError("parameter_invalid", "after", "That page of the delivery log does not exist.")
		}
		p.After, d.Paged = after, true
	}
	page, err := s.Store.ListDeliveries(r.Context(), c.User.ID, wh.ID, ams.DeliveryFilter{}, p)
	if err != nil {
		return nil, err
	}
	if d.Summary, err = s.Store.SummarizeWebhook(r.Context(), c.User.ID, wh.ID, s.Clock.Now().Add(-ams.SummaryWindow)); err != nil {
		return nil, err
	}
	d.SummaryText = summaryText(d.Summary)
	d.Degraded = wh.Active && wh.FailureStreak >= ams.WebhookDegradedAfter
	d.Deliveries = page.Data
	if page.HasMore && len(page.Data) > 0 {
		d.Older = page.Data[len(page.Data)-1].ID
	}
	switch {
	case !d.Paged && len(page.Data) > 0:
		d.Last = page.Data[0]
	case d.Paged && d.State == "failing":
		last, err := s.Store.ListDeliveries(r.Context(), c.User.ID, wh.ID, ams.DeliveryFilter{}, ams.ListParams{Limit: 1, Order: ams.OrderDesc})
		if err != nil {
			return nil, err
		}
		if len(last.Data) > 0 {
			d.Last = last.Data[0]
		}
	}
	return d, nil
}

// summaryText says sum in a sentence: "1,270 attempts, 1,262 succeeded
// (99.4%); 95% took at most 412 ms".
func summaryText(sum *ams.WebhookSummary) string {
	if sum == nil || sum.Attempts == 0 {
		return "No delivery attempts."
	}
	t := format.Number(sum.Attempts) + " attempts, "
	if sum.Attempts == 1 {
		t = "1 attempt, "
	}
	t += format.Number(sum.Succeeded) + " succeeded"
	if sum.SuccessRate != nil {
		t += " (" + strconv.FormatFloat(*sum.SuccessRate*100, 'f', 1, 64) + "%)"
	}
	if sum.P95DurationMS != nil {
		t += "; 95% took at most " + format.Number(*sum.P95DurationMS) + " ms"
	}
	return t + "."
}

func (s *Server) editWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	c.Title = "Edit webhook"
	return s.webhookFormData(wh), nil
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	c.Title = "Edit webhook"
	f := s.webhookFormData(wh)
	in, _ := s.readWebhookForm(r, f, false)
	if _, err := s.Webhooks.Update(r.Context(), c.User.ID, wh.ID, in); err != nil {
		if err := failWebhookForm(c, err, f, "-"); err != nil {
			return nil, err
		}
		return f, nil
	}
	c.Flash(FlashSuccess, "Webhook saved.")
	return c.Redirect("/account/webhooks/" + wh.ID)
}

// setWebhookActive turns the webhook on or off, as PATCH {"active": …} does:
// turning a failing webhook on makes it active again; turning it off
// cancels its pending deliveries.
func (s *Server) setWebhookActive(r *http.Request, c *Ctx, active bool) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	if _, err := s.Webhooks.SetActive(r.Context(), c.User.ID, wh.ID, active); err != nil {
		return nil, err
	}
	switch {
	case active && wh.Status == ams.WebhookFailing:
		c.Flash(FlashSuccess, "Webhook enabled again. New events are delivered to it; events it missed are listed in the API's /v1/events for 30 days.")
	case active:
		c.Flash(FlashSuccess, "Webhook enabled.")
	default:
		c.Flash(FlashSuccess, "Webhook disabled. It gets no deliveries until you enable it; pending ones were canceled.")
	}
	return c.Redirect(s.webhookBack(r, wh.ID))
}

func (s *Server) enableWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.setWebhookActive(r, c, true)
}

func (s *Server) disableWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.setWebhookActive(r, c, false)
}

// webhookBack is where a webhook action returns: the list when the form says
// so (return_to=list), else the webhook's page.
func (s *Server) webhookBack(r *http.Request, id string) string {
	if r.PostForm.Get("return_to") == "list" {
		return "/account/webhooks"
	}
	return "/account/webhooks/" + id
}

// webhookOffMessage is the message of ping and redeliver on a webhook that is off.
const webhookOffMessage = "This webhook is disabled: enable it first, then try again."

func (s *Server) pingWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	if _, err := s.takeRequest(r, c); err != nil {
		return nil, err
	}
	switch e, err := s.Webhooks.Ping(r.Context(), c.User.ID, wh.ID); {
	case ams.ErrorKindOf(err) == ams.ECONFLICT:
		c.Flash(FlashError, webhookOffMessage)
	case err != nil:
		return nil, err
	default:
		c.Flash(FlashSuccess, "Ping sent: a webhook.ping event ("+e.ID+") is on its way. Its delivery appears in the log below.")
	}
	return c.Redirect(s.webhookBack(r, wh.ID))
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	if _, err := s.takeRequest(r, c); err != nil {
		return nil, err
	}
	var e *ams.Error
	switch d, err := s.Webhooks.Redeliver(r.Context(), c.User.ID, wh.ID, r.PathValue("dlv")); {
	case err != nil && ams.ErrorKindOf(err) != ams.ECONFLICT:
		return nil, err
	case errors.As(err, &e) && e.Code == "webhook_inactive":
		c.Flash(FlashError, webhookOffMessage)
	case errors.As(err, &e) && e.Kind == ams.ECONFLICT: // the event is no longer kept
		c.Flash(FlashError, "This event cannot be delivered again: "+e.Message)
	default:
		c.Flash(FlashSuccess, "Event "+d.EventID+" ("+d.EventType+") is queued for delivery again. The new attempt appears in the log below.")
	}
	return c.Redirect("/account/webhooks/" + wh.ID)
}

// takeRequest counts an action of the pages that makes ams send
// something (a ping, a recovery, a redelivery, a message to an assistant)
// against the account's rate limits, by the API's rule (ratelimit.Gate):
// over a limit it is the API's 429 error (shown on the error page, with
// Retry-After), and nothing is sent.
func (s *Server) takeRequest(r *http.Request, c *Ctx) (ams.RateDecision, error) {
	if s.Limiter == nil {
		return ams.RateDecision{Allowed: true}, nil
	}
	d, err := ratelimit.Gate{Limiter: s.Limiter, Usage: s.Usage}.Take(r.Context(), c.User, c.Now)
	if ams.ErrorKindOf(err) == ams.ERATELIMIT {
		c.w.Header().Set("Retry-After", strconv.FormatInt(ratelimit.RetryAfter(d, c.Now), 10))
	}
	return d, err
}

// recoverLayout is the value of the recovery form's datetime-local input
// (minutes, in the account's time zone).
const recoverLayout = "2006-01-02T15:04"

// recoverWebhook queues again the events the webhook missed since the
// form's time (a datetime-local, read in the account's time zone), as
// POST /v1/webhooks/{id}/recover does, and says how many.
func (s *Server) recoverWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	v := strings.TrimSpace(r.PostForm.Get("since"))
	since, perr := time.ParseInLocation(recoverLayout, v, c.Location())
	if perr != nil {
		since, perr = time.ParseInLocation(recoverLayout+":05", v, c.Location())
	}
	fail := func(msg string) (any, error) {
		d, err := s.webhookDetailData(r, c, wh)
		if err != nil {
			return nil, err
		}
		d.RecoverSince = v
		c.Fail("since", msg)
		return d, nil
	}
	switch {
	case v == "":
		return fail("Enter the date and time from which to recover events.")
	case perr != nil:
		return fail("Enter the date and time like 2026-11-21T09:30.")
	}
	if _, err := s.takeRequest(r, c); err != nil {
		return nil, err
	}
	rec, err := s.Webhooks.Recover(r.Context(), c.User.ID, wh.ID, &since, nil, false)
	var e *ams.Error
	switch {
	case errors.As(err, &e) && e.Code == "webhook_inactive":
		c.Flash(FlashError, webhookOffMessage)
	case errors.As(err, &e) && e.Param == "since":
		return fail(e.Message)
	case err != nil:
		return nil, err
	case rec.Queued == 0:
		c.Flash(FlashInfo, "Nothing to recover: this webhook has received every event since "+format.Time(since, c.Location())+" (or there were none).")
	case rec.Queued == 1:
		c.Flash(FlashSuccess, "1 event since "+format.Time(since, c.Location())+" is queued for delivery again.")
	default:
		c.Flash(FlashSuccess, format.Number(rec.Queued)+" events since "+format.Time(since, c.Location())+" are queued for delivery again, oldest first (they may arrive out of order).")
	}
	return c.Redirect("/account/webhooks/" + wh.ID)
}

// webhookConfirm is the data of a confirmation page.
type webhookConfirm struct {
	Webhook *ams.Webhook
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	if r.PostForm.Get("confirm") != "yes" {
		// Asked without confirmation: the confirmation page.
		return webhookConfirm{Webhook: wh}, nil
	}
	if err := s.Webhooks.Delete(r.Context(), c.User.ID, wh.ID); err != nil {
		return nil, err
	}
	c.Flash(FlashSuccess, "Webhook "+wh.URL+" deleted, with its delivery log.")
	return c.Redirect("/account/webhooks")
}

package pages

import (
	"errors"
	"net/http"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/webhook"
)

// The webhooks pages: the list (a failing webhook stands out, with the
// error of its last attempt), create and edit forms, disable and enable,
// delete, ping, and each webhook's delivery log with a redeliver button
// per attempt. They do what /v1/webhooks does, with the same store
// methods and the same rules (package webhook's CheckURL, CheckEvents,
// CheckSecret and PingEvent), so a webhook made here is one the API
// would have accepted.

// webhookGuard returns the guard webhook URLs are checked with: the
// Server's Guard, or a strict one (https, no internal addresses).
func (s *Server) webhookGuard() *ssrf.Guard {
	if s.Guard != nil {
		return s.Guard
	}
	return &ssrf.Guard{}
}

// webhookEventInfo describes an event type on the forms.
type webhookEventInfo struct {
	Type        string
	Description string
}

var webhookEventDescriptions = map[string]string{
	ams.EventMessageCreated:          "A message was stored: one sent to an assistant, or its reply.",
	ams.EventMessageUpdated:          "A message was edited.",
	ams.EventMessageDeleted:          "A message was deleted.",
	ams.EventTaskCreated:             "A task was created.",
	ams.EventTaskCompleted:           "A task was completed.",
	ams.EventTaskUpdated:             "A task was changed.",
	ams.EventTaskReminder:            "A task's reminder came due.",
	ams.EventEventCreated:            "A calendar event was created.",
	ams.EventEventUpdated:            "A calendar event was changed.",
	ams.EventEventReminder:           "A calendar event's reminder came due.",
	ams.EventIntegrationConnected:    "An integration (such as a CalDAV calendar) connected or recovered.",
	ams.EventIntegrationDisconnected: "An integration was disconnected.",
	ams.EventIntegrationError:        "An integration failed to sync.",
}

// webhookEvents lists every event type a webhook may subscribe to.
func webhookEvents() []webhookEventInfo {
	out := make([]webhookEventInfo, len(ams.EventTypes))
	for i, t := range ams.EventTypes {
		out[i] = webhookEventInfo{Type: t, Description: webhookEventDescriptions[t]}
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
		last, err := s.Store.ListDeliveries(ctx, c.User.ID, h.ID, "", ams.ListParams{Limit: 1, Order: ams.OrderDesc})
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
}

func (s *Server) webhookFormData(wh *ams.Webhook) *webhookForm {
	f := &webhookForm{Webhook: wh, SecretMode: "generate", AllEvents: webhookEvents(), MinSecret: webhook.MinSecretLength,
		DevURLs: s.webhookGuard().AllowPrivate}
	if wh != nil {
		f.URL, f.Events = wh.URL, wh.Events
	}
	return f
}

func (s *Server) newWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.webhookFormData(nil), nil
}

// failWebhookParam shows an invalid-parameter error of the shared rules as the
// form error of its field; any other error is returned.
func failWebhookParam(c *Ctx, err error, fields map[string]string) error {
	var e *ams.Error
	if !errors.As(err, &e) || e.Kind != ams.EINVALID {
		return err
	}
	field, ok := fields[e.Param]
	if !ok {
		return err
	}
	c.Fail(field, e.Message)
	return nil
}

// webhookFields maps the parameters of the shared rules to the form's
// field ids.
var webhookFields = map[string]string{"url": "url", "events": "events", "secret": "secret"}

// readWebhookForm reads and checks URL and events (and, for a new
// webhook, the secret), recording form errors on c. It returns the
// checked events.
func (s *Server) readWebhookForm(r *http.Request, c *Ctx, f *webhookForm, isNew bool) ([]string, string, error) {
	f.URL = strings.TrimSpace(r.PostForm.Get("url"))
	f.Events = r.PostForm["events"]
	var events []string
	var err error
	if len(f.Events) == 0 {
		c.Fail("events", "Choose at least one event to send to this webhook.")
	} else if events, err = webhook.CheckEvents(f.Events); err != nil {
		if err := failWebhookParam(c, err, webhookFields); err != nil {
			return nil, "", err
		}
	}
	var secret string
	if isNew {
		f.SecretMode = r.PostForm.Get("secret_mode")
		switch f.SecretMode {
		case "custom":
			secret = r.PostForm.Get("secret")
			if secret == "" {
				c.Fail("secret", "Paste your secret, or choose to have one generated.")
			} else if err := webhook.CheckSecret(secret); err != nil {
				if err := failWebhookParam(c, err, webhookFields); err != nil {
					return nil, "", err
				}
			}
		default:
			f.SecretMode = "generate"
			secret = webhook.NewSecret()
		}
	}
	if f.URL == "" {
		c.Fail("url", "Enter the URL that will receive the events.")
	} else if err := webhook.CheckURL(r.Context(), s.webhookGuard(), f.URL); err != nil {
		if err := failWebhookParam(c, err, webhookFields); err != nil {
			return nil, "", err
		}
	}
	return events, secret, nil
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	f := s.webhookFormData(nil)
	events, secret, err := s.readWebhookForm(r, c, f, true)
	if err != nil {
		return nil, err
	}
	if c.Invalid() {
		return f, nil
	}
	now := c.Now
	wh := &ams.Webhook{
		ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: c.User.ID, URL: f.URL, Events: events,
		Active: true, Status: ams.WebhookActive, Secret: secret, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.Store.CreateWebhook(r.Context(), wh); err != nil {
		return nil, err
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
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	wh, err := s.findWebhook(r, c)
	if err != nil {
		return nil, err
	}
	return s.webhookDetailData(r, c, wh)
}

func (s *Server) webhookDetailData(r *http.Request, c *Ctx, wh *ams.Webhook) (*webhookDetail, error) {
	d := &webhookDetail{Webhook: wh, State: webhookState(wh)}
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
	page, err := s.Store.ListDeliveries(r.Context(), c.User.ID, wh.ID, "", p)
	if err != nil {
		return nil, err
	}
	d.Deliveries = page.Data
	if page.HasMore && len(page.Data) > 0 {
		d.Older = page.Data[len(page.Data)-1].ID
	}
	switch {
	case !d.Paged && len(page.Data) > 0:
		d.Last = page.Data[0]
	case d.Paged && d.State == "failing":
		last, err := s.Store.ListDeliveries(r.Context(), c.User.ID, wh.ID, "", ams.ListParams{Limit: 1, Order: ams.OrderDesc})
		if err != nil {
			return nil, err
		}
		if len(last.Data) > 0 {
			d.Last = last.Data[0]
		}
	}
	return d, nil
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
	events, _, err := s.readWebhookForm(r, c, f, false)
	if err != nil {
		return nil, err
	}
	if c.Invalid() {
		return f, nil
	}
	if _, err := s.Store.UpdateWebhook(r.Context(), c.User.ID, wh.ID, ams.WebhookUpdate{URL: &f.URL, Events: events}, c.Now); err != nil {
		return nil, err
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
	if _, err := s.Store.UpdateWebhook(r.Context(), c.User.ID, wh.ID, ams.WebhookUpdate{Active: &active}, c.Now); err != nil {
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
	e := webhook.PingEvent(c.User.ID, wh.ID, c.Now)
	switch err := s.Store.PingWebhook(r.Context(), c.User.ID, wh.ID, e); {
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
	dlv := r.PathValue("dlv")
	if !ams.HasPrefixID(dlv, ams.PrefixDelivery) {
		return nil, ams.NotFound("delivery", dlv)
	}
	d, err := s.Store.FindDelivery(r.Context(), c.User.ID, wh.ID, dlv)
	if err != nil {
		return nil, err
	}
	var e *ams.Error
	switch err := s.Store.EnqueueDelivery(r.Context(), c.User.ID, wh.ID, d.EventID, c.Now); {
	case errors.As(err, &e) && e.Code == "webhook_inactive":
		c.Flash(FlashError, webhookOffMessage)
	case errors.As(err, &e) && e.Kind == ams.ECONFLICT: // the event is no longer kept
		c.Flash(FlashError, "This event cannot be delivered again: "+e.Message)
	case err != nil:
		return nil, err
	default:
		c.Flash(FlashSuccess, "Event "+d.EventID+" ("+d.EventType+") is queued for delivery again. The new attempt appears in the log below.")
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
	if err := s.Store.DeleteWebhook(r.Context(), c.User.ID, wh.ID); err != nil {
		return nil, err
	}
	c.Flash(FlashSuccess, "Webhook "+wh.URL+" deleted, with its delivery log.")
	return c.Redirect("/account/webhooks")
}

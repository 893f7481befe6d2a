package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ssrf"
)

// Service owns the lifecycle of webhooks: create, update, enable and
// disable, delete, ping and redeliver. The API's /v1/webhooks and the
// account pages both call it, so a webhook is checked and changed the same
// way wherever the change comes from.
//
// The rules of a webhook's fields live here once. Each error is an
// EINVALID *ams.Error naming its parameter (url, events, secret) with a
// sentence meant for the user; when several fields are wrong, the error is
// an ams.FieldErrors listing each, in the order url missing, events missing,
// secret missing, events, secret, url (errors.As finds the first).
type Service struct {
	// Store holds the webhooks and their deliveries.
	Store Store
	// Guard checks webhook URLs (nil: a strict guard: https, no internal
	// addresses).
	Guard *ssrf.Guard
	// Clock is the service clock (nil: the wall clock).
	Clock ams.Clock
	// MaxPerAccount is how many webhooks an account may have (0:
	// ams.DefaultMaxWebhooks); an enterprise account may have its own cap
	// (ams.User.WebhookLimit).
	MaxPerAccount int
}

// Store is what the Service needs of the storage engine; ams.Store
// gives it through ams.Narrow[Tx] (app.New wires it so).
type Store interface {
	CreateWebhookCapped(ctx context.Context, w *ams.Webhook, defaultCap int) error
	FindWebhook(ctx context.Context, userID, id string) (*ams.Webhook, error)
	UpdateWebhook(ctx context.Context, userID, id string, upd ams.WebhookUpdate, now time.Time) (*ams.Webhook, error)
	DeleteWebhook(ctx context.Context, userID, id string) error
	PingWebhook(ctx context.Context, userID, id string, e *ams.Event) error
	EnqueueDelivery(ctx context.Context, userID, webhookID, eventID string, now time.Time) error
	FindDelivery(ctx context.Context, userID, webhookID, id string) (*ams.Delivery, error)
	// FindUser reads the account, whose approval (off the waitlist) the
	// actions that send something need.
	FindUser(ctx context.Context, id string) (*ams.User, error)
	// Update runs fn in one transaction: it commits when fn returns nil.
	Update(ctx context.Context, fn func(tx Tx) error) error
}

// Tx is what the Service writes in one transaction (with the answer it
// keeps, ams.KeepAnswer); ams.Tx implements it.
type Tx interface {
	FindWebhook(ctx context.Context, userID, id string) (*ams.Webhook, error)
	EnqueueRecovery(ctx context.Context, userID, webhookID string, since, until, now time.Time) (int64, error)
	// Emit stores events and queues their deliveries (Trigger's test events).
	Emit(ctx context.Context, events ...*ams.Event) error
}

// Input holds the fields of a webhook to create or change; nil fields are
// absent (on update: kept).
type Input struct {
	URL    *string
	Events *[]string
	Secret *string
	// Active turns the webhook on or off; absent on create means on.
	// Turning a failing webhook on makes it active again; turning one off
	// cancels its pending deliveries.
	Active *bool
	// PreviousSecretExpiresIn (update only) is how many seconds the secret
	// that Secret replaces keeps signing webhook-signature beside the new
	// one: 0 to MaxSecretOverlap (absent: ams.DefaultSecretOverlap, 24 h).
	// Without Secret it changes when the current previous secret stops
	// signing (0: at once); then the webhook must have one.
	PreviousSecretExpiresIn *int64
	// Metadata is merged into the webhook's (ams.MetadataPatch).
	Metadata ams.MetadataPatch
	// Ordered makes the webhook ordered, or not (ams.Webhook.Ordered;
	// absent on create: not ordered).
	Ordered *bool
	// Filter, when Set, replaces the webhook's filter (ams.ParseWebhookFilter;
	// null or {}: none). Payload is "full" or "thin" (absent on create:
	// "full").
	Filter  RawField
	Payload *string
	// Admin says that the credential creating or changing the webhook
	// holds admin (the account holder, through the account pages, does).
	// Only then may it name management event types
	// (ams.ManagementEventTypes) or change a webhook that receives them,
	// and only a webhook last saved so receives them, through "*" too
	// (ams.Webhook.ManagementEvents). Otherwise the answer is EFORBIDDEN
	// insufficient_scope.
	Admin bool
}

// RawField is a field of a request body kept as the client sent it, so
// that its own parser reports what is wrong with it; Set is false when
// the body had no such field (null is set, to null).
type RawField struct {
	Set bool
	Raw json.RawMessage
}

// UnmarshalJSON implements json.Unmarshaler; it keeps the value as given.
func (f *RawField) UnmarshalJSON(b []byte) error {
	f.Set, f.Raw = true, append(json.RawMessage(nil), b...)
	return nil
}

// checkDelivery validates the filter and the payload of in, when given,
// adding their errors to errs; it returns them as the store takes them
// (nil: keep).
func checkDelivery(in Input, errs *[]*ams.Error) (*ams.WebhookFilter, *string) {
	var filter *ams.WebhookFilter
	if in.Filter.Set {
		f, err := ams.ParseWebhookFilter(in.Filter.Raw)
		if collect(errs, err) == nil && err == nil {
			filter = &f
		}
	}
	if in.Payload != nil && *in.Payload != ams.PayloadFull && *in.Payload != ams.PayloadThin {
		*errs = append(*errs, ams.ParamError("parameter_invalid", "payload", "'payload' must be %q (the record, the default) or %q (its ids only).",
			ams.PayloadFull, ams.PayloadThin))
	}
	return filter, in.Payload
}

// checkManagement refuses, for a credential without admin, events that
// name a management event type.
func checkManagement(in Input, events []string) error {
	if in.Admin {
		return nil
	}
	for _, t := range events {
		if ams.IsManagementEvent(t) {
			return ams.ErrManagementEventsNeedAdmin("events", t)
		}
	}
	return nil
}

// PreviousSecretParam is the request parameter of Input.PreviousSecretExpiresIn.
const PreviousSecretParam = "previous_secret_expires_in"

// collect adds err to errs when it is an invalid-parameter error, and
// returns any other error.
func collect(errs *[]*ams.Error, err error) error {
	if err == nil {
		return nil
	}
	var e *ams.Error
	if errors.As(err, &e) && e.Kind == ams.EINVALID && e.Param != "" {
		*errs = append(*errs, e)
		return nil
	}
	return err
}

func (s *Service) guard() *ssrf.Guard {
	if s.Guard != nil {
		return s.Guard
	}
	return &ssrf.Guard{}
}

// AllowsPrivate reports whether the service's guard accepts http and
// loopback URLs (--dev).
func (s *Service) AllowsPrivate() bool { return s.guard().AllowPrivate }

// checkFields validates the events and the secret of in, when given.
func checkFields(in Input) ([]string, []*ams.Error) {
	var errs []*ams.Error
	var events []string
	if in.Events != nil {
		var err error
		events, err = CheckEvents(*in.Events)
		collect(&errs, err) // CheckEvents fails only with parameter errors
	}
	if in.Secret != nil {
		collect(&errs, CheckSecret(*in.Secret))
	}
	if in.PreviousSecretExpiresIn != nil {
		collect(&errs, CheckSecretOverlap(*in.PreviousSecretExpiresIn))
	}
	collect(&errs, in.Metadata.Check("metadata"))
	return events, errs
}

// approved returns ams.ErrWaitlistedWebhooks when the account is still on
// the early-access waitlist: until it is approved, ams sends nothing for
// it, so it may not create, ping, recover or redeliver webhooks (the API
// and the account pages alike come through here).
func (s *Service) approved(ctx context.Context, userID string) error {
	u, err := s.Store.FindUser(ctx, userID)
	if err != nil {
		return err
	}
	if !u.Approved() {
		return ams.ErrWaitlistedWebhooks()
	}
	return nil
}

// maxPerAccount is the server's cap on an account's webhooks.
func (s *Service) maxPerAccount() int {
	if s.MaxPerAccount > 0 {
		return s.MaxPerAccount
	}
	return ams.DefaultMaxWebhooks
}

// Create validates in (url, events and secret are required) and creates
// the webhook of userID; it returns it as stored. An account on the
// waitlist may not (EFORBIDDEN account_on_waitlist); one that has as many
// webhooks as its cap allows may not either (ECONFLICT
// webhook_limit_reached).
func (s *Service) Create(ctx context.Context, userID string, in Input) (*ams.Webhook, error) {
	if err := s.approved(ctx, userID); err != nil {
		return nil, err
	}
	var errs []*ams.Error
	for _, m := range []struct {
		missing bool
		name    string
	}{{in.URL == nil, "url"}, {in.Events == nil, "events"}, {in.Secret == nil, "secret"}} {
		if m.missing {
			errs = append(errs, ams.ParamError("parameter_missing", m.name, "Missing required parameter '%s'.", m.name))
		}
	}
	events, invalid := checkFields(in)
	errs = append(errs, invalid...)
	if in.PreviousSecretExpiresIn != nil {
		errs = append(errs, ams.ParamError("parameter_invalid", PreviousSecretParam,
			"'%s' applies only when the secret of an existing webhook is replaced (PATCH).", PreviousSecretParam))
	}
	if in.URL != nil {
		if err := collect(&errs, CheckURL(ctx, s.guard(), *in.URL)); err != nil {
			return nil, err
		}
	}
	filter, payload := checkDelivery(in, &errs)
	var md ams.Metadata
	if in.Metadata.Check("metadata") == nil { // else reported by checkFields
		var err error
		md, err = in.Metadata.Merge(ams.Metadata{}, "metadata")
		collect(&errs, err)
	}
	if err := ams.JoinFieldErrors(errs); err != nil {
		return nil, err
	}
	if err := checkManagement(in, events); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	wh := &ams.Webhook{Metadata: md, ManagementEvents: in.Admin, Ordered: in.Ordered != nil && *in.Ordered,
		ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: userID, URL: *in.URL, Events: events,
		Active: in.Active == nil || *in.Active, Status: ams.WebhookActive, Secret: *in.Secret, CreatedAt: now, UpdatedAt: now,
		Payload: ams.PayloadFull,
	}
	if filter != nil {
		wh.Filter = *filter
	}
	if payload != nil {
		wh.Payload = *payload
	}
	ams.KeepAnswer(ctx, wh)
	if err := s.Store.CreateWebhookCapped(ctx, wh, s.maxPerAccount()); err != nil {
		return nil, err
	}
	return s.Store.FindWebhook(ctx, userID, wh.ID)
}

// Update validates in and changes the fields it gives of webhook id. Bad
// events or secret are reported whether the webhook exists or not; the URL
// is checked only for a webhook that exists.
func (s *Service) Update(ctx context.Context, userID, id string, in Input) (*ams.Webhook, error) {
	events, errs := checkFields(in)
	filter, payload := checkDelivery(in, &errs)
	wh, err := s.Store.FindWebhook(ctx, userID, id)
	if err != nil {
		if len(errs) > 0 {
			return nil, ams.FieldErrors(errs)
		}
		return nil, err
	}
	now := s.Clock.Now()
	wh.ExpirePrevious(now)
	if in.PreviousSecretExpiresIn != nil && in.Secret == nil && wh.PreviousSecretExpiresAt == nil && len(errs) == 0 {
		errs = append(errs, ams.ParamError("parameter_invalid", PreviousSecretParam,
			"This webhook has no previous secret still signing deliveries: send '%s' with a new 'secret'.", PreviousSecretParam))
	}
	if in.URL != nil {
		if err := collect(&errs, CheckURL(ctx, s.guard(), *in.URL)); err != nil {
			return nil, err
		}
	}
	if err := ams.JoinFieldErrors(errs); err != nil {
		return nil, err
	}
	if err := checkManagement(in, events); err != nil {
		return nil, err
	}
	if wh.ManagementEvents && !in.Admin {
		return nil, ams.Errorf(ams.EFORBIDDEN, "insufficient_scope",
			"This webhook receives management audit events (api_key.*, oauth_client.*, account.updated): changing it needs the admin permission.")
	}
	upd := ams.WebhookUpdate{URL: in.URL, Events: events, Secret: in.Secret, Active: in.Active, Metadata: in.Metadata, Ordered: in.Ordered, Filter: filter, Payload: payload}
	if in.Admin {
		upd.ManagementEvents = &in.Admin
	}
	if in.PreviousSecretExpiresIn != nil {
		upd.PreviousSecretOverlap = ptr(time.Duration(*in.PreviousSecretExpiresIn) * time.Second)
	}
	return s.Store.UpdateWebhook(ctx, userID, id, upd, now)
}

// SetActive turns webhook id on or off (Enable, Disable).
func (s *Service) SetActive(ctx context.Context, userID, id string, active bool) (*ams.Webhook, error) {
	return s.Store.UpdateWebhook(ctx, userID, id, ams.WebhookUpdate{Active: &active}, s.Clock.Now())
}

// Enable turns webhook id on: a failing webhook becomes active again.
func (s *Service) Enable(ctx context.Context, userID, id string) (*ams.Webhook, error) {
	return s.SetActive(ctx, userID, id, true)
}

// Disable turns webhook id off and cancels its pending deliveries.
func (s *Service) Disable(ctx context.Context, userID, id string) (*ams.Webhook, error) {
	return s.SetActive(ctx, userID, id, false)
}

// Delete deletes webhook id with its delivery log.
func (s *Service) Delete(ctx context.Context, userID, id string) error {
	return s.Store.DeleteWebhook(ctx, userID, id)
}

// Ping stores a webhook.ping event and queues it for webhook id only; it
// returns the event. A webhook that is off is ECONFLICT.
func (s *Service) Ping(ctx context.Context, userID, id string) (*ams.Event, error) {
	if err := s.approved(ctx, userID); err != nil {
		return nil, err
	}
	e := PingEvent(userID, id, s.Clock.Now())
	ams.KeepAnswer(ctx, e)
	if err := s.Store.PingWebhook(ctx, userID, id, e); err != nil {
		return nil, err
	}
	return e, nil
}

// Redeliver queues again, for webhook webhookID, the event of its delivery
// deliveryID, and returns that delivery. A webhook that is off is
// ECONFLICT with code webhook_inactive; an event no longer kept is
// ECONFLICT too.
func (s *Service) Redeliver(ctx context.Context, userID, webhookID, deliveryID string) (*ams.Delivery, error) {
	if !ams.HasPrefixID(deliveryID, ams.PrefixDelivery) {
		return nil, ams.NotFound("delivery", deliveryID)
	}
	if err := s.approved(ctx, userID); err != nil {
		return nil, err
	}
	d, err := s.Store.FindDelivery(ctx, userID, webhookID, deliveryID)
	if err != nil {
		return nil, err
	}
	ams.KeepAnswer(ctx, d)
	if err := s.Store.EnqueueDelivery(ctx, userID, webhookID, d.EventID, s.Clock.Now()); err != nil {
		return nil, err
	}
	return d, nil
}

// Recovery is what Recover queued: the webhook's missed events created
// in [Since, Until).
type Recovery struct {
	Object    string    `json:"object"` // "webhook_recovery"
	WebhookID string    `json:"webhook_id"`
	Since     time.Time `json:"since"`
	Until     time.Time `json:"until"`
	Queued    int64     `json:"queued"` // events queued for delivery
}

// Recover queues again, for webhook id, every retained event created in
// [since, until) of a type it subscribes to that it has not received
// successfully and that is not already pending for it, including events
// emitted while it was failing or disabled; oldest first. since is
// required and may not be in the future; until (nil: now, events created
// at this very moment included) must be after since; each error names
// its parameter (since, until). since is clamped to the webhook's
// creation unless includeEarlier: events from before the webhook existed
// are sent only when asked for (the answer's Since is the range's start
// used). A webhook that is off is ECONFLICT webhook_inactive: enable it
// first. An account on the waitlist may not recover.
func (s *Service) Recover(ctx context.Context, userID, id string, since, until *time.Time, includeEarlier bool) (*Recovery, error) {
	if err := s.approved(ctx, userID); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	end := now
	if until != nil {
		end = *until
	}
	switch {
	case since == nil:
		return nil, ams.ParamError("parameter_missing", "since", "Missing required parameter 'since'.")
	case since.After(now):
		return nil, ams.ParamError("parameter_invalid", "since", "'since' must not be in the future (it is now %s).", now.UTC().Format(time.RFC3339))
	case !since.Before(end) && until != nil:
		return nil, ams.ParamError("parameter_invalid", "until", "'until' must be after 'since'.")
	case !since.Before(end):
		return nil, ams.ParamError("parameter_invalid", "since", "'since' must be before 'until', which is now when not given.")
	}
	bound := end
	if until == nil {
		// Up to now, events of this very millisecond included.
		bound = now.Add(time.Millisecond)
	}
	var rec *Recovery
	err := s.Store.Update(ctx, func(tx Tx) error {
		from := *since
		if !includeEarlier {
			w, err := tx.FindWebhook(ctx, userID, id)
			if err != nil {
				return err
			}
			if from.Before(w.CreatedAt) {
				from = w.CreatedAt
			}
		}
		// An empty range (a webhook created after until) queues nothing,
		// but still answers webhook_inactive for a webhook that is off.
		n, err := tx.EnqueueRecovery(ctx, userID, id, from, bound, now)
		if err != nil {
			return err
		}
		rec = &Recovery{Object: "webhook_recovery", WebhookID: id, Since: from.UTC(), Until: end.UTC(), Queued: n}
		ams.KeepAnswer(ctx, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// The rules of a webhook's fields.

// Webhook secret bounds.
const (
	MinSecretLength = 16  // characters
	MaxSecretLength = 256 // bytes
)

// SecretPrefix starts the secrets NewSecret makes: a secret of the form
// "whsec_<base64>" is what the Standard Webhooks libraries take, and its
// decoded bytes key the webhook-signature header (StandardKey).
const SecretPrefix = "whsec_"

// NewSecret returns a new random webhook secret: "whsec_" and the base64
// of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// CheckURL validates a webhook URL with the SSRF guard g (https, no
// internal addresses, unless g allows them).
func CheckURL(ctx context.Context, g *ssrf.Guard, u string) error {
	if err := g.CheckURL(ctx, u); err != nil {
		var ue *ssrf.URLError
		if errors.As(err, &ue) {
			return ams.ParamError("parameter_invalid", "url", "Invalid webhook URL: %s.", ue.Reason)
		}
		return err
	}
	return nil
}

// CheckEvents validates the event types a webhook subscribes to and
// returns them without duplicates, in their order; a list holding
// ams.EventAll ("*") is just ["*"], which holds every other type.
func CheckEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, ams.ParamError("parameter_invalid", "events", "'events' must list at least one event type.")
	}
	var out []string
	for _, t := range events {
		if t != ams.EventAll && !ams.IsEventType(t) {
			return nil, ams.ParamError("parameter_invalid", "events", "Unknown event type '%s'. Known types: %s, or %s for all of them.",
				ams.Clip(t), strings.Join(ams.EventTypes, ", "), ams.EventAll)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if slices.Contains(out, ams.EventAll) {
		return []string{ams.EventAll}, nil
	}
	return out, nil
}

// CheckSecret validates a webhook secret: MinSecretLength characters to
// MaxSecretLength bytes, no control characters.
func CheckSecret(secret string) error {
	if n := utf8.RuneCountInString(secret); n < MinSecretLength || len(secret) > MaxSecretLength {
		return ams.ParamError("parameter_invalid", "secret", "'secret' must be %d to %d characters.", MinSecretLength, MaxSecretLength)
	}
	if strings.IndexFunc(secret, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0 {
		return ams.ParamError("parameter_invalid", "secret", "'secret' must not contain control characters.")
	}
	return nil
}

// CheckSecretOverlap validates previous_secret_expires_in: 0 to
// ams.MaxSecretOverlap in seconds.
func CheckSecretOverlap(seconds int64) error {
	if seconds < 0 || seconds > int64(ams.MaxSecretOverlap/time.Second) {
		return ams.ParamError("parameter_invalid", PreviousSecretParam, "'%s' must be 0 to %d seconds (7 days).",
			PreviousSecretParam, int64(ams.MaxSecretOverlap/time.Second))
	}
	return nil
}

// PingEvent returns the webhook.ping event that tests webhook id of the
// user, as Service.Ping stores and queues it.
func PingEvent(userID, webhookID string, now time.Time) *ams.Event {
	return &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: userID, Type: ams.EventWebhookPing, CreatedAt: now,
		Data: map[string]any{"webhook_id": webhookID}}
}

// MarshalJSON implements json.Marshaler: since and until as the API writes
// timestamps (ams.TimeFormat).
func (r Recovery) MarshalJSON() ([]byte, error) {
	type plain Recovery
	return json.Marshal(struct {
		plain
		Since ams.JSONTime `json:"since"`
		Until ams.JSONTime `json:"until"`
	}{plain(r), ams.JSONTime(r.Since), ams.JSONTime(r.Until)})
}

// Package dumptest is the fixture of the export/import tests of both
// engines: Fill puts a record of every kind in a store through ams.Store,
// Compare reads all of it back from two stores and compares it field by
// field, and CheckMoved checks what a moved store must still do (claim the
// pending deliveries with their secrets, put new rows after the imported
// ones).
package dumptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/dump"
	"github.com/amsdev/ams/internal/testing/wait"
)

// T0 is the fixture's clock.
var T0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// ClaimAt is when CheckMoved claims the pending deliveries: every lease
// and retry delay of the fixture has run out by then.
var ClaimAt = T0.Add(3 * time.Hour)

// Fixture is what Fill stored.
type Fixture struct {
	Users         []*ams.User
	KeySecrets    []string // the secret of each key of Keys
	Keys          []*ams.APIKey
	Assistants    []*ams.Assistant
	Conversations []*ams.Conversation
	Messages      []*ams.Message
	Webhooks      []*ams.Webhook // [0] stays active, [1] fails, [2] is another user's
	// Pending are the events (by id) whose delivery to Webhooks[0] is
	// pending, with the attempts made so far: all due at ClaimAt.
	Pending map[string]int
	Email   *ams.Email
	Client  *ams.OAuthClient
	Tokens  []*ams.OAuthToken
	Session *ams.LoginSession
	// AccountTokens are e-mailed links: bob's verification link (bob is
	// unverified), and ann's reset link, used.
	AccountTokens []*ams.AccountToken
	Idempotent    []*ams.IdempotencyRecord
	// The assistant's world.
	Integration        *ams.Integration
	IntegrationSecrets map[string]string
	Deleted            *ams.Assistant // soft-deleted
	Tasks              []*ams.Task
	CalendarEvents     []*ams.CalendarEvent
	Actions            []*ams.Action
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Fill stores the fixture in s (an empty store) through ams.Store.
func Fill(t *testing.T, s ams.Store) *Fixture {
	t.Helper()
	ctx := context.Background()
	f := &Fixture{Pending: map[string]int{}}

	ann := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ann@example.com", PasswordHash: "$2a$10$abcdefghijklmnopqrstuv0123456789ABCDEFGHIJKLMNOPQRSTU",
		Plan: ams.PlanEnterprise, Timezone: "Europe/Paris", CreatedAt: T0, UpdatedAt: T0}
	bobSince := T0.Add(time.Second)
	bob := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "bob@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: T0.Add(time.Second), UpdatedAt: T0.Add(time.Second),
		UnverifiedSince: &bobSince}
	for _, u := range []*ams.User{ann, bob} {
		must(t, s.CreateUser(ctx, u))
	}
	// The links e-mailed (their e-mails are sent at once, so that the
	// queue holds only the webhook's notice below).
	f.AccountTokens = []*ams.AccountToken{
		{Hash: ams.HashSecret("verify-bob"), UserID: bob.ID, Purpose: ams.TokenEmailVerification, Email: bob.Email, CreatedAt: T0, ExpiresAt: T0.Add(ams.EmailVerificationLifetime)},
		{Hash: ams.HashSecret("reset-ann"), UserID: ann.ID, Purpose: ams.TokenPasswordReset, Email: ann.Email, CreatedAt: T0, ExpiresAt: T0.Add(ams.PasswordResetLifetime)},
	}
	for _, tok := range f.AccountTokens {
		ok, err := s.IssueAccountToken(ctx, tok, &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailPasswordResetLink, To: "x@example.com", Subject: "link", Text: "link"}, T0.Add(-time.Hour), 3)
		if err != nil || !ok {
			t.Fatalf("fixture: issue account token: %v %v", ok, err)
		}
	}
	used := T0.Add(time.Minute)
	_, err := s.ResetPassword(ctx, ams.HashSecret("reset-ann"), ann.PasswordHash, used)
	must(t, err)
	f.AccountTokens[1].UsedAt = &used
	sent, err := s.ClaimEmails(ctx, T0, time.Minute, 10)
	must(t, err)
	for _, e := range sent {
		must(t, s.FinishEmail(ctx, e.ID, true, "", time.Time{}, T0))
	}
	rpm, rpd := 5000, 2_000_000
	ann, err = s.UpdateUser(ctx, ann.ID, ams.UserUpdate{RPM: &rpm, RPD: &rpd}, T0.Add(time.Hour+123*time.Millisecond))
	must(t, err)
	f.Users = []*ams.User{ann, bob}

	exp := T0.Add(30 * 24 * time.Hour)
	for _, k := range []struct {
		u     *ams.User
		name  string
		perms ams.Permissions
		exp   *time.Time
	}{
		{ann, "ci", ams.Permissions{ams.PermRead, ams.PermMessages}, &exp},
		{ann, "admin", ams.Permissions{ams.PermAdmin}, nil},
		{bob, "bob's", ams.Permissions{ams.PermRead}, nil},
	} {
		secret, key := ams.NewAPIKey(k.u.ID, k.name, k.perms, T0.Add(time.Minute), k.exp)
		must(t, s.CreateKey(ctx, key))
		f.KeySecrets, f.Keys = append(f.KeySecrets, secret), append(f.Keys, key)
	}
	must(t, s.TouchKey(ctx, f.Keys[0].ID, T0.Add(5*time.Minute)))
	_, err = s.RevokeKey(ctx, ann.ID, f.Keys[1].ID, T0.Add(10*time.Minute))
	must(t, err)

	for _, a := range []*ams.Assistant{
		{ID: ams.NewID(ams.PrefixAssistant), UserID: ann.ID, Name: "Ann's", Description: "Helps Ann", Instructions: "Be brief.\nAlways.", Model: ams.ModelBuiltin, CreatedAt: T0, UpdatedAt: T0},
		{ID: ams.NewID(ams.PrefixAssistant), UserID: ann.ID, Name: "Second", Model: ams.ModelBuiltin, CreatedAt: T0.Add(time.Second), UpdatedAt: T0.Add(time.Second)},
		{ID: ams.NewID(ams.PrefixAssistant), UserID: bob.ID, Name: "Bob's", Model: ams.ModelBuiltin, CreatedAt: T0, UpdatedAt: T0},
	} {
		a.Object = "assistant"
		must(t, s.CreateAssistant(ctx, a))
		f.Assistants = append(f.Assistants, a)
	}

	// Webhooks first, so that the messages' events are queued for them.
	for i, w := range []*ams.Webhook{
		{UserID: ann.ID, URL: "https://hooks.example.com/ann", Events: []string{ams.EventMessageCreated, ams.EventTaskCreated}, Secret: "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng=="},
		{UserID: ann.ID, URL: "https://hooks.example.com/failing", Events: []string{ams.EventMessageCreated}, Secret: "another secret ünïcode"},
		{UserID: bob.ID, URL: "https://hooks.example.com/bob", Events: []string{ams.EventTaskCreated}, Secret: "bob-secret-0123456789"},
	} {
		w.ID, w.Object, w.Active, w.Status = ams.NewID(ams.PrefixWebhook), "webhook", true, ams.WebhookActive
		w.CreatedAt, w.UpdatedAt = T0.Add(time.Duration(i)*time.Second), T0.Add(time.Duration(i)*time.Second)
		must(t, s.CreateWebhook(ctx, w))
		f.Webhooks = append(f.Webhooks, w)
	}
	// Bob's webhook had its secret replaced: the previous one (sealed too)
	// still signs for a week.
	rotated, overlap := "bob-secret-rotated-0123", ams.MaxSecretOverlap
	w2, err := s.UpdateWebhook(ctx, bob.ID, f.Webhooks[2].ID, ams.WebhookUpdate{Secret: &rotated, PreviousSecretOverlap: &overlap}, f.Webhooks[2].UpdatedAt)
	must(t, err)
	f.Webhooks[2] = w2

	turn := func(u *ams.User, a *ams.Assistant, conv *ams.Conversation, text string, at time.Time) *ams.Conversation {
		x := &ams.Exchange{}
		if conv == nil {
			conv = &ams.Conversation{ID: ams.NewID(ams.PrefixConversation), Object: "conversation", UserID: u.ID, AssistantID: a.ID, Title: text,
				LastMessageAt: at, CreatedAt: at, UpdatedAt: at}
			x.NewConversation = conv
			f.Conversations = append(f.Conversations, conv)
		}
		x.ConversationID = conv.ID
		mk := func(dir, content string, at time.Time) *ams.Message {
			m := &ams.Message{ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: u.ID, AssistantID: a.ID, ConversationID: conv.ID,
				Direction: dir, Content: content, Metadata: ams.Metadata{}, CreatedAt: at, UpdatedAt: at}
			if dir == ams.DirectionInbound {
				m.Metadata["ref"] = "<" + content + "> \"quoted\""
			}
			f.Messages = append(f.Messages, m)
			return m
		}
		x.Inbound = mk(ams.DirectionInbound, text, at)
		x.Reply = mk(ams.DirectionOutbound, "Re: "+text, at.Add(7*time.Millisecond))
		x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound), ams.MessageCreatedEvent(x.Reply)}
		must(t, s.SaveExchange(ctx, x))
		return conv
	}
	c1 := turn(ann, f.Assistants[0], nil, "Hello! My name is Ada.", T0.Add(2*time.Minute))
	turn(ann, f.Assistants[0], c1, "Quotes \"', tags <b>&amp;</b>, tabs\t, emoji 🎉, NUL-free\nnew line", T0.Add(3*time.Minute))
	turn(ann, f.Assistants[1], nil, strings.Repeat("long ", 2000), T0.Add(4*time.Minute))
	turn(bob, f.Assistants[2], nil, "Bob here", T0.Add(5*time.Minute))

	// Deliveries: claim ann's jobs (6 messages × 2 webhooks); to
	// Webhooks[1] the first attempt fails for good (the webhook turns
	// failing, its other jobs are canceled, an e-mail is queued); to
	// Webhooks[0] one succeeds, one is retried later, the others stay
	// leased (due again when the lease runs out).
	now := T0.Add(time.Hour)
	jobs, err := s.ClaimJobs(ctx, now, ams.Claim{Lease: 15 * time.Second, Limit: 100, PerWebhook: 100})
	must(t, err)
	if len(jobs) != 12 {
		t.Fatalf("fixture: claimed %d jobs, want 12", len(jobs))
	}
	var failedOne, succeeded, retried bool
	for i, j := range jobs {
		d := &ams.Delivery{ID: ams.NewID(ams.PrefixDelivery), UserID: j.UserID, WebhookID: j.WebhookID, EventID: j.Event.ID, EventType: j.Event.Type,
			Attempt: j.Attempts + 1, URL: j.URL, DurationMS: int64(10 + i), CreatedAt: now.Add(time.Duration(i) * time.Millisecond)}
		r := &ams.AttemptResult{Job: j, Delivery: d}
		switch {
		case j.WebhookID == f.Webhooks[1].ID && !failedOne:
			failedOne = true
			code, msg := 410, "gone"
			d.StatusCode, d.Error, d.ResponseBody = &code, &msg, "Gone <for good>"
			r.Outcome = ams.JobFailed
			f.Email = &ams.Email{ID: ams.NewID("eml_"), Kind: ams.EmailWebhookFailing, To: ann.Email, Subject: "Your webhook is failing", Text: "Webhook " + j.WebhookID + " failed.\nFix it."}
			r.Email = f.Email
		case j.WebhookID == f.Webhooks[0].ID && !succeeded:
			succeeded = true
			code := 204
			d.Success, d.StatusCode = true, &code
			r.Outcome = ams.JobSucceeded
		case j.WebhookID == f.Webhooks[0].ID && !retried:
			retried = true
			msg := "connection refused"
			d.Error = &msg
			r.Outcome, r.NextAt = ams.JobRetry, T0.Add(2*time.Hour)
			f.Pending[j.Event.ID] = 1
		case j.WebhookID == f.Webhooks[0].ID:
			f.Pending[j.Event.ID] = 0 // left leased
			continue
		default:
			continue // Webhooks[1]'s others: canceled by the failure
		}
		_, err := s.RecordAttempt(ctx, r, now.Add(time.Second))
		must(t, err)
	}
	if !failedOne || !succeeded || !retried {
		t.Fatal("fixture: the claimed jobs were not as expected")
	}
	f.Webhooks[1].Active, f.Webhooks[1].Status, f.Webhooks[1].UpdatedAt = false, ams.WebhookFailing, now.Add(time.Second)
	// A ping queued and not yet attempted.
	ping := &ams.Event{ID: ams.NewID(ams.PrefixEvent), Object: "event", UserID: ann.ID, Type: ams.EventWebhookPing, CreatedAt: T0.Add(150 * time.Minute),
		Data: map[string]any{"webhook_id": f.Webhooks[0].ID}}
	must(t, s.PingWebhook(ctx, ann.ID, f.Webhooks[0].ID, ping))
	f.Pending[ping.ID] = 0

	f.Client = &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: ann.ID, Name: "Ann's app",
		RedirectURIs: []string{"https://app.example/cb", "http://127.0.0.1:9999/callback"}, SecretHash: ams.HashSecret("ams_cs_x"),
		CreatedAt: T0, UpdatedAt: T0}
	must(t, s.CreateOAuthClient(ctx, f.Client))
	public := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: ann.ID, Name: "Public", RedirectURIs: []string{"https://p.example/cb"},
		Public: true, CreatedAt: T0.Add(time.Second), UpdatedAt: T0.Add(time.Second)}
	must(t, s.CreateOAuthClient(ctx, public))
	grant := ams.NewID("req_")
	for i, kind := range []string{ams.TokenAuthorizeCode, ams.TokenPKCE, ams.TokenAccess, ams.TokenRefresh} {
		tok := &ams.OAuthToken{Signature: ams.HashSecret(ams.NewSecret("sig")), Kind: kind, RequestID: grant, ClientID: f.Client.ID, UserID: ann.ID,
			Scopes: []string{"read", "messages"}, Active: true, Data: []byte(fmt.Sprintf(`{"kind":%q,"bin":"\u0000"}`, kind) + "\x00\xff\x01"),
			ExpiresAt: T0.Add(time.Duration(i+1) * time.Hour), CreatedAt: T0.Add(time.Duration(i) * time.Second)}
		must(t, s.CreateOAuthToken(ctx, tok))
		f.Tokens = append(f.Tokens, tok)
	}
	must(t, s.DeactivateOAuthToken(ctx, ams.TokenAuthorizeCode, f.Tokens[0].Signature))
	f.Tokens[0].Active = false
	f.Session = &ams.LoginSession{IDHash: ams.HashSecret("session"), UserID: ann.ID, CreatedAt: T0, ExpiresAt: T0.Add(ams.LoginSessionLifetime)}
	must(t, s.CreateLoginSession(ctx, f.Session))

	done := &ams.IdempotencyRecord{UserID: ann.ID, Key: "retry-1", RequestHash: ams.HashSecret("POST /v1/messages {}"), CreatedAt: T0.Add(30 * time.Minute)}
	if old, err := s.BeginIdempotent(ctx, done); err != nil || old != nil {
		t.Fatalf("fixture: begin idempotent: %v %v", old, err)
	}
	done.Done = true
	done.Response = []byte(`{"status":201,"header":{"Location":"/v1/messages/msg_x"},"body":"eyJpZCI6Im1zZ194In0="}`)
	must(t, s.FinishIdempotent(ctx, done))
	running := &ams.IdempotencyRecord{UserID: bob.ID, Key: "still running", RequestHash: ams.HashSecret("POST /v1/webhooks {}"), CreatedAt: T0.Add(59 * time.Minute)}
	if old, err := s.BeginIdempotent(ctx, running); err != nil || old != nil {
		t.Fatalf("fixture: begin idempotent: %v %v", old, err)
	}
	f.Idempotent = []*ams.IdempotencyRecord{done, running}

	fillWorld(t, s, f)
	return f
}

// fillWorld stores the assistant's world: an integration with sealed
// secrets, a soft-deleted assistant, tasks (one whose reminder fired),
// calendar events (one kept in step with the integration) and actions.
func fillWorld(t *testing.T, s ams.Store, f *Fixture) {
	t.Helper()
	ctx := context.Background()
	ann, asst := f.Users[0], f.Assistants[0]
	msg := "token expired"
	f.Integration = &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: ann.ID, Provider: "caldav", Status: "error",
		Config: map[string]any{"url": "https://dav.example.com/ann/", "n": float64(3), "nested": map[string]any{"ok": true}}, LastError: &msg,
		ConnectedAt: T0, CreatedAt: T0, UpdatedAt: T0.Add(time.Minute)}
	f.IntegrationSecrets = map[string]string{"password": "hunter2 ünïcode", "token": "tok_0123456789"}
	f.Deleted = &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: ann.ID, Name: "Deleted", Model: ams.ModelBuiltin,
		CreatedAt: T0.Add(2 * time.Second), UpdatedAt: T0.Add(2 * time.Second)}
	at := func(d time.Duration) *time.Time { v := T0.Add(d); return &v }
	f.Tasks = []*ams.Task{
		{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: ann.ID, AssistantID: asst.ID, Title: "Call Bob", Notes: "About <the> \"plan\"",
			Status: ams.TaskOpen, DueAt: at(24 * time.Hour), RemindAt: at(80 * time.Minute), CreatedAt: T0, UpdatedAt: T0},
		{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: ann.ID, AssistantID: asst.ID, Title: "Done already", Status: ams.TaskCompleted,
			CompletedAt: at(time.Hour), CreatedAt: T0.Add(time.Second), UpdatedAt: T0.Add(time.Hour)},
		{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: ann.ID, AssistantID: f.Deleted.ID, Title: "Of a deleted assistant", Status: ams.TaskOpen,
			CreatedAt: T0.Add(2 * time.Second), UpdatedAt: T0.Add(2 * time.Second)},
	}
	f.CalendarEvents = []*ams.CalendarEvent{
		{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: ann.ID, AssistantID: asst.ID, Title: "Lunch", Description: "With Bob",
			Location: "Café", StartsAt: T0.Add(26 * time.Hour), EndsAt: T0.Add(27 * time.Hour), RemindAt: at(200 * time.Minute), CreatedAt: T0, UpdatedAt: T0},
		{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: ann.ID, Title: "From the calendar", StartsAt: T0.Add(48 * time.Hour),
			EndsAt: T0.Add(49 * time.Hour), IntegrationID: f.Integration.ID, ExternalUID: "uid-1@dav.example.com", ExternalPath: "/ann/cal/1.ics",
			ExternalETag: `"etag-1"`, CreatedAt: T0.Add(time.Second), UpdatedAt: T0.Add(time.Second)},
	}
	f.Actions = []*ams.Action{
		{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: ann.ID, AssistantID: asst.ID, ConversationID: f.Conversations[0].ID, Type: "create_task",
			Input: json.RawMessage(`{"title": "Call Bob",  "due": null}`), Status: ams.ActionSucceeded, Result: json.RawMessage(`{"id":"task_x","ok":true}`),
			CreatedAt: T0.Add(2 * time.Minute)},
		{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: ann.ID, AssistantID: asst.ID, Type: "delete_task", Input: json.RawMessage(`{"id":"task_missing"}`),
			Status: ams.ActionFailed, Error: &ams.ActionError{Type: "invalid_request_error", Code: "resource_missing", Message: "No such task: 'task_missing'", Param: "id"},
			CreatedAt: T0.Add(3 * time.Minute)},
	}
	must(t, s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, f.Integration, f.IntegrationSecrets); err != nil {
			return err
		}
		if err := tx.CreateAssistant(ctx, f.Deleted); err != nil {
			return err
		}
		for _, tk := range f.Tasks {
			if err := tx.CreateTask(ctx, tk); err != nil {
				return err
			}
		}
		if err := tx.DeleteAssistant(ctx, ann.ID, f.Deleted.ID, T0.Add(20*time.Minute)); err != nil {
			return err
		}
		for _, e := range f.CalendarEvents {
			if err := tx.CreateCalendarEvent(ctx, e); err != nil {
				return err
			}
		}
		for _, a := range f.Actions {
			if err := tx.CreateAction(ctx, a); err != nil {
				return err
			}
		}
		return nil
	}))
	// The first task's reminder fires (the lunch's is still to come).
	if n, err := s.FireReminders(ctx, T0.Add(90*time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("fixture: fire reminders: %d %v", n, err)
	}
}

// Compare reads everything of the fixture from want (the source) and got
// (the target) through ams.Store and fails on any difference. It writes
// nothing.
func Compare(t *testing.T, want, got ams.Store, f *Fixture) {
	t.Helper()
	ctx := context.Background()
	same := func(what string, read func(s ams.Store) (any, error)) {
		t.Helper()
		w, err := read(want)
		if err != nil {
			t.Fatalf("%s from the source: %v", what, err)
		}
		g, err := read(got)
		if err != nil {
			t.Fatalf("%s from the target: %v", what, err)
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s differs:\nsource %s\ntarget %s", what, show(w), show(g))
		}
	}
	// An event list holds back the events that a transaction still
	// running could precede (on PostgreSQL, any older transaction of the
	// server): lists of events are compared until they agree.
	sameEventually := func(what string, read func(s ams.Store) (any, error)) {
		t.Helper()
		if wait.Until(func() bool {
			w, err1 := read(want)
			g, err2 := read(got)
			return err1 == nil && err2 == nil && reflect.DeepEqual(w, g)
		}) {
			return
		}
		same(what, read)
	}
	all := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	for _, u := range f.Users {
		same("user "+u.ID, func(s ams.Store) (any, error) { return s.FindUser(ctx, u.ID) })
		same("user by e-mail "+u.Email, func(s ams.Store) (any, error) { return s.FindUserByEmail(ctx, strings.ToUpper(u.Email)) })
		same("keys of "+u.ID, func(s ams.Store) (any, error) { return s.ListKeys(ctx, u.ID) })
		same("assistants of "+u.ID, func(s ams.Store) (any, error) { return s.ListAssistants(ctx, u.ID, all) })
		same("conversations of "+u.ID, func(s ams.Store) (any, error) { return s.ListConversations(ctx, u.ID, "", all) })
		same("integrations of "+u.ID, func(s ams.Store) (any, error) { return s.ListIntegrations(ctx, u.ID, all) })
		sameEventually("events of "+u.ID, func(s ams.Store) (any, error) { return s.ListEvents(ctx, u.ID, ams.EventFilter{}, all) })
		same("webhooks of "+u.ID, func(s ams.Store) (any, error) { return s.ListWebhooks(ctx, u.ID, all) })
		same("oauth clients of "+u.ID, func(s ams.Store) (any, error) { return s.ListOAuthClients(ctx, u.ID) })
	}
	for i, secret := range f.KeySecrets {
		same("key "+f.Keys[i].ID+" authenticated", func(s ams.Store) (any, error) {
			k, u, err := s.AuthenticateKey(ctx, ams.HashSecret(secret))
			return []any{k, u}, err
		})
		same("key "+f.Keys[i].ID, func(s ams.Store) (any, error) { return s.FindKey(ctx, f.Keys[i].ID) })
	}
	for _, c := range f.Conversations {
		same("conversation "+c.ID, func(s ams.Store) (any, error) { return s.FindConversation(ctx, c.UserID, c.ID) })
		same("messages of "+c.ID, func(s ams.Store) (any, error) { return s.ListMessages(ctx, c.UserID, c.ID, all) })
		same("recent messages of "+c.ID, func(s ams.Store) (any, error) { return s.RecentMessages(ctx, c.UserID, c.ID, 3) })
	}
	for _, m := range f.Messages {
		same("message "+m.ID, func(s ams.Store) (any, error) { return s.FindMessage(ctx, m.UserID, m.ID) })
	}
	for _, w := range f.Webhooks {
		same("webhook "+w.ID, func(s ams.Store) (any, error) { return s.FindWebhook(ctx, w.UserID, w.ID) })
		same("deliveries of "+w.ID, func(s ams.Store) (any, error) {
			return s.ListDeliveries(ctx, w.UserID, w.ID, ams.DeliveryFilter{}, all)
		})
		fw, err := got.FindWebhook(ctx, w.UserID, w.ID)
		if err != nil || fw.Secret != w.Secret || fw.PreviousSecret != w.PreviousSecret || fw.Active != w.Active || fw.Status != w.Status ||
			(w.PreviousSecretExpiresAt != nil) != (fw.PreviousSecretExpiresAt != nil) {
			t.Errorf("webhook %s in the target: %+v %v (want secret %q, active %v, status %s)", w.ID, fw, err, w.Secret, w.Active, w.Status)
		}
	}
	for id := range f.Pending {
		same("event "+id, func(s ams.Store) (any, error) { return s.FindEvent(ctx, f.Users[0].ID, id) })
	}
	same("oauth client "+f.Client.ID, func(s ams.Store) (any, error) { return s.FindOAuthClient(ctx, f.Client.ID) })
	for _, tok := range f.Tokens {
		same("oauth token "+tok.Kind, func(s ams.Store) (any, error) { return s.GetOAuthToken(ctx, tok.Kind, tok.Signature) })
		g, err := got.GetOAuthToken(ctx, tok.Kind, tok.Signature)
		if err != nil || !bytes.Equal(g.Data, tok.Data) || g.Active != tok.Active || !g.ExpiresAt.Equal(tok.ExpiresAt) {
			t.Errorf("oauth token %s in the target: %+v %v", tok.Kind, g, err)
		}
	}
	same("login session", func(s ams.Store) (any, error) { return s.FindLoginSession(ctx, f.Session.IDHash, T0.Add(time.Hour)) })
	for _, tok := range f.AccountTokens {
		same("account token "+string(tok.Purpose), func(s ams.Store) (any, error) {
			got, err := s.FindAccountToken(ctx, tok.Hash, tok.Purpose)
			if err == nil && !reflect.DeepEqual(got, tok) {
				t.Errorf("account token %s: %s, want %s", tok.Purpose, show(got), show(tok))
			}
			return got, err
		})
	}
	// BeginIdempotent returns the stored record (and writes nothing) while
	// it is younger than its TTL, or, running, than IdempotencyAbandoned.
	for _, rec := range f.Idempotent {
		same("idempotency key "+rec.Key, func(s ams.Store) (any, error) {
			return s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: rec.UserID, Key: rec.Key, RequestHash: "other", CreatedAt: T0.Add(time.Hour)})
		})
	}
	ann := f.Users[0]
	same("tasks", func(s ams.Store) (any, error) { return s.ListTasks(ctx, ann.ID, ams.TaskFilter{}, all) })
	same("calendar events", func(s ams.Store) (any, error) { return s.ListCalendarEvents(ctx, ann.ID, ams.CalendarFilter{}, all) })
	same("actions", func(s ams.Store) (any, error) { return s.ListActions(ctx, ann.ID, ams.ActionFilter{}, all) })
	for _, tk := range f.Tasks {
		same("task "+tk.ID, func(s ams.Store) (any, error) { return s.FindTask(ctx, ann.ID, tk.ID) })
	}
	for _, e := range f.CalendarEvents {
		same("calendar event "+e.ID, func(s ams.Store) (any, error) { return s.FindCalendarEvent(ctx, ann.ID, e.ID) })
	}
	for _, a := range f.Actions {
		same("action "+a.ID, func(s ams.Store) (any, error) { return s.FindAction(ctx, ann.ID, a.ID) })
	}
	same("integration", func(s ams.Store) (any, error) { return s.FindIntegration(ctx, ann.ID, f.Integration.ID) })
	same("active integrations", func(s ams.Store) (any, error) { return s.ActiveIntegrations(ctx, f.Integration.Provider) })
	same("integration secrets", func(s ams.Store) (any, error) { return s.IntegrationSecrets(ctx, ann.ID, f.Integration.ID) })
	same("next reminder", func(s ams.Store) (any, error) { return s.NextReminder(ctx) })
	if sec, err := got.IntegrationSecrets(ctx, ann.ID, f.Integration.ID); err != nil || !reflect.DeepEqual(sec, f.IntegrationSecrets) {
		t.Errorf("integration secrets in the target: %v %v, want %v", sec, err, f.IntegrationSecrets)
	}
	for _, s := range []ams.Store{want, got} {
		if _, err := s.FindAssistant(ctx, ann.ID, f.Deleted.ID); !ams.IsNotFound(err) {
			t.Errorf("deleted assistant found: %v", err)
		}
	}
	if tk, err := got.FindTask(ctx, ann.ID, f.Tasks[0].ID); err != nil || tk.RemindedAt == nil || !tk.RemindedAt.Equal(T0.Add(90*time.Minute)) {
		t.Errorf("fired reminder in the target: %s %v", show(tk), err)
	}
	if e, err := got.FindCalendarEvent(ctx, ann.ID, f.CalendarEvents[1].ID); err != nil || e.IntegrationID != f.Integration.ID || e.ExternalETag != `"etag-1"` || e.AssistantID != "" {
		t.Errorf("synced calendar event in the target: %s %v", show(e), err)
	}

	// Spot checks against the fixture itself, so that two equally wrong
	// stores do not pass.
	u, err := got.FindUserByEmail(ctx, "ANN@example.com")
	if err != nil || !reflect.DeepEqual(u, f.Users[0]) {
		t.Errorf("user in the target: %s %v, want %s", show(u), err, show(f.Users[0]))
	}
	m, err := got.FindMessage(ctx, f.Messages[2].UserID, f.Messages[2].ID)
	if err != nil || !reflect.DeepEqual(m, f.Messages[2]) {
		t.Errorf("message in the target: %s %v, want %s", show(m), err, show(f.Messages[2]))
	}
	ins, err := got.ListIntegrations(ctx, f.Users[0].ID, all)
	if err != nil || len(ins.Data) != 1 || !reflect.DeepEqual(ins.Data[0], f.Integration) {
		t.Errorf("integration in the target: %s %v, want %s", show(ins), err, show(f.Integration))
	}
	rec, err := got.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: f.Users[0].ID, Key: "retry-1", RequestHash: "x", CreatedAt: T0.Add(time.Hour)})
	if want := f.Idempotent[0]; err != nil || rec == nil || !rec.Done || !bytes.Equal(rec.Response, want.Response) ||
		rec.RequestHash != want.RequestHash || !rec.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("idempotency record in the target: %s %v", show(rec), err)
	}
}

// CheckMoved checks, on a store that an import filled with the fixture,
// that the pending deliveries are claimed with their webhook's secret and
// the queued e-mail is sent, and that rows created after the import are
// listed after the imported ones (their seq is higher). It writes to s.
func CheckMoved(t *testing.T, s ams.Store, f *Fixture) {
	t.Helper()
	ctx := context.Background()
	jobs, err := s.ClaimJobs(ctx, ClaimAt, ams.Claim{Lease: 24 * time.Hour, Limit: 100, PerWebhook: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, j := range jobs {
		if j.WebhookID != f.Webhooks[0].ID || j.Secret != f.Webhooks[0].Secret || j.URL != f.Webhooks[0].URL {
			t.Errorf("claimed job %+v: want webhook %s with its secret", j, f.Webhooks[0].ID)
		}
		got[j.Event.ID] = j.Attempts
	}
	if !reflect.DeepEqual(got, f.Pending) {
		t.Errorf("pending deliveries after the move (event: attempts): %v, want %v", got, f.Pending)
	}
	mails, err := s.ClaimEmails(ctx, ClaimAt, time.Minute, 10)
	if err != nil || len(mails) != 1 || *mails[0] != *f.Email {
		t.Errorf("queued e-mails after the move: %v %v, want %+v", mails, err, f.Email)
	}

	// The reminder still to come fires once, at its time.
	if next, err := s.NextReminder(ctx); err != nil || !next.Equal(T0.Add(200*time.Minute)) {
		t.Errorf("next reminder after the move: %v %v", next, err)
	}
	for range 2 {
		if n, err := s.FireReminders(ctx, T0.Add(200*time.Minute), 10); err != nil || n > 1 {
			t.Fatalf("fire reminders after the move: %d %v", n, err)
		}
	}
	if e, err := s.FindCalendarEvent(ctx, f.Users[0].ID, f.CalendarEvents[0].ID); err != nil || e.RemindedAt == nil {
		t.Errorf("calendar reminder after the move: %s %v", show(e), err)
	}

	// New rows go after the imported ones.
	ann, later := f.Users[0], ClaimAt.Add(time.Hour)
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: ann.ID, Name: "After the move", Model: ams.ModelBuiltin, CreatedAt: later, UpdatedAt: later}
	if err := s.CreateAssistant(ctx, a); err != nil {
		t.Fatalf("create an assistant after the import: %v", err)
	}
	page, err := s.ListAssistants(ctx, ann.ID, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil || len(page.Data) != 3 || page.Data[2].ID != a.ID {
		t.Fatalf("assistants after a new one: %s %v (the new one must be last)", show(page), err)
	}
	conv := f.Conversations[0]
	in := &ams.Message{ID: ams.NewID(ams.PrefixMessage), Object: "message", UserID: ann.ID, AssistantID: conv.AssistantID, ConversationID: conv.ID,
		Direction: ams.DirectionInbound, Content: "after the move", CreatedAt: later, UpdatedAt: later}
	ev := ams.MessageCreatedEvent(in)
	if err := s.SaveExchange(ctx, &ams.Exchange{ConversationID: conv.ID, Inbound: in, Events: []*ams.Event{ev}}); err != nil {
		t.Fatalf("send a message after the import: %v", err)
	}
	msgs, err := s.ListMessages(ctx, ann.ID, conv.ID, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil || len(msgs.Data) != 5 || msgs.Data[4].ID != in.ID {
		t.Fatalf("messages after a new one: %s %v (the new one must be last)", show(msgs), err)
	}
	// Listed once no older transaction of the server runs.
	evs, err := s.ListEvents(ctx, ann.ID, ams.EventFilter{}, ams.ListParams{Limit: 1})
	wait.Until(func() bool {
		if err == nil && (len(evs.Data) != 1 || evs.Data[0].ID != ev.ID) {
			evs, err = s.ListEvents(ctx, ann.ID, ams.EventFilter{}, ams.ListParams{Limit: 1})
			return false
		}
		return true
	})
	if err != nil || len(evs.Data) != 1 || evs.Data[0].ID != ev.ID {
		t.Fatalf("newest event after a new one: %s %v", show(evs), err)
	}
	// The new event is queued for the active webhook, and claimed after
	// the imported jobs' seq.
	jobs, err = s.ClaimJobs(ctx, later, ams.Claim{Lease: time.Minute, Limit: 100, PerWebhook: 100})
	if err != nil || len(jobs) != 1 || jobs[0].Event.ID != ev.ID || slices.ContainsFunc(jobs, func(j *ams.Job) bool { return j.Secret != f.Webhooks[0].Secret }) {
		t.Fatalf("jobs after a new message: %s %v", show(jobs), err)
	}
	bob := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "carol@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: later, UpdatedAt: later}
	if err := s.CreateUser(ctx, bob); err != nil {
		t.Fatalf("create a user after the import: %v", err)
	}
	if err := s.CreateUser(ctx, &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ANN@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: later, UpdatedAt: later}); ams.ErrorKindOf(err) != ams.ECONFLICT {
		t.Fatalf("an imported e-mail is not taken: %v", err)
	}
	_, k := ams.NewAPIKey(ann.ID, "after", ams.Permissions{ams.PermRead}, later, nil)
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatalf("create a key after the import: %v", err)
	}
	keys, err := s.ListKeys(ctx, ann.ID)
	if err != nil || len(keys) != 3 || !slices.ContainsFunc(keys, func(x *ams.APIKey) bool { return x.ID == k.ID }) {
		t.Fatalf("keys after a new one: %s %v", show(keys), err)
	}
	w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), Object: "webhook", UserID: ann.ID, URL: "https://hooks.example.com/new", Events: []string{ams.EventTaskCreated},
		Active: true, Status: ams.WebhookActive, Secret: "new-secret", CreatedAt: later, UpdatedAt: later}
	if err := s.CreateWebhook(ctx, w); err != nil {
		t.Fatalf("create a webhook after the import: %v", err)
	}
	whs, err := s.ListWebhooks(ctx, ann.ID, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil || len(whs.Data) != 3 || whs.Data[2].ID != w.ID {
		t.Fatalf("webhooks after a new one: %s %v", show(whs), err)
	}
	tk := &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: ann.ID, AssistantID: f.Assistants[0].ID, Title: "after the move", Status: ams.TaskOpen,
		CreatedAt: later, UpdatedAt: later}
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: ann.ID, AssistantID: f.Assistants[0].ID, Type: "create_task",
		Input: json.RawMessage(`{}`), Status: ams.ActionSucceeded, Result: json.RawMessage(`{}`), CreatedAt: later}
	ev2 := &ams.CalendarEvent{ID: ams.NewID(ams.PrefixCalendar), Object: "calendar_event", UserID: ann.ID, AssistantID: f.Assistants[0].ID, Title: "after",
		StartsAt: later, EndsAt: later.Add(time.Hour), CreatedAt: later, UpdatedAt: later}
	if err := s.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateTask(ctx, tk); err != nil {
			return err
		}
		if err := tx.CreateCalendarEvent(ctx, ev2); err != nil {
			return err
		}
		return tx.CreateAction(ctx, act)
	}); err != nil {
		t.Fatalf("create world records after the import: %v", err)
	}
	tasks, err := s.ListTasks(ctx, ann.ID, ams.TaskFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil || len(tasks.Data) != len(f.Tasks)+1 || tasks.Data[len(f.Tasks)].ID != tk.ID {
		t.Fatalf("tasks after a new one: %s %v (the new one must be last)", show(tasks), err)
	}
	acts, err := s.ListActions(ctx, ann.ID, ams.ActionFilter{}, ams.ListParams{Limit: 1})
	if err != nil || len(acts.Data) != 1 || acts.Data[0].ID != act.ID {
		t.Fatalf("newest action after a new one: %s %v", show(acts), err)
	}
	cevs, err := s.ListCalendarEvents(ctx, ann.ID, ams.CalendarFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil || len(cevs.Data) != len(f.CalendarEvents)+1 || cevs.Data[len(f.CalendarEvents)].ID != ev2.ID {
		t.Fatalf("calendar events after a new one: %s %v (the new one must be last)", show(cevs), err)
	}
	c := &ams.OAuthClient{ID: ams.NewID(ams.PrefixClient), Object: "oauth_client", UserID: ann.ID, Name: "new", RedirectURIs: []string{"https://n.example/cb"}, Public: true, CreatedAt: later, UpdatedAt: later}
	if err := s.CreateOAuthClient(ctx, c); err != nil {
		t.Fatalf("create an oauth client after the import: %v", err)
	}
	cls, err := s.ListOAuthClients(ctx, ann.ID)
	if err != nil || len(cls) != 3 || cls[0].ID != c.ID {
		t.Fatalf("oauth clients after a new one (newest first): %s %v", show(cls), err)
	}
}

// Lines returns the row lines of what ex exports (no header, no trailer),
// for comparing two stores' contents row by row.
func Lines(t *testing.T, ex dump.Exporter) []string {
	t.Helper()
	var buf bytes.Buffer
	w, err := dump.NewWriter(&buf, dump.Header{Engine: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Export(context.Background(), w.Write); err != nil {
		t.Fatalf("export: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	return lines[1 : len(lines)-1]
}

// SameLines fails unless both stores export the same rows.
func SameLines(t *testing.T, want, got []string) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("exports differ at row %d (of %d and %d):\nsource %s\ntarget %s", i+1, len(want), len(got), w, g)
		}
	}
}

func show(v any) string {
	var b strings.Builder
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			walk(v.Elem())
		case reflect.Struct:
			if tm, ok := v.Interface().(time.Time); ok {
				b.WriteString(tm.Format(time.RFC3339Nano))
				return
			}
			b.WriteString("{")
			for i := range v.NumField() {
				if !v.Type().Field(i).IsExported() {
					continue
				}
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(v.Type().Field(i).Name + ":")
				walk(v.Field(i))
			}
			b.WriteString("}")
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				fmt.Fprintf(&b, "%q", v.Bytes())
				return
			}
			b.WriteString("[")
			for i := range v.Len() {
				if i > 0 {
					b.WriteString(" ")
				}
				walk(v.Index(i))
			}
			b.WriteString("]")
		default:
			fmt.Fprintf(&b, "%+v", v.Interface())
		}
	}
	walk(reflect.ValueOf(v))
	return b.String()
}

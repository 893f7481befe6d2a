// Package storetest is the one storage test suite that every ams.Store
// engine passes. An engine's own test calls Run with a function that gives
// each test a fresh, isolated store.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// Run runs the suite. newStore must return an empty store of its own for
// each call (its own file, schema or database) and close it when t ends.
func Run(t *testing.T, newStore func(t *testing.T) ams.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s ams.Store)
	}{
		{"Users", testUsers},
		{"APIKeys", testAPIKeys}, {"AuthGeneration", testAuthGeneration}, {"KeyGrants", testKeyGrants},
		{"KeyReminders", testKeyReminders}, {"KeyRemindersRace", testKeyRemindersRace},
		{"AccountTokens", testAccountTokens}, {"AccountTokenExpiry", testAccountTokenExpiry}, {"AccountTokenRace", testAccountTokenRace},
		{"EmailCaps", testEmailCaps}, {"EmailCapRace", testEmailCapRace},
		{"AssistantsScopedToUser", testAssistants},
		{"Pagination", testPagination},
		{"ExchangeAtomic", testExchange},
		{"ExchangeRollsBack", testExchangeRollback},
		{"Events", testEvents}, {"Erasure", testErasure},
		{"EventsCatchUp", testEventsCatchUp},
		{"EventFilters", testEventFilters},
		{"EventsOrder", testEventsOrder},
		{"Idempotency", testIdempotency}, {"IdempotencyWithChange", testIdempotencyWithChange},
		{"Webhooks", testWebhooks},
		{"DeliveryQueue", testDeliveryQueue},
		{"SubscribeToAll", testSubscribeToAll},
		{"ClaimWebhookCap", testClaimWebhookCap}, {"ClaimAccounts", testClaimAccounts}, {"AttemptFenced", testAttemptFenced},
		{"RecordAttempts", testRecordAttempts}, {"RecordSuccesses", testRecordSuccesses}, {"RecordAttemptsAndClaim", testRecordAttemptsAndClaim}, {"FailureFenced", testFailureFenced},
		{"OrderedWebhook", testOrderedWebhook}, {"OrderedLeases", testOrderedLeases}, {"OrderedExhaustion", testOrderedExhaustion},
		{"OrderedRecovery", testOrderedRecovery},
		{"ClaimWakes", testClaimWakes},
		{"WebhookSecretRotation", testWebhookSecretRotation},
		{"WebhookHealth", testWebhookHealth}, {"WebhookFilters", testWebhookFilters},
		{"Purge", testPurge},
		{"Recovery", testRecovery},
		{"WebhookCap", testWebhookCap},
		{"ManagementCaps", testManagementCaps},
		{"ManagementEvents", testManagementEvents},
		{"OpsEvents", testOpsEvents},
		{"OpsEventsConcurrent", testOpsEventsConcurrent},
		{"OAuth", testOAuth},
		{"OAuthLocks", testOAuthLocks},
		{"Waitlist", testWaitlist},
		{"ListUsers", testListUsers},
		{"OAuthManagement", testOAuthManagement},
		{"RegisteredClients", testRegisteredClients},
		{"ManagementLists", testManagementLists}, {"ManagementTx", testManagementTx}, {"EmailNotifications", testEmailNotifications},
		{"WorldTasks", testWorldTasks}, {"AssistantFoundInTx", testAssistantFoundInTx}, {"ConcurrentFinds", testConcurrentFinds},
		{"ConcurrentExchanges", testConcurrentExchanges},
		{"WorldCalendar", testWorldCalendar},
		{"WorldRollback", testWorldRollback},
		{"WorldEmit", testWorldEmit},
		{"WorldAssistants", testWorldAssistants},
		{"WorldMessages", testWorldMessages},
		{"Metadata", testMetadata}, {"Conversations", testConversations},
		{"Turns", testTurns}, {"TurnWhole", testTurnWhole}, {"TurnQueue", testTurnQueue}, {"TurnTakeover", testTurnTakeover},
		{"TurnRequired", testTurnRequired}, {"TurnRequiredRace", testTurnRequiredRace}, {"TurnRequiredExpiry", testTurnRequiredExpiry},
		{"WorldIntegrations", testWorldIntegrations}, {"MCPIntegrations", testMCPIntegrations},
		{"WorldActions", testWorldActions},
		{"WorldReminders", testWorldReminders},
		{"CalendarDeletion", testCalendarDeletion}, {"IntegrationSyncState", testIntegrationSyncState},
		{"TxSameInterfaces", testTxSameInterfaces}, {"EmitOutsideTx", testEmitOutsideTx},
		{"UsageMinutes", testUsageMinutes}, {"UsageDays", testUsageDays}, {"UsagePurge", testUsagePurge}, {"UsageConcurrent", testUsageConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func mustUser(t *testing.T, s ams.Store, email string) *ams.User {
	t.Helper()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateUser(context.Background(), u); err != nil {
		t.Fatalf("create user: %v", err)
	}
	return u
}

func mustAssistant(t *testing.T, s ams.Store, u *ams.User, name string) *ams.Assistant {
	t.Helper()
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: u.ID, Name: name, Model: ams.ModelBuiltin, CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateAssistant(context.Background(), a); err != nil {
		t.Fatalf("create assistant: %v", err)
	}
	return a
}

func wantKind(t *testing.T, err error, k ams.ErrorKind) {
	t.Helper()
	if err == nil || ams.ErrorKindOf(err) != k {
		t.Fatalf("got error %v, want kind %d", err, k)
	}
}

func testUsers(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "Ann@Example.com")
	got, err := s.FindUserByEmail(ctx, "ann@example.COM")
	if err != nil || got.ID != u.ID || got.Email != "ann@example.com" {
		t.Fatalf("find by email: %+v %v", got, err)
	}
	dup := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "ANN@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
	wantKind(t, s.CreateUser(ctx, dup), ams.ECONFLICT)
	_, err = s.FindUser(ctx, "usr_missing")
	wantKind(t, err, ams.ENOTFOUND)

	plan, rpm := ams.PlanEnterprise, 5000
	up, err := s.UpdateUser(ctx, u.ID, ams.UserUpdate{Plan: &plan, RPM: &rpm}, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if l := up.Limits(); l.PerMinute != 5000 || l.PerDay != ams.DefaultEnterpriseRPD {
		t.Fatalf("limits after update: %+v", l)
	}
	again, _ := s.FindUser(ctx, u.ID)
	if again.Plan != ams.PlanEnterprise || again.RPM != 5000 || !again.UpdatedAt.Equal(t0.Add(time.Hour)) || !again.CreatedAt.Equal(t0) {
		t.Fatalf("stored user after update: %+v", again)
	}
}

func testAPIKeys(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "keys@example.com")
	secret, k := ams.NewAPIKey(u.ID, "ci", ams.Permissions{ams.PermRead, ams.PermMessages}, t0, nil)
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	gk, gu, err := s.AuthenticateKey(ctx, ams.HashSecret(secret))
	if err != nil || gk.ID != k.ID || gu.ID != u.ID || gk.Permissions.String() != "read,messages" || gk.RevokedAt != nil {
		t.Fatalf("authenticate: %+v %+v %v", gk, gu, err)
	}
	_, _, err = s.AuthenticateKey(ctx, ams.HashSecret(secret+"x"))
	wantKind(t, err, ams.ENOTFOUND)

	if err := s.TouchKey(ctx, k.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	other := mustUser(t, s, "other@example.com")
	_, err = s.RevokeKey(ctx, other.ID, k.ID, t0)
	wantKind(t, err, ams.ENOTFOUND) // another account cannot revoke it
	rk, err := s.RevokeKey(ctx, u.ID, k.ID, t0.Add(2*time.Minute))
	if err != nil || rk.RevokedAt == nil || !rk.RevokedAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("revoke: %+v %v", rk, err)
	}
	// Revoking again keeps the first time.
	rk, _ = s.RevokeKey(ctx, "", k.ID, t0.Add(time.Hour))
	if !rk.RevokedAt.Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("second revoke moved revoked_at to %v", rk.RevokedAt)
	}
	gk, _, err = s.AuthenticateKey(ctx, ams.HashSecret(secret))
	if err != nil || gk.RevokedAt == nil {
		t.Fatalf("revoked key as authenticated: %+v %v", gk, err)
	}
	fk, err := s.FindKey(ctx, k.ID)
	if err != nil || fk.RevokedAt == nil || fk.LastUsedAt == nil || !fk.LastUsedAt.Equal(t0.Add(time.Minute)) || fk.Name != "ci" || !fk.CreatedAt.Equal(t0) {
		t.Fatalf("revoked key as read back: %+v %v", fk, err)
	}
	keys, err := s.ListKeys(ctx, u.ID)
	if err != nil || len(keys) != 1 || keys[0].Hash == secret {
		t.Fatalf("list keys: %v %v", keys, err)
	}
}

func testAssistants(t *testing.T, s ams.Store) {
	ctx := context.Background()
	ann, bob := mustUser(t, s, "ann@example.com"), mustUser(t, s, "bob@example.com")
	a := mustAssistant(t, s, ann, "Ann's")
	if _, err := s.FindAssistant(ctx, ann.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.FindAssistant(ctx, bob.ID, a.ID)
	wantKind(t, err, ams.ENOTFOUND)
	page, err := s.ListAssistants(ctx, bob.ID, ams.ListParams{Limit: 10})
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("bob sees %d assistants (%v)", len(page.Data), err)
	}
	// A cursor from another account is not found in this list.
	_, err = s.ListAssistants(ctx, bob.ID, ams.ListParams{Limit: 10, After: a.ID})
	wantKind(t, err, ams.EINVALID)
}

func testPagination(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "pages@example.com")
	var ids []string // in creation order
	for i := range 7 {
		ids = append(ids, mustAssistant(t, s, u, fmt.Sprint("a", i)).ID)
	}
	page := func(p ams.ListParams) ([]string, bool) {
		t.Helper()
		pg, err := s.ListAssistants(ctx, u.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range pg.Data {
			out = append(out, a.ID)
		}
		return out, pg.HasMore
	}
	eq := func(got []string, want ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Newest first by default, walking forward with after.
	got, more := page(ams.ListParams{Limit: 3})
	eq(got, ids[6], ids[5], ids[4])
	if !more {
		t.Fatal("has_more false on first page")
	}
	got, more = page(ams.ListParams{Limit: 3, After: ids[4]})
	eq(got, ids[3], ids[2], ids[1])
	got, more = page(ams.ListParams{Limit: 3, After: ids[1]})
	eq(got, ids[0])
	if more {
		t.Fatal("has_more true on last page")
	}
	// before walks back towards the start, in list order.
	got, more = page(ams.ListParams{Limit: 2, Before: ids[2]})
	eq(got, ids[4], ids[3])
	if !more {
		t.Fatal("has_more false with newer items before the page")
	}
	// Ascending order.
	got, _ = page(ams.ListParams{Limit: 3, Order: ams.OrderAsc})
	eq(got, ids[0], ids[1], ids[2])
	got, _ = page(ams.ListParams{Limit: 3, Order: ams.OrderAsc, After: ids[2]})
	eq(got, ids[3], ids[4], ids[5])
	got, more = page(ams.ListParams{Limit: 2, Order: ams.OrderAsc, Before: ids[3]})
	eq(got, ids[1], ids[2])
	if !more {
		t.Fatal("has_more false for asc before")
	}
	got, more = page(ams.ListParams{Limit: 100})
	if len(got) != 7 || more {
		t.Fatalf("limit 100: %d items, has_more %v", len(got), more)
	}
}

func exchange(u *ams.User, a *ams.Assistant, convID string, newConv bool, text string, at time.Time) *ams.Exchange {
	x := &ams.Exchange{ConversationID: convID}
	if newConv {
		x.NewConversation = &ams.Conversation{ID: convID, UserID: u.ID, AssistantID: a.ID, Title: text, LastMessageAt: at, CreatedAt: at, UpdatedAt: at}
	}
	mk := func(dir, content string, t time.Time) *ams.Message {
		return &ams.Message{ID: ams.NewID(ams.PrefixMessage), UserID: u.ID, AssistantID: a.ID, ConversationID: convID,
			Direction: dir, Content: content, CreatedAt: t, UpdatedAt: t}
	}
	x.Inbound = mk(ams.DirectionInbound, text, at)
	x.Reply = mk(ams.DirectionOutbound, "re: "+text, at.Add(time.Millisecond))
	x.Events = []*ams.Event{ams.MessageCreatedEvent(x.Inbound), ams.MessageCreatedEvent(x.Reply)}
	return x
}

func testExchange(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "x@example.com")
	a := mustAssistant(t, s, u, "x")
	conv := ams.NewID(ams.PrefixConversation)
	x1 := exchange(u, a, conv, true, "hello", t0)
	if err := s.SaveExchange(ctx, x1); err != nil {
		t.Fatal(err)
	}
	x2 := exchange(u, a, conv, false, "again", t0.Add(time.Minute))
	if err := s.SaveExchange(ctx, x2); err != nil {
		t.Fatal(err)
	}
	c, err := s.FindConversation(ctx, u.ID, conv)
	if err != nil || c.MessageCount != 4 || c.Title != "hello" || !c.LastMessageAt.Equal(t0.Add(time.Minute+time.Millisecond)) {
		t.Fatalf("conversation: %+v %v", c, err)
	}
	hist, err := s.RecentMessages(ctx, u.ID, conv, 3)
	if err != nil || len(hist) != 3 || hist[0].Content != "re: hello" || hist[2].Content != "re: again" {
		t.Fatalf("recent messages: %v %v", hist, err)
	}
	m, err := s.FindMessage(ctx, u.ID, x2.Reply.ID)
	if err != nil || m.Direction != ams.DirectionOutbound || m.ConversationID != conv || !m.CreatedAt.Equal(x2.Reply.CreatedAt) {
		t.Fatalf("find message: %+v %v", m, err)
	}
	other := mustUser(t, s, "y@example.com")
	_, err = s.FindMessage(ctx, other.ID, m.ID)
	wantKind(t, err, ams.ENOTFOUND)
	_, err = s.FindConversation(ctx, other.ID, conv)
	wantKind(t, err, ams.ENOTFOUND)
	pg, err := s.ListMessages(ctx, other.ID, conv, ams.ListParams{Limit: 10})
	if err != nil || len(pg.Data) != 0 {
		t.Fatalf("other account lists %d messages", len(pg.Data))
	}
	cs, err := s.ListConversations(ctx, u.ID, a.ID, ams.ListParams{Limit: 10})
	if err != nil || len(cs.Data) != 1 {
		t.Fatalf("list conversations by assistant: %v %v", cs, err)
	}
	cs, _ = s.ListConversations(ctx, u.ID, "ast_other", ams.ListParams{Limit: 10})
	if len(cs.Data) != 0 {
		t.Fatal("assistant filter ignored")
	}
}

func testExchangeRollback(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "rb@example.com")
	a := mustAssistant(t, s, u, "rb")
	conv := ams.NewID(ams.PrefixConversation)
	x := exchange(u, a, conv, true, "hello", t0)
	x.Events[1].ID = x.Events[0].ID // duplicate event id: the last insert fails
	if err := s.SaveExchange(ctx, x); err == nil {
		t.Fatal("exchange with duplicate event id saved")
	}
	if _, err := s.FindConversation(ctx, u.ID, conv); !ams.IsNotFound(err) {
		t.Fatalf("conversation of a failed exchange exists: %v", err)
	}
	if _, err := s.FindMessage(ctx, u.ID, x.Inbound.ID); !ams.IsNotFound(err) {
		t.Fatalf("message of a failed exchange exists: %v", err)
	}
	ev, _ := listEvents(t, s, ctx, u.ID, ams.EventFilter{}, ams.ListParams{Limit: 10})
	if len(ev.Data) != 0 {
		t.Fatalf("events of a failed exchange exist: %d", len(ev.Data))
	}
	// A reply into a conversation that does not exist is refused whole.
	y := exchange(u, a, "conv_nothere", false, "x", t0)
	wantKind(t, s.SaveExchange(ctx, y), ams.ENOTFOUND)
	if _, err := s.FindMessage(ctx, u.ID, y.Inbound.ID); !ams.IsNotFound(err) {
		t.Fatal("message stored for a missing conversation")
	}
}

func testEvents(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "ev@example.com")
	a := mustAssistant(t, s, u, "ev")
	x := exchange(u, a, ams.NewID(ams.PrefixConversation), true, "hi", t0)
	if err := s.SaveExchange(ctx, x); err != nil {
		t.Fatal(err)
	}
	pg, err := listEvents(t, s, ctx, u.ID, ams.EventFilter{Type: ams.EventMessageCreated}, ams.ListParams{Limit: 10, Order: ams.OrderAsc})
	if err != nil || len(pg.Data) != 2 {
		t.Fatalf("events: %v %v", pg, err)
	}
	e := pg.Data[1]
	if e.ID != x.Events[1].ID || e.Data["message_id"] != x.Reply.ID || e.Data["direction"] != "outbound" || e.Data["content"] != "re: hi" {
		t.Fatalf("event read back: %+v", e)
	}
	pg, _ = listEvents(t, s, ctx, u.ID, ams.EventFilter{Type: ams.EventTaskCreated}, ams.ListParams{Limit: 10})
	if len(pg.Data) != 0 {
		t.Fatal("type filter ignored")
	}
}

func testIdempotency(t *testing.T, s ams.Store) {
	ctx := context.Background()
	u := mustUser(t, s, "idem@example.com")
	rec := &ams.IdempotencyRecord{UserID: u.ID, Key: "k1", RequestHash: "h1", CreatedAt: t0}
	old, err := s.BeginIdempotent(ctx, rec)
	if err != nil || old != nil {
		t.Fatalf("first begin: %v %v", old, err)
	}
	old, err = s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: u.ID, Key: "k1", RequestHash: "h1", CreatedAt: t0})
	if err != nil || old == nil || old.Done {
		t.Fatalf("begin while running: %+v %v", old, err)
	}
	rec.Done, rec.Response = true, []byte("\x00opaque \xff response")
	if err := s.FinishIdempotent(ctx, rec); err != nil {
		t.Fatal(err)
	}
	old, err = s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: u.ID, Key: "k1", RequestHash: "h2", CreatedAt: t0.Add(time.Hour)})
	if err != nil || old == nil || !old.Done || string(old.Response) != "\x00opaque \xff response" || old.RequestHash != "h1" {
		t.Fatalf("replay record: %+v %v", old, err)
	}
	// A request that never finished (its process died) holds the key only
	// until it counts as abandoned.
	stuck := &ams.IdempotencyRecord{UserID: u.ID, Key: "k-stuck", RequestHash: "h1", CreatedAt: t0}
	if old, err := s.BeginIdempotent(ctx, stuck); err != nil || old != nil {
		t.Fatalf("claim k-stuck: %v %v", old, err)
	}
	if old, _ := s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: u.ID, Key: "k-stuck", RequestHash: "h1", CreatedAt: t0.Add(ams.IdempotencyAbandoned - time.Second)}); old == nil || old.Done {
		t.Fatalf("running key taken over early: %+v", old)
	}
	if old, err := s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: u.ID, Key: "k-stuck", RequestHash: "h1", CreatedAt: t0.Add(ams.IdempotencyAbandoned)}); err != nil || old != nil {
		t.Fatalf("abandoned key not taken over: %+v %v", old, err)
	}
	// Another account's key of the same name is its own.
	other := mustUser(t, s, "idem2@example.com")
	if old, _ := s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: other.ID, Key: "k1", RequestHash: "h9", CreatedAt: t0}); old != nil {
		t.Fatal("idempotency keys shared across accounts")
	}
	// After 24 h the key is free again.
	old, err = s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: u.ID, Key: "k1", RequestHash: "h3", CreatedAt: t0.Add(25 * time.Hour)})
	if err != nil || old != nil {
		t.Fatalf("expired key not reusable: %+v %v", old, err)
	}
	// A released key may be claimed again.
	if err := s.ReleaseIdempotent(ctx, u.ID, "k1"); err != nil {
		t.Fatal(err)
	}
	if old, _ := s.BeginIdempotent(ctx, &ams.IdempotencyRecord{UserID: u.ID, Key: "k1", RequestHash: "h4", CreatedAt: t0.Add(25 * time.Hour)}); old != nil {
		t.Fatal("released key still held")
	}
}

package account_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/password"
	"github.com/amsdev/ams/sqlite"
)

var start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// newService returns the service on a new SQLite store, with a fixed
// clock and bcrypt at its lowest cost.
func newService(t *testing.T) (*account.Service, *sqlite.DB) {
	t.Helper()
	db := sqlitetest.Open(t)
	return &account.Service{Store: db, Clock: func() time.Time { return start },
		Hash: func(pw string) (string, error) {
			h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
			return string(h), err
		}}, db
}

// params returns the parameters the error names, in order.
func params(err error) []string {
	var out []string
	for _, e := range ams.Fields(err) {
		out = append(out, e.Param)
	}
	return out
}

func TestSignUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newService(t)
	in := account.SignUp{Email: "  Ann@Example.COM ", Password: "long enough pw", PasswordConfirm: "long enough pw", Timezone: "Europe/Paris"}
	if err := s.CheckSignUp(in); err != nil {
		t.Fatal(err)
	}
	u, err := s.SignUp(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.FindUser(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Email != "ann@example.com" || got.Plan != ams.PlanStandard || got.Timezone != "Europe/Paris" || got.Approved() || got.Admin ||
		!got.CreatedAt.Equal(start) || !password.Check(got.PasswordHash, "long enough pw") {
		t.Errorf("signed up %+v", got)
	}

	if got.Verified() || !got.UnverifiedSince.Equal(start) {
		t.Errorf("a sign-up is verified: %v", got.UnverifiedSince)
	}

	// The same address, typed otherwise: no account, no error (the answer
	// does not reveal that the address is registered), the password
	// unchanged; its owner gets a notice, after the verification e-mail.
	again, err := s.SignUp(ctx, account.SignUp{Email: "ANN@example.com", Password: "another password", PasswordConfirm: "another password", Timezone: "UTC"})
	if again != nil || err != nil {
		t.Fatalf("taken e-mail: %v, %v", again, err)
	}
	if got, _ := db.FindUser(ctx, u.ID); !password.Check(got.PasswordHash, "long enough pw") {
		t.Error("a sign-up with a taken address changed the password")
	}
	emails, err := db.ClaimEmails(ctx, start, time.Minute, 10)
	if err != nil || len(emails) != 2 || emails[0].To != "ann@example.com" || emails[1].To != "ann@example.com" ||
		!strings.Contains(emails[0].Subject, "Verify") || !strings.Contains(emails[1].Subject, "Someone tried") {
		t.Fatalf("e-mails: %+v, %v", emails, err)
	}
}

// TestSignUpFields: every wrong field at once, in the form's order, and
// nothing is written.
func TestSignUpFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newService(t)
	for _, tc := range []struct {
		in   account.SignUp
		want []string
	}{
		{account.SignUp{Email: "", Password: "", Timezone: "Mars/Olympus"}, []string{"email", "password", "timezone"}},
		{account.SignUp{Email: "ann@localhost", Password: "short", PasswordConfirm: "short", Timezone: "UTC"}, []string{"email", "password"}},
		{account.SignUp{Email: "ann@example.com", Password: "long enough pw", PasswordConfirm: "long enough px", Timezone: "UTC"}, []string{"password_confirm"}},
		{account.SignUp{Email: "ann@example.com", Password: strings.Repeat("é", 40), PasswordConfirm: strings.Repeat("é", 40), Timezone: ""}, []string{"password", "timezone"}},
	} {
		err := s.CheckSignUp(tc.in)
		if got := params(err); !slices.Equal(got, tc.want) {
			t.Errorf("CheckSignUp(%+v) = %v, want %v", tc.in, got, tc.want)
		}
		if _, err := s.SignUp(ctx, tc.in); !slices.Equal(params(err), tc.want) {
			t.Errorf("SignUp(%+v) = %v", tc.in, err)
		}
		var e *ams.Error
		if !errors.As(err, &e) || e.Kind != ams.EINVALID || e.Param != tc.want[0] || e.Message == "" {
			t.Errorf("first error of %+v: %v", tc.in, err)
		}
	}
	if _, err := db.FindUserByEmail(ctx, "ann@example.com"); !ams.IsNotFound(err) {
		t.Errorf("an invalid sign-up wrote an account: %v", err)
	}
}

// TestCreateUser: the CLI's account: approved unless on the waitlist,
// with or without a password, with the same field rules as sign-up.
func TestCreateUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newService(t)
	u, err := s.CreateUser(ctx, account.NewUser{Email: "Ops@Example.com", Plan: ams.PlanEnterprise, Approved: true, Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "ops@example.com" || u.Timezone != "UTC" || u.Plan != ams.PlanEnterprise || !u.Approved() || !u.Admin || u.PasswordHash != "" {
		t.Errorf("created %+v", u)
	}
	w, err := s.CreateUser(ctx, account.NewUser{Email: "wait@example.com", Password: "waiting password"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Approved() || w.Plan != ams.PlanStandard || !password.Check(w.PasswordHash, "waiting password") {
		t.Errorf("waitlisted %+v", w)
	}
	// An operator's accounts (`ams users create`, --dev) are verified.
	if !u.Verified() || !w.Verified() {
		t.Error("an account made by an operator is unverified")
	}
	if _, err := s.CreateUser(ctx, account.NewUser{Email: "ops@example.com"}); ams.ErrorKindOf(err) != ams.ECONFLICT {
		t.Errorf("taken e-mail: %v", err)
	}
	if _, err := s.CreateUser(ctx, account.NewUser{Email: "x@example.com", Password: "short", Timezone: "Nowhere/Town", Plan: "gold"}); !slices.Equal(params(err), []string{"plan"}) {
		t.Errorf("unknown plan: %v", err)
	}
	if _, err := s.CreateUser(ctx, account.NewUser{Email: "x@", Password: "short", Timezone: "Nowhere/Town"}); !slices.Equal(params(err), []string{"email", "password", "timezone"}) {
		t.Errorf("wrong fields: %v", err)
	}
	if _, err := s.HashPassword("too short"); !slices.Equal(params(err), []string{"password"}) {
		t.Errorf("HashPassword of a short password: %v", err)
	}
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newService(t)
	u, err := s.CreateUser(ctx, account.NewUser{Email: "ann@example.com", Password: "old password 1", Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	// Two browsers are signed in.
	for _, id := range []string{"this-session", "other-session"} {
		if err := db.CreateLoginSession(ctx, &ams.LoginSession{IDHash: ams.HashSecret(id), UserID: u.ID, CreatedAt: start, ExpiresAt: start.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}

	// Wrong current password, short new one: both named, nothing changed.
	err = s.ChangePassword(ctx, u.ID, "this-session", account.PasswordChange{Current: "not it", New: "short", Confirm: "short"})
	if got := params(err); !slices.Equal(got, []string{"current_password", "new_password"}) {
		t.Fatalf("wrong fields: %v", err)
	}
	err = s.ChangePassword(ctx, u.ID, "this-session", account.PasswordChange{Current: "old password 1", New: "new password 2", Confirm: "new password 3"})
	if got := params(err); !slices.Equal(got, []string{"new_password_confirm"}) {
		t.Fatalf("different confirmation: %v", err)
	}
	if got, _ := db.FindUser(ctx, u.ID); !password.Check(got.PasswordHash, "old password 1") {
		t.Fatal("a refused change changed the password")
	}
	if _, err := db.FindLoginSession(ctx, ams.HashSecret("other-session"), start); err != nil {
		t.Fatalf("a refused change signed out: %v", err)
	}

	err = s.ChangePassword(ctx, u.ID, "this-session", account.PasswordChange{Current: "old password 1", New: "new password 2", Confirm: "new password 2"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := db.FindUser(ctx, u.ID)
	if !password.Check(got.PasswordHash, "new password 2") || password.Check(got.PasswordHash, "old password 1") {
		t.Error("the new password does not work")
	}
	if _, err := db.FindLoginSession(ctx, ams.HashSecret("this-session"), start); err != nil {
		t.Errorf("the session that changed the password was signed out: %v", err)
	}
	if _, err := db.FindLoginSession(ctx, ams.HashSecret("other-session"), start); !ams.IsNotFound(err) {
		t.Errorf("the other browser is still signed in: %v", err)
	}
	if err := s.ChangePassword(ctx, "usr_missing", "", account.PasswordChange{}); !ams.IsNotFound(err) {
		t.Errorf("missing account: %v", err)
	}
}

func TestApprove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newService(t)
	u, err := s.CreateUser(ctx, account.NewUser{Email: "wait@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	got, approved, err := s.Approve(ctx, u.ID)
	if err != nil || !approved || !got.Approved() || !got.ApprovedAt.Equal(start) {
		t.Fatalf("approve: %+v %v %v", got, approved, err)
	}
	s.Clock = func() time.Time { return start.Add(time.Hour) }
	again, approved, err := s.Approve(ctx, u.ID)
	if err != nil || approved || !again.ApprovedAt.Equal(start) {
		t.Errorf("approve again: %+v %v %v (want the first approval kept)", again, approved, err)
	}
	if _, _, err := s.Approve(ctx, "usr_missing"); !ams.IsNotFound(err) {
		t.Errorf("missing account: %v", err)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newService(t)
	ann, err := s.CreateUser(ctx, account.NewUser{Email: "ann@example.com", Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.CreateUser(ctx, account.NewUser{Email: "bob@example.com", Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	wait, err := s.CreateUser(ctx, account.NewUser{Email: "wait@example.com"})
	if err != nil {
		t.Fatal(err)
	}

	exp := start.Add(24 * time.Hour)
	secret, k, err := s.CreateKey(ctx, ann.ID, account.NewKey{Name: " script ", Permissions: []string{"messages", "read"}, ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, ams.PrefixSecretKey) || k.Name != "script" || k.Permissions.String() != "read,messages" ||
		k.Hint != ams.KeyHint(secret) || !k.ExpiresAt.Equal(exp) {
		t.Errorf("key %+v secret %q", k, secret)
	}
	got, _, err := db.AuthenticateKey(ctx, ams.HashSecret(secret))
	if err != nil || got.ID != k.ID {
		t.Fatalf("the secret does not find the key: %v", err)
	}
	// The CLI's comma-separated list.
	if _, k2, err := s.CreateKey(ctx, ann.ID, account.NewKey{Name: "cli", Permissions: []string{"read,write"}}); err != nil || k2.Permissions.String() != "read,write" {
		t.Errorf("comma list: %v %v", k2, err)
	}

	// On the waitlist: EFORBIDDEN, before the fields.
	if _, _, err := s.CreateKey(ctx, wait.ID, account.NewKey{}); ams.ErrorKindOf(err) != ams.EFORBIDDEN {
		t.Errorf("waitlisted: %v", err)
	}
	past := start.Add(-time.Second)
	for _, tc := range []struct {
		in   account.NewKey
		want []string
	}{
		{account.NewKey{Name: " ", Permissions: nil, ExpiresAt: &past}, []string{"name", "permissions", "expires_at"}},
		{account.NewKey{Name: strings.Repeat("n", 101), Permissions: []string{"read"}}, []string{"name"}},
		{account.NewKey{Name: "x", Permissions: []string{"read", "root"}}, []string{"permissions"}},
		{account.NewKey{Name: "x", Permissions: []string{""}, ExpiresAt: &start}, []string{"permissions", "expires_at"}},
	} {
		if _, _, err := s.CreateKey(ctx, ann.ID, tc.in); !slices.Equal(params(err), tc.want) {
			t.Errorf("CreateKey(%+v) = %v, want %v", tc.in, err, tc.want)
		}
	}
	if keys, _ := db.ListKeys(ctx, ann.ID); len(keys) != 2 {
		t.Errorf("%d keys stored, want 2", len(keys))
	}

	// Revoking: another account's key is not found, and stays active.
	if _, err := s.RevokeKey(ctx, bob.ID, k.ID); !ams.IsNotFound(err) {
		t.Errorf("bob revoking ann's key: %v", err)
	}
	if got, _ := db.FindKey(ctx, k.ID); got.RevokedAt != nil {
		t.Fatal("another account revoked the key")
	}
	r, err := s.RevokeKey(ctx, ann.ID, k.ID)
	if err != nil || r.RevokedAt == nil || !r.RevokedAt.Equal(start) {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	// The operator's revocation (no account) of a missing key.
	if _, err := s.RevokeKey(ctx, "", "key_missing"); !ams.IsNotFound(err) {
		t.Errorf("missing key: %v", err)
	}
}

// eventTypes returns the types of the account's events, oldest first.
func eventTypes(t *testing.T, db *sqlite.DB, userID string) []string {
	t.Helper()
	p, err := db.ListEvents(context.Background(), userID, ams.EventFilter{}, ams.ListParams{Limit: 100, Order: ams.OrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range p.Data {
		if _, ok := e.Data["secret"]; ok {
			t.Fatalf("event %s has a secret: %v", e.Type, e.Data)
		}
		out = append(out, e.Type)
	}
	return out
}

// TestKeyEvents: a key created or revoked through the service (the
// account pages, the CLI, the API) is audited once, in the change's
// transaction; a second revocation emits nothing, as does the operator's
// revocation of an already revoked key.
func TestKeyEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newService(t)
	ann, err := s.CreateUser(ctx, account.NewUser{Email: "ann@example.com", Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := s.CreateKey(ctx, ann.ID, account.NewKey{Name: "k", Permissions: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.RevokeKey(ctx, ann.ID, k.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RevokeKey(ctx, "", k.ID); err != nil {
		t.Fatal(err)
	}
	_, k2, _ := s.CreateKey(ctx, ann.ID, account.NewKey{Name: "cli", Permissions: []string{"read"}})
	if _, err := s.RevokeKey(ctx, "", k2.ID); err != nil { // the operator's `ams keys revoke`
		t.Fatal(err)
	}
	want := []string{ams.EventAPIKeyCreated, ams.EventAPIKeyRevoked, ams.EventAPIKeyCreated, ams.EventAPIKeyRevoked}
	if got := eventTypes(t, db, ann.ID); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestNoEscalation: a credential never creates a key that holds more than
// itself: a permission it lacks (admin holds all five), or a longer life.
// Refusals are EFORBIDDEN naming the parameter, and store nothing.
func TestNoEscalation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newService(t)
	ann, err := s.CreateUser(ctx, account.NewUser{Email: "ann@example.com", Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	rw := &account.Credential{Permissions: ams.Permissions{ams.PermRead, ams.PermWrite}}
	exp := start.Add(time.Hour)
	expiring := &account.Credential{Permissions: ams.Permissions{ams.PermAdmin}, ExpiresAt: &exp}
	later, sooner := exp.Add(time.Millisecond), exp.Add(-time.Minute)
	for _, tc := range []struct {
		by          *account.Credential
		perms       []string
		expires     *time.Time
		code, param string
	}{
		{rw, []string{"admin"}, nil, "permission_not_held", "permissions"},
		{rw, []string{"read", "messages"}, nil, "permission_not_held", "permissions"},
		{rw, []string{"integrations"}, nil, "permission_not_held", "permissions"},
		{expiring, []string{"read"}, nil, "lifetime_not_held", "expires_at"},
		{expiring, []string{"read"}, &later, "lifetime_not_held", "expires_at"},
	} {
		_, _, err := s.CreateKey(ctx, ann.ID, account.NewKey{Name: "x", Permissions: tc.perms, ExpiresAt: tc.expires, HeldBy: tc.by})
		var e *ams.Error
		if !errors.As(err, &e) || e.Kind != ams.EFORBIDDEN || e.Code != tc.code || e.Param != tc.param || e.Message == "" {
			t.Errorf("%v by %+v: %v, want %s (%s)", tc.perms, tc.by, err, tc.code, tc.param)
		}
	}
	if keys, _ := db.ListKeys(ctx, ann.ID); len(keys) != 0 || len(eventTypes(t, db, ann.ID)) != 0 {
		t.Fatalf("refused keys stored: %d", len(keys))
	}
	// What the credential holds, it may give: fewer permissions, a
	// shorter life; admin gives any permission; the account holder (nil)
	// anything.
	for _, tc := range []struct {
		by      *account.Credential
		perms   []string
		expires *time.Time
	}{
		{rw, []string{"read"}, nil},
		{rw, []string{"write", "read"}, nil},
		{expiring, []string{"admin", "messages", "integrations"}, &exp},
		{expiring, []string{"read"}, &sooner},
		{nil, []string{"admin"}, nil},
	} {
		if _, _, err := s.CreateKey(ctx, ann.ID, account.NewKey{Name: "ok", Permissions: tc.perms, ExpiresAt: tc.expires, HeldBy: tc.by}); err != nil {
			t.Errorf("%v by %+v: %v", tc.perms, tc.by, err)
		}
	}
	// Field errors come first: a wrong name is 400, not 403.
	if _, _, err := s.CreateKey(ctx, ann.ID, account.NewKey{Name: "", Permissions: []string{"admin"}, HeldBy: rw}); ams.ErrorKindOf(err) != ams.EINVALID {
		t.Errorf("wrong name by a narrower credential: %v", err)
	}
}

// TestUpdateAccount: the time zone is checked (nothing stored when wrong),
// a change emits account.updated with the replaced values, and a change
// that changes nothing emits nothing.
func TestUpdateAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newService(t)
	ann, err := s.CreateUser(ctx, account.NewUser{Email: "ann@example.com", Approved: true})
	if err != nil {
		t.Fatal(err)
	}
	bad := "Nowhere/Town"
	if _, err := s.UpdateAccount(ctx, ann.ID, account.AccountUpdate{Timezone: &bad}); !slices.Equal(params(err), []string{"timezone"}) {
		t.Fatalf("bad time zone: %v", err)
	}
	tz, no := "America/New_York", false
	u, err := s.UpdateAccount(ctx, ann.ID, account.AccountUpdate{Timezone: &tz, WebhookFailing: &no})
	if err != nil || u.Timezone != tz || !u.WebhookFailingEmailsOff || u.KeyReminderEmailsOff {
		t.Fatalf("update: %+v %v", u, err)
	}
	if _, err := s.UpdateAccount(ctx, ann.ID, account.AccountUpdate{Timezone: &tz, WebhookFailing: &no}); err != nil {
		t.Fatal(err)
	}
	if got := eventTypes(t, db, ann.ID); !slices.Equal(got, []string{ams.EventAccountUpdated}) {
		t.Fatalf("events %v", got)
	}
	p, _ := db.ListEvents(ctx, ann.ID, ams.EventFilter{}, ams.ListParams{Limit: 1})
	prev, _ := p.Data[0].Data["previous_attributes"].(map[string]any)
	if prev["timezone"] != "UTC" || prev["email_notifications"].(map[string]any)["webhook_failing"] != true {
		t.Fatalf("previous_attributes %v", prev)
	}
}

package ams

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Plan is an account's subscription plan, which sets its rate limits.
type Plan string

// The plans of the interface. Enterprise figures are set per account.
const (
	PlanStandard     Plan = "standard"
	PlanProfessional Plan = "professional"
	PlanEnterprise   Plan = "enterprise"
)

// Default enterprise figures, used until `ams users update --rpm --rpd`
// sets the account's own.
const (
	DefaultEnterpriseRPM = 1000
	DefaultEnterpriseRPD = 1_000_000
)

// ParsePlan returns the plan named s.
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(strings.ToLower(strings.TrimSpace(s))); p {
	case PlanStandard, PlanProfessional, PlanEnterprise:
		return p, nil
	}
	return "", fmt.Errorf("unknown plan %q (want standard, professional or enterprise)", s)
}

// Limits are the request allowances of an account.
type Limits struct {
	PerMinute int `json:"requests_per_minute"`
	PerDay    int `json:"requests_per_day"`
}

// User is an account holder. In ams one user is one account: every record
// belongs to exactly one user, and every query is scoped to it.
type User struct {
	ID           string    `json:"id"`
	Email        string    `json:"email"`
	PasswordHash string    `json:"-"`
	Plan         Plan      `json:"plan"`
	RPM          int       `json:"requests_per_minute_override,omitempty"` // enterprise only; 0: default
	RPD          int       `json:"requests_per_day_override,omitempty"`    // enterprise only; 0: default
	Timezone     string    `json:"timezone"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`

	// MaxWebhooks is the account's own cap on its webhooks; it applies to
	// enterprise accounts only (0: the server's default). See WebhookLimit.
	MaxWebhooks int `json:"max_webhooks_override,omitempty"`

	// ApprovedAt is when the account was let off the early-access
	// waitlist (nil: still on it; it may not create API keys).
	ApprovedAt *time.Time `json:"approved_at"`
	// Admin accounts administer the service (the waitlist page).
	Admin bool `json:"admin"`

	// UnverifiedSince is when the account signed up on the sign-up page
	// without its e-mail address being verified yet (nil: verified, or
	// made by an operator: `ams users create`, --dev). It is cleared when
	// the verification link is followed.
	UnverifiedSince *time.Time `json:"-"`

	// KeyReminderEmailsOff stops the e-mails reminding the owner that an
	// API key expires soon or turns 90 days old (account.KeyReminders).
	KeyReminderEmailsOff bool `json:"key_reminder_emails_off,omitempty"`
	// WebhookFailingEmailsOff stops the e-mail sent when a webhook is
	// marked failing (the webhook.failing event is emitted all the same).
	WebhookFailingEmailsOff bool `json:"webhook_failing_emails_off,omitempty"`
}

// EmailNotifications are the e-mails an account receives about its
// resources, each on unless turned off (GET and PATCH /v1/account).
type EmailNotifications struct {
	// KeyReminders: an API key expires within 14 days, or turns 90 days
	// old within 14 days.
	KeyReminders bool `json:"key_reminders"`
	// WebhookFailing: a webhook was marked failing and disabled.
	WebhookFailing bool `json:"webhook_failing"`
}

// EmailNotifications returns the account's e-mail notification settings.
func (u *User) EmailNotifications() EmailNotifications {
	return EmailNotifications{KeyReminders: !u.KeyReminderEmailsOff, WebhookFailing: !u.WebhookFailingEmailsOff}
}

// Account is an account as the management API shows it (GET
// /v1/account), and the data of the account.updated event: never the
// password hash.
type Account struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // "account"
	Email              string             `json:"email"`
	Plan               Plan               `json:"plan"`
	Limits             Limits             `json:"limits"`
	Timezone           string             `json:"timezone"`
	EmailNotifications EmailNotifications `json:"email_notifications"`
	// Approved is false while the account is on the early-access
	// waitlist.
	Approved  bool      `json:"approved"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Account returns the account record of u.
func (u *User) Account() *Account {
	return &Account{ID: u.ID, Object: "account", Email: u.Email, Plan: u.Plan, Limits: u.Limits(), Timezone: u.Timezone,
		EmailNotifications: u.EmailNotifications(), Approved: u.Approved(), CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// Verified reports whether the account's e-mail address is verified (or
// needs no verification: accounts made by an operator).
func (u *User) Verified() bool { return u.UnverifiedSince == nil }

// Approved reports whether the account has API access: it is off the
// early-access waitlist.
func (u *User) Approved() bool { return u.ApprovedAt != nil }

// ErrWaitlisted is the error of creating an API key for an account that is
// still on the early-access waitlist.
func ErrWaitlisted() error {
	return &Error{Kind: EFORBIDDEN, Code: "account_on_waitlist",
		Message: "This account is on the early-access waitlist: API keys can be created once it is approved."}
}

// ErrWaitlistedWebhooks is the error of creating, pinging, recovering or
// redelivering a webhook of an account that is still on the early-access
// waitlist: until approved, ams sends nothing for it.
func ErrWaitlistedWebhooks() error {
	return &Error{Kind: EFORBIDDEN, Code: "account_on_waitlist",
		Message: "This account is on the early-access waitlist: webhooks can be created, pinged, recovered and redelivered once it is approved."}
}

// WebhookLimit returns how many webhooks the account may have: its own
// cap (MaxWebhooks) for an enterprise account that has one, else def,
// the server's default.
func (u *User) WebhookLimit(def int) int {
	if u.Plan == PlanEnterprise && u.MaxWebhooks > 0 {
		return u.MaxWebhooks
	}
	return def
}

// Limits returns the account's rate limits: the plan's figures, or for
// enterprise accounts the per-account ones.
func (u *User) Limits() Limits {
	switch u.Plan {
	case PlanProfessional:
		return Limits{PerMinute: 120, PerDay: 50_000}
	case PlanEnterprise:
		l := Limits{PerMinute: DefaultEnterpriseRPM, PerDay: DefaultEnterpriseRPD}
		if u.RPM > 0 {
			l.PerMinute = u.RPM
		}
		if u.RPD > 0 {
			l.PerDay = u.RPD
		}
		return l
	default:
		return Limits{PerMinute: 60, PerDay: 10_000}
	}
}

// UserUpdate lists the fields of a user to change; nil fields are kept.
type UserUpdate struct {
	Plan         *Plan
	RPM          *int
	RPD          *int
	Timezone     *string
	PasswordHash *string
	// ApprovedAt approves the account (lets it off the waitlist) at the
	// time given; nil keeps it as it is.
	ApprovedAt *time.Time
	Admin      *bool
	// MaxWebhooks sets the account's own webhook cap (0: back to the
	// server's default).
	MaxWebhooks *int
	// KeyReminderEmailsOff and WebhookFailingEmailsOff turn those e-mails
	// off (true) or back on (false).
	KeyReminderEmailsOff    *bool
	WebhookFailingEmailsOff *bool
}

// UserStore keeps accounts. FindUserByEmail and FindUser return ENOTFOUND
// when missing; CreateUser returns ECONFLICT if the e-mail is taken.
type UserStore interface {
	CreateUser(ctx context.Context, u *User) error
	FindUser(ctx context.Context, id string) (*User, error)
	FindUserByEmail(ctx context.Context, email string) (*User, error)
	UpdateUser(ctx context.Context, id string, upd UserUpdate, now time.Time) (*User, error)
	// ListWaitlist returns up to limit accounts that are not approved
	// (the early-access waitlist), oldest first, and whether there are
	// more.
	ListWaitlist(ctx context.Context, limit int) ([]*User, bool, error)
	// ListUsers returns up to limit accounts in order of creation, those
	// created after the account with id after ("": from the first; an
	// unknown id: none), and whether there are more.
	ListUsers(ctx context.Context, after string, limit int) ([]*User, bool, error)
}

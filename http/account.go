package http

import (
	"net/http"

	"github.com/amsdev/ams/account"
)

// The management API (permission admin): the account's API keys
// (/v1/keys, keys.go), its OAuth clients (/v1/oauth/clients,
// oauth_clients.go) and its settings (/v1/account, here). The rules live
// in the services the account pages and the CLI call too: account.Service
// for keys and the account, package oauth's client functions for clients;
// each change is written with its audit event (api_key.created,
// oauth_client.deleted, account.updated, ...) in one transaction.

// accountRequest is the body of PATCH /v1/account.
type accountRequest struct {
	Timezone           *string `json:"timezone"`
	EmailNotifications *struct {
		KeyReminders   *bool `json:"key_reminders"`
		WebhookFailing *bool `json:"webhook_failing"`
	} `json:"email_notifications"`
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) error {
	u, err := s.Store.FindUser(r.Context(), auth(r).User.ID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, u.Account())
}

func (s *Server) updateAccount(w http.ResponseWriter, r *http.Request) error {
	var req accountRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in := account.AccountUpdate{Timezone: req.Timezone}
	if n := req.EmailNotifications; n != nil {
		in.KeyReminders, in.WebhookFailing = n.KeyReminders, n.WebhookFailing
	}
	u, err := s.Accounts.UpdateAccount(r.Context(), auth(r).User.ID, in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, u.Account())
}

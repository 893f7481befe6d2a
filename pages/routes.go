package pages

import "net/http"

// routes adds every route of the account pages to s.mux. This is the one
// list of them: each line is a method and path, the template under
// templates/ that renders the handler's data, and the handler. Page routes
// need a signed-in user, PublicPage routes do not; every POST route is a
// form, checked for CSRF before its handler runs (see Server.Page).
func (s *Server) routes() {
	s.mux.Handle("GET /account/static/{file}", http.HandlerFunc(serveStatic))
	s.mux.Handle("GET /{$}", http.RedirectHandler("/account", http.StatusSeeOther))

	// Sign-up and password (account.go).
	s.PublicPage("GET /signup", "signup.html", s.signupForm)
	s.PublicPage("POST /signup", "signup.html", s.signup)
	// Password reset and e-mail verification by e-mailed links
	// (recovery.go).
	s.PublicPage("GET /forgot-password", "forgot_password.html", s.forgotForm)
	s.PublicPage("POST /forgot-password", "forgot_password.html", s.forgot)
	s.PublicPage("GET /reset-password/{token}", "reset_password.html", s.resetForm)
	s.PublicPage("POST /reset-password/{token}", "reset_password.html", s.reset)
	s.PublicPage("GET /verify-email/{token}", "link_done.html", s.verifyEmail)
	s.Page("POST /account/verify-email", "overview.html", s.resendVerification)
	s.Page("GET /account/password", "password.html", s.passwordForm)
	s.Page("POST /account/password", "password.html", s.changePassword)

	// Overview (overview.go).
	s.Page("GET /account", "overview.html", s.overview)

	// API keys (keys.go).
	s.Page("GET /account/keys", "keys.html", s.keys)
	s.Page("POST /account/keys", "keys.html", s.createKey)
	s.Page("GET /account/keys/{id}/created", "key_created.html", s.keyCreated)
	s.Page("POST /account/keys/{id}/revoke", "keys.html", s.revokeKey)

	// OAuth apps (oauth_apps.go).
	s.Page("GET /account/apps", "oauth_apps.html", s.oauthApps)
	s.Page("POST /account/apps", "oauth_apps.html", s.createOAuthApp)
	s.Page("GET /account/apps/{id}", "oauth_apps_client.html", s.oauthApp)
	s.Page("POST /account/apps/{id}/rotate", "oauth_apps_confirm.html", s.rotateOAuthApp)
	s.Page("POST /account/apps/{id}/delete", "oauth_apps_confirm.html", s.deleteOAuthApp)
	s.Page("POST /account/apps/authorized/{id}/revoke", "oauth_apps_confirm.html", s.revokeOAuthGrant)

	// Webhooks (webhooks.go).
	s.Page("GET /account/webhooks", "webhooks.html", s.webhooks)
	s.Page("GET /account/webhooks/new", "webhooks_form.html", s.newWebhook)
	s.Page("POST /account/webhooks", "webhooks_form.html", s.createWebhook)
	s.Page("GET /account/webhooks/{id}", "webhooks_detail.html", s.webhook)
	s.Page("GET /account/webhooks/{id}/edit", "webhooks_form.html", s.editWebhook)
	s.Page("POST /account/webhooks/{id}", "webhooks_form.html", s.updateWebhook)
	s.Page("POST /account/webhooks/{id}/enable", "webhooks_detail.html", s.enableWebhook)
	s.Page("POST /account/webhooks/{id}/disable", "webhooks_detail.html", s.disableWebhook)
	s.Page("POST /account/webhooks/{id}/ping", "webhooks_detail.html", s.pingWebhook)
	s.Page("POST /account/webhooks/{id}/recover", "webhooks_detail.html", s.recoverWebhook)
	s.Page("POST /account/webhooks/{id}/delete", "webhooks_confirm.html", s.deleteWebhook)
	s.Page("POST /account/webhooks/{id}/deliveries/{dlv}/redeliver", "webhooks_detail.html", s.redeliver)

	// Usage (usage.go).
	s.Page("GET /account/usage", "usage.html", s.usage)

	// Assistants and their conversations (assistants.go).
	s.Page("GET /account/assistants", "assistants.html", s.assistants)
	s.Page("GET /account/assistants/{id}", "assistant.html", s.assistant)
	s.Page("POST /account/assistants/{id}/conversations", "assistant.html", s.startConversation)
	s.Page("GET /account/assistants/{id}/conversations/{conv}", "conversation.html", s.conversation)
	s.Page("POST /account/assistants/{id}/conversations/{conv}/messages", "conversation.html", s.sendMessage)

	// The waitlist, for admins (admin.go).
	s.Page("GET /account/admin/waitlist", "waitlist.html", s.waitlist)
	s.Page("POST /account/admin/waitlist/{id}/approve", "waitlist.html", s.approve)
}

// formPages maps each form (POST route) to the page it is on (a GET route
// with the same path values). A form with a field that is not text every
// engine stores (a NUL character or invalid UTF-8) is answered with that
// page and a form error naming the field; the form's handler does not
// run, so nothing is stored (Server.serve).
var formPages = map[string]string{
	"POST /signup":                                                "GET /signup",
	"POST /account/password":                                      "GET /account/password",
	"POST /forgot-password":                                       "GET /forgot-password",
	"POST /reset-password/{token}":                                "GET /reset-password/{token}",
	"POST /account/verify-email":                                  "GET /account",
	"POST /account/keys":                                          "GET /account/keys",
	"POST /account/keys/{id}/revoke":                              "GET /account/keys",
	"POST /account/apps":                                          "GET /account/apps",
	"POST /account/apps/{id}/rotate":                              "GET /account/apps/{id}",
	"POST /account/apps/{id}/delete":                              "GET /account/apps/{id}",
	"POST /account/apps/authorized/{id}/revoke":                   "GET /account/apps",
	"POST /account/webhooks":                                      "GET /account/webhooks/new",
	"POST /account/webhooks/{id}":                                 "GET /account/webhooks/{id}/edit",
	"POST /account/webhooks/{id}/enable":                          "GET /account/webhooks/{id}",
	"POST /account/webhooks/{id}/disable":                         "GET /account/webhooks/{id}",
	"POST /account/webhooks/{id}/ping":                            "GET /account/webhooks/{id}",
	"POST /account/webhooks/{id}/recover":                         "GET /account/webhooks/{id}",
	"POST /account/webhooks/{id}/delete":                          "GET /account/webhooks/{id}",
	"POST /account/webhooks/{id}/deliveries/{dlv}/redeliver":      "GET /account/webhooks/{id}",
	"POST /account/assistants/{id}/conversations":                 "GET /account/assistants/{id}",
	"POST /account/assistants/{id}/conversations/{conv}/messages": "GET /account/assistants/{id}/conversations/{conv}",
	"POST /account/admin/waitlist/{id}/approve":                   "GET /account/admin/waitlist",
}

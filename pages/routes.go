package pages

import "net/http"

// routes adds every route of the account pages to s.mux. This is the one
// list of them: each line is a method and path, the template under
// templates/ that renders the handler's data, for a form (a POST route)
// the page it is on, and the handler. Page and Form routes need a
// signed-in user, PublicPage and PublicForm routes do not; every form is
// checked for CSRF before its handler runs, and a form with a field that
// is not text every engine stores (a NUL character or invalid UTF-8) is
// answered with its page and a form error naming the field; its handler
// does not run, so nothing is stored (Server.serve).
func (s *Server) routes() {
	s.mux.Handle("GET /account/static/{file}", http.HandlerFunc(serveStatic))
	s.mux.Handle("GET /{$}", http.RedirectHandler("/account", http.StatusSeeOther))

	// Sign-up and password (account.go).
	s.PublicPage("GET /signup", "signup.html", s.signupForm)
	s.PublicForm("POST /signup", "signup.html", "GET /signup", s.signup)
	// Password reset and e-mail verification by e-mailed links
	// (recovery.go).
	s.PublicPage("GET /forgot-password", "forgot_password.html", s.forgotForm)
	s.PublicForm("POST /forgot-password", "forgot_password.html", "GET /forgot-password", s.forgot)
	s.PublicPage("GET /reset-password/{token}", "reset_password.html", s.resetForm)
	s.PublicForm("POST /reset-password/{token}", "reset_password.html", "GET /reset-password/{token}", s.reset)
	s.PublicPage("GET /verify-email/{token}", "link_done.html", s.verifyEmail)
	s.Form("POST /account/verify-email", "overview.html", "GET /account", s.resendVerification)
	s.Page("GET /account/password", "password.html", s.passwordForm)
	s.Form("POST /account/password", "password.html", "GET /account/password", s.changePassword)

	// Overview (overview.go).
	s.Page("GET /account", "overview.html", s.overview)

	// API keys (keys.go).
	s.Page("GET /account/keys", "keys.html", s.keys)
	s.Form("POST /account/keys", "keys.html", "GET /account/keys", s.createKey)
	s.Page("GET /account/keys/{id}/created", "key_created.html", s.keyCreated)
	s.Form("POST /account/keys/{id}/revoke", "keys.html", "GET /account/keys", s.revokeKey)

	// OAuth apps (oauth_apps.go).
	s.Page("GET /account/apps", "oauth_apps.html", s.oauthApps)
	s.Form("POST /account/apps", "oauth_apps.html", "GET /account/apps", s.createOAuthApp)
	s.Page("GET /account/apps/{id}", "oauth_apps_client.html", s.oauthApp)
	s.Form("POST /account/apps/{id}/rotate", "oauth_apps_confirm.html", "GET /account/apps/{id}", s.rotateOAuthApp)
	s.Form("POST /account/apps/{id}/delete", "oauth_apps_confirm.html", "GET /account/apps/{id}", s.deleteOAuthApp)
	s.Form("POST /account/apps/authorized/{id}/revoke", "oauth_apps_confirm.html", "GET /account/apps", s.revokeOAuthGrant)

	// Webhooks (webhooks.go).
	s.Page("GET /account/webhooks", "webhooks.html", s.webhooks)
	s.Page("GET /account/webhooks/new", "webhooks_form.html", s.newWebhook)
	s.Form("POST /account/webhooks", "webhooks_form.html", "GET /account/webhooks/new", s.createWebhook)
	s.Page("GET /account/webhooks/{id}", "webhooks_detail.html", s.webhook)
	s.Page("GET /account/webhooks/{id}/edit", "webhooks_form.html", s.editWebhook)
	s.Form("POST /account/webhooks/{id}", "webhooks_form.html", "GET /account/webhooks/{id}/edit", s.updateWebhook)
	s.Form("POST /account/webhooks/{id}/enable", "webhooks_detail.html", "GET /account/webhooks/{id}", s.enableWebhook)
	s.Form("POST /account/webhooks/{id}/disable", "webhooks_detail.html", "GET /account/webhooks/{id}", s.disableWebhook)
	s.Form("POST /account/webhooks/{id}/ping", "webhooks_detail.html", "GET /account/webhooks/{id}", s.pingWebhook)
	s.Form("POST /account/webhooks/{id}/recover", "webhooks_detail.html", "GET /account/webhooks/{id}", s.recoverWebhook)
	s.Form("POST /account/webhooks/{id}/delete", "webhooks_confirm.html", "GET /account/webhooks/{id}", s.deleteWebhook)
	s.Form("POST /account/webhooks/{id}/deliveries/{dlv}/redeliver", "webhooks_detail.html", "GET /account/webhooks/{id}", s.redeliver)

	// Integrations: MCP servers (integrations.go).
	s.Page("GET /account/integrations", "integrations.html", s.integrations)
	s.Form("POST /account/integrations", "integrations.html", "GET /account/integrations", s.connectMCP)
	s.Page("GET /account/integrations/{id}", "integration.html", s.integration)
	s.Form("POST /account/integrations/{id}/sync", "integration.html", "GET /account/integrations/{id}", s.syncIntegration)
	s.Form("POST /account/integrations/{id}/disconnect", "integration.html", "GET /account/integrations/{id}", s.disconnectIntegration)

	// Usage (usage.go).
	s.Page("GET /account/usage", "usage.html", s.usage)

	// Assistants and their conversations (assistants.go).
	s.Page("GET /account/assistants", "assistants.html", s.assistants)
	s.Page("GET /account/assistants/{id}", "assistant.html", s.assistant)
	s.Form("POST /account/assistants/{id}/conversations", "assistant.html", "GET /account/assistants/{id}", s.startConversation)
	s.Page("GET /account/assistants/{id}/conversations/{conv}", "conversation.html", s.conversation)
	s.Form("POST /account/assistants/{id}/conversations/{conv}/messages", "conversation.html", "GET /account/assistants/{id}/conversations/{conv}", s.sendMessage)
	// Approvals and the assistant's turn settings (approvals.go).
	s.Form("POST /account/assistants/{id}/conversations/{conv}/turns/{turn}/approvals", "conversation.html", "GET /account/assistants/{id}/conversations/{conv}", s.decideTurn)
	s.Form("POST /account/assistants/{id}/settings", "assistant.html", "GET /account/assistants/{id}", s.assistantSettings)

	// The waitlist, for admins (admin.go).
	s.Page("GET /account/admin/waitlist", "waitlist.html", s.waitlist)
	s.Form("POST /account/admin/waitlist/{id}/approve", "waitlist.html", "GET /account/admin/waitlist", s.approve)
}

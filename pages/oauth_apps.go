package pages

import (
	"errors"
	"net/http"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
)

// The OAuth apps pages: the clients the user registered (register one,
// its secret shown once, rotate the secret, delete it) and the apps the
// user authorized, each revocable. Clients are made and changed through
// oauth.Clients (CreateClient, RotateClientSecret, DeleteClient and
// RevokeGrants), as `ams oauth-clients create` makes them.

// oauthAppForm is the registration form as sent.
type oauthAppForm struct {
	Name         string
	RedirectURIs string // one per line
	Type         string // "confidential" or "public"
}

// oauthAppsData is the data of the apps page.
type oauthAppsData struct {
	Clients    []*ams.OAuthClient
	Grants     []*ams.OAuthGrant
	Form       oauthAppForm
	MaxURIs    int
	Authorize  string // the authorization endpoint
	ScopeHints map[string]string
}

// oauthScopeHints say what each scope lets an app do.
var oauthScopeHints = map[string]string{
	string(ams.PermRead):         "read your assistants, conversations, tasks, calendar and webhooks",
	string(ams.PermWrite):        "change your assistants, tasks, calendar and webhooks",
	string(ams.PermAdmin):        "everything, including account management",
	string(ams.PermMessages):     "send and read messages",
	string(ams.PermIntegrations): "connect and disconnect integrations",
}

func (s *Server) oauthAppsData(r *http.Request, c *Ctx, form oauthAppForm) (*oauthAppsData, error) {
	ctx := r.Context()
	clients, err := s.Store.ListOAuthClients(ctx, c.User.ID)
	if err != nil {
		return nil, err
	}
	grants, err := s.Store.ListGrants(ctx, c.User.ID, c.Now)
	if err != nil {
		return nil, err
	}
	if form.Type == "" {
		form.Type = "confidential"
	}
	return &oauthAppsData{Clients: clients, Grants: grants, Form: form, MaxURIs: oauth.MaxRedirectURIs,
		Authorize: s.BaseURL + "/oauth/authorize", ScopeHints: oauthScopeHints}, nil
}

func (s *Server) oauthApps(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.oauthAppsData(r, c, oauthAppForm{})
}

// redirectURILines returns the non-empty lines of v, trimmed.
func redirectURILines(v string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(v, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (s *Server) createOAuthApp(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	form := oauthAppForm{Name: r.PostForm.Get("name"), RedirectURIs: r.PostForm.Get("redirect_uris"), Type: r.PostForm.Get("type")}
	switch form.Type {
	case "confidential", "public":
	default:
		c.Fail("type-confidential", "Choose whether the app can keep a secret (confidential) or not (public).")
	}
	var client *ams.OAuthClient
	var secret string
	if !c.Invalid() {
		var err error
		client, secret, err = s.OAuthClients.Create(r.Context(), oauth.ClientParams{
			UserID: c.User.ID, Name: form.Name, RedirectURIs: redirectURILines(form.RedirectURIs), Public: form.Type == "public"}, c.Now)
		var e *ams.Error
		switch {
		case errors.As(err, &e) && e.Kind == ams.EINVALID && (e.Param == "name" || e.Param == "redirect_uris"):
			c.Fail(e.Param, e.Message)
		case errors.As(err, &e) && e.Code == "oauth_client_limit_reached":
			c.Status = http.StatusConflict
			c.Fail("", e.Message)
		case err != nil:
			return nil, err
		}
	}
	if c.Invalid() {
		return s.oauthAppsData(r, c, form)
	}
	if secret != "" {
		c.KeepSecret(client.ID, secret)
		c.Flash(FlashSuccess, "App registered. Copy its client secret now: it is not shown again.")
	} else {
		c.Flash(FlashSuccess, "App registered. It is public, so it has no secret and must use PKCE.")
	}
	return c.Redirect("/account/apps/" + client.ID)
}

// findOAuthApp returns the user's client of the path's {id}; another
// account's is ENOTFOUND, as a missing one.
func (s *Server) findOAuthApp(r *http.Request, c *Ctx) (*ams.OAuthClient, error) {
	id := r.PathValue("id")
	if !ams.HasPrefixID(id, ams.PrefixClient) {
		return nil, ams.NotFound("OAuth app", id)
	}
	cl, err := s.Store.FindOAuthClient(r.Context(), id)
	if err != nil {
		if ams.IsNotFound(err) {
			return nil, ams.NotFound("OAuth app", id)
		}
		return nil, err
	}
	if cl.UserID != c.User.ID {
		return nil, ams.NotFound("OAuth app", id)
	}
	return cl, nil
}

// oauthAppData is the data of a client's page.
type oauthAppData struct {
	Client    *ams.OAuthClient
	Secret    string // shown once, after registration or rotation
	Authorize string
	Token     string
}

func (s *Server) oauthApp(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	cl, err := s.findOAuthApp(r, c)
	if err != nil {
		return nil, err
	}
	c.Title = cl.Name + " · OAuth app"
	d := &oauthAppData{Client: cl, Authorize: s.BaseURL + "/oauth/authorize", Token: s.BaseURL + "/oauth/token"}
	if secret, ok := c.TakeSecret(cl.ID); ok {
		d.Secret = secret
	}
	return d, nil
}

// oauthConfirm is the data of a confirmation page.
type oauthConfirm struct {
	Action string // "rotate", "delete" or "revoke"
	Client *ams.OAuthClient
	Grant  *ams.OAuthGrant
}

func (s *Server) rotateOAuthApp(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	cl, err := s.findOAuthApp(r, c)
	if err != nil {
		return nil, err
	}
	if err := oauth.CheckRotate(cl); err != nil {
		return nil, err
	}
	if r.PostForm.Get("confirm") != "yes" {
		return oauthConfirm{Action: "rotate", Client: cl}, nil
	}
	_, secret, err := s.OAuthClients.RotateSecret(r.Context(), c.User.ID, cl.ID, c.Now)
	if err != nil {
		return nil, err
	}
	c.KeepSecret(cl.ID, secret)
	c.Flash(FlashSuccess, "New client secret made. Copy it now: it is not shown again. The old secret no longer works.")
	return c.Redirect("/account/apps/" + cl.ID)
}

func (s *Server) deleteOAuthApp(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	cl, err := s.findOAuthApp(r, c)
	if err != nil {
		return nil, err
	}
	if r.PostForm.Get("confirm") != "yes" {
		return oauthConfirm{Action: "delete", Client: cl}, nil
	}
	if err := s.OAuthClients.Delete(r.Context(), c.User.ID, cl.ID, c.Now); err != nil {
		return nil, err
	}
	c.Flash(FlashSuccess, cl.Name+" deleted. Every token it held stopped working.")
	return c.Redirect("/account/apps")
}

func (s *Server) revokeOAuthGrant(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	id := r.PathValue("id")
	grants, err := s.Store.ListGrants(r.Context(), c.User.ID, c.Now)
	if err != nil {
		return nil, err
	}
	var g *ams.OAuthGrant
	for _, x := range grants {
		if x.ClientID == id {
			g = x
		}
	}
	if g == nil {
		return nil, ams.NotFound("authorized app", id)
	}
	if r.PostForm.Get("confirm") != "yes" {
		return oauthConfirm{Action: "revoke", Grant: g}, nil
	}
	if err := s.OAuthClients.RevokeGrants(r.Context(), c.User.ID, g.ClientID, c.Now); err != nil {
		return nil, err
	}
	c.Flash(FlashSuccess, g.ClientName+" no longer has access to your account. Its tokens stopped working.")
	return c.Redirect("/account/apps")
}

package oauth

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/amsdev/ams"
	"github.com/ory/fosite"
)

// scopeMeanings are the consent page's words for each scope
// (interface.md, Authentication).
var scopeMeanings = map[string]string{
	"read":         "Read-only access to your data.",
	"write":        "Create and update records (assistants, webhooks, tasks, calendar events).",
	"admin":        "Full administrative access, including everything else listed here.",
	"messages":     "Send and receive messages.",
	"integrations": "Manage integrations.",
}

// Form fields of the consent page that are not authorization parameters.
var consentFields = []string{"csrf_token", "action", "grant"}

// errWaitlisted refuses the consent page to an account on the early-access
// waitlist: API access, whether by key or by an application's token,
// starts when the account is approved.
var errWaitlisted = &ams.Error{Kind: ams.EFORBIDDEN, Code: "account_on_waitlist",
	Message: "Your account is on the early-access waitlist, so no application can use the API for it yet. You will be able to authorize applications once it is approved."}

// getAuthorize validates an authorization request and shows the consent
// page, after the login page when there is no session.
func (s *Server) getAuthorize(w http.ResponseWriter, r *http.Request) error {
	ar, err := s.authorizeRequest(r.Context(), r)
	if err != nil {
		return s.authorizeError(w, r, ar, err)
	}
	user, sid, err := s.session(r)
	if err != nil {
		return err
	}
	if user == nil {
		http.Redirect(w, r, "/login?return_to="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return nil
	}
	if !user.Approved() {
		return errWaitlisted
	}
	v := view{
		Title: "Authorize " + clientName(ar), UserEmail: user.Email, ClientName: clientName(ar),
		SelfNamed: selfNamed(ar), RedirectHost: ar.GetRedirectURI().Host, CSRF: s.csrfToken("session", sid), ReturnTo: r.URL.RequestURI(),
	}
	for _, p := range ams.AllPermissions { // canonical order
		if ar.GetRequestedScopes().Has(string(p)) {
			v.Scopes = append(v.Scopes, scopeView{Name: string(p), Meaning: scopeMeanings[string(p)]})
		}
	}
	v.Hidden = authorizeParams(r.Form)
	s.render(w, http.StatusOK, "consent.html", v)
	return nil
}

// postAuthorize takes the answer of the consent page: deny redirects with
// access_denied; allow issues a code for the requested scopes the user
// left checked.
func (s *Server) postAuthorize(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := parseForm(r); err != nil {
		return badForm()
	}
	ctx := r.Context()
	user, sid, err := s.session(r)
	if err != nil {
		return err
	}
	if user == nil {
		// The session ended while the consent page was open: sign in
		// again, then see the consent page again.
		back := "/oauth/authorize?" + encodeFields(authorizeParams(r.PostForm))
		http.Redirect(w, r, "/login?return_to="+url.QueryEscape(back), http.StatusSeeOther)
		return nil
	}
	if !s.checkCSRF("session", sid, r.PostForm.Get("csrf_token")) {
		return forbidden("The consent form has expired. Go back to the application and start again.")
	}
	if !user.Approved() {
		return errWaitlisted
	}
	ar, err := s.authorizeRequest(ctx, r)
	if err != nil {
		return s.authorizeError(w, r, ar, err)
	}
	switch r.PostForm.Get("action") {
	case "allow":
	case "deny":
		return s.authorizeError(w, r, ar, fosite.ErrAccessDenied.WithHint("The user denied the request."))
	default:
		return badForm()
	}
	checked := r.PostForm["grant"]
	for _, sc := range ar.GetRequestedScopes() {
		if slices.Contains(checked, sc) {
			ar.GrantScope(sc)
		}
	}
	if len(ar.GetGrantedScopes()) == 0 {
		return s.authorizeError(w, r, ar, fosite.ErrAccessDenied.WithHint("The user granted no permission."))
	}
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, &fosite.DefaultSession{Subject: user.ID, Username: user.Email})
	if err != nil {
		return s.authorizeError(w, r, ar, err)
	}
	if ar.GetState() == "" {
		resp.GetParameters().Del("state") // none was sent (PKCE, authorizeRequest)
	}
	s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
	return nil
}

// authorizeRequest parses and validates the authorization parameters of r
// (query, or form of the consent page) with fosite, and adds what fosite
// leaves out: scopes may be joined by '+' as well as spaces, at least one
// is needed, redirect_uri must match a registered one exactly (fosite lets
// a loopback URI differ in port), and PKCE is checked here, before login
// and consent, rather than only when the code is issued.
func (s *Server) authorizeRequest(ctx context.Context, r *http.Request) (fosite.AuthorizeRequester, error) {
	if err := parseForm(r); err != nil {
		return nil, fosite.ErrInvalidRequest.WithHint("The request parameters could not be parsed.")
	}
	if sc, ok := r.Form["scope"]; ok {
		r.Form["scope"] = []string{strings.Join(strings.FieldsFunc(strings.Join(sc, " "), func(c rune) bool { return c == ' ' || c == '+' }), " ")}
	}
	if r.Form.Get("scope") == "" && s.selfRegistered(ctx, r.Form.Get("client_id")) {
		// A client that registered itself (RFC 7591) and asks for no
		// scope gets what the MCP tools need (RFC 6749 section 3.3 allows
		// a default); the consent page still lets the user narrow it.
		r.Form.Set("scope", strings.Join(MCPScopes, " "))
	}
	// With PKCE, state may be left out (OAuth 2.1: the code is bound to
	// the client's verifier, which is what state protects; MCP clients
	// such as the official TypeScript SDK send none). fosite requires
	// one, so it is given a placeholder, taken away again at once: the
	// answer carries no state the client did not send.
	noState := r.Form.Get("state") == "" && r.Form.Get("code_challenge") != ""
	if noState {
		r.Form.Set("state", "pkce-without-state")
	}
	ar, err := s.provider.NewAuthorizeRequest(ctx, r)
	if noState {
		r.Form.Del("state")
		if a, ok := ar.(*fosite.AuthorizeRequest); ok {
			a.State = ""
		}
	}
	if err != nil {
		return ar, err
	}
	if !exactRedirect(ar) {
		return ar, fosite.ErrInvalidRequest.WithHint("The 'redirect_uri' parameter does not match any of the client's registered redirect URIs.")
	}
	if err := s.checkResource(ar.GetRequestForm()["resource"]); err != nil { // RFC 8707
		return ar, err
	}
	if len(ar.GetRequestedScopes()) == 0 {
		return ar, fosite.ErrInvalidScope.WithHint("Request at least one scope: read, write, admin, messages or integrations.")
	}
	form := ar.GetRequestForm()
	challenge, method := form.Get("code_challenge"), form.Get("code_challenge_method")
	switch {
	case challenge == "" && method != "":
		return ar, fosite.ErrInvalidRequest.WithHint("'code_challenge_method' was given without 'code_challenge'.")
	case challenge == "" && ar.GetClient().IsPublic():
		return ar, fosite.ErrInvalidRequest.WithHint("This client must use PKCE: send 'code_challenge' with 'code_challenge_method=S256'.")
	case challenge != "" && method != "S256":
		return ar, fosite.ErrInvalidRequest.WithHint("'code_challenge_method' must be 'S256'.")
	case challenge != "" && !validChallenge(challenge):
		return ar, fosite.ErrInvalidRequest.WithHint("'code_challenge' must be the base64url SHA-256 of the code verifier (43 characters).")
	}
	return ar, nil
}

// authorizeError answers an invalid or refused authorization request as
// RFC 6749 section 4.1.2.1 says: when the client or the redirect URI
// cannot be trusted, an error page (never a redirect); otherwise a redirect
// to the redirect URI with error, error_description and state.
func (s *Server) authorizeError(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, err error) error {
	rfc := fosite.ErrorToRFC6749Error(err)
	switch rfc.ErrorField {
	case "invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type", "invalid_scope",
		"server_error", "temporarily_unavailable", "invalid_client", "invalid_target":
	default:
		if rfc.CodeField >= 500 {
			rfc = fosite.ErrServerError.WithWrap(err)
		} else {
			// fosite's own names (invalid_state, unsupported_response_mode,
			// ...) are invalid_request in RFC 6749.
			rfc = fosite.ErrInvalidRequest.WithHint(rfc.GetDescription())
		}
	}
	if rfc.ErrorField == "server_error" {
		s.logger.Error("oauth authorize", "err", err, "debug", rfc.DebugField)
	}
	switch {
	case ar == nil || ar.GetClient() == nil || ar.GetClient().GetID() == "":
		s.renderError(w, r, http.StatusBadRequest, "Invalid authorization request",
			"The application that sent you here is not registered with ams (unknown or missing client_id).")
	case !ar.IsRedirectURIValid() || !exactRedirect(ar):
		s.renderError(w, r, http.StatusBadRequest, "Invalid authorization request",
			"The redirect_uri of this request is not one that "+clientName(ar)+" registered, so ams will not send you there.")
	default:
		// ams answers in the query only (response_mode=query); a request
		// that asked for another mode gets its error there too.
		if a, ok := ar.(*fosite.AuthorizeRequest); ok {
			a.ResponseMode = fosite.ResponseModeQuery
		}
		s.provider.WriteAuthorizeError(r.Context(), w, ar, rfc)
	}
	return nil
}

// exactRedirect reports whether the request's redirect_uri is one of the
// client's, character for character (or absent while the client has
// exactly one, RFC 6749 section 3.1.2.3).
func exactRedirect(ar fosite.AuthorizeRequester) bool {
	uris := ar.GetClient().GetRedirectURIs()
	raw := ar.GetRequestForm().Get("redirect_uri")
	if raw == "" {
		return len(uris) == 1
	}
	return slices.Contains(uris, raw)
}

// selfNamed reports whether the request's client registered itself
// (RFC 7591), so that its name is its own claim.
func selfNamed(ar fosite.AuthorizeRequester) bool {
	c, ok := ar.GetClient().(client)
	return ok && c.c.UserID == ""
}

func clientName(ar fosite.AuthorizeRequester) string {
	if c, ok := ar.GetClient().(client); ok {
		return c.c.Name
	}
	return "the application"
}

// validChallenge reports whether c looks like an S256 challenge: 43
// base64url characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	for _, ch := range c {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

// authorizeParams returns the authorization parameters of a form, sorted,
// without the consent page's own fields: the hidden fields of the consent
// form.
func authorizeParams(form url.Values) []field {
	keys := make([]string, 0, len(form))
	for k := range form {
		if !slices.Contains(consentFields, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []field
	for _, k := range keys {
		for _, v := range form[k] {
			out = append(out, field{k, v})
		}
	}
	return out
}

func encodeFields(fs []field) string {
	v := url.Values{}
	for _, f := range fs {
		v.Add(f.Name, f.Value)
	}
	return v.Encode()
}

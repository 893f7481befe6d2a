package pages

import (
	"errors"
	"net/http"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/world"
)

// The integrations pages: the account's integrations with their status;
// connect an MCP server (name, URL, one header), see its tools, sync it,
// disconnect it. Every change is the world service's (Server.World), as
// for POST /v1/integrations: the same checks, the same events.

// integrationsData is the data of the integrations page.
type integrationsData struct {
	Integrations []*ams.Integration
	Form         mcpForm
}

// mcpForm is the form that connects an MCP server.
type mcpForm struct {
	Name, URL, HeaderName string // the header's value is never shown again
}

func (s *Server) integrationsPage(r *http.Request, c *Ctx, f mcpForm) (*integrationsData, error) {
	page, err := s.Store.ListIntegrations(r.Context(), c.User.ID, ams.ListParams{Limit: 100})
	if err != nil {
		return nil, err
	}
	return &integrationsData{Integrations: page.Data, Form: f}, nil
}

// integrations lists the account's integrations, with the form to
// connect an MCP server.
func (s *Server) integrations(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.integrationsPage(r, c, mcpForm{HeaderName: "Authorization"})
}

// connectMCP connects an MCP server: ams connects to it and lists its
// tools before anything is stored.
func (s *Server) connectMCP(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	pf := r.PostForm
	f := mcpForm{Name: strings.TrimSpace(pf.Get("name")), URL: strings.TrimSpace(pf.Get("url")), HeaderName: strings.TrimSpace(pf.Get("header_name"))}
	value := pf.Get("header_value")
	in := world.ConnectInput{Provider: ptr(ams.ProviderMCP), Name: &f.Name, URL: &f.URL}
	switch {
	case f.HeaderName != "" && value != "":
		in.Headers = map[string]string{f.HeaderName: value}
	case f.HeaderName != "" && value == "" && f.HeaderName != "Authorization":
		c.Fail("header_value", "Enter the header's value, or leave the header's name empty.")
	case f.HeaderName == "" && value != "":
		c.Fail("header_name", "Enter the header's name, such as Authorization.")
	}
	if f.Name == "" {
		c.Fail("name", "Enter a name: lower-case letters, digits, - and _ (it prefixes the tools' names).")
	}
	if f.URL == "" {
		c.Fail("url", "Enter the server's URL, such as https://mcp.example.com/mcp.")
	}
	if c.Invalid() {
		return s.integrationsPage(r, c, f)
	}
	integ, err := s.World.Connect(r.Context(), c.User.ID, in)
	if err != nil {
		var e *ams.Error
		if !errors.As(err, &e) || e.Param == "" {
			return nil, err
		}
		field := e.Param
		if strings.HasPrefix(field, "headers") {
			field = "header_name"
		}
		c.Fail(field, e.Message)
		return s.integrationsPage(r, c, f)
	}
	c.Flash(FlashSuccess, "Connected. The assistants can use its tools now.")
	return c.Redirect("/account/integrations/" + integ.ID)
}

// findIntegration returns the user's integration of the path's {id}.
func (s *Server) findIntegration(r *http.Request, c *Ctx) (*ams.Integration, error) {
	id := r.PathValue("id")
	if !ams.HasPrefixID(id, ams.PrefixIntegration) {
		return nil, ams.NotFound("integration", id)
	}
	return s.Store.FindIntegration(r.Context(), c.User.ID, id)
}

// integration shows an integration: status, last error, tools.
func (s *Server) integration(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return s.findIntegration(r, c)
}

// syncIntegration lists an MCP server's tools again (or syncs a
// calendar) and shows the outcome.
func (s *Server) syncIntegration(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	in, err := s.findIntegration(r, c)
	if err != nil {
		return nil, err
	}
	out, err := s.World.SyncNow(r.Context(), c.User.ID, in.ID)
	var e *ams.Error
	if errors.As(err, &e) && e.Kind != ams.EINTERNAL {
		c.Status = pageStatus[e.Kind]
		c.Fail("", e.Message)
		return in, nil
	} else if err != nil {
		return nil, err
	}
	if out.Status == ams.IntegrationError {
		c.Flash(FlashError, "The sync failed: see the last error.")
	} else {
		c.Flash(FlashSuccess, "Synced.")
	}
	return c.Redirect("/account/integrations/" + in.ID)
}

// disconnectIntegration disconnects an integration: its tools are the
// assistants' no more.
func (s *Server) disconnectIntegration(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	in, err := s.findIntegration(r, c)
	if err != nil {
		return nil, err
	}
	if err := s.World.Disconnect(r.Context(), c.User.ID, in.ID); err != nil {
		return nil, err
	}
	c.Flash(FlashSuccess, "Disconnected.")
	return c.Redirect("/account/integrations/" + in.ID)
}

func ptr[T any](v T) *T { return &v }

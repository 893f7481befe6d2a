package world

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MCP servers as integrations (provider ams.ProviderMCP): Connect checks
// the settings, connects to the server (initialize, tools/list) and
// stores the integration with its tools only if that worked; SyncNow
// lists the tools again. The server's tools are the assistants' tools,
// named <integration name>__<tool name> (Toolbox, RunAction): a call
// checks its input against the tool's JSON Schema before anything is
// sent, and is recorded as an action with the MCP result and its
// duration. A server that does not answer sets the integration's status
// to error and emits integration.error, once per change; the next
// exchange that works sets it connected again and emits
// integration.connected. Each change commits with its events.

// MCPClient talks to MCP servers (package mcp's *mcp.Client); its errors
// are *mcp.Error.
type MCPClient interface {
	CheckURL(ctx context.Context, url string) error
	ListTools(ctx context.Context, url string, headers map[string]string) ([]ams.IntegrationTool, error)
	CallTool(ctx context.Context, url string, headers map[string]string, name string, args json.RawMessage) (*ams.MCPResult, error)
}

// integrationName is what an MCP integration's name must be.
var integrationName = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// toolPattern is what a tool name in allowed_tools or require_approval
// must be.
var toolPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// maxToolNames bounds allowed_tools and require_approval.
const maxToolNames = 128

// connectMCP connects an MCP integration (Connect with provider mcp).
func (s *Service) connectMCP(ctx context.Context, userID string, in ConnectInput) (*ams.Integration, error) {
	if in.Config != nil {
		return nil, ams.ParamError("parameter_invalid", "config", "An MCP integration takes name, url, headers, allowed_tools and require_approval, not config.")
	}
	if in.Secrets != nil {
		return nil, ams.ParamError("parameter_invalid", "secrets", "An MCP integration takes its secrets as headers, not secrets.")
	}
	if in.Name == nil {
		return nil, ams.ParamError("parameter_missing", "name", "Missing required parameter 'name': the prefix of the server's tools, ^[a-z0-9_-]{1,32}$.")
	}
	name := *in.Name
	if !integrationName.MatchString(name) || strings.Contains(name, ams.MCPToolSeparator) {
		return nil, ams.ParamError("parameter_invalid", "name", "'name' must match ^[a-z0-9_-]{1,32}$ without '__' (it prefixes the tools' names, as in %s__get-sum).", "everything")
	}
	if in.URL == nil {
		return nil, ams.ParamError("parameter_missing", "url", "Missing required parameter 'url': the MCP server's Streamable HTTP endpoint.")
	}
	url := *in.URL
	if err := s.MCP.CheckURL(ctx, url); err != nil {
		return nil, ams.ParamError("url_invalid", "url", "The URL is not accepted: %s.", err)
	}
	headers := map[string]string{}
	if len(in.Headers) > mcp.MaxHeaders {
		return nil, ams.ParamError("parameter_invalid", "headers", "At most %d headers may be set.", mcp.MaxHeaders)
	}
	for _, k := range slices.Sorted(mapsKeys(in.Headers)) {
		if why := mcp.CheckHeader(k, in.Headers[k]); why != "" {
			return nil, ams.ParamError("parameter_invalid", "headers."+ams.Clip(k), "Header not accepted: %s.", why)
		}
		headers[k] = in.Headers[k]
	}
	if err := checkToolNames("allowed_tools", in.AllowedTools, false); err != nil {
		return nil, err
	}
	if err := checkToolNames("require_approval", in.RequireApproval, true); err != nil {
		return nil, err
	}
	if _, err := s.Store.FindIntegrationByName(ctx, userID, name); err == nil {
		return nil, ams.ParamError("parameter_invalid", "name", "An integration named '%s' already exists in this account; choose another name or disconnect it first.", name)
	} else if !ams.IsNotFound(err) {
		return nil, err
	}
	tools, err := s.MCP.ListTools(ctx, url, headers)
	if err != nil {
		return nil, mcpConnectError(err)
	}
	settings := &ams.MCPSettings{Name: name, URL: url, AllowedTools: in.AllowedTools, RequireApproval: in.RequireApproval, Tools: allowed(tools, in.AllowedTools)}
	if settings.RequireApproval == nil {
		settings.RequireApproval = []string{}
	}
	now := s.Clock.Now()
	out := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), Object: "integration", UserID: userID, Provider: ams.ProviderMCP,
		Status: ams.IntegrationConnected, Config: mcpConfig(headers), ConnectedAt: now, CreatedAt: now, UpdatedAt: now, MCPSettings: settings}
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, out, headers); err != nil {
			return err
		}
		return tx.Emit(ctx, ams.IntegrationEvent(ams.EventIntegrationConnected, out, now))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mcpConfig is the config shown of an MCP integration: the names of its
// headers (their values are sealed and never shown).
func mcpConfig(headers map[string]string) map[string]any {
	names := slices.Sorted(mapsKeys(headers))
	if names == nil {
		names = []string{}
	}
	return map[string]any{"header_names": names}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func checkToolNames(param string, names []string, star bool) error {
	if len(names) > maxToolNames {
		return ams.ParamError("parameter_invalid", param, "'%s' names at most %d tools.", param, maxToolNames)
	}
	for i, n := range names {
		if star && n == "*" {
			continue
		}
		if !toolPattern.MatchString(n) {
			return ams.ParamError("parameter_invalid", fmt.Sprintf("%s[%d]", param, i), "'%s' must list tool names (^[A-Za-z0-9_-]{1,64}$)%s.", param,
				map[bool]string{true: " or \"*\"", false: ""}[star])
		}
	}
	return nil
}

// allowed keeps the tools allowed_tools names (nil: all).
func allowed(tools []ams.IntegrationTool, names []string) []ams.IntegrationTool {
	if names == nil {
		return tools
	}
	out := []ams.IntegrationTool{}
	for _, t := range tools {
		if slices.Contains(names, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// mcpConnectError is the 400 of a server ams could not connect to.
func mcpConnectError(err error) error {
	var me *mcp.Error
	if errors.As(err, &me) {
		return ams.ParamError("url_unreachable", "url", "Could not connect to the MCP server: %s.", me.Reason)
	}
	return err
}

// syncMCP lists the tools of MCP integration in again and records the
// outcome: new tools, or status error.
func (s *Service) syncMCP(ctx context.Context, in *ams.Integration) (*ams.Integration, error) {
	headers, err := s.Store.IntegrationSecrets(ctx, in.UserID, in.ID)
	if err != nil {
		return nil, err
	}
	tools, listErr := s.MCP.ListTools(ctx, in.MCPSettings.URL, headers)
	var me *mcp.Error
	if listErr != nil && !errors.As(listErr, &me) {
		return nil, listErr
	}
	var out *ams.Integration
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		cur, err := tx.FindIntegration(ctx, in.UserID, in.ID)
		if err != nil {
			return err
		}
		out = cur
		if cur.Status == ams.IntegrationDisconnected || cur.MCPSettings == nil {
			return nil
		}
		if listErr == nil {
			cur.MCPSettings.Tools = allowed(tools, cur.MCPSettings.AllowedTools)
			return s.mcpOutcome(ctx, tx, cur, "", true)
		}
		return s.mcpOutcome(ctx, tx, cur, me.Reason, true)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mcpOutcome records in tx how an exchange with in's server went
// (failure "": it worked): the status changes, with its event, only when
// it changes. write stores in even when its status stays (its tools
// changed).
func (s *Service) mcpOutcome(ctx context.Context, tx ams.Tx, in *ams.Integration, failure string, write bool) error {
	now := s.now()
	var event string
	switch {
	case failure == "" && in.Status == ams.IntegrationError:
		in.Status, in.LastError, in.ConnectedAt, event = ams.IntegrationConnected, nil, now, ams.EventIntegrationConnected
	case failure != "" && in.Status == ams.IntegrationConnected:
		in.Status, in.LastError, event = ams.IntegrationError, &failure, ams.EventIntegrationError
	case failure != "":
		write = write || in.LastError == nil || *in.LastError != failure
		in.LastError = &failure
	}
	if event == "" && !write {
		return nil
	}
	in.UpdatedAt = now
	if err := tx.UpdateIntegration(ctx, in); err != nil {
		return err
	}
	if event == "" {
		return nil
	}
	ev := ams.IntegrationEvent(event, in, now)
	if event == ams.EventIntegrationError {
		ev.Data["error"] = failure // the documented data of integration.error
	}
	return tx.Emit(ctx, ev)
}

// isMCPTool reports whether typ names an integration's tool
// (<name>__<tool>).
func isMCPTool(typ string) bool { return strings.Contains(typ, ams.MCPToolSeparator) }

// runMCP runs tool typ (<integration>__<tool>) of the account's MCP
// integrations: the input is checked against the tool's schema (bad
// input: an *ams.Error, nothing sent or stored), the tool is called, and
// the action is stored with the outcome for the integration's status in
// one transaction, succeeded with the MCP result, or failed (the server
// did not answer, or answered an error).
func (s *Service) runMCP(ctx context.Context, userID string, a *ams.Assistant, conversationID, typ string, input json.RawMessage) (*ams.Action, error) {
	name, toolName, _ := strings.Cut(typ, ams.MCPToolSeparator)
	if s.MCP == nil {
		return nil, ams.ParamError("parameter_invalid", "type", "Unknown action type '%s'.", clip(typ))
	}
	in, err := s.Store.FindIntegrationByName(ctx, userID, name)
	if ams.IsNotFound(err) || (err == nil && in.MCPSettings == nil) {
		return nil, ams.ParamError("parameter_invalid", "type", "Unknown action type '%s': no MCP integration is named '%s'.", clip(typ), clip(name))
	} else if err != nil {
		return nil, err
	}
	tool := in.MCPSettings.Tool(toolName)
	if tool == nil {
		return nil, ams.ParamError("parameter_invalid", "type", "Unknown action type '%s': integration '%s' has no tool '%s' (sync it to refresh its tools).", clip(typ), name, clip(toolName))
	}
	if err := validateInput(tool.InputSchema, input); err != nil {
		return nil, err
	}
	headers, err := s.Store.IntegrationSecrets(ctx, userID, in.ID)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, callErr := s.MCP.CallTool(ctx, in.MCPSettings.URL, headers, toolName, input)
	took := time.Since(start).Milliseconds()
	if callErr != nil && ctx.Err() != nil {
		// The caller went away (or its turn was cancelled): not the
		// server's fault, and nothing to record.
		return nil, ctx.Err()
	}
	var me *mcp.Error
	if callErr != nil && !errors.As(callErr, &me) {
		return nil, callErr
	}
	call := ams.ToolCallFrom(ctx)
	act := &ams.Action{ID: ams.NewID(ams.PrefixAction), Object: "action", UserID: userID, AssistantID: a.ID,
		ConversationID: conversationID, Type: typ, Input: compact(input), Status: ams.ActionSucceeded, TurnID: call.TurnID, CallSeq: call.Seq,
		DurationMS: took}
	failure := ""
	switch {
	case callErr != nil:
		act.Status = ams.ActionFailed
		kind, code := ams.EINVALID, "mcp_call_failed"
		if me.ServerDown {
			kind, code, failure = ams.EUPSTREAM, "mcp_server_unavailable", me.Reason
		}
		act.Error = &ams.ActionError{Type: kind.Type(), Code: code, Message: fmt.Sprintf("MCP server '%s': %s.", name, me.Reason)}
	default:
		b, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		act.Result = b
		if res.IsError {
			act.Status = ams.ActionFailed
			act.Error = &ams.ActionError{Type: ams.TypeInvalidRequest, Code: "mcp_tool_error",
				Message: fmt.Sprintf("Tool '%s' of MCP server '%s' answered an error: %s", toolName, name, resultText(res))}
		}
	}
	err = s.Store.Update(ctx, func(tx ams.Tx) error {
		cur, err := tx.FindIntegration(ctx, userID, in.ID)
		if err != nil {
			return err
		}
		if cur.Status != ams.IntegrationDisconnected {
			if err := s.mcpOutcome(ctx, tx, cur, failure, false); err != nil {
				return err
			}
		}
		act.CreatedAt = s.now()
		ams.KeepAnswer(ctx, act)
		return tx.CreateAction(ctx, act)
	})
	if err != nil {
		return nil, err
	}
	return act, nil
}

// resultText is the text of a result's content, clipped, for an error
// message.
func resultText(res *ams.MCPResult) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(res.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			b.WriteString(p.Text)
		}
	}
	if b.Len() == 0 {
		return "(no text)"
	}
	return ams.Clip(b.String())
}

// noLoader refuses every $ref outside the schema: a tool's schema comes
// from an MCP server or a client, and must not make ams read files or
// URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the schema refers to %s, outside itself", ams.Clip(url))
}

// validateInput checks input, a tool's arguments, against the tool's
// JSON Schema: a 400 naming input (or the field at fault) when it does
// not validate.
func validateInput(schema, input json.RawMessage) error {
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return ams.ParamError("parameter_invalid", "input", "The input is not valid JSON.")
	}
	if _, ok := inst.(map[string]any); !ok {
		return ams.ParamError("invalid_type", "input", "'input' must be of type object.")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return ams.ParamError("parameter_invalid", "type", "The tool's input schema is not valid JSON.")
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource("urn:ams:tool-input", doc); err != nil {
		return ams.ParamError("parameter_invalid", "type", "The tool's input schema is not valid: %s.", ams.Clip(err.Error()))
	}
	sch, err := c.Compile("urn:ams:tool-input")
	if err != nil {
		return ams.ParamError("parameter_invalid", "type", "The tool's input schema cannot be used: %s.", ams.Clip(lastLine(err.Error())))
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	leaf := firstLeaf(ve)
	param := "input"
	if len(leaf.InstanceLocation) > 0 {
		param += "." + strings.Join(leaf.InstanceLocation, ".")
	}
	return ams.ParamError("parameter_invalid", ams.Clip(param), "The input does not match the tool's schema: %s.",
		ams.Clip(leaf.ErrorKind.LocalizedString(message.NewPrinter(language.English))))
}

// firstLeaf is the deepest first cause of a validation error: the one
// that says what is wrong where.
func firstLeaf(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		c := slices.Clone(ve.Causes)
		sort.SliceStable(c, func(i, j int) bool {
			return strings.Join(c[i].InstanceLocation, "/") < strings.Join(c[j].InstanceLocation, "/")
		})
		ve = c[0]
	}
	return ve
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

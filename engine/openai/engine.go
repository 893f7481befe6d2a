// Package openai is the model-backed assistant engine: it answers through
// any server that speaks OpenAI's chat-completions protocol (OpenAI itself,
// Ollama, vLLM, llama.cpp's server, ...), with the assistant's model.
//
// One reply is a bounded loop. The engine sends the system prompt (the
// assistant's instructions and the current time in the account's time
// zone), the conversation and the assistant's tools as function tools; when
// the model asks for tool calls it runs each through the request's Toolbox,
// sends the action records back as tool messages and asks again, until the
// model answers with text or Config.MaxToolRounds rounds of tool calls have
// run (then the reply fails with engine_error). With EngineRequest.Stream
// set, each call streams and the text is forwarded as it arrives.
//
// Failures of the provider become *ams.Error of kind EUPSTREAM with a short
// summary (the provider's own text goes to the log only): 401/403
// engine_unauthorized, 429 engine_rate_limited, anything else engine_error.
// A provider that does not answer in time is context.DeadlineExceeded,
// which the messaging layer reports as engine_error "did not answer in
// time".
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ssrf"
)

// Defaults of Config.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultMaxToolRounds = 8
	DefaultMaxRetries    = 2
	// MaxToolCallsPerRound bounds the tool calls the model may ask for in
	// one answer; more fails the reply.
	MaxToolCallsPerRound = 16
	// DefaultMaxResponseBytes bounds the body of one answer of the
	// provider: the JSON of a completion, or all the events of a
	// streamed one (some 40,000 chunks).
	DefaultMaxResponseBytes = 8 << 20
)

// Error codes of the engine's *ams.Error values (kind EUPSTREAM, HTTP 502).
const (
	CodeUnauthorized = "engine_unauthorized" // the provider refused the credentials (401, 403)
	CodeRateLimited  = "engine_rate_limited" // the provider rate-limited us (429) beyond what its Retry-After allows in time
	CodeError        = "engine_error"        // anything else: provider errors, unreadable answers, the tool-round bound
)

// Config configures an Engine.
type Config struct {
	// BaseURL is the chat-completions server's API root, the URL under
	// which /chat/completions lives: "https://api.openai.com/v1",
	// "http://127.0.0.1:11434/v1" (Ollama), "http://127.0.0.1:8000/v1"
	// (vLLM). Required.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>"; empty sends none
	// (local servers). Nothing is read from OPENAI_* variables.
	APIKey string
	// HTTPClient sends the requests; nil uses a client of the engine's
	// own, made by ssrf.Operator().Client with Timeout and
	// MaxResponseBytes as its limits (answers' headers bounded to
	// ssrf.DefaultMaxHeaderBytes). Tests only.
	HTTPClient *http.Client
	// MaxResponseBytes bounds the body of one answer of the provider
	// (decompressed); a longer one fails the reply with engine_error. 0
	// means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout bounds one call to the provider, its retries included; 0
	// means DefaultTimeout. The caller's context bounds the whole reply.
	Timeout time.Duration
	// MaxToolRounds is how many times in one reply the model may ask for
	// tool calls; 0 means DefaultMaxToolRounds.
	MaxToolRounds int
	// MaxRetries is how often a call that failed with a connection error,
	// 408, 409, 429 or 5xx is retried (honouring Retry-After when it fits
	// in the call's time); 0 means DefaultMaxRetries, negative none.
	MaxRetries int
	// Logger receives the provider's error details, which callers never
	// see; nil discards them.
	Logger *slog.Logger
}

// Engine is the model-backed engine. It is safe for concurrent use.
type Engine struct {
	cfg  Config
	chat oai.ChatCompletionService
	log  *slog.Logger
}

var _ ams.Engine = (*Engine)(nil)

// New returns an engine of the server at cfg.BaseURL.
func New(cfg Config) (*Engine, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai engine: base URL must be an http:// or https:// URL, not %q", cfg.BaseURL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxToolRounds <= 0 {
		cfg.MaxToolRounds = DefaultMaxToolRounds
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	hc := cfg.HTTPClient
	if hc == nil {
		// The operator's server (often on loopback, as Ollama is): no
		// address is refused, but its answers are bounded. The call's
		// context bounds each call (Timeout, retries included); the
		// client's own bound is the same, for one attempt.
		hc = ssrf.Operator().Client(ssrf.Limits{Timeout: cfg.Timeout, MaxBodyBytes: cfg.MaxResponseBytes})
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The service is built from explicit options only: unlike
	// openai.NewClient it reads no OPENAI_* environment variables.
	opts := []option.RequestOption{
		option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/") + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Engine{cfg: cfg, chat: oai.NewChatCompletionService(opts...), log: log}, nil
}

// Reply answers the last message of req.History with the assistant's
// model. See the package documentation for the loop and the errors.
//
// The request's options go to the provider: instructions replace the
// assistant's in the system prompt, client tools join the toolbox's as
// function tools, tool_choice, max_output_tokens (max_completion_tokens)
// and response_format are passed as they are. Usage is summed over the
// calls; a finish reason "length" is stop reason max_output_tokens.
// A call of a client tool, or of a tool EngineRequest.NeedsApproval
// names, stops the reply with a required action. A round that asks for
// both stops for the approvals, its client calls kept in Reply.Calls as
// pending (ams.ToolCallRecord.Pending): the service asks for their
// outputs once the approvals are answered, before the model is asked
// again. The turn's earlier calls (EngineRequest.Calls) are given to the
// model as made and answered, one assistant message each.
func (e *Engine) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := req.Assistant
	if a == nil || strings.TrimSpace(a.Model) == "" {
		return nil, errors.New("openai engine: the request has no assistant model")
	}
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(a.Model), Messages: messages(req)}
	if req.Tools != nil {
		tools, err := toolParams(req.Tools.Specs())
		if err != nil {
			return nil, err
		}
		params.Tools = tools
	}
	if err := applyOptions(&params, req.Options); err != nil {
		return nil, err
	}
	out := &emitter{stream: req.Stream}
	reply := &ams.Reply{Calls: append([]*ams.ToolCallRecord(nil), req.Calls...)}
	for round := 0; ; round++ {
		out.newRound()
		res, err := e.call(ctx, params, out, a.Model)
		if err != nil {
			return nil, err
		}
		reply.Usage = reply.Usage.Add(res.usage)
		msg := res.msg
		var calls []oai.ChatCompletionMessageToolCallUnion
		for _, tc := range msg.ToolCalls {
			if tc.Type == "" || tc.Type == "function" {
				calls = append(calls, tc)
			}
		}
		if len(calls) == 0 {
			reply.Content = out.text.String()
			reply.StopReason = ams.StopEndTurn
			if res.finish == "length" {
				reply.StopReason = ams.StopMaxOutputTokens
			}
			if len(reply.Calls) == 0 {
				reply.Calls = nil
			}
			return reply, nil
		}
		if round >= e.cfg.MaxToolRounds {
			return nil, upstream(CodeError, "the model still asked for tools after %d rounds of tool calls.", e.cfg.MaxToolRounds)
		}
		if len(calls) > MaxToolCallsPerRound {
			return nil, upstream(CodeError, "the model asked for %d tool calls at once (at most %d).", len(calls), MaxToolCallsPerRound)
		}
		msg.ToolCalls = calls
		params.Messages = append(params.Messages, msg.ToParam())
		var client, approve []*ams.ToolCallRequest
		for _, tc := range calls {
			name, args := tc.Function.Name, callArguments(tc.Function.Arguments)
			switch {
			case isClientTool(req.Options, name):
				client = append(client, &ams.ToolCallRequest{ID: tc.ID, Name: name, Arguments: args})
				continue
			case req.NeedsApproval != nil && req.NeedsApproval(name) && json.Valid(args):
				approve = append(approve, &ams.ToolCallRequest{ID: tc.ID, Name: name, Arguments: args})
				continue
			}
			content, action, err := runTool(ctx, req.Tools, name, tc.Function.Arguments)
			if err != nil {
				return nil, err
			}
			rec := &ams.ToolCallRecord{ID: tc.ID, Name: name, Arguments: args, Output: content}
			if action != nil {
				reply.Actions = append(reply.Actions, action)
				rec.ActionID = action.ID
			}
			reply.Calls = append(reply.Calls, rec)
			params.Messages = append(params.Messages, oai.ToolMessage(content, tc.ID))
		}
		switch {
		case len(approve) > 0:
			reply.RequiredAction = &ams.RequiredAction{Type: ams.RequiredApproveToolCalls, ToolCalls: approve}
			for _, c := range client {
				reply.Calls = append(reply.Calls, &ams.ToolCallRecord{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Pending: true})
			}
		case len(client) > 0:
			reply.RequiredAction = &ams.RequiredAction{Type: ams.RequiredSubmitToolOutputs, ToolCalls: client}
		default:
			continue
		}
		reply.StopReason, reply.Content = ams.StopRequiresAction, ""
		return reply, nil
	}
}

// callArguments returns a call's arguments as JSON: "{}" when empty, a
// JSON string of the text when it is not JSON.
func callArguments(args string) json.RawMessage {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}")
	}
	if !json.Valid([]byte(args)) {
		b, _ := json.Marshal(args)
		return b
	}
	return json.RawMessage(args)
}

func isClientTool(o *ams.TurnOptions, name string) bool {
	if o == nil {
		return false
	}
	for _, t := range o.Tools {
		if t != nil && t.Name == name {
			return true
		}
	}
	return false
}

// applyOptions puts the request's options into params.
func applyOptions(params *oai.ChatCompletionNewParams, o *ams.TurnOptions) error {
	if o == nil {
		return nil
	}
	for _, t := range o.Tools {
		if t == nil {
			continue
		}
		tools, err := toolParams([]ams.ToolSpec{{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
		if err != nil {
			return err
		}
		params.Tools = append(params.Tools, tools...)
	}
	if c := o.ToolChoice; c != nil && c.Mode != "" {
		if c.Mode == "function" {
			params.ToolChoice = oai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &oai.ChatCompletionNamedToolChoiceParam{
				Function: oai.ChatCompletionNamedToolChoiceFunctionParam{Name: c.Name}}}
		} else {
			params.ToolChoice = oai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oai.String(c.Mode)}
		}
	}
	if o.MaxOutputTokens > 0 {
		params.MaxCompletionTokens = oai.Int(int64(o.MaxOutputTokens))
	}
	if f := o.ResponseFormat; f != nil {
		switch f.Type {
		case "text":
			params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}}
		case "json_schema":
			if f.JSONSchema == nil {
				return errors.New("openai engine: response_format json_schema without its json_schema")
			}
			var schema any
			if len(f.JSONSchema.Schema) > 0 {
				if err := json.Unmarshal(f.JSONSchema.Schema, &schema); err != nil {
					return fmt.Errorf("openai engine: response_format schema: %w", err)
				}
			}
			js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: f.JSONSchema.Name, Schema: schema}
			if f.JSONSchema.Strict != nil {
				js.Strict = oai.Bool(*f.JSONSchema.Strict)
			}
			params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}
		}
	}
	return nil
}

// answer is one call's outcome: the model's message, why it finished,
// and the tokens it took.
type answer struct {
	msg    oai.ChatCompletionMessage
	finish string
	usage  ams.Usage
}

func usageOf(u oai.CompletionUsage) ams.Usage {
	return ams.Usage{}.Add(ams.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens})
}

// call makes one chat-completions call, streaming when out streams, and
// returns the model's answer. Its text has gone to out.
func (e *Engine) call(ctx context.Context, params oai.ChatCompletionNewParams, out *emitter, model string) (answer, error) {
	cctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	// A Retry-After longer than the time left is not waited for: the call
	// fails at once as rate-limited.
	wait := time.Until(deadline(cctx))
	opts := []option.RequestOption{option.WithMaxRetryDelay(max(wait, time.Millisecond))}
	if out.stream == nil {
		res, err := e.chat.New(cctx, params, opts...)
		if err != nil {
			return answer{}, e.fail(ctx, cctx, err, model)
		}
		if res == nil || len(res.Choices) == 0 { // a JSON null body decodes to no result and no error
			return answer{}, e.fail(ctx, cctx, errNoChoice, model)
		}
		msg := res.Choices[0].Message
		if err := out.write(textOf(msg.Content, msg.Refusal)); err != nil {
			return answer{}, err
		}
		return answer{msg: msg, finish: res.Choices[0].FinishReason, usage: usageOf(res.Usage)}, nil
	}
	// Usage comes in a last chunk, when asked for.
	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	stream := e.chat.NewStreaming(cctx, params, opts...)
	defer stream.Close()
	var acc oai.ChatCompletionAccumulator
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return answer{}, e.fail(ctx, cctx, errBadChunk, model)
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if err := out.write(textOf(c.Delta.Content, c.Delta.Refusal)); err != nil {
				return answer{}, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return answer{}, e.fail(ctx, cctx, err, model)
	}
	if len(acc.Choices) == 0 {
		return answer{}, e.fail(ctx, cctx, errNoChoice, model)
	}
	if acc.Choices[0].FinishReason == "" {
		return answer{}, e.fail(ctx, cctx, errCutOff, model)
	}
	return answer{msg: acc.Choices[0].Message, finish: acc.Choices[0].FinishReason, usage: usageOf(acc.Usage)}, nil
}

var (
	errNoChoice = errors.New("the answer has no choices")
	errBadChunk = errors.New("a stream chunk could not be accumulated")
	errCutOff   = errors.New("the stream ended without a finish reason")
)

// deadline returns ctx's deadline (ctx always has one here).
func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// fail maps an error of a call to what Reply returns, and logs the
// provider's details.
func (e *Engine) fail(ctx, cctx context.Context, err error, model string) error {
	if ctx.Err() != nil {
		return ctx.Err() // the reply's own deadline, or the caller went away
	}
	if cctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		e.log.Warn("model provider did not answer in time", "model", model, "timeout", e.cfg.Timeout.String(), "err", err)
		return fmt.Errorf("openai engine: no answer within %s: %w", e.cfg.Timeout, context.DeadlineExceeded)
	}
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		e.log.Warn("model provider error", "model", model, "status", apiErr.StatusCode,
			"type", apiErr.Type, "code", apiErr.Code, "message", clip(apiErr.Message, 500))
		switch apiErr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return upstream(CodeUnauthorized, "its model provider refused this server's credentials (HTTP %d).", apiErr.StatusCode)
		case http.StatusTooManyRequests:
			return upstream(CodeRateLimited, "its model provider is rate-limiting this server (HTTP 429); retry later.")
		case http.StatusNotFound:
			return upstream(CodeError, "its model provider does not serve model '%s' (HTTP 404).", clip(model, 100))
		}
		return upstream(CodeError, "its model provider answered HTTP %d.", apiErr.StatusCode)
	}
	e.log.Warn("model provider call failed", "model", model, "err", err)
	var streamErr *ssestream.StreamError
	var netErr net.Error
	var tl *ssrf.TooLargeError
	switch {
	case errors.As(err, &tl):
		return upstream(CodeError, "its model provider's answer was too large (its %s %s the limit of %s).", tl.Part, tl.Verb(), ssrf.Size(tl.Limit))
	case errors.As(err, &streamErr):
		return upstream(CodeError, "its model provider reported an error while answering.")
	case errors.Is(err, errCutOff), errors.Is(err, io.ErrUnexpectedEOF):
		return upstream(CodeError, "its model provider's answer was cut off.")
	case errors.As(err, &netErr):
		return upstream(CodeError, "its model provider could not be reached.")
	}
	// What is left went wrong after the provider answered: JSON that does
	// not parse, another content type, no choices, a chunk out of place.
	return upstream(CodeError, "its model provider sent an answer that could not be read.")
}

// upstream returns the EUPSTREAM error shown to the API caller.
func upstream(code, format string, args ...any) *ams.Error {
	return &ams.Error{Kind: ams.EUPSTREAM, Code: code,
		Message: "The assistant's engine could not reply: " + fmt.Sprintf(format, args...)}
}

// emitter collects the reply's text over the rounds and forwards it to
// the stream. The texts of rounds are separated by a blank line.
type emitter struct {
	stream  func(string) error
	text    strings.Builder
	started bool // this round has written text
}

func (o *emitter) newRound() { o.started = false }

func (o *emitter) write(s string) error {
	if s == "" {
		return nil
	}
	if !o.started {
		o.started = true
		if o.text.Len() > 0 {
			s = "\n\n" + s
		}
	}
	o.text.WriteString(s)
	if o.stream != nil {
		return o.stream(s)
	}
	return nil
}

// textOf returns the content, or the refusal when there is no content.
func textOf(content, refusal string) string {
	if content != "" {
		return content
	}
	return refusal
}

// messages returns the system prompt and the conversation.
func messages(req *ams.EngineRequest) []oai.ChatCompletionMessageParamUnion {
	msgs := []oai.ChatCompletionMessageParamUnion{oai.SystemMessage(SystemPrompt(req))}
	for _, m := range req.History {
		if m == nil || m.Content == "" {
			continue
		}
		switch m.Direction {
		case ams.DirectionInbound:
			msgs = append(msgs, oai.UserMessage(m.Content))
		case ams.DirectionOutbound:
			msgs = append(msgs, oai.AssistantMessage(m.Content))
		}
	}
	for _, c := range req.Calls {
		if c.Pending {
			continue // not answered yet: the model is not asked before it is
		}
		call := oai.ChatCompletionMessageToolCallUnionParam{OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
			ID: c.ID, Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Arguments)}}}
		msgs = append(msgs, oai.ChatCompletionMessageParamUnion{OfAssistant: &oai.ChatCompletionAssistantMessageParam{
			ToolCalls: []oai.ChatCompletionMessageToolCallUnionParam{call}}})
		msgs = append(msgs, oai.ToolMessage(c.Output, c.ID))
	}
	return msgs
}

// SystemPrompt returns the system message of a request: who the assistant
// is, its instructions, and the current time in the account's time zone,
// so that the model can resolve "tomorrow at 9".
func SystemPrompt(req *ams.EngineRequest) string {
	a := req.Assistant
	var b strings.Builder
	name := strings.TrimSpace(a.Name)
	if name == "" {
		name = "an assistant"
	}
	fmt.Fprintf(&b, "You are %s, a personal AI assistant.", name)
	if d := strings.TrimSpace(a.Description); d != "" {
		fmt.Fprintf(&b, " %s", d)
	}
	instructions := a.Instructions
	if req.Options != nil && req.Options.Instructions != nil {
		instructions = *req.Options.Instructions
	}
	if in := strings.TrimSpace(instructions); in != "" {
		fmt.Fprintf(&b, "\n\n%s", in)
	}
	loc := req.Location
	if loc == nil {
		loc = time.UTC
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.In(loc)
	fmt.Fprintf(&b, "\n\nThe current date and time is %s (time zone %s, UTC%s). Read dates and times the user gives "+
		"(\"tomorrow at 9\") in this time zone. When a tool takes a time, give it in RFC 3339 with this offset, such as %s.",
		now.Format("Monday, 2 January 2006, 15:04"), loc.String(), now.Format("-07:00"), now.Format(time.RFC3339))
	return b.String()
}

// toolParams converts the toolbox's specs into function tools.
func toolParams(specs []ams.ToolSpec) ([]oai.ChatCompletionToolUnionParam, error) {
	var tools []oai.ChatCompletionToolUnionParam
	for _, s := range specs {
		fn := shared.FunctionDefinitionParam{Name: s.Name}
		if s.Description != "" {
			fn.Description = oai.String(s.Description)
		}
		if len(s.Parameters) > 0 {
			var schema shared.FunctionParameters
			if err := json.Unmarshal(s.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("openai engine: tool %s: parameters are not a JSON Schema object: %w", s.Name, err)
			}
			fn.Parameters = schema
		}
		tools = append(tools, oai.ChatCompletionFunctionTool(fn))
	}
	return tools, nil
}

// toolResult is what the model is told of a tool call: the action's
// status with its result or error.
type toolResult struct {
	Status string           `json:"status"`
	Result json.RawMessage  `json:"result"`
	Error  *ams.ActionError `json:"error"`
}

// runTool runs one tool call and returns the tool message's content and
// the action (nil when none was run: no toolbox, or arguments that are not
// JSON). An error means the reply cannot go on.
func runTool(ctx context.Context, tools ams.Toolbox, name, args string) (string, *ams.Action, error) {
	failed := func(code, msg string) string {
		b, _ := json.Marshal(toolResult{Status: ams.ActionFailed,
			Error: &ams.ActionError{Type: "invalid_request_error", Code: code, Message: msg}})
		return string(b)
	}
	if tools == nil {
		return failed("tool_not_available", "No tools are available in this conversation."), nil, nil
	}
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return failed("invalid_json", "The arguments of "+clip(name, 64)+" are not valid JSON."), nil, nil
	}
	// An unknown tool is the toolbox's to refuse, as a failed action.
	action, err := tools.Run(ctx, name, json.RawMessage(args))
	if err != nil {
		return "", nil, err
	}
	if action == nil {
		return "", nil, fmt.Errorf("openai engine: tool %s returned no action", name)
	}
	b, err := json.Marshal(toolResult{Status: action.Status, Result: action.Result, Error: action.Error})
	if err != nil {
		return "", nil, fmt.Errorf("openai engine: encode the result of tool %s: %w", name, err)
	}
	return string(b), action, nil
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

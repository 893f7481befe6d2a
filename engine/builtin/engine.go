// Package builtin is the embedded default assistant engine of ams, the one
// an assistant with model "builtin" runs. It needs no model and no network:
// it recognises a small set of intents (greetings, help, introductions,
// notes to remember, questions about the conversation so far, the date and
// time) and answers everything else with a helpful fallback. Its replies
// are deterministic, so tests can assert them.
//
// With the request's Toolbox it also acts on the assistant's world in plain
// language: "remind me to call Anna tomorrow at 9", "add a task: renew
// passport by Friday", "what are my tasks?", "done with the passport task",
// "schedule lunch with Sam on Tuesday 12:30 for an hour", "what's on my
// calendar tomorrow?", "move lunch with Sam to Wednesday", "rename the
// passport task to …". Dates and times are read by
// github.com/olebedev/when in the account's time zone (see datetime.go for
// the choice and its limits); the tool runs are in world.go.
//
// The engine keeps no state of its own: whatever it "remembers" it reads
// back from the conversation history it is given, and tasks and events
// through its tools.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// ErrNothingToAnswer is returned by Reply when the history is empty or does
// not end with an inbound message.
var ErrNothingToAnswer = errors.New("builtin: history does not end with an inbound message")

// Engine is the built-in assistant engine. It is safe for concurrent use.
type Engine struct {
	// Now returns the current time, used to answer questions about the
	// date and time. New sets it to time.Now; nil means time.Now.
	Now func() time.Time
}

var _ ams.Engine = (*Engine)(nil)

// New returns the built-in engine, reading the system clock.
func New() *Engine {
	return &Engine{Now: time.Now}
}

// Reply answers the last message of req.History, which must be inbound;
// the messages before it, of both directions, are the conversation so far,
// oldest first. It returns ctx's error if ctx is done. With req.Stream set
// the answer is streamed word by word, as a model does. Relative dates ("tomorrow at
// 9") are read at req.Now (or the engine's clock) in req.Location (UTC if
// nil); the actions run through req.Tools are in Reply.Actions. An error
// from req.Tools.Run (nothing could be stored) ends the turn with it.
func (e *Engine) Reply(ctx context.Context, req *ams.EngineRequest) (*ams.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	history := req.History
	if len(history) == 0 {
		return nil, fmt.Errorf("%w: the history is empty", ErrNothingToAnswer)
	}
	last := history[len(history)-1]
	if last == nil || last.Direction != ams.DirectionInbound {
		return nil, ErrNothingToAnswer
	}
	a := req.Assistant
	if a == nil {
		a = &ams.Assistant{}
	}
	now := time.Now
	if e != nil && e.Now != nil {
		now = e.Now
	}
	if !req.Now.IsZero() {
		at := req.Now
		now = func() time.Time { return at }
	}
	usage := ams.Usage{InputTokens: inputTokens(req)}
	// A client tool's output answers the turn; otherwise a client tool
	// the message asks for stops it (options.go).
	if c := lastClientCall(req.Options, req.Calls); c != nil {
		return finish(req, &ams.Reply{Content: clientReturned(c), Calls: req.Calls}, usage)
	}
	if call := clientCall(req.Options, last.Content); call != nil {
		return &ams.Reply{StopReason: ams.StopRequiresAction, Usage: usage.Add(ams.Usage{}), Calls: req.Calls,
			RequiredAction: &ams.RequiredAction{Type: ams.RequiredSubmitToolOutputs, ToolCalls: []*ams.ToolCallRequest{call}}}, nil
	}
	t := &turn{
		assistant: a,
		earlier:   history[:len(history)-1],
		all:       history,
		text:      clean(last.Content),
		now:       now,
		ctx:       ctx,
		clock:     newClock(now(), req.Location),
	}
	var book *calls
	if req.Tools != nil {
		book = &calls{inner: req.Tools, needs: req.NeedsApproval, earlier: req.Calls}
		t.tools = book
	}
	t.norm = normalize(t.text)
	content := answer(t)
	if book != nil && errors.Is(t.err, errPause) {
		return &ams.Reply{StopReason: ams.StopRequiresAction, Usage: usage.Add(ams.Usage{}), Actions: t.actions,
			Calls:          append(append([]*ams.ToolCallRecord(nil), req.Calls...), book.all...),
			RequiredAction: &ams.RequiredAction{Type: ams.RequiredApproveToolCalls, ToolCalls: book.pending}}, nil
	}
	if t.err != nil {
		return nil, t.err
	}
	reply := &ams.Reply{Content: content, Actions: t.actions}
	if book != nil && len(req.Calls)+len(book.all) > 0 {
		reply.Calls = append(append([]*ams.ToolCallRecord(nil), req.Calls...), book.all...)
	}
	return finish(req, reply, usage)
}

// finish cuts the reply to max_output_tokens words, counts its usage,
// and streams it.
func finish(req *ams.EngineRequest, reply *ams.Reply, usage ams.Usage) (*ams.Reply, error) {
	reply.StopReason = ams.StopEndTurn
	if o := req.Options; o != nil && o.MaxOutputTokens > 0 {
		if cut, ok := cutWords(reply.Content, o.MaxOutputTokens); ok {
			reply.Content, reply.StopReason = cut, ams.StopMaxOutputTokens
		}
	}
	reply.Usage = usage.Add(ams.Usage{OutputTokens: countWords(reply.Content)})
	if req.Stream != nil {
		for _, piece := range words(reply.Content) {
			if err := req.Stream(piece); err != nil {
				return nil, err
			}
		}
	}
	return reply, nil
}

// words cuts s into pieces, as a model streams them: each word with the
// white space that follows it (the first piece also takes any leading
// space). The pieces put together are s.
func words(s string) []string {
	var out []string
	start, i := 0, 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	for i < len(s) {
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		out = append(out, s[start:i])
		start = i
	}
	if start < len(s) || len(out) == 0 && s != "" {
		out = append(out, s[start:])
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// turn is what the intents see of one message to answer.
type turn struct {
	assistant *ams.Assistant
	earlier   []*ams.Message // the conversation before the message
	all       []*ams.Message // earlier and the message
	text      string         // the message, whitespace collapsed
	norm      string         // the message normalized for matching
	now       func() time.Time

	ctx     context.Context
	tools   ams.Toolbox // nil: the engine may not act
	clock   localClock  // now, in the account's time zone
	actions []*ams.Action
	err     error // a tool that could not run at all
}

// assistantName returns the name the assistant introduces itself with.
func (t *turn) assistantName() string {
	if n := strings.TrimSpace(t.assistant.Name); n != "" {
		return n
	}
	return "your assistant"
}

// earlierInbound returns the text of the inbound messages before this one,
// oldest first.
func (t *turn) earlierInbound() []string {
	var texts []string
	for _, m := range t.earlier {
		if m != nil && m.Direction == ams.DirectionInbound {
			texts = append(texts, clean(m.Content))
		}
	}
	return texts
}

// userName returns the name the user last gave, from this message or an
// earlier one, or "".
func (t *turn) userName() string {
	if n := extractName(t.text); n != "" {
		return n
	}
	in := t.earlierInbound()
	for i := len(in) - 1; i >= 0; i-- {
		if n := extractName(in[i]); n != "" {
			return n
		}
	}
	return ""
}

// notes returns the notes the user asked to remember before this message,
// oldest first.
func (t *turn) notes() []string {
	var notes []string
	for _, text := range t.earlierInbound() {
		if n := extractNote(text); n != "" {
			notes = append(notes, n)
		}
	}
	return notes
}

// clean trims s, collapses its runs of white space and straightens curly
// apostrophes and quotes.
func clean(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("\u2019", "'", "\u2018", "'", "\u201c", `"`, "\u201d", `"`).Replace(s)
}

// normalize returns s lower-cased with apostrophes removed ("what's" is
// "whats", "I'm" is "im") and every other run of punctuation or space
// turned into one space, so that patterns need not care about either.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true
	for _, r := range s {
		switch {
		case r == '\'' || r == '`' || r == '\u2019' || r == '\u2018':
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
			space = false
		case !space:
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}

// excerpt returns s cut to at most max runes, with an ellipsis if cut. It
// cuts at a word boundary when one is near the end.
func excerpt(s string, max int) string {
	s = clean(s)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)[:max] // keep one more rune to see whether a word ends there
	cut := max - 1
	for i := max - 1; i > max*3/4; i-- {
		if unicode.IsSpace(r[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(r[:cut]), " ,.;:") + "…"
}

// plural returns "1 message" or "n messages".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

package builtin

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/amsdev/ams"
)

// intent is one kind of message the engine understands. pattern is matched
// against the normalized message (lower case, no punctuation, apostrophes
// dropped: "what's" reads "whats"); reply answers it, or returns false to
// let the next intent try (when the words match but the message turns out
// to be something else, like "I'm fine" for an introduction).
type intent struct {
	name    string
	pattern *regexp.Regexp
	reply   func(t *turn) (string, bool)
}

// intents are tried in order; the first that matches and accepts answers.
// More specific questions come before the broader patterns that would
// also match them ("what did I ask you to remember" before "what did I
// ask"), and greetings come last, so that "hi, what time is it?" is
// answered as a question.
var intents = []intent{
	{"name question", re(`\bwhats my name\b|\bwhat is my name\b|\bwho am i\b|\b(?:know|remember|recall) my name\b|\bwhat my name is\b|\bwhat (?:do|did) you call me\b`), replyNameQuestion},
	{"recall notes", re(`\bwhat\b.*\b(?:remember|noted|notes)\b|\b(?:list|show|read)\b.*\bnotes\b|\bwhat do you know about me\b`), replyRecall},
	{"last message", re(`\bwhat (?:did|was it) i (?:just )?(?:say|said|ask|asked|write|wrote|type|typed|send|sent|tell you)\b|\bwhat was my (?:last|previous) (?:message|question)\b|\bwhat i (?:just )?(?:said|asked|wrote)\b|\brepeat (?:what i said|my (?:last )?message)\b`), replyLastMessage},
	{"message count", re(`\bhow many (?:messages|msgs)\b|\bmessage count\b|\bcount (?:the|our) messages\b`), replyCount},
	{"remember", re(`^(?:(?:please|pls|ok|okay|hey) )?(?:(?:can|could|would|will) you )?(?:please )?(?:remember|dont forget|make a note|take a note|note)\b`), replyRemember},
	{"introduction", re(`\b(?:my name is|my names|names|call me|i am|im)\b`), replyIntroduction},
	{"identity", re(`\bwho are you\b|\bwhat are you\s*$|\bwhats your name\b|\bwhat is your name\b|\byour name\b|\bintroduce yourself\b|\btell me about yourself\b`), replyIdentity},
	{"date and time", re(`\bwhat time\b|\btime is it\b|\b(?:whats|what is) (?:the )?(?:time|date|day)\b|\bwhat day is\b|\bwhat date is\b|\btodays date\b|\bcurrent (?:time|date)\b|\b(?:whats|what is) today\b`), replyTime},
	{"help", re(`^help\b|\bhelp me\b|\bwhat (?:else )?can you do\b|\bwhat do you do\b|\bhow do i\b|\bhow can i\b|\bhow does (?:this|it) work\b|\bwhat can i (?:ask|say|do)\b|\bcapabilities\b|\bcommands\b|\bwhat are you able to\b|\bcan you help\b`), replyHelp},
	// The assistant's world (world.go), more specific first.
	{"reminder", re(`\bremind me\b|\bset (?:me )?(?:a |an )?reminder\b`), replyReminder},
	{"list tasks", re(`\b(?:what are|whats|what is|what s|show|list|see|display|read|give|tell)\b(?: me)?(?: all)? (?:on )?(?:my |the )?(?:open |current |remaining |pending |outstanding )?(?:tasks|todos|to dos|todo list|to do list|task list|list)\b|\bwhat (?:tasks|todos)\b|\bwhat (?:do i have|is left|s left|remains|else do i have) to do\b|\b(?:do i have|have i got|are there) (?:any )?(?:open )?(?:tasks|todos|to dos)\b|^(?:my |open )+(?:tasks|todos)$`), replyListTasks},
	{"complete task", re(`\b(?:done|finished|through) with\b|\bmark\b.+\b(?:done|complete|completed|finished)\b|^(?:ok |okay |so |yes )?(?:ive|i have|i|im|i am)(?: just| already| finally)? (?:finished|completed|did|done) \w|^(?:please )?(?:can you |could you )?(?:please )?(?:complete|finish|check off|tick off|cross off) \w`), replyCompleteTask},
	{"rename task", re(`\brename\b.+\b(?:to|as|into)\b`), replyRenameTask},
	{"task due date", re(`\b(?:due date|deadline)\b.*\bto\b|\b(?:move|reschedule|push|postpone|shift|change)\b.*\b(?:task|todo|to do)\b.*\b(?:to|till|until)\b`), replyTaskDue},
	{"add task", re(`\b(?:add|create|make|new|put|set up)\b.*\b(?:task|tasks|todo|to do|todos|to dos|list)\b|^(?:new )?(?:task|todo|to do)\b`), replyAddTask},
	{"list calendar", re(`\b(?:whats|what is|what s|what do i have|what have i got|anything|show|list|see|display|read|check|hows|how is|how does)\b.*\b(?:calendar|agenda|schedule|events|meetings|appointments|diary)\b|\bwhat (?:do i have|have i got|is happening|s happening|am i doing)\b|\bwhats (?:happening|planned)\b|\bdo i have (?:any(?:thing)? )?(?:events|meetings|appointments|plans|anything)\b|\bam i (?:free|busy)\b`), replyListEvents},
	{"move event", re(`\b(?:move|reschedule|push|postpone|shift)\b.+\b(?:to|till|until)\b`), replyMoveEvent},
	{"schedule", re(`^(?:please |hey |ok |okay )*(?:(?:can|could|would|will) you )?(?:please )?(?:schedule|book|plan|arrange|set up)\b|\b(?:put|add|schedule)\b.*\b(?:on|in|to|into) (?:my |the )?(?:calendar|agenda|schedule|diary)\b|\b(?:create|add|make|new|book|schedule)\b (?:me )?(?:an? |the )?(?:new )?(?:calendar )?(?:event|meeting|appointment)\b`), replySchedule},
	{"need to", re(`\bi (?:need|have|must|ve got|got|should|gotta) (?:to )?\w|\bive got to\b|\bi have to\b`), replyNeedTo},
	{"tasks and calendar", re(`^(?:please )?(?:cancel|delete|remove)\b|\bremind me\b|\b(?:create|add|make|set|schedule|book|put|new|complete|finish|list|show|cancel|delete|remove)\b.*\b(?:task|tasks|todo|todos|reminder|reminders|event|events|meeting|meetings|appointment|calendar)\b`), replyTasks},
	{"how are you", re(`\bhow are you\b|\bhows it going\b|\bhow is it going\b|\bhow are things\b|\bhow you doing\b`), replyHowAreYou},
	{"goodbye", re(`\b(?:bye|goodbye|good bye|see you|see ya|cya|farewell|good night|goodnight|ttyl|talk to you later|take care)\b`), replyGoodbye},
	{"thanks", re(`\b(?:thanks|thank you|thank u|thankyou|thx|ty|cheers|much appreciated|appreciate it)\b`), replyThanks},
	{"greeting", greetingPattern, replyGreeting},
}

func re(pattern string) *regexp.Regexp { return regexp.MustCompile(pattern) }

var greetingPattern = re(`^(?:hi|hello|hey|hiya|heya|howdy|hallo|greetings|yo|good (morning|afternoon|evening|day)|(morning|evening))\b`)

// answer returns the reply to t: the first intent's that accepts it, or
// the fallback.
func answer(t *turn) string {
	for _, in := range intents {
		if !in.pattern.MatchString(t.norm) {
			continue
		}
		if s, ok := in.reply(t); ok {
			return s
		}
	}
	return replyFallback(t)
}

// helpHint ends replies that point the user to the list of what the
// engine can do.
const helpHint = `Say "help" to see what I can do.`

func replyNameQuestion(t *turn) (string, bool) {
	if name := t.userName(); name != "" {
		return fmt.Sprintf("Your name is %s. You told me earlier in this conversation.", name), true
	}
	return `I don't know your name yet. Tell me with "My name is …" and I'll remember it for the rest of this conversation.`, true
}

func replyRecall(t *turn) (string, bool) {
	notes := t.notes()
	name := t.userName()
	var b strings.Builder
	switch {
	case len(notes) == 0 && name == "":
		return `You haven't asked me to remember anything in this conversation yet. Say "remember that …" and I'll keep it in mind.`, true
	case len(notes) == 0:
		fmt.Fprintf(&b, "You haven't asked me to remember any notes yet, but I know your name is %s.", name)
		return b.String(), true
	}
	fmt.Fprintf(&b, "Here's what you asked me to remember (%s):", plural(len(notes), "note"))
	for i, n := range notes {
		fmt.Fprintf(&b, "\n%d. %s", i+1, n)
	}
	if name != "" {
		fmt.Fprintf(&b, "\nAnd your name is %s.", name)
	}
	return b.String(), true
}

func replyLastMessage(t *turn) (string, bool) {
	in := t.earlierInbound()
	if len(in) == 0 {
		return "This is your first message in this conversation, so there's nothing earlier to repeat.", true
	}
	return "Your previous message was: " + quote(excerpt(in[len(in)-1], 200)), true
}

func replyCount(t *turn) (string, bool) {
	var in, out int
	for _, m := range t.all {
		switch {
		case m == nil:
		case m.Direction == ams.DirectionInbound:
			in++
		default:
			out++
		}
	}
	return fmt.Sprintf("This conversation has %s so far, counting this one: %d from you and %d from me.",
		plural(in+out, "message"), in, out), true
}

func replyRemember(t *turn) (string, bool) {
	note := extractNote(t.text)
	if note == "" {
		return "", false
	}
	n := len(t.notes()) + 1
	return fmt.Sprintf(`Got it, I'll remember that: %s (%s in this conversation). Ask me "what do you remember?" any time.`,
		quote(note), plural(n, "note")), true
}

func replyIntroduction(t *turn) (string, bool) {
	name := extractName(t.text)
	if name == "" {
		return "", false
	}
	previous := ""
	in := t.earlierInbound()
	for i := len(in) - 1; i >= 0 && previous == ""; i-- {
		previous = extractName(in[i])
	}
	switch previous {
	case "":
		return fmt.Sprintf("Nice to meet you, %s! I'm %s. I'll remember your name for the rest of this conversation.",
			name, t.assistantName()), true
	case name:
		return fmt.Sprintf("I know, %s: you told me already. How can I help?", name), true
	}
	return fmt.Sprintf("Got it: I'll call you %s from now on, not %s.", name, previous), true
}

func replyIdentity(t *turn) (string, bool) {
	desc := strings.TrimSpace(t.assistant.Description)
	if desc == "" {
		return fmt.Sprintf("I'm %s, an assistant running on the ams built-in engine. %s", t.assistantName(), helpHint), true
	}
	if r, _ := utf8.DecodeLastRuneInString(desc); !strings.ContainsRune(".!?", r) {
		desc += "."
	}
	return fmt.Sprintf("I'm %s. %s %s", t.assistantName(), desc, helpHint), true
}

func replyTime(t *turn) (string, bool) {
	return fmt.Sprintf("It's %s.", t.now().UTC().Format("Monday, 02 Jan 2006 15:04 MST")), true
}

func replyHelp(t *turn) (string, bool) {
	id := t.assistant.ID
	if id == "" {
		id = "{id}"
	}
	return fmt.Sprintf(`I'm %s. Here's what I can do for you right now:
- chat with you and keep the context of this conversation;
- remember what you tell me, like your name ("My name is Sam") or a note ("Remember that the meeting moved to 3pm"), and recall it later in this conversation;
- tell you what you said before, how many messages we've exchanged, and the current date and time (UTC);
- where I have access to your tasks and calendar: reminders ("remind me to call Anna tomorrow at 9"), tasks ("add a task: renew passport by Friday", "what are my tasks?", "done with the passport task") and events ("schedule lunch with Sam on Tuesday 12:30 for an hour", "what's on my calendar tomorrow?", "move lunch with Sam to Wednesday").
Your program can also act directly through the API's actions: POST /v1/assistants/%s/actions with a type such as create_task or create_calendar_event.
Try: "What's my name?", "What do you remember?", "What did I just say?" or "What time is it?"`, t.assistantName(), id), true
}

// replyTasks answers what sounds like tasks or the calendar but no world
// intent understood.
func replyTasks(t *turn) (string, bool) {
	if t.tools == nil {
		return replyNoTools(t), true
	}
	if deleteRe.MatchString(t.norm) {
		return `I can't delete tasks or calendar events yet. I can mark a task as done ("done with the passport task") or move an event ("move lunch with Sam to Wednesday").`, true
	}
	return worldHint, true
}

var deleteRe = re(`\b(?:cancel|delete|remove)\b`)

// worldHint lists what the engine does with tasks and the calendar.
const worldHint = `I didn't quite get that. With tasks and your calendar I understand, for example:
- "remind me to call Anna tomorrow at 9"
- "add a task: renew passport by Friday"
- "what are my tasks?" and "done with the passport task"
- "schedule lunch with Sam on Tuesday 12:30 for an hour"
- "what's on my calendar tomorrow?" and "move lunch with Sam to Wednesday"`

func replyHowAreYou(t *turn) (string, bool) {
	return "I'm doing well, thanks for asking! How can I help you today?", true
}

func replyGoodbye(t *turn) (string, bool) {
	if name := t.userName(); name != "" {
		return fmt.Sprintf("Goodbye, %s! Talk to you soon.", name), true
	}
	return "Goodbye! Talk to you soon.", true
}

func replyThanks(t *turn) (string, bool) {
	return "You're welcome! Anything else I can help with?", true
}

func replyGreeting(t *turn) (string, bool) {
	// A long message that merely starts with "hi" is not a greeting: let
	// the fallback answer what it says.
	if len(strings.Fields(t.norm)) > 5 {
		return "", false
	}
	return fmt.Sprintf("%s I'm %s. How can I help you today? %s", salutation(t), t.assistantName(), helpHint), true
}

// salutation greets the user the way they greeted ("Good morning") or
// with "Hello", by name when known.
func salutation(t *turn) string {
	s := "Hello"
	if m := greetingPattern.FindStringSubmatch(t.norm); m != nil && m[1]+m[2] != "" {
		s = "Good " + m[1] + m[2]
	}
	if name := t.userName(); name != "" {
		return s + ", " + name + "!"
	}
	return s + "!"
}

func replyFallback(t *turn) string {
	if t.text == "" {
		return "Your message was empty. " + helpHint
	}
	var b strings.Builder
	if greetingPattern.MatchString(t.norm) {
		b.WriteString(salutation(t) + " ")
	}
	fmt.Fprintf(&b, `You said: %s. I'm %s, running on the ams built-in engine, which handles simple requests: greetings, remembering your name and notes, recalling what you said earlier, the date and time, and tasks, reminders and your calendar. %s`,
		quote(excerpt(t.text, 60)), t.assistantName(), helpHint)
	return b.String()
}

// nameRe finds an introduction: the keyword, then one name, then
// optionally a second capitalized one ("Mary Jane").
var nameRe = regexp.MustCompile(`(?i:\b(my\s+name\s+is|my\s+name's|name's|call\s+me|i\s+am|i'm|im))[\s,:]+(\p{L}[\p{L}'-]*)(?:\s+(\p{Lu}[\p{L}'-]*))?`)

// notName lists words that follow "I'm" or "call me" without being a name.
var notName = set(`a an the not no so very really just here there back fine good great ok okay well
	sorry sure glad happy sad tired busy done ready going trying looking doing new still also from in
	at on with to and or but later tomorrow today tonight now when if please feeling interested curious
	hungry bored confused lost working thinking wondering afraid excited asking what who why how where
	which your you me my it this that nobody somebody someone anyone`)

func set(words string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// extractName returns the name a user gives in text ("My name is Sam",
// "I'm Sam", "call me Sam"), capitalized, or "". After "I am" and "I'm"
// only a capitalized word counts, so that "I'm tired" is no introduction.
func extractName(text string) string {
	for _, m := range nameRe.FindAllStringSubmatch(text, -1) {
		keyword := strings.ToLower(strings.Join(strings.Fields(m[1]), " "))
		first := strings.Trim(m[2], "'-")
		if first == "" || notName[strings.ToLower(first)] {
			continue
		}
		if keyword == "i am" || keyword == "i'm" || keyword == "im" {
			if r, _ := utf8.DecodeRuneInString(first); !unicode.IsUpper(r) {
				continue
			}
		}
		name := capitalize(first)
		if second := strings.Trim(m[3], "'-"); second != "" && !notName[strings.ToLower(second)] {
			name += " " + second
		}
		return name
	}
	return ""
}

// quote returns s in double quotes, as typed (no escaping).
func quote(s string) string { return `"` + s + `"` }

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// noteRe finds a request to remember something and what it is.
var noteRe = regexp.MustCompile(`^(?i:(?:(?:please|pls|ok|okay|hey)[\s,]+)?(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:remember|don'?t\s+forget|make\s+a\s+note|take\s+a\s+note|note\s+down|note)(?:\s+(?:that|this|of|to\s+self))?)\b\s*[:,\-–—]?\s*(.+)$`)

// questionWords start what follows "remember" when it is a question
// ("remember what I said?"), not a note.
var questionWords = set(`what who when where why how which whether if me`)

// extractNote returns what text asks the engine to remember ("Remember
// that X", "Note: X"), or "".
func extractNote(text string) string {
	m := noteRe.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	note := strings.TrimRight(strings.TrimSpace(m[1]), ".! ")
	if note == "" || strings.HasSuffix(note, "?") {
		return ""
	}
	if first := strings.Fields(normalize(note)); len(first) == 0 || questionWords[first[0]] {
		return ""
	}
	return note
}

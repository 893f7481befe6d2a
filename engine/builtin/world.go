package builtin

// The assistant's world in plain language: tasks, reminders and calendar
// events, acted on through the request's Toolbox (see ams.Toolbox and the
// tools' inputs in package world). Every intent here reads the message,
// and asks instead of acting when something it needs (a title, a time) is
// missing or cannot be read, so that no half-made record is written. Each
// tool run's action goes into the reply; a failed one is explained with its
// error message.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

// Default times of day for a day named without one.
const (
	remindHour, remindMinute = 9, 0   // "remind me on Friday": 09:00
	dueHour, dueMinute       = 23, 59 // "by Friday": the end of Friday
)

// Windows the engine lists records in.
const (
	eventSearchDays = 60  // events that "move lunch" may mean: today on
	listLimit       = 100 // records read to find one by its title
	defaultEvent    = time.Hour
)

// ---- Running tools.

// run runs a tool with input and keeps its action for the reply. It
// returns nil (and sets t.err) when the toolbox could not run it at all.
func (t *turn) run(name string, input map[string]any) *ams.Action {
	b, err := json.Marshal(input)
	if err != nil {
		t.err = fmt.Errorf("builtin: encode %s input: %w", name, err)
		return nil
	}
	a, err := t.tools.Run(t.ctx, name, b)
	if err != nil {
		t.err = fmt.Errorf("builtin: run %s: %w", name, err)
		return nil
	}
	if a == nil {
		t.err = fmt.Errorf("builtin: run %s: no action", name)
		return nil
	}
	t.actions = append(t.actions, a)
	return a
}

// failed tells whether a did not succeed, and if so what to say: "I
// couldn't <doing>: <why>."
func failed(a *ams.Action, doing string) (string, bool) {
	if a.Status == ams.ActionSucceeded {
		return "", false
	}
	why := "the tool failed without saying why"
	if a.Error != nil && strings.TrimSpace(a.Error.Message) != "" {
		why = strings.TrimRight(strings.TrimSpace(a.Error.Message), ".")
		why = strings.ToLower(why[:1]) + why[1:]
	}
	return fmt.Sprintf("I couldn't %s: %s.", doing, why), true
}

// list is the result of a list tool.
type list[T any] struct {
	Data    []T  `json:"data"`
	HasMore bool `json:"has_more"`
}

// decode reads an action's result into v; a result that does not decode
// leaves v as it was.
func decode(a *ams.Action, v any) {
	if len(a.Result) > 0 {
		_ = json.Unmarshal(a.Result, v)
	}
}

func utc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// replyNoTools answers a request to act when the engine has no tools.
func replyNoTools(t *turn) string {
	id := t.assistant.ID
	if id == "" {
		id = "{id}"
	}
	return fmt.Sprintf(`I can't create tasks, reminders or calendar events here: this conversation has no access to them. Your program can, through the API's actions: POST /v1/assistants/%s/actions with {"type": "create_task", "input": {...}} (or complete_task, create_calendar_event); a due remind_at sends a reminder event to your webhooks. If you only want me to keep something in mind, say "remember that …".`, id)
}

// ---- Wording.

// dayName is "today", "tomorrow", "Fri 27 Nov", or with the year when it
// is not this year's.
func (c localClock) dayName(t time.Time) string {
	t = t.In(c.loc)
	today := c.today()
	switch d := startOfDay(t); {
	case d.Equal(today):
		return "today"
	case d.Equal(today.AddDate(0, 0, 1)):
		return "tomorrow"
	case t.Year() != c.now.Year():
		return t.Format("Mon 2 Jan 2006")
	}
	return t.Format("Mon 2 Jan")
}

// dated is "today", "tomorrow" or "Fri 27 Nov", and for the last two the
// date too: "tomorrow (Sun 22 Nov)".
func (c localClock) dated(t time.Time) string {
	n := c.dayName(t)
	if n == "today" || n == "tomorrow" {
		layout := "Mon 2 Jan"
		if t.In(c.loc).Year() != c.now.Year() {
			layout += " 2006"
		}
		return n + " (" + t.In(c.loc).Format(layout) + ")"
	}
	return "on " + n
}

// onDay is "today", "tomorrow" or "on Fri 27 Nov".
func (c localClock) onDay(t time.Time) string {
	n := c.dayName(t)
	if n == "today" || n == "tomorrow" {
		return n
	}
	return "on " + n
}

// at is "tomorrow at 09:00" or "on Fri 27 Nov at 09:00".
func (c localClock) at(t time.Time) string {
	return c.onDay(t) + " at " + t.In(c.loc).Format("15:04")
}

// stamp is "today at 09:00" or "Fri 27 Nov at 09:00".
func (c localClock) stamp(t time.Time) string {
	return c.dayName(t) + " at " + t.In(c.loc).Format("15:04")
}

// due is when a task is due: the day alone for the end of a day.
func (c localClock) due(t time.Time) string {
	lt := t.In(c.loc)
	if lt.Hour() == dueHour && lt.Minute() == dueMinute {
		return c.dayName(t)
	}
	return c.dayName(t) + " at " + lt.Format("15:04")
}

// span is an event's times: "12:30–13:30", or "22:00–Sun 22 Nov 02:00".
func (c localClock) span(start, end time.Time) string {
	s, e := start.In(c.loc), end.In(c.loc)
	if startOfDay(s).Equal(startOfDay(e)) {
		return s.Format("15:04") + "–" + e.Format("15:04")
	}
	return s.Format("15:04") + "–" + c.dayName(e) + " " + e.Format("15:04")
}

// second person turns the user's words into the assistant's: "call my
// mom" is "call your mom".
var secondPerson = strings.NewReplacer(" my ", " your ", " me ", " you ", " myself ", " yourself ", " I ", " you ", " I'm ", " you're ")

func yours(s string) string {
	return strings.TrimSpace(secondPerson.Replace(" " + s + " "))
}

// titleCase capitalizes the first letter of a title and drops the
// punctuation that ended the sentence.
func titleCase(s string) string {
	s = strings.Trim(strings.TrimSpace(s), ` .!?,;:"'`)
	if s == "" {
		return ""
	}
	return capitalize(s)
}

// quoteList is `"A", "B" or "C"`.
func quoteList(titles []string) string {
	q := make([]string, len(titles))
	for i, s := range titles {
		q[i] = quote(s)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// ---- Finding a record by the words of its title.

// matchStop are words that do not tell one task or event from another.
var matchStop = set(`the a an my our your task tasks todo todos to do item one that this it with as done
	complete completed finished off for of on and event meeting appointment calendar thing`)

// keywords returns the words of s that can match a title.
func keywords(s string) []string {
	var kw []string
	for _, w := range strings.Fields(normalize(s)) {
		if !matchStop[w] {
			kw = append(kw, w)
		}
	}
	return kw
}

// sameWord tells whether a and b are the same word, ignoring a plural "s"
// and allowing a prefix of four letters or more ("pass" is "passport" no,
// "passports" is "passport" yes).
func sameWord(a, b string) bool {
	if a == b || strings.TrimSuffix(a, "s") == strings.TrimSuffix(b, "s") {
		return true
	}
	return len(a) >= 5 && len(b) >= 5 && (strings.HasPrefix(a, b) || strings.HasPrefix(b, a))
}

// bestMatches returns the titles' indexes that share the most words with
// query (several on a tie; none when no word matches). A title equal to
// the query wins outright.
func bestMatches(query string, titles []string) []int {
	kw := keywords(query)
	if len(kw) == 0 {
		return nil
	}
	best, out := 0, []int(nil)
	for i, title := range titles {
		words := strings.Fields(normalize(title))
		score := 0
		for _, k := range kw {
			for _, w := range words {
				if sameWord(k, w) {
					score++
					break
				}
			}
		}
		if strings.Join(keywords(title), " ") == strings.Join(kw, " ") {
			score += 1000
		}
		switch {
		case score == 0:
		case score > best:
			best, out = score, []int{i}
		case score == best:
			out = append(out, i)
		}
	}
	return out
}

// findOpenTask lists the open tasks and picks the one query names. It
// returns the task, or what to say instead.
func (t *turn) findOpenTask(query string) (*ams.Task, string) {
	a := t.run("list_tasks", map[string]any{"status": ams.TaskOpen, "limit": listLimit})
	if a == nil {
		return nil, ""
	}
	if s, ok := failed(a, "read your tasks"); ok {
		return nil, s
	}
	var l list[*ams.Task]
	decode(a, &l)
	titles := make([]string, len(l.Data))
	for i, task := range l.Data {
		titles[i] = task.Title
	}
	q := strings.Join(keywords(query), " ")
	switch m := bestMatches(query, titles); {
	case len(m) == 1:
		return l.Data[m[0]], ""
	case len(m) > 1:
		var names []string
		for _, i := range m {
			names = append(names, titles[i])
		}
		return nil, fmt.Sprintf("Several open tasks match %s: %s. Which one do you mean? Say it with more of its title.", quote(q), quoteList(names))
	case len(titles) == 0:
		return nil, "You have no open tasks."
	case len(titles) <= 5:
		return nil, fmt.Sprintf("I couldn't find an open task matching %s. Your open tasks are %s.", quote(q), quoteList(titles))
	}
	return nil, fmt.Sprintf(`I couldn't find an open task matching %s. Say "what are my tasks?" to see them.`, quote(q))
}

// ---- Reminders.

var reminderRe = regexp.MustCompile(`(?i)\b(?:remind\s+me|set\s+(?:me\s+)?(?:a|an)\s+reminder)\b[\s,:]*(?:(to|about|that|of|for)\b)?\s*(.*)$`)

// leadingTo is what is left before a title once its date is out: "remind
// me tomorrow at 9 to call Anna".
var leadingTo = regexp.MustCompile(`(?i)^(to|about|that|of)\s+`)

// questionStart marks "remind me what I said": a question, not a reminder.
var questionStart = regexp.MustCompile(`(?i)^(?:what|who|where|why|how|which|whether)\b`)

func replyReminder(t *turn) (string, bool) {
	m := reminderRe.FindStringSubmatch(t.text)
	if m == nil || questionStart.MatchString(m[2]) {
		return "", false
	}
	if t.tools == nil {
		return replyNoTools(t), true
	}
	if repeatRe.MatchString(m[2]) {
		return `I can't set repeating reminders yet, only one at a time: "remind me to water the plants on Monday at 9".`, true
	}
	body := strings.TrimRight(m[2], ".!? ")
	when, bad, what := t.clock.read(body)
	// "remind me about X" is said back as "about X", "remind me to X" and
	// "remind me tomorrow to X" as "to X".
	link := strings.ToLower(m[1])
	if l := leadingTo.FindStringSubmatch(what); l != nil {
		link = strings.ToLower(l[1])
		what = what[len(l[0]):]
	}
	switch link {
	case "", "that", "for":
		link = "to"
	case "of":
		link = "about"
	}
	title := titleCase(what)
	what = link + " " + what
	switch {
	case title == "":
		return `What should I remind you about? For example: "remind me to call Anna tomorrow at 9".`, true
	case bad != "":
		return fmt.Sprintf(`I couldn't read %s as a time. When should I remind you %s? For example "tomorrow at 9" or "on Friday at 14:30".`, quote(bad), yours(what)), true
	case when == nil:
		return fmt.Sprintf(`When should I remind you %s? Tell me a day and time, like "remind me %s tomorrow at 9".`, yours(what), what), true
	}
	at := when.withDefaultClock(remindHour, remindMinute)
	if at.Before(t.clock.now.Truncate(time.Minute)) {
		return fmt.Sprintf("%s has already passed. When should I remind you %s?", capitalize(t.clock.stamp(at)), yours(what)), true
	}
	a := t.run("create_task", map[string]any{"title": title, "due_at": utc(at), "remind_at": utc(at)})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, "set the reminder"); ok {
		return s, true
	}
	var task ams.Task
	decode(a, &task)
	if task.RemindAt != nil {
		at = *task.RemindAt
	}
	return fmt.Sprintf("I'll remind you %s %s.", yours(what), t.clock.at(at)), true
}

// ---- Tasks.

// addTaskRes find the task in "add a task: X", "todo: X", "add X to my
// list": the title with its due date, and in the third form the words
// after the list.
var addTaskRes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(?:add|create|make|new|put|set\s+up)\s+(?:me\s+)?(?:a\s+|an\s+|the\s+|another\s+)?(?:new\s+)?(?:task|to-?do|to\s+do)(?:\s+item)?\s*(?:[:\-–—]|\bto\b|\bcalled\b|\bnamed\b|\bsaying\b|\bfor\b)?\s*(.*)$`),
	regexp.MustCompile(`(?i)^(?:new\s+)?(?:task|to-?do)\s*[:\-–—]\s*(.*)$`),
	regexp.MustCompile(`(?i)\b(?:add|put)\s+(.+?)\s+(?:to|on)\s+(?:my\s+|the\s+)?(?:task\s+list|tasks|to-?do\s+list|to\s+do\s+list|to-?dos|list)\b[\s,:]*(.*)$`),
}

// needToRe finds "I need to X by <when>".
var needToRe = regexp.MustCompile(`(?i)\bI(?:'ve|\s+have)?\s+(?:need|have|must|got|should|gotta)\s+(?:to\s+)?(.+)$`)

func replyAddTask(t *turn) (string, bool) {
	var body string
	for _, re := range addTaskRes {
		if m := re.FindStringSubmatch(t.text); m != nil {
			body = m[1]
			if len(m) > 2 {
				body += " " + m[2]
			}
			break
		}
	}
	if body == "" && !addTaskRes[0].MatchString(t.text) {
		return "", false
	}
	if t.tools == nil {
		return replyNoTools(t), true
	}
	return t.addTask(body)
}

func replyNeedTo(t *turn) (string, bool) {
	m := needToRe.FindStringSubmatch(t.text)
	if m == nil {
		return "", false
	}
	// Only with a date: "I need to think" is no task.
	if when, bad := t.clock.find(m[1]); when == nil && bad == "" {
		return "", false
	}
	if t.tools == nil {
		return replyNoTools(t), true
	}
	return t.addTask(m[1])
}

// addTask creates the task body describes: its title and due date.
func (t *turn) addTask(body string) (string, bool) {
	body = strings.TrimRight(strings.TrimSpace(body), ".!?")
	when, bad, what := t.clock.read(body)
	what = strings.TrimSpace(leadingTo.ReplaceAllString(what, ""))
	title := titleCase(what)
	switch {
	case title == "":
		return `What's the task? For example: "add a task: renew passport by Friday".`, true
	case bad != "":
		return fmt.Sprintf(`I couldn't read %s as a date or time, so I didn't add the task. When is %s due? For example "by Friday" or "tomorrow at 17:00".`, quote(bad), quote(title)), true
	}
	input := map[string]any{"title": title}
	var due time.Time
	if when != nil {
		due = when.withDefaultClock(dueHour, dueMinute)
		if due.Before(t.clock.now.Truncate(time.Minute)) {
			return fmt.Sprintf("%s has already passed, so I didn't add the task. When is %s due?", capitalize(t.clock.stamp(due)), quote(title)), true
		}
		input["due_at"] = utc(due)
	}
	a := t.run("create_task", input)
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, "add the task"); ok {
		return s, true
	}
	task := ams.Task{Title: title}
	if !due.IsZero() {
		task.DueAt = &due
	}
	decode(a, &task)
	if task.DueAt != nil {
		return fmt.Sprintf("Added a task: %s, due %s.", task.Title, t.clock.due(*task.DueAt)), true
	}
	return fmt.Sprintf("Added a task: %s.", task.Title), true
}

func replyListTasks(t *turn) (string, bool) {
	if t.tools == nil {
		return replyNoTools(t), true
	}
	a := t.run("list_tasks", map[string]any{"status": ams.TaskOpen})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, "read your tasks"); ok {
		return s, true
	}
	var l list[*ams.Task]
	decode(a, &l)
	if len(l.Data) == 0 {
		return `You have no open tasks. Add one with "add a task: …".`, true
	}
	var b strings.Builder
	if l.HasMore {
		fmt.Fprintf(&b, "Here are your first %s:", plural(len(l.Data), "open task"))
	} else {
		fmt.Fprintf(&b, "You have %s:", plural(len(l.Data), "open task"))
	}
	for i, task := range l.Data {
		fmt.Fprintf(&b, "\n%d. %s", i+1, task.Title)
		if task.DueAt != nil {
			fmt.Fprintf(&b, ", due %s", t.clock.due(*task.DueAt))
		}
		if task.RemindAt != nil && (task.DueAt == nil || !task.RemindAt.Equal(*task.DueAt)) {
			fmt.Fprintf(&b, " (reminder %s)", t.clock.at(*task.RemindAt))
		}
	}
	if l.HasMore {
		b.WriteString("\n…and more.")
	}
	return b.String(), true
}

// completeRes find the task in "done with X", "mark X as done", "I
// finished X", "complete X", in the normalized message.
var completeRes = []*regexp.Regexp{
	re(`^(?:ok |okay |so |yes )?(?:im |i m |i am |ive |i have |i )?(?:just |now |finally )?(?:done|finished|through) with (.+)$`),
	re(`\bmark (.+?) (?:as )?(?:done|complete|completed|finished)\b`),
	re(`^(?:ok |okay |so |yes )?(?:ive|i have|i|im|i am)(?: just| already| finally)? (?:finished|completed|did|done) (.+)$`),
	re(`^(?:please )?(?:can you |could you )?(?:please )?(?:complete|finish|check off|tick off|cross off) (.+)$`),
}

func replyCompleteTask(t *turn) (string, bool) {
	var query string
	for _, re := range completeRes {
		if m := re.FindStringSubmatch(t.norm); m != nil {
			query = m[1]
			break
		}
	}
	if query == "" {
		return "", false
	}
	if t.tools == nil {
		return replyNoTools(t), true
	}
	if len(keywords(query)) == 0 {
		return `Which task did you finish? Name it, like "done with the passport task".`, true
	}
	task, say := t.findOpenTask(query)
	if task == nil {
		return say, true
	}
	a := t.run("complete_task", map[string]any{"task_id": task.ID})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, fmt.Sprintf("mark %s as done", quote(task.Title))); ok {
		return s, true
	}
	done := *task
	decode(a, &done)
	return fmt.Sprintf("Done: %s is marked as completed.", quote(done.Title)), true
}

var renameRe = regexp.MustCompile(`(?i)\brename\s+(?:the\s+|my\s+)?(.+?)\s+(?:task\s+|to-?do\s+)?(?:to|as|into)\s+(.+?)[.!?]*$`)

func replyRenameTask(t *turn) (string, bool) {
	m := renameRe.FindStringSubmatch(t.text)
	if m == nil {
		return "", false
	}
	if t.tools == nil {
		return replyNoTools(t), true
	}
	title := titleCase(m[2])
	if title == "" || len(keywords(m[1])) == 0 {
		return `Which task should I rename, and to what? For example: "rename the passport task to Renew passport and visa".`, true
	}
	task, say := t.findOpenTask(m[1])
	if task == nil {
		return say, true
	}
	a := t.run("update_task", map[string]any{"task_id": task.ID, "title": title})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, fmt.Sprintf("rename %s", quote(task.Title))); ok {
		return s, true
	}
	renamed := ams.Task{Title: title}
	decode(a, &renamed)
	return fmt.Sprintf("Renamed %s to %s.", quote(task.Title), quote(renamed.Title)), true
}

// taskDueRes find the task and the new date in "change the due date of X
// to <when>" and "move the X task to <when>".
var taskDueRes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(?:change|move|set|update|push|postpone|shift)\s+(?:back\s+)?(?:the\s+)?(?:due\s+date|deadline)\s+(?:of|for|on)\s+(?:the\s+|my\s+)?(.+?)\s+to\s+(.+?)[.!?]*$`),
	regexp.MustCompile(`(?i)\b(?:move|push|postpone|shift|change|reschedule)\s+(?:back\s+)?(?:the\s+|my\s+)?(.+?\b(?:task|to-?do))\s+(?:to|till|until)\s+(.+?)[.!?]*$`),
}

func replyTaskDue(t *turn) (string, bool) {
	var m []string
	for _, re := range taskDueRes {
		if m = re.FindStringSubmatch(t.text); m != nil {
			break
		}
	}
	if m == nil {
		return "", false
	}
	if t.tools == nil {
		return replyNoTools(t), true
	}
	when, bad := t.clock.find(m[2])
	switch {
	case bad != "":
		return fmt.Sprintf(`I couldn't read %s as a date or time. When should it be due? For example "by Friday".`, quote(bad)), true
	case when == nil:
		return fmt.Sprintf(`I couldn't find a date in %s. When should it be due? For example "Friday" or "tomorrow at 17:00".`, quote(m[2])), true
	}
	due := when.withDefaultClock(dueHour, dueMinute)
	if due.Before(t.clock.now.Truncate(time.Minute)) {
		return fmt.Sprintf("%s has already passed. When should it be due?", capitalize(t.clock.due(due))), true
	}
	task, say := t.findOpenTask(m[1])
	if task == nil {
		return say, true
	}
	a := t.run("update_task", map[string]any{"task_id": task.ID, "due_at": utc(due)})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, fmt.Sprintf("change the due date of %s", quote(task.Title))); ok {
		return s, true
	}
	updated := *task
	updated.DueAt = &due
	decode(a, &updated)
	if updated.DueAt == nil {
		return fmt.Sprintf("%s has no due date now.", quote(updated.Title)), true
	}
	return fmt.Sprintf("%s is now due %s.", quote(updated.Title), t.clock.due(*updated.DueAt)), true
}

// ---- Calendar.

var (
	weekRe    = regexp.MustCompile(`(?i)\b(this|next)\s+week\b`)
	weekendRe = regexp.MustCompile(`(?i)\b(?:this\s+|next\s+|the\s+)?weekend\b`)
)

func replyListEvents(t *turn) (string, bool) {
	if t.tools == nil {
		return replyNoTools(t), true
	}
	c := t.clock
	today := c.today()
	monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
	var from, to time.Time
	var label string
	single := false
	switch wk := weekRe.FindStringSubmatch(t.text); {
	case wk != nil && strings.EqualFold(wk[1], "next"):
		from, to = monday.AddDate(0, 0, 7), monday.AddDate(0, 0, 14)
		label = "next week"
	case wk != nil:
		from, to = monday, monday.AddDate(0, 0, 7)
		label = "this week"
	case weekendRe.MatchString(t.text):
		from = monday.AddDate(0, 0, 5)
		if strings.Contains(strings.ToLower(t.text), "next weekend") || !from.AddDate(0, 0, 2).After(today) {
			from = from.AddDate(0, 0, 7)
		}
		to = from.AddDate(0, 0, 2)
		label = "this weekend"
		if !from.Equal(monday.AddDate(0, 0, 5)) {
			label = "next weekend"
		}
	default:
		when, bad := c.find(t.text)
		switch {
		case bad != "":
			return fmt.Sprintf(`I couldn't read %s as a day. Which day should I look at? For example "tomorrow" or "on Tuesday".`, quote(bad)), true
		case when == nil || !when.hasDate && !when.hasTime:
			from, to = today, today.AddDate(0, 0, 7)
			label = "in the next 7 days"
		default:
			from = startOfDay(when.at)
			to = from.AddDate(0, 0, 1)
			label = c.dated(from)
			single = true
		}
	}
	if !single && label != "in the next 7 days" {
		last := to.AddDate(0, 0, -1)
		layout := "Mon 2"
		if from.Month() != last.Month() {
			layout = "Mon 2 Jan"
		}
		label += " (" + from.Format(layout) + " – " + last.Format("Mon 2 Jan") + ")"
	}
	a := t.run("list_calendar_events", map[string]any{"starts_after": utc(from), "starts_before": utc(to), "limit": listLimit})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, "read your calendar"); ok {
		return s, true
	}
	var l list[*ams.CalendarEvent]
	decode(a, &l)
	if len(l.Data) == 0 {
		return fmt.Sprintf("Nothing on your calendar %s.", label), true
	}
	events := l.Data
	sort.SliceStable(events, func(i, j int) bool { return events[i].StartsAt.Before(events[j].StartsAt) })
	var b strings.Builder
	fmt.Fprintf(&b, "You have %s %s:", plural(len(events), "event"), label)
	for _, e := range events {
		b.WriteString("\n- ")
		if !single || !startOfDay(e.StartsAt.In(c.loc)).Equal(from) {
			b.WriteString(e.StartsAt.In(c.loc).Format("Mon 2 Jan") + " ")
		}
		fmt.Fprintf(&b, "%s %s", c.span(e.StartsAt, e.EndsAt), e.Title)
		if e.Location != "" {
			fmt.Fprintf(&b, ", at %s", e.Location)
		}
	}
	if l.HasMore {
		b.WriteString("\n…and more.")
	}
	return b.String(), true
}

var (
	scheduleVerb  = regexp.MustCompile(`(?i)^(?:.*?\b)?(?:schedule|book|plan|arrange|set\s+up|put|add|create|make)\s+(?:me\s+)?(?:(?:a|an|the|my)\s+)?(?:new\s+)?(?:(?:calendar\s+)?(?:event|entry|appointment)\s*(?:[:\-–—]|\bcalled\b|\bnamed\b|\bfor\b)\s*)?`)
	calendarWords = regexp.MustCompile(`(?i)\s*\b(?:on|in|to|into|onto)\s+(?:my\s+|the\s+)?(?:calendar|agenda|schedule)\b`)
	durationRe    = regexp.MustCompile(`(?i)\bfor\s+(an?|one|two|three|four|five|six|seven|eight|half\s+an?|\d+(?:[.,]\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|m)\b(?:\s+and\s+(?:a\s+)?(half|\d+\s*(?:minutes?|mins?|m)\b))?`)
	clockPart     = `(\d{1,2}(?::\d{2})?)\s*(a\.?m\.?|p\.?m\.?)?`
	rangeRe       = regexp.MustCompile(`(?i)\b(?:from\s+|between\s+)?` + clockPart + `\s*(?:-|–|to|until|till|and)\s*` + clockPart + `(?:\W|$)`)
	untilRe       = regexp.MustCompile(`(?i)\b(?:until|till)\s+` + clockPart + `(?:\W|$)`)
	atPlaceRe     = regexp.MustCompile(`(?i)\bat\s+`)
	repeatRe      = regexp.MustCompile(`(?i)\b(?:every|each|daily|weekly|monthly|yearly|fortnightly)\b`)
	timeWords     = set(`noon midnight night lunchtime`)
	notPlace      = set(`at on by in for from until till before due`)
)

var numberWords = map[string]float64{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}

// duration reads "for an hour", "for 30 minutes", "for 1.5 hours", "for
// an hour and a half".
func duration(m []string) time.Duration {
	n, ok := numberWords[strings.ToLower(m[1])]
	if !ok {
		if strings.HasPrefix(strings.ToLower(m[1]), "half") {
			n = 0.5
		} else {
			fmt.Sscanf(strings.ReplaceAll(m[1], ",", "."), "%g", &n)
		}
	}
	unit := time.Minute
	if u := strings.ToLower(m[2]); strings.HasPrefix(u, "h") {
		unit = time.Hour
	}
	d := time.Duration(n * float64(unit))
	if extra := strings.ToLower(m[3]); extra == "half" {
		d += unit / 2
	} else if extra != "" {
		var mins int
		fmt.Sscanf(extra, "%d", &mins)
		d += time.Duration(mins) * time.Minute
	}
	return d.Round(time.Minute)
}

// clockText turns "9" into "at 9" and keeps "9:30" and "9pm", so that
// find reads them as times.
func clockText(hm, ampm string) string {
	if strings.Contains(hm, ":") || ampm != "" {
		return hm + ampm
	}
	return "at " + hm
}

// event is what a message asks to put on the calendar.
type event struct {
	what     string // the title as typed
	location string
	when     *moment
	bad      string        // a time that could not be read
	dur      time.Duration // with hasDur; else the default, an hour
	hasDur   bool
	end      string    // the end's clock as typed ("14:00"), or ""
	endAt    time.Time // the end, when given by a clock time
}

// parseEvent reads a title, a start, an end or duration and a location
// from body.
func (t *turn) parseEvent(body string) *event {
	c := t.clock
	ev := &event{}
	body = isoDate.ReplaceAllString(body, "$3/$2/$1")
	body = dottedTime.ReplaceAllString(body, "$1:$2")
	body = calendarWords.ReplaceAllString(body, "")
	if m := durationRe.FindStringSubmatchIndex(body); m != nil {
		ev.dur, ev.hasDur = duration(submatches(body, m)), true
		body = body[:m[0]] + body[m[1]:]
	}
	endClock := ""
	if m := rangeRe.FindStringSubmatchIndex(body); m != nil {
		s := submatches(body, m)
		startAMPM, endAMPM := s[2], s[4]
		if startAMPM == "" && endAMPM != "" && hourOf(s[1]) <= hourOf(s[3]) {
			startAMPM = endAMPM
		}
		endClock = clockText(s[3], endAMPM)
		ev.end = s[3] + endAMPM
		start := clockText(s[1], startAMPM)
		if !strings.HasPrefix(start, "at ") {
			start = "at " + start // "on 3 December 14:00" would read as 14 December
		}
		before := body[:m[0]]
		if strings.HasSuffix(strings.ToLower(strings.TrimSpace(before)), " at") {
			before = strings.TrimSpace(before)
			before = before[:len(before)-2]
		}
		body = before + start + body[groupsEnd(m):]
	} else if m := untilRe.FindStringSubmatchIndex(body); m != nil {
		s := submatches(body, m)
		endClock = clockText(s[1], s[2])
		ev.end = s[1] + s[2]
		body = body[:m[0]] + body[groupsEnd(m):]
	}
	body = strings.TrimRight(strings.TrimSpace(body), ".!?")
	ev.when, ev.bad, ev.what = c.read(body)
	// The place is what follows "at" once the date and time are out:
	// "lunch at Cafe Luna on Tuesday at 12:30", "dinner tomorrow at 7pm at
	// the Cafe on Main Street".
	for _, loc := range atPlaceRe.FindAllStringIndex(ev.what, -1) {
		place := strings.Trim(ev.what[loc[1]:], ` .!?,;"'`)
		first := strings.ToLower(strings.Fields(place + " x")[0])
		if place == "" || place[0] >= '0' && place[0] <= '9' || timeWords[first] || notPlace[first] {
			continue
		}
		ev.location = place
		ev.what = strings.TrimSpace(ev.what[:loc[0]])
		break
	}
	if endClock != "" && ev.when != nil && ev.when.hasTime {
		em, bad := c.find(endClock)
		if em == nil || !em.hasTime || bad != "" {
			ev.bad = ev.end
		} else {
			s := ev.when.at
			ev.endAt = time.Date(s.Year(), s.Month(), s.Day(), em.at.Hour(), em.at.Minute(), 0, 0, c.loc)
		}
	}
	return ev
}

// groupsEnd returns where the last matched group of m ends: a match's
// trailing separator is left in the text.
func groupsEnd(m []int) int {
	end := m[0]
	for i := 2; i < len(m); i += 2 {
		if m[i] >= 0 && m[i+1] > end {
			end = m[i+1]
		}
	}
	return end
}

func hourOf(hm string) int {
	var h int
	fmt.Sscanf(hm, "%d", &h)
	return h
}

// submatches returns the texts of the submatch indexes m of s ("" for an
// unmatched group).
func submatches(s string, m []int) []string {
	out := make([]string, len(m)/2)
	for i := range out {
		if m[2*i] >= 0 {
			out[i] = s[m[2*i]:m[2*i+1]]
		}
	}
	return out
}

func replySchedule(t *turn) (string, bool) {
	if t.tools == nil {
		return replyNoTools(t), true
	}
	c := t.clock
	if repeatRe.MatchString(t.text) {
		return `I can't schedule repeating events yet. I can schedule one at a time: "schedule yoga on Monday at 7".`, true
	}
	body := scheduleVerb.ReplaceAllString(t.text, "")
	ev := t.parseEvent(body)
	title := titleCase(ev.what)
	what := strings.Trim(ev.what, ` .!?`)
	switch {
	case title == "":
		return `What should I put on your calendar? For example: "schedule lunch with Sam on Tuesday 12:30 for an hour".`, true
	case ev.bad != "":
		return fmt.Sprintf(`I couldn't read %s as a time, so I didn't schedule %s. When should it be? For example "on Tuesday at 12:30".`, quote(ev.bad), yours(what)), true
	case ev.when == nil:
		return fmt.Sprintf(`When should I schedule %s? Tell me a day and time, like "on Tuesday at 12:30".`, yours(what)), true
	case !ev.when.hasTime:
		return fmt.Sprintf(`What time %s should I schedule %s? For example "at 12:30".`, c.onDay(ev.when.at), yours(what)), true
	}
	start := ev.when.at
	end := start.Add(defaultEvent)
	switch {
	case !ev.endAt.IsZero():
		end = ev.endAt
	case ev.hasDur:
		end = start.Add(ev.dur)
	}
	switch {
	case start.Before(c.now.Truncate(time.Minute)):
		return fmt.Sprintf("%s has already passed. When should I schedule %s?", capitalize(c.stamp(start)), yours(what)), true
	case !end.After(start):
		return fmt.Sprintf("%s would end at %s, before it starts at %s, so I didn't schedule it. When should it end?",
			title, end.In(c.loc).Format("15:04"), start.In(c.loc).Format("15:04")), true
	}
	input := map[string]any{"title": title, "starts_at": utc(start), "ends_at": utc(end)}
	if ev.location != "" {
		input["location"] = ev.location
	}
	a := t.run("create_calendar_event", input)
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, "schedule "+quote(title)); ok {
		return s, true
	}
	e := ams.CalendarEvent{Title: title, Location: ev.location, StartsAt: start, EndsAt: end}
	decode(a, &e)
	s := fmt.Sprintf("Scheduled: %s %s, %s", e.Title, c.onDay(e.StartsAt), c.span(e.StartsAt, e.EndsAt))
	if e.Location != "" {
		s += ", at " + e.Location
	}
	return s + ".", true
}

var moveRe = regexp.MustCompile(`(?i)\b(?:move|reschedule|push|postpone|shift|change)\s+(?:back\s+)?(?:the\s+|my\s+)?(.+?)\s+(?:to|till|until)\s+(.+?)[.!?]*$`)

func replyMoveEvent(t *turn) (string, bool) {
	m := moveRe.FindStringSubmatch(t.text)
	if m == nil {
		return "", false
	}
	if t.tools == nil {
		return replyNoTools(t), true
	}
	c := t.clock
	when, bad := c.find(m[2])
	switch {
	case len(keywords(m[1])) == 0:
		return `Which event should I move? Name it, like "move lunch with Sam to Wednesday".`, true
	case bad != "":
		return fmt.Sprintf(`I couldn't read %s as a time, so I didn't move anything. When should it be? For example "Wednesday at 13:00".`, quote(bad)), true
	case when == nil:
		return fmt.Sprintf(`I couldn't find a day or time in %s. When should it be? For example "Wednesday at 13:00".`, quote(m[2])), true
	}
	today := c.today()
	a := t.run("list_calendar_events", map[string]any{
		"starts_after": utc(today), "starts_before": utc(today.AddDate(0, 0, eventSearchDays)), "limit": listLimit})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, "read your calendar"); ok {
		return s, true
	}
	var l list[*ams.CalendarEvent]
	decode(a, &l)
	titles := make([]string, len(l.Data))
	for i, e := range l.Data {
		titles[i] = e.Title
	}
	q := strings.Join(keywords(m[1]), " ")
	matches := bestMatches(m[1], titles)
	switch {
	case len(matches) > 1:
		var names []string
		for _, i := range matches {
			names = append(names, fmt.Sprintf("%s (%s)", l.Data[i].Title, c.at(l.Data[i].StartsAt)))
		}
		return fmt.Sprintf("Several events match %s: %s. Which one do you mean?", quote(q), strings.Join(names, "; ")), true
	case len(matches) == 0:
		return fmt.Sprintf("I couldn't find an event matching %s in the next %d days.", quote(q), eventSearchDays), true
	}
	e := l.Data[matches[0]]
	old := e.StartsAt.In(c.loc)
	start := when.at
	switch {
	case !when.hasTime: // a new day, the same time
		start = time.Date(start.Year(), start.Month(), start.Day(), old.Hour(), old.Minute(), 0, 0, c.loc)
	case !when.hasDate: // the same day, a new time
		start = time.Date(old.Year(), old.Month(), old.Day(), start.Hour(), start.Minute(), 0, 0, c.loc)
	}
	if start.Before(c.now.Truncate(time.Minute)) {
		return fmt.Sprintf("%s has already passed, so I didn't move %s. When should it be?", capitalize(c.stamp(start)), quote(e.Title)), true
	}
	end := start.Add(e.EndsAt.Sub(e.StartsAt))
	a = t.run("update_calendar_event", map[string]any{"event_id": e.ID, "starts_at": utc(start), "ends_at": utc(end)})
	if a == nil {
		return "", true
	}
	if s, ok := failed(a, "move "+quote(e.Title)); ok {
		return s, true
	}
	moved := *e
	moved.StartsAt, moved.EndsAt = start, end
	decode(a, &moved)
	return fmt.Sprintf("Moved %s to %s, %s.", quote(moved.Title), c.dayName(moved.StartsAt), c.span(moved.StartsAt, moved.EndsAt)), true
}

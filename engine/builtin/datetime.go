package builtin

// Reading dates and times in plain language.
//
// Dates and times in messages ("tomorrow at 9", "by Friday", "on Tuesday
// 12:30", "next Monday", "in 2 hours", "tonight") are found and resolved by
// github.com/olebedev/when, a small rule-based English parser with no
// dependencies beyond two tiny helpers. It was chosen over
// github.com/markusmobius/go-dateparser (a port of Python's dateparser:
// 200 languages, but it pulls in a WebAssembly regular-expression runtime,
// and it read "tomorrow at 9" as tomorrow at the current time of day and
// "on Saturday at 10" as a day in 2027) and github.com/tj/go-naturaldate
// (unmaintained since 2020, refuses sentences with words around the date,
// and accepts "25:99"). when reports where in the sentence the date was
// found, which the engine needs to take "tomorrow at 9" out of a task's
// title, and its rules are pluggable: the engine adds five of its own in
// when's rule format ("at 9", "midnight", "next week", "the day after
// tomorrow", and "31/12" without a year, which when's SlashDMY leaves
// unset; see namedRules), and observes which rules applied to tell a date
// from a time of day.
//
// How a phrase is resolved, and the limits:
//   - Everything is read in the account's time zone (EngineRequest.Location)
//     against EngineRequest.Now, then sent to the tools in UTC. Calendar
//     arithmetic is done on the local wall clock, so "tomorrow at 9" is
//     09:00 local across a daylight-saving change; "in 2 hours" is two real
//     hours from now.
//   - A bare weekday ("Friday", "on Tuesday") is the next such day after
//     today, a week ahead when today is that day, except after "by",
//     "until" or "before", where today counts: "by Friday" said on a
//     Friday is due today. "next Monday" is the coming Monday, "this
//     Friday" said on a Saturday the next one. "next week" is next Monday.
//   - A time of day alone ("at 9", "12:30") is today, or tomorrow once it
//     has passed; a month and day in the past ("March 3") is next year's.
//     A bare hour after "at" reads 1–6 as afternoon (13–18), and as
//     evening after "tonight" or "this evening" ("tonight at 9" is 21:00);
//     "at 7" is 07:00. "noon" is 12:00, "morning" 08:00, "afternoon"
//     15:00, "evening" 18:00 and "tonight" 23:00 (when's defaults);
//     "midnight" is the end of the day named (00:00 of the next).
//   - A day with no time of day gets a default from the caller: 09:00 for a
//     reminder, the end of the day (23:59) for a due date; an event needs a
//     time, so the engine asks for one.
//   - English only. Day/month order is day first ("3/12" is 3 December;
//     "12/25" is no date and is refused); ISO dates (2026-12-01) work. A
//     month name or a weekday abbreviation ("may", "march", "sat", "Sun")
//     counts only with a day number next to it or a preposition ("on",
//     "by", "in", …) before it, so "Sam may come" and "call Sun Li" name
//     no date.
//   - What looks like a time but is not one ("25:99", "13pm", "at 31")
//     is reported, and nothing is written. Phrases when does not know ("in
//     a fortnight", "end of the month", "the 3rd" with no month, "every
//     Monday") give no date: the engine then asks for one, or for a task
//     adds it without a due date.

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/olebedev/when"
	"github.com/olebedev/when/rules"
	"github.com/olebedev/when/rules/common"
	"github.com/olebedev/when/rules/en"
)

// moment is a date and/or time found in a message.
type moment struct {
	at      time.Time // in the user's time zone; 00:00 when !hasTime
	hasDate bool      // a day was named: "tomorrow", "Friday", "3 Dec"
	hasTime bool      // a time of day was named: "at 9", "12:30", "noon"
	past    bool      // the moment is before now and was not rolled forward
	spans   [][2]int  // where in the text it was said (byte offsets)
}

// withDefaultClock returns m's time, with hour:minute for a day named
// without a time of day.
func (m *moment) withDefaultClock(hour, minute int) time.Time {
	if m.hasTime {
		return m.at
	}
	return time.Date(m.at.Year(), m.at.Month(), m.at.Day(), hour, minute, 0, 0, m.at.Location())
}

// localClock is the time and place a message is read in.
type localClock struct {
	now time.Time // in loc
	loc *time.Location
}

func newClock(now time.Time, loc *time.Location) localClock {
	if loc == nil {
		loc = time.UTC
	}
	return localClock{now: now.In(loc), loc: loc}
}

// today returns the start of the current day.
func (c localClock) today() time.Time { return startOfDay(c.now) }

func startOfDay(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

// wall returns t's wall clock as a time in UTC, where a day is always 24
// hours long: when's rules add days as 24-hour durations.
func wall(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}

// parseRecord observes one when.Parse: the rules that applied and the
// context they filled in.
type parseRecord struct {
	applied map[string]bool
	ctx     *rules.Context
}

// recordingRule wraps a when rule to record in rec that it applied.
type recordingRule struct {
	name string
	rule rules.Rule
	rec  *parseRecord
}

func (r recordingRule) Find(text string) *rules.Match {
	m := r.rule.Find(text)
	if m == nil {
		return nil
	}
	apply := m.Applier
	m.Applier = func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
		ok, err := apply(m, c, o, ref)
		r.rec.ctx = c
		if ok {
			r.rec.applied[r.name] = true
		}
		return ok, err
	}
	return m
}

// namedRules are when's English and common rules, then the engine's own,
// with the names the engine knows them by. Order matters: later rules
// override what earlier ones set.
var namedRules = []struct {
	name string
	rule rules.Rule
}{
	{"weekday", en.Weekday(rules.Override)},
	{"casual date", en.CasualDate(rules.Override)},
	{"casual time", en.CasualTime(rules.Override)},
	{"hour", en.Hour(rules.Override)},
	{"hour minute", en.HourMinute(rules.Override)},
	{"deadline", en.Deadline(rules.Override)},
	{"past time", en.PastTime(rules.Override)},
	{"month date", en.ExactMonthDate(rules.Override)},
	{"slash date", common.SlashDMY(rules.Override)},
	{"day month", dayMonthRule},
	{"bare hour", bareHourRule},
	{"midnight", midnightRule},
	{"day after tomorrow", dayAfterTomorrowRule},
	{"next week", nextWeekRule},
}

// dayMonthRule reads "31/12" with no year as the next 31 December: when's
// SlashDMY leaves such a date unset when its month is later in the year.
var dayMonthRule = &rules.F{
	RegExp: regexp.MustCompile(`(?:\W|^)(\d{1,2})[/\\](\d{1,2})(?:[^\d/\\]|$)`),
	Applier: func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
		day, _ := strconv.Atoi(m.Captures[0])
		month, _ := strconv.Atoi(m.Captures[1])
		if month < 1 || month > 12 || day < 1 {
			return false, nil
		}
		year := ref.Year()
		at := time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)
		if at.Day() != day { // 31/11
			return false, nil
		}
		if at.Before(time.Date(ref.Year(), ref.Month(), ref.Day(), 0, 0, 0, 0, time.UTC)) {
			year++
		}
		c.Year, c.Month, c.Day = &year, &month, &day
		return true, nil
	},
}

// bareHourRule reads "at 9" (no minutes, no am/pm), which when's own
// rules leave out.
var bareHourRule = &rules.F{
	RegExp: regexp.MustCompile(`(?i)(?:\W|^)(at\s+)(\d{1,2})(\s*o'?clock)?(\s*(?:a\.?m\.?|p\.?m\.?|a|p)\b)?(?:[^\w:]|$)`),
	Applier: func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
		if m.Captures[3] != "" { // "at 9 pm": when's Hour rule reads it
			return false, nil
		}
		h, err := strconv.Atoi(m.Captures[1])
		if err != nil || h > 23 {
			return false, nil
		}
		ctx := strings.ToLower(c.Text)
		evening := strings.Contains(ctx, "tonight") || strings.Contains(ctx, "evening") ||
			strings.Contains(ctx, "afternoon") || strings.Contains(ctx, "night")
		if h >= 1 && h < 12 && !strings.Contains(ctx, "morning") && (h <= 6 || evening) {
			h += 12
		}
		zero := 0
		c.Hour, c.Minute, c.Second = &h, &zero, &zero
		return true, nil
	},
}

// midnightRule reads "midnight" as the end of the day named: 00:00 of the
// day after.
var midnightRule = &rules.F{
	RegExp: regexp.MustCompile(`(?i)(?:\W|^)((?:at\s+)?midnight)(?:\W|$)`),
	Applier: func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
		zero, zero2, zero3 := 0, 0, 0
		c.Hour, c.Minute, c.Second = &zero, &zero2, &zero3
		c.Duration += 24 * time.Hour
		return true, nil
	},
}

// dayAfterTomorrowRule reads "the day after tomorrow", which when's
// CasualDate alone would read as tomorrow.
var dayAfterTomorrowRule = &rules.F{
	RegExp: regexp.MustCompile(`(?i)(?:\W|^)((?:the\s+)?day\s+after\s+tomorrow)(?:\W|$)`),
	Applier: func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
		c.Duration = 48 * time.Hour
		return true, nil
	},
}

// nextWeekRule reads "next week" as next Monday.
var nextWeekRule = &rules.F{
	RegExp: regexp.MustCompile(`(?i)(?:\W|^)(next\s+week)(?:\W|$)`),
	Applier: func(m *rules.Match, c *rules.Context, o *rules.Options, ref time.Time) (bool, error) {
		days := (8 - int(ref.Weekday())) % 7
		if days == 0 {
			days = 7
		}
		c.Duration = time.Duration(days) * 24 * time.Hour
		return true, nil
	},
}

// cluster is one date or time expression when found.
type cluster struct {
	start, end int
	text       string
	at         time.Time // wall clock, in UTC (see wall)
	exact      time.Time // for "in 2 hours": now plus the duration
	rec        *parseRecord
	hasDate    bool
	hasTime    bool
}

// isoDate and dottedTime are rewritten, keeping their length, into forms
// when reads: 2026-12-01 into 01/12/2026 (when would read "12-01" as
// 12:01), 9.30 into 9:30.
var (
	isoDate    = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
	dottedTime = regexp.MustCompile(`\b(\d{1,2})\.(\d{2})\b`)
)

// monthClock finds a month followed by a time, "3 December 14:00", which
// when would read as 14 December; a comma in place of the space (same
// length) keeps them apart.
var monthClock = regexp.MustCompile(`(?i)\b(` + en.MONTH_OFFSET_PATTERN + `)(\s)(\d{1,2}:\d{2})`)

// weakWord finds the words that may be weak, and what follows them.
var weakWord = regexp.MustCompile(`(?i)\b([a-z]+)\b(\s*\d)?`)

// dayNumber is a day of the month before a month name: "3", "3rd", "third".
var dayNumber = regexp.MustCompile(`(?i)^(?:\d{1,2}(?:st|nd|rd|th)?|` + en.ORDINAL_WORDS_PATTERN + `)$`)

// maskWeak hides from when the weak words (see weakWords) that no
// preposition makes a date and no day number stands next to ("May 5", "3
// December"), keeping the length of s: "call Sun Li tomorrow" names only
// tomorrow.
func maskWeak(s string) string {
	b := []byte(s)
	for _, m := range weakWord.FindAllStringSubmatchIndex(s, -1) {
		w := strings.ToLower(s[m[2]:m[3]])
		before := wordBefore(s, m[2])
		if !weakWords[w] || m[4] >= 0 || strongBefore[before] || dayNumber.MatchString(before) {
			continue
		}
		for i := m[2]; i < m[3]; i++ {
			b[i] = '_'
		}
	}
	return string(b)
}

// weakWords name a date only when a preposition stands before them: alone
// they are more often other words ("Sam may come", "the SAT exam").
var weakWords = set(`sun mon tue tues wed thu thur thurs fri sat jan feb mar apr may jun jul aug sep sept oct nov dec
	january february march april june july august september october november december now`)

// strongBefore are the words that make a weak word a date: "on sat", "by may".
var strongBefore = set(`on by until till before due this next last in from`)

// pastWords mark an expression meant to be in the past.
var pastWords = regexp.MustCompile(`(?i)\b(?:yesterday|last|ago|past)\b`)

// relativeWeekday marks a weekday that says which week: "next Friday".
var relativeWeekday = regexp.MustCompile(`(?i)\b(?:this|next|last|past)\b`)

// byWords before a bare weekday make today count: "by Friday" on a Friday.
var byWords = set(`by until till before`)

// badTime finds what looks like a time but was not read as one: "25:99",
// "13pm", "at 31".
var (
	badClock = `\b(?:at\s+)?\d{1,2}\s*[:.]\s*\d{1,2}\b|\b\d{1,2}\s*(?:a\.?m\.?|p\.?m\.?)(?:\W|$)|\bat\s+\d+\b`
	badTime  = regexp.MustCompile(`(?i)\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|` + badClock)
	// badTimeOfDay finds a time of day that was not read within a date
	// that was: "13pm tomorrow".
	badTimeOfDay = regexp.MustCompile(`(?i)` + badClock)
)

// find reads the date and time of text. It returns nil if there is none,
// and the fragment that looked like a time but could not be read, if any.
// Of several expressions the longest is taken, completed by another that
// gives only the missing date or time ("at 9 … tomorrow").
func (c localClock) find(text string) (m *moment, bad string) {
	m, bad, _ = c.read(text)
	return m, bad
}

// read is find, and also returns text without what was read, or without
// what looked like a time but could not be read, and the words that
// introduced it: the rest of the sentence.
func (c localClock) read(text string) (m *moment, bad, rest string) {
	m, bad, spans := c.scan(text)
	switch {
	case bad != "":
		return nil, bad, without(text, spans)
	case m != nil:
		return m, "", without(text, m.spans)
	}
	return nil, "", strings.Join(strings.Fields(text), " ")
}

// scan does the work of read: with a fragment that could not be read, it
// returns where in text it and any date with it are.
func (c localClock) scan(text string) (m *moment, bad string, badAt [][2]int) {
	src := isoDate.ReplaceAllString(text, "$3/$2/$1")
	src = dottedTime.ReplaceAllString(src, "$1:$2")
	src = monthClock.ReplaceAllString(src, "$1,$3")
	base := wall(c.now)
	masked := maskWeak(src)
	var found []*cluster
	for range 6 {
		rec := &parseRecord{applied: map[string]bool{}}
		p := when.New(&rules.Options{Distance: 5, MatchByOrder: true})
		for _, r := range namedRules {
			p.Add(recordingRule{name: r.name, rule: r.rule, rec: rec})
		}
		r, err := p.Parse(masked, base)
		if err != nil || r == nil || r.Text == "" || rec.ctx == nil {
			break
		}
		cl := &cluster{start: r.Index, end: r.Index + len(r.Text), text: r.Text, at: r.Time, rec: rec}
		masked = masked[:cl.start] + strings.Repeat(" ", len(r.Text)) + masked[cl.end:]
		if c.weak(src, cl) {
			continue
		}
		ctx := rec.ctx
		cl.hasTime = ctx.Hour != nil || ctx.Minute != nil
		cl.hasDate = ctx.Duration != 0 || ctx.Day != nil || ctx.Month != nil || ctx.Year != nil ||
			rec.applied["casual date"] || rec.applied["weekday"]
		if d := ctx.Duration; d%(24*time.Hour) != 0 && !cl.hasTime {
			// "in 2 hours": real time, not wall clock.
			cl.exact = c.now.Add(d)
			cl.hasTime, cl.hasDate = true, true
		}
		found = append(found, cl)
	}
	if len(found) == 0 {
		if b := badTime.FindStringIndex(masked); b != nil {
			return nil, strings.TrimSpace(masked[b[0]:b[1]]), [][2]int{{b[0], b[1]}}
		}
		return nil, "", badAt
	}
	main := found[0]
	for _, cl := range found[1:] {
		if len(cl.text) >= len(main.text) {
			main = cl
		}
	}
	m = &moment{hasDate: main.hasDate, hasTime: main.hasTime, spans: [][2]int{{main.start, main.end}}}
	at := main.at
	for _, cl := range found {
		switch {
		case cl == main:
		case !m.hasTime && cl.hasTime && !cl.hasDate:
			at = time.Date(at.Year(), at.Month(), at.Day(), cl.at.Hour(), cl.at.Minute(), 0, 0, time.UTC)
			m.hasTime = true
			m.spans = append(m.spans, [2]int{cl.start, cl.end})
		case !m.hasDate && cl.hasDate && !cl.hasTime:
			at = time.Date(cl.at.Year(), cl.at.Month(), cl.at.Day(), at.Hour(), at.Minute(), 0, 0, time.UTC)
			m.hasDate = true
			m.spans = append(m.spans, [2]int{cl.start, cl.end})
		}
	}
	// A time that was not read ("at 13pm tomorrow" reads as tomorrow),
	// or whatever still looks like a time, was not understood.
	if !m.hasTime {
		if b := badTimeOfDay.FindStringIndex(src[main.start:main.end]); b != nil {
			return nil, strings.TrimSpace(src[main.start+b[0] : main.start+b[1]]), [][2]int{{main.start, main.end}}
		}
	}
	rest := src
	for _, s := range m.spans {
		rest = rest[:s[0]] + strings.Repeat(" ", s[1]-s[0]) + rest[s[1]:]
	}
	if b := badTime.FindStringIndex(rest); b != nil {
		return nil, strings.TrimSpace(rest[b[0]:b[1]]), append(m.spans, [2]int{b[0], b[1]})
	}

	if !main.exact.IsZero() && len(m.spans) == 1 {
		m.at = main.exact.Truncate(time.Minute)
		return m, "", badAt
	}
	if !m.hasTime {
		at = time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	}
	// A bare weekday after "by" includes today: when gives next week's.
	if main.rec.applied["weekday"] && byWords[wordBefore(src, main.start)] &&
		!relativeWeekday.MatchString(main.text) &&
		startOfDay(at).Sub(wall(c.today())) == 7*24*time.Hour {
		at = at.AddDate(0, 0, -7)
	}
	local := func(w time.Time) time.Time {
		return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), 0, 0, c.loc)
	}
	m.at = local(at)
	if c.isPast(m) && !pastWords.MatchString(main.text) {
		// Read forward: "at 9" after nine is tomorrow, "this Friday" on
		// Saturday is next week's, "3 March" in November is next year's.
		ctx := main.rec.ctx
		switch {
		case !m.hasDate:
			m.at = local(at.AddDate(0, 0, 1))
		case main.rec.applied["weekday"]:
			m.at = local(at.AddDate(0, 0, 7))
		case ctx.Month != nil && ctx.Year == nil:
			m.at = local(at.AddDate(1, 0, 0))
		}
	}
	m.past = c.isPast(m)
	return m, "", badAt
}

// isPast tells whether m is before now: for a day alone, before today.
func (c localClock) isPast(m *moment) bool {
	if !m.hasTime {
		return m.at.Before(c.today())
	}
	return m.at.Before(c.now.Truncate(time.Minute))
}

// weak tells whether cl is a lone weak word with no preposition before it.
func (c localClock) weak(src string, cl *cluster) bool {
	w := strings.ToLower(strings.Trim(cl.text, " .,"))
	return weakWords[w] && !strongBefore[wordBefore(src, cl.start)]
}

// wordBefore returns the lower-cased word that ends before offset i.
func wordBefore(s string, i int) string {
	f := strings.Fields(s[:i])
	if len(f) == 0 {
		return ""
	}
	return strings.ToLower(strings.Trim(f[len(f)-1], ".,:;!?"))
}

// connectors are the words that tie a date to the sentence ("by Friday",
// "on Tuesday", "due tomorrow"); they go with the date when it is taken out.
var connectors = set(`by on at due until till before from for in this next the of starting`)

// without returns text with the spans of m taken out, with the words that
// introduced them, and the white space collapsed.
func without(text string, spans [][2]int) string {
	const mark = "\x00"
	b := []byte(text)
	for _, s := range spans {
		for i := s[0]; i < s[1]; i++ {
			b[i] = 0
		}
	}
	words := strings.Fields(strings.ReplaceAll(string(b), mark, " "+mark+" "))
	var out []string
	for _, w := range words {
		if strings.Contains(w, mark) {
			for len(out) > 0 && connectors[strings.ToLower(strings.Trim(out[len(out)-1], ",:;"))] {
				out = out[:len(out)-1]
			}
			if len(out) == 0 || out[len(out)-1] != mark {
				out = append(out, mark)
			}
			continue
		}
		out = append(out, w)
	}
	// A connector right after a date with nothing but the end after it
	// ("tomorrow at") goes too; a mark in the middle becomes a space.
	var kept []string
	for _, w := range out {
		if w != mark {
			kept = append(kept, w)
		}
	}
	s := strings.Join(kept, " ")
	return strings.Trim(s, " ,;:-–—")
}

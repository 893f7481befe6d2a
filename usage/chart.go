package usage

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
)

// Chart is a series of request counts against its limit, drawn as an
// accessible inline SVG (SVG) with a data table of the same figures for
// screen readers and for reading exact numbers (Table). No script: the page
// is rendered by the server.
//
// Up to MaxBars buckets are drawn as bars, the refused requests stacked in
// another colour on the allowed ones; more (the 1440 minutes of a day) as
// a line of the allowed requests and, when there are any, one of the
// refused. The limit is a dashed line.
type Chart struct {
	// ID prefixes the ids of the SVG's title and description; it must be
	// unique on the page. Default "usage-chart".
	ID    string
	Title string // e.g. "Requests per minute, last 24 hours"
	// Points are the buckets in time order, Step apart.
	Points []ams.UsagePoint
	Step   time.Duration
	// Limit is the requests allowed per bucket; 0 draws no limit line.
	Limit int
	// Location is the time zone of the labels of buckets shorter than a
	// day (nil: UTC). Days are labelled with their UTC date: the daily
	// limit counts UTC days.
	Location *time.Location
}

// MaxBars is the most buckets drawn as bars; longer series are lines.
const MaxBars = 120

// The SVG's geometry, in its own units (it scales to its container).
const (
	chartWidth  = 720
	chartHeight = 240
	padLeft     = 56 // y-axis labels
	padRight    = 16
	padTop      = 16
	padBottom   = 32 // x-axis labels
	plotWidth   = chartWidth - padLeft - padRight
	plotHeight  = chartHeight - padTop - padBottom
	plotBottom  = padTop + plotHeight
)

// Colours; a page may override them with CSS on the classes.
const (
	colorAllowed = "#2563eb"
	colorRefused = "#dc2626"
	colorLimit   = "#374151"
	colorGrid    = "#d1d5db"
)

func (c *Chart) id() string {
	if c.ID == "" {
		return "usage-chart"
	}
	return c.ID
}

func (c *Chart) loc() *time.Location {
	if c.Location == nil || c.Step >= 24*time.Hour {
		return time.UTC
	}
	return c.Location
}

// unit names one bucket: "minute", "day", "5 minutes".
func (c *Chart) unit() string {
	switch c.Step {
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	if c.Step%time.Hour == 0 {
		return fmt.Sprintf("%d hours", c.Step/time.Hour)
	}
	return fmt.Sprintf("%d minutes", c.Step/time.Minute)
}

// when names a bucket by its start: "21 Nov" for days, "21 Nov 14:03"
// otherwise.
func (c *Chart) when(t time.Time) string {
	if c.Step >= 24*time.Hour {
		return t.UTC().Format(format.DayLayout)
	}
	return t.In(c.loc()).Format(format.DayTimeLayout)
}

// Peak returns the bucket with the most requests (allowed and refused),
// the first of equals; ok is false when there are none.
func (c *Chart) Peak() (p ams.UsagePoint, ok bool) {
	for _, q := range c.Points {
		if q.Total() > p.Total() {
			p, ok = q, true
		}
	}
	return p, ok
}

// Totals returns the requests of all buckets.
func (c *Chart) Totals() (allowed, refused int64) {
	for _, p := range c.Points {
		allowed += p.Allowed
		refused += p.Refused
	}
	return allowed, refused
}

// Summary is the chart's description in words (the SVG's <desc>), e.g.
// "Peak 57 requests in one minute (21 Nov 14:03 UTC); the limit is 60 per
// minute. 1,234 requests in all, 12 of them refused (429)."
func (c *Chart) Summary() string {
	var b strings.Builder
	if p, ok := c.Peak(); ok {
		zone := " " + c.loc().String()
		fmt.Fprintf(&b, "Peak %s requests in one %s (%s%s)", num(p.Total()), c.unit(), c.when(p.Start), zone)
	} else {
		fmt.Fprintf(&b, "No requests")
	}
	if c.Limit > 0 {
		fmt.Fprintf(&b, "; the limit is %s per %s.", num(int64(c.Limit)), c.unit())
	} else {
		b.WriteString(".")
	}
	allowed, refused := c.Totals()
	if allowed+refused > 0 {
		fmt.Fprintf(&b, " %s requests in all, %s of them refused (429).", num(allowed+refused), num(refused))
	}
	return b.String()
}

// scale returns the top of the y axis: a round number above both the peak
// and the limit, with some room over the higher.
func (c *Chart) scale() int64 {
	top := int64(c.Limit)
	if p, ok := c.Peak(); ok {
		top = max(top, p.Total())
	}
	return niceCeil(float64(max(top, 1)) * 1.1)
}

// niceCeil returns the least of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power
// of ten that is at least v (and at least 2).
func niceCeil(v float64) int64 {
	if v <= 2 {
		return 2
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if n := m * p; n >= v-1e-9 && n == math.Trunc(n) {
			return int64(n)
		}
	}
	return int64(math.Ceil(v))
}

// y returns the vertical position of count v on a scale topped at top.
func y(v, top int64) float64 {
	return plotBottom - float64(v)/float64(top)*plotHeight
}

// f formats a coordinate with at most two decimals.
func f(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// num formats a count with thousands separators: 10000 is "10,000"
// (format.Number, as the pages do).
func num(n int64) string { return format.Number(n) }

var esc = template.HTMLEscapeString

// SVG returns the chart as an inline <svg> element: role="img" with a
// <title> and a <desc> (Summary) that name it for assistive technology.
func (c *Chart) SVG() template.HTML {
	var b strings.Builder
	id := esc(c.id())
	n := len(c.Points)
	top := c.scale()
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="usage-chart" viewBox="0 0 %d %d" width="100%%" role="img" aria-labelledby="%s-title %s-desc">`,
		chartWidth, chartHeight, id, id)
	fmt.Fprintf(&b, `<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`, id, esc(c.Title), id, esc(c.Summary()))

	// Grid and y-axis labels: 0, the middle when it is whole, the top.
	b.WriteString(`<g class="axis" font-size="12" fill="currentColor">`)
	ticks := []int64{0, top}
	if top%2 == 0 {
		ticks = []int64{0, top / 2, top}
	}
	for _, v := range ticks {
		yy := f(y(v, top))
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s" stroke="%s" stroke-width="1"/>`, padLeft, padLeft+plotWidth, yy, yy, colorGrid)
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`, padLeft-6, yy, num(v))
	}
	b.WriteString(`</g>`)

	slot := 0.0
	if n > 0 {
		slot = float64(plotWidth) / float64(n)
	}
	center := func(i int) float64 { return padLeft + (float64(i)+0.5)*slot }
	if n > 0 && n <= MaxBars {
		c.bars(&b, slot, top)
	} else if n > 0 {
		c.lines(&b, center, top)
	}

	// x-axis labels.
	b.WriteString(`<g class="labels" font-size="12" fill="currentColor" text-anchor="middle">`)
	for _, i := range c.labelled() {
		fmt.Fprintf(&b, `<text x="%s" y="%d">%s</text>`, f(center(i)), plotBottom+20, esc(c.label(i)))
	}
	b.WriteString(`</g>`)

	if c.Limit > 0 {
		ly := f(y(int64(c.Limit), top))
		fmt.Fprintf(&b, `<line class="limit" x1="%d" x2="%d" y1="%s" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"/>`,
			padLeft, padLeft+plotWidth, ly, ly, colorLimit)
		fmt.Fprintf(&b, `<text class="limit-label" x="%d" y="%s" text-anchor="end" font-size="12" fill="currentColor">limit %s/%s</text>`,
			padLeft+plotWidth, f(y(int64(c.Limit), top)-4), num(int64(c.Limit)), esc(c.unit()))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// bars draws one bar per non-empty bucket: allowed requests from the axis
// up, refused ones stacked on them. Each bar has a <title> (a tooltip).
func (c *Chart) bars(b *strings.Builder, slot float64, top int64) {
	w := max(slot*0.8, 1)
	b.WriteString(`<g class="bars">`)
	for i, p := range c.Points {
		if p.Total() == 0 {
			continue
		}
		x := f(padLeft + float64(i)*slot + (slot-w)/2)
		tip := esc(c.pointText(p))
		if p.Allowed > 0 {
			ya := y(p.Allowed, top)
			fmt.Fprintf(b, `<rect class="allowed" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				x, f(ya), f(w), f(plotBottom-ya), colorAllowed, tip)
		}
		if p.Refused > 0 {
			ya, yt := y(p.Allowed, top), y(p.Total(), top)
			fmt.Fprintf(b, `<rect class="refused" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				x, f(yt), f(w), f(ya-yt), colorRefused, tip)
		}
	}
	b.WriteString(`</g>`)
}

// lines draws the allowed requests as a line through every bucket, and
// the refused ones as another when there are any.
func (c *Chart) lines(b *strings.Builder, center func(int) float64, top int64) {
	poly := func(class, color string, v func(ams.UsagePoint) int64) {
		fmt.Fprintf(b, `<polyline class="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-linejoin="round" points="`, class, color)
		for i, p := range c.Points {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(f(center(i)))
			b.WriteByte(',')
			b.WriteString(f(y(v(p), top)))
		}
		b.WriteString(`"/>`)
	}
	poly("allowed", colorAllowed, func(p ams.UsagePoint) int64 { return p.Allowed })
	if _, refused := c.Totals(); refused > 0 {
		poly("refused", colorRefused, func(p ams.UsagePoint) int64 { return p.Refused })
	}
}

// pointText describes one bucket: "21 Nov: 9,812 requests, 3 refused".
func (c *Chart) pointText(p ams.UsagePoint) string {
	s := fmt.Sprintf("%s: %s requests", c.when(p.Start), num(p.Total()))
	if p.Refused > 0 {
		s += fmt.Sprintf(", %s refused", num(p.Refused))
	}
	return s
}

// labelled returns the buckets that get an x-axis label: at most about
// eight. Buckets shorter than a day are labelled at whole hours (every 1,
// 2, 3, 4, 6, 12 or 24 hours, local time); days every k-th day counted back
// from the last, so that today is labelled.
func (c *Chart) labelled() []int {
	n := len(c.Points)
	if n == 0 {
		return nil
	}
	var out []int
	if c.Step >= 24*time.Hour {
		k := (n + 7) / 8
		for i := n - 1; i >= 0; i -= k {
			out = append([]int{i}, out...)
		}
		return out
	}
	span := time.Duration(n) * c.Step
	every := 24
	for _, h := range []int{1, 2, 3, 4, 6, 12} {
		if span <= time.Duration(8*h)*time.Hour {
			every = h
			break
		}
	}
	loc := c.loc()
	for i, p := range c.Points {
		t := p.Start.In(loc)
		if t.Minute() == 0 && t.Hour()%every == 0 && (c.Step <= time.Hour || t.Truncate(c.Step).Equal(t)) {
			out = append(out, i)
		}
	}
	return out
}

func (c *Chart) label(i int) string {
	t := c.Points[i].Start
	if c.Step >= 24*time.Hour {
		return t.UTC().Format(format.DayLayout)
	}
	return t.In(c.loc()).Format("15:04")
}

// Table returns the chart's figures as a <table> with a caption: one row
// per day for days; for shorter buckets one row per hour (local time) with
// the busiest bucket of the hour, when there are more than 48 buckets.
func (c *Chart) Table() template.HTML {
	var b strings.Builder
	byHour := c.Step < time.Hour && len(c.Points) > 48
	caption := c.Title
	if c.Limit > 0 {
		caption += fmt.Sprintf(" (limit %s per %s)", num(int64(c.Limit)), c.unit())
	}
	first := "Time"
	switch {
	case c.Step >= 24*time.Hour:
		first = "Day (UTC)"
	case byHour:
		first = "Hour (" + c.loc().String() + ")"
	default:
		first = "Time (" + c.loc().String() + ")"
	}
	fmt.Fprintf(&b, `<table class="usage-table"><caption>%s</caption><thead><tr><th scope="col">%s</th><th scope="col">Requests</th><th scope="col">Refused (429)</th>`,
		esc(caption), esc(first))
	if byHour {
		fmt.Fprintf(&b, `<th scope="col">Busiest %s</th>`, esc(c.unit()))
	}
	b.WriteString(`</tr></thead><tbody>`)
	row := func(name string, p ams.UsagePoint, busiest int64) {
		fmt.Fprintf(&b, `<tr><th scope="row">%s</th><td>%s</td><td>%s</td>`, esc(name), num(p.Total()), num(p.Refused))
		if byHour {
			fmt.Fprintf(&b, `<td>%s</td>`, num(busiest))
		}
		b.WriteString(`</tr>`)
	}
	if !byHour {
		for _, p := range c.Points {
			name := c.when(p.Start)
			if c.Step < 24*time.Hour {
				name = p.Start.In(c.loc()).Format(format.DayTimeLayout)
			}
			row(name, p, 0)
		}
	} else {
		loc := c.loc()
		var sum ams.UsagePoint
		var busiest int64
		var hour time.Time
		open := false
		for _, p := range c.Points {
			// The start of the local hour (exact also when a clock
			// change repeats an hour, unlike time.Date).
			lt := p.Start.In(loc)
			h := lt.Add(-time.Duration(lt.Minute())*time.Minute - time.Duration(lt.Second())*time.Second)
			if open && !h.Equal(hour) {
				row(hour.Format(format.DayTimeLayout), sum, busiest)
				sum, busiest = ams.UsagePoint{}, 0
			}
			hour, open = h, true
			sum.Allowed += p.Allowed
			sum.Refused += p.Refused
			busiest = max(busiest, p.Total())
		}
		if open {
			row(hour.Format(format.DayTimeLayout), sum, busiest)
		}
	}
	b.WriteString(`</tbody></table>`)
	return template.HTML(b.String())
}

package usage_test

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/usage"
)

// node is an element of a parsed SVG or table.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n *node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *node) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return v
}

// all returns the elements below n (n included) named name with the class
// (any class if class is "").
func (n *node) all(name, class string) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		if (name == "" || x.XMLName.Local == name) && (class == "" || x.attr("class") == class) {
			out = append(out, x)
		}
		for i := range x.Nodes {
			walk(&x.Nodes[i])
		}
	}
	walk(n)
	return out
}

func parse(t *testing.T, s string) *node {
	t.Helper()
	var n node
	if err := xml.Unmarshal([]byte(s), &n); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, s)
	}
	return &n
}

// axis returns the y of the grid lines labelled 0 and top, and top.
func axis(t *testing.T, svg *node) (y0, yTop float64, top int64) {
	t.Helper()
	texts := svg.all("g", "axis")[0].all("text", "")
	lines := svg.all("line", "grid")
	if len(texts) < 2 || len(texts) != len(lines) {
		t.Fatalf("%d axis labels for %d grid lines", len(texts), len(lines))
	}
	last := texts[len(texts)-1]
	top, err := strconv.ParseInt(strings.ReplaceAll(last.Text, ",", ""), 10, 64)
	if err != nil || texts[0].Text != "0" {
		t.Fatalf("axis labels %q .. %q", texts[0].Text, last.Text)
	}
	return lines[0].num(t, "y1"), lines[len(lines)-1].num(t, "y1"), top
}

// yOf is where the chart should draw v, from its own axis.
func yOf(t *testing.T, svg *node, v int64) float64 {
	y0, yTop, top := axis(t, svg)
	return y0 + (yTop-y0)*float64(v)/float64(top)
}

func near(a, b float64) bool { d := a - b; return d < 0.02 && d > -0.02 }

var today = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

func days() []ams.UsagePoint {
	pts := make([]ams.UsagePoint, 30)
	for i := range pts {
		pts[i].Start = today.AddDate(0, 0, i-29)
		if i%3 != 0 {
			pts[i].Allowed = int64(100 * i)
		}
	}
	pts[28].Allowed, pts[28].Refused = 10000, 3 // yesterday: the limit reached, 3 refused
	return pts
}

func TestDayChartBars(t *testing.T) {
	c := &usage.Chart{ID: "days", Title: "Requests per day, last 30 days", Points: days(), Step: 24 * time.Hour, Limit: 10000}
	svg := parse(t, string(c.SVG()))
	if svg.XMLName.Local != "svg" || svg.attr("role") != "img" || svg.attr("aria-labelledby") != "days-title days-desc" {
		t.Fatalf("svg element: %v", svg.Attrs)
	}
	if svg.all("script", "") != nil {
		t.Fatal("script in the chart")
	}
	for _, n := range svg.all("", "") {
		for _, a := range n.Attrs {
			if strings.HasPrefix(a.Name.Local, "on") {
				t.Fatalf("event handler %s in the chart", a.Name.Local)
			}
		}
	}
	title, desc := svg.all("title", ""), svg.all("desc", "")
	if title[0].attr("id") != "days-title" || title[0].Text != c.Title || desc[0].attr("id") != "days-desc" {
		t.Fatalf("title %+v desc %+v", title[0], desc[0])
	}
	want := "Peak 10,003 requests in one day (20 Nov UTC); the limit is 10,000 per day. "
	if !strings.HasPrefix(desc[0].Text, want) {
		t.Fatalf("desc %q, want it to start with %q", desc[0].Text, want)
	}
	var total int64
	for _, p := range c.Points {
		total += p.Total()
	}
	if !strings.Contains(desc[0].Text, num(total)+" requests in all, 3 of them refused (429).") {
		t.Fatalf("desc %q lacks the totals (%d)", desc[0].Text, total)
	}

	// One bar per day with requests (every third day has none, but
	// yesterday), one refused segment.
	allowed, refused := svg.all("rect", "allowed"), svg.all("rect", "refused")
	if len(allowed) != 20 || len(refused) != 1 {
		t.Fatalf("%d allowed bars, %d refused, want 20 and 1", len(allowed), len(refused))
	}
	y0, _, top := axis(t, svg)
	if top <= 10003 {
		t.Fatalf("the axis tops at %d, under the peak", top)
	}
	// Each bar stands on the axis and is as high as its count.
	for _, r := range allowed {
		if !near(r.num(t, "y")+r.num(t, "height"), y0) {
			t.Fatalf("bar %v does not stand on the axis at %v", r.Attrs, y0)
		}
	}
	yesterday := allowed[len(allowed)-2] // today's is the last
	if tip := yesterday.all("title", "")[0].Text; tip != "20 Nov: 10,003 requests, 3 refused" {
		t.Fatalf("yesterday's tooltip %q", tip)
	}
	// The limit line is dashed, level, and at the height of yesterday's
	// 10,000 allowed requests; the refused ones are stacked above it.
	limit := svg.all("line", "limit")
	if len(limit) != 1 || limit[0].attr("stroke-dasharray") == "" || limit[0].num(t, "y1") != limit[0].num(t, "y2") {
		t.Fatalf("limit line %+v", limit)
	}
	ly := limit[0].num(t, "y1")
	if !near(ly, yesterday.num(t, "y")) || !near(ly, yOf(t, svg, 10000)) {
		t.Fatalf("limit line at y=%v, yesterday's bar top at %v, 10,000 at %v", ly, yesterday.num(t, "y"), yOf(t, svg, 10000))
	}
	if r := refused[0]; !near(r.num(t, "y")+r.num(t, "height"), ly) || !near(r.num(t, "y"), yOf(t, svg, 10003)) {
		t.Fatalf("refused segment %v not on top of the allowed bar", r.Attrs)
	}
	if ll := svg.all("text", "limit-label"); len(ll) != 1 || ll[0].Text != "limit 10,000/day" {
		t.Fatalf("limit label %+v", ll)
	}
	// Dates under the bars, today's last.
	labels := svg.all("g", "labels")[0].all("text", "")
	if len(labels) < 5 || len(labels) > 8 || labels[len(labels)-1].Text != "21 Nov" {
		t.Fatalf("%d day labels, last %q", len(labels), labels[len(labels)-1].Text)
	}
	// Under the bar it names.
	slot := float64(720-56-16) / 30 // the plot's width over 30 days
	if x := labels[len(labels)-1].num(t, "x"); !near(x, yesterday.num(t, "x")+yesterday.num(t, "width")/2+slot) {
		t.Fatalf("today's label at x=%v", x)
	}
}

func num(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// minutes returns the 1440 minutes of the 24 hours that end with 09:59
// UTC: 57 requests at 08:03, refused ones at 08:04.
func minutes() []ams.UsagePoint {
	from := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	pts := make([]ams.UsagePoint, 1440)
	for i := range pts {
		pts[i].Start = from.Add(time.Duration(i) * time.Minute)
		pts[i].Allowed = int64(i % 7)
	}
	peak := 22*60 + 3
	pts[peak].Allowed = 57
	pts[peak+1].Allowed, pts[peak+1].Refused = 60, 9
	return pts
}

func TestMinuteChartLine(t *testing.T) {
	pts := minutes()
	c := &usage.Chart{ID: "m", Title: "Requests per minute, last 24 hours", Points: pts, Step: time.Minute, Limit: 60}
	svg := parse(t, string(c.SVG()))
	if svg.all("rect", "") != nil {
		t.Fatal("1440 minutes drawn as bars")
	}
	lines := svg.all("polyline", "allowed")
	if len(lines) != 1 {
		t.Fatalf("%d lines of allowed requests", len(lines))
	}
	points := strings.Fields(lines[0].attr("points"))
	if len(points) != 1440 {
		t.Fatalf("%d points for 1440 minutes", len(points))
	}
	// The point of 08:04 is at the height of its 60 requests, which is
	// the limit line's.
	_, ys, _ := strings.Cut(points[22*60+4], ",")
	y, _ := strconv.ParseFloat(ys, 64)
	ly := svg.all("line", "limit")[0].num(t, "y1")
	if !near(y, ly) || !near(ly, yOf(t, svg, 60)) {
		t.Fatalf("60 requests at y=%v, limit line at %v, axis says %v", y, ly, yOf(t, svg, 60))
	}
	if r := svg.all("polyline", "refused"); len(r) != 1 || len(strings.Fields(r[0].attr("points"))) != 1440 {
		t.Fatalf("refused line: %d", len(r))
	}
	desc := svg.all("desc", "")[0].Text
	if !strings.HasPrefix(desc, "Peak 69 requests in one minute (21 Nov 08:04 UTC); the limit is 60 per minute.") {
		t.Fatalf("desc %q", desc)
	}
	// Hours every three hours, in UTC.
	var labels []string
	for _, l := range svg.all("g", "labels")[0].all("text", "") {
		labels = append(labels, l.Text)
	}
	if got := strings.Join(labels, " "); got != "12:00 15:00 18:00 21:00 00:00 03:00 06:00 09:00" {
		t.Fatalf("hour labels %q", got)
	}
	// In the account's time zone.
	c.Location, _ = time.LoadLocation("Asia/Kolkata") // UTC+5:30
	labels = nil
	svg = parse(t, string(c.SVG()))
	for _, l := range svg.all("g", "labels")[0].all("text", "") {
		labels = append(labels, l.Text)
	}
	if got := strings.Join(labels, " "); got != "18:00 21:00 00:00 03:00 06:00 09:00 12:00 15:00" {
		t.Fatalf("hour labels in Kolkata %q", got)
	}
	if desc := svg.all("desc", "")[0].Text; !strings.Contains(desc, "(21 Nov 13:34 Asia/Kolkata)") {
		t.Fatalf("desc %q", desc)
	}

	// No refused requests: no refused line.
	pts[22*60+4].Refused = 0
	if svg := parse(t, string(c.SVG())); svg.all("polyline", "refused") != nil {
		t.Fatal("a refused line with none refused")
	}
}

func TestChartEmpty(t *testing.T) {
	pts := minutes()
	for i := range pts {
		pts[i].Allowed, pts[i].Refused = 0, 0
	}
	c := &usage.Chart{Title: "Requests per minute", Points: pts, Step: time.Minute, Limit: 60}
	svg := parse(t, string(c.SVG()))
	if d := svg.all("desc", "")[0].Text; d != "No requests; the limit is 60 per minute." {
		t.Fatalf("desc %q", d)
	}
	if svg.attr("aria-labelledby") != "usage-chart-title usage-chart-desc" {
		t.Fatalf("default ids: %q", svg.attr("aria-labelledby"))
	}
	// The limit line is below the top of the axis.
	y0, yTop, _ := axis(t, svg)
	ly := svg.all("line", "limit")[0].num(t, "y1")
	if !(ly < y0 && ly > yTop) {
		t.Fatalf("limit at %v, axis from %v to %v", ly, y0, yTop)
	}
	// No limit: no line.
	c.Limit = 0
	if svg := parse(t, string(c.SVG())); svg.all("line", "limit") != nil {
		t.Fatal("a limit line with no limit")
	}
	c.Points = nil
	parse(t, string(c.SVG()))
	parse(t, "<div>"+string(c.Table())+"</div>")
}

func TestChartEscapes(t *testing.T) {
	title := `<script>alert("x")</script> & 'co'`
	c := &usage.Chart{ID: `a"b<`, Title: title, Points: days(), Step: 24 * time.Hour, Limit: 10000}
	out := string(c.SVG())
	if strings.Contains(out, "<script") || strings.Contains(out, `a"b<`) {
		t.Fatalf("unescaped: %s", out[:300])
	}
	svg := parse(t, out)
	if got := svg.all("title", "")[0].Text; got != title {
		t.Fatalf("title read back %q", got)
	}
	if got := svg.attr("aria-labelledby"); got != `a"b<-title a"b<-desc` {
		t.Fatalf("aria-labelledby read back %q", got)
	}
	table := parse(t, string(c.Table()))
	if got := table.all("caption", "")[0].Text; got != title+" (limit 10,000 per day)" {
		t.Fatalf("caption %q", got)
	}
}

// rows returns the table's body rows as text cells.
func rows(t *testing.T, table *node) [][]string {
	t.Helper()
	var out [][]string
	for _, tr := range table.all("tbody", "")[0].all("tr", "") {
		var cells []string
		for _, c := range tr.Nodes {
			cells = append(cells, c.Text)
		}
		out = append(out, cells)
	}
	return out
}

func TestChartTable(t *testing.T) {
	c := &usage.Chart{Title: "Requests per day", Points: days(), Step: 24 * time.Hour, Limit: 10000}
	table := parse(t, string(c.Table()))
	if th := table.all("th", ""); th[0].attr("scope") != "col" || th[0].Text != "Day (UTC)" {
		t.Fatalf("first header %+v", th[0])
	}
	rs := rows(t, table)
	if len(rs) != 30 || strings.Join(rs[28], "|") != "20 Nov|10,003|3" || strings.Join(rs[29], "|") != "21 Nov|2,900|0" {
		t.Fatalf("%d rows: %v .. %v", len(rs), rs[28], rs[29])
	}
	if table.all("tbody", "")[0].all("th", "")[0].attr("scope") != "row" {
		t.Fatal("rows are not headed")
	}

	// 1440 minutes: one row per hour, with its busiest minute.
	c = &usage.Chart{Title: "Requests per minute", Points: minutes(), Step: time.Minute, Limit: 60}
	table = parse(t, string(c.Table()))
	rs = rows(t, table)
	if len(rs) != 24 {
		t.Fatalf("%d rows for 24 hours", len(rs))
	}
	var sum int64
	for _, p := range minutes()[22*60 : 23*60] {
		sum += p.Total()
	}
	if got := strings.Join(rs[22], "|"); got != "21 Nov 08:00|"+num(sum)+"|9|69" {
		t.Fatalf("08:00 row %q, want sum %d", got, sum)
	}
	// An hour of a zone half an hour off UTC is still an hour.
	c.Location, _ = time.LoadLocation("Asia/Kolkata")
	rs = rows(t, parse(t, string(c.Table())))
	if len(rs) != 25 || rs[0][0] != "20 Nov 15:00" || rs[1][0] != "20 Nov 16:00" || rs[24][0] != "21 Nov 15:00" {
		t.Fatalf("%d rows in Kolkata: %v %v .. %v", len(rs), rs[0], rs[1], rs[24])
	}
}

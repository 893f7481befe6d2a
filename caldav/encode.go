package caldav

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/amsdev/ams"
	"github.com/emersion/go-ical"
)

// Writing iCalendar that every reader takes, whatever ams has stored.
//
// go-ical escapes "\n" in TEXT values but refuses a value holding a "\r"
// (or a raw line break in a property that is not TEXT), and it writes
// each property on one line however long. So ams's own text goes through
// icalText before it is set, every property through sanitize before the
// object is encoded, and the encoded lines through fold (RFC 5545,
// section 3.1: at most 75 octets a line, never inside a UTF-8 character).

// maxLine is the longest content line RFC 5545 allows, in octets, without
// its CRLF.
const maxLine = 75

// icalText returns s as the text of an iCalendar TEXT value: line endings
// made "\n" (the encoder writes them "\n" escaped), the control
// characters RFC 5545 does not allow in TEXT (those of U+0000..U+001F but
// the tab, and U+007F) dropped, and invalid UTF-8 replaced by U+FFFD. It
// is the identity on text that holds none of these.
func icalText(s string) string {
	s = ams.NormalizeNewlines(s)
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// sanitize makes every property value of c and its children encodable:
// a line break left in a value (a remote object's property read with a
// lone "\r", a row stored before input was normalised) is written as the
// escape "\n" in a TEXT value and as a space in any other.
func sanitize(c *ical.Component) {
	for name, props := range c.Props {
		for i := range props {
			p := &props[i]
			if !strings.ContainsAny(p.Value, "\r\n") {
				continue
			}
			v := ams.NormalizeNewlines(p.Value)
			if t := p.ValueType(); t == ical.ValueText || t == ical.ValueDefault {
				v = strings.ReplaceAll(v, "\n", `\n`)
			} else {
				v = strings.ReplaceAll(v, "\n", " ")
			}
			p.Value = v
		}
		c.Props[name] = props
	}
	for _, child := range c.Children {
		sanitize(child)
	}
}

// encodeCalendar writes cal as iCalendar: sanitized, then encoded by
// go-ical, then folded.
func encodeCalendar(w io.Writer, cal *ical.Calendar) error {
	sanitize(cal.Component)
	var b bytes.Buffer
	if err := ical.NewEncoder(&b).Encode(cal); err != nil {
		return err
	}
	_, err := w.Write(fold(b.Bytes()))
	return err
}

// fold folds the content lines of an encoded iCalendar object (CRLF line
// ends) that are longer than 75 octets: each continuation line starts
// with a space, and no UTF-8 character is cut.
func fold(data []byte) []byte {
	if !hasLongLine(data) {
		return data
	}
	out := make([]byte, 0, len(data)+len(data)/maxLine*3)
	for len(data) > 0 {
		i := bytes.Index(data, []byte("\r\n"))
		var line []byte
		if i < 0 {
			line, data = data, nil
		} else {
			line, data = data[:i], data[i+2:]
		}
		limit := maxLine
		for len(line) > limit {
			n := limit
			for n > 0 && !utf8.RuneStart(line[n]) {
				n--
			}
			if n == 0 { // not UTF-8: cut where the limit is
				n = limit
			}
			out = append(out, line[:n]...)
			out = append(out, "\r\n "...)
			line = line[n:]
			limit = maxLine - 1 // after the leading space
		}
		out = append(out, line...)
		if i >= 0 {
			out = append(out, "\r\n"...)
		}
	}
	return out
}

func hasLongLine(data []byte) bool {
	for len(data) > 0 {
		i := bytes.Index(data, []byte("\r\n"))
		if i < 0 {
			return len(data) > maxLine
		}
		if i > maxLine {
			return true
		}
		data = data[i+2:]
	}
	return false
}

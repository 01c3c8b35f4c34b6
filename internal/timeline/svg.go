package timeline

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/zkherald/herald/sinks/audit"
)

// The drawing's geometry, in SVG user units (pixels at 100 %).
const (
	width    = 1120
	labelW   = 300
	plotX0   = labelW + 10
	plotX1   = width - 20
	top      = 64 // legend and axis above the first line
	rowH     = 40
	barH     = 22
	charW    = 7 // about one character of the 12-unit font
	minLabel = 3 // characters worth writing inside a bar
)

// Colours chosen for contrast: white on the bar's blue is 8.6:1, the
// labels' near-black on white 16:1; gaps and unseen stretches differ from
// bars by hatching and outline as well as by colour.
const (
	colHeld   = "#1f4e8c"
	colHeld2  = "#0e5a5a" // white on it: 7.6:1
	colGap    = "#b45309"
	colUnseen = "#6b7280"
	colJoin   = "#047857"
	colLeave  = "#b91c1c"
	colText   = "#111827"
)

// WriteSVG draws the chart as one self-contained SVG document.
func (c Chart) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c.svg(bw)
	return bw.Flush()
}

// svg writes the <svg> element (no XML prolog, so it can stand inside an
// HTML page as well as in a file of its own).
func (c Chart) svg(w *bufio.Writer) {
	h := top + rowH*max(len(c.Lines), 1) + 30
	tenures := 0
	for _, l := range c.Lines {
		for _, t := range l.Tenures {
			if !t.Missing { // a stretch of missing owners is no tenure
				tenures++
			}
		}
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" class="herald-timeline" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-labelledby="tl-title tl-desc" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12">`+"\n", width, h, width, h)
	fmt.Fprintf(w, `<title id="tl-title">Who led when: %s to %s (UTC)</title>`+"\n", esc(stamp(c.From, c.span())), esc(stamp(c.To, c.span())))
	fmt.Fprintf(w, `<desc id="tl-desc">%d groups, %d tenures. A solid bar is an owner seen holding, labelled with its id and term; orange hatching is a gap where an owner may be missing; grey hatching is a stretch nobody observed; green and red triangles are candidates joining and leaving.</desc>`+"\n", len(c.Lines), tenures)
	fmt.Fprintf(w, `<defs><pattern id="tl-gap" patternUnits="userSpaceOnUse" width="8" height="8" patternTransform="rotate(45)"><rect width="8" height="8" fill="#fff7ed"/><rect width="3" height="8" fill="%s"/></pattern>`, colGap)
	fmt.Fprintf(w, `<pattern id="tl-unseen" patternUnits="userSpaceOnUse" width="8" height="8" patternTransform="rotate(-45)"><rect width="8" height="8" fill="#f3f4f6"/><rect width="2" height="8" fill="%s"/></pattern></defs>`+"\n", colUnseen)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, h)
	c.legend(w)
	c.axis(w, h)
	for i, l := range c.Lines {
		c.line(w, l, top+i*rowH)
	}
	if len(c.Lines) == 0 {
		fmt.Fprintf(w, `<text x="%d" y="%d" fill="%s">No leadership or lock events in this window.</text>`+"\n", plotX0, top+rowH/2, colText)
	}
	fmt.Fprintln(w, `</svg>`)
}

func (c Chart) legend(w *bufio.Writer) {
	x := plotX0
	item := func(swatch, label string) {
		fmt.Fprintf(w, `<g class="legend">%s<text x="%d" y="16" fill="%s">%s</text></g>`, swatch, x+22, colText, esc(label))
		x += 22 + len(label)*charW + 24
	}
	fmt.Fprint(w, `<g aria-hidden="true">`)
	item(fmt.Sprintf(`<rect x="%d" y="6" width="16" height="12" rx="2" fill="%s"/>`, x, colHeld), "held (owner seen holding)")
	item(fmt.Sprintf(`<rect x="%d" y="6" width="16" height="12" fill="url(#tl-gap)" stroke="%s"/>`, x, colGap), "gap: an owner may be missing")
	item(fmt.Sprintf(`<rect x="%d" y="6" width="16" height="12" fill="url(#tl-unseen)" stroke="%s" stroke-dasharray="3 2"/>`, x, colUnseen), "not observed")
	item(fmt.Sprintf(`<path d="M%d 18 l6 -10 l6 10 z" fill="%s"/>`, x+2, colJoin), "joined")
	item(fmt.Sprintf(`<path d="M%d 8 l6 10 l6 -10 z" fill="%s"/>`, x+2, colLeave), "left")
	fmt.Fprintln(w, `</g>`)
}

// axis draws time ticks over the plot and a faint rule at each.
func (c Chart) axis(w *bufio.Writer, h int) {
	span := c.span()
	step := tickStep(span)
	fmt.Fprint(w, `<g class="axis" aria-hidden="true">`)
	// At most 20 ticks: a span past what a Duration holds (times
	// centuries apart) makes step too short for it.
	for t, n := c.From.Truncate(step).Add(step), 0; !t.After(c.To) && n < 20; t, n = t.Add(step), n+1 {
		x := c.x(t)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e7eb"/>`, x, top-12, x, h-24)
		anchor := "middle"
		if x > plotX1-40 {
			anchor = "end"
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="%s" fill="%s">%s</text>`, x, top-16, anchor, colText, esc(stamp(t, span)))
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" fill="%s">times in UTC</text>`, plotX0, h-8, colUnseen)
	fmt.Fprintln(w, `</g>`)
}

// line draws one group: its name, its spans and its marks.
func (c Chart) line(w *bufio.Writer, l Line, y int) {
	fmt.Fprintf(w, `<g class="line" data-group="%s">`, esc(l.Group))
	name := l.Group
	if room := (labelW - 10) / charW; len(name) > room {
		name = "…" + name[len(name)-room+1:]
	}
	fmt.Fprintf(w, `<text x="6" y="%d" fill="%s"><title>%s</title>%s</text>`, y+rowH/2+4, colText, esc(l.Group), esc(name))
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#e5e7eb"/>`, plotX0, y+rowH-2, plotX1, y+rowH-2)
	by := y + (rowH-barH)/2
	held := 0
	for _, s := range l.Spans(c.From, c.To) {
		x0, x1 := c.x(s.From), c.x(s.To)
		wd := max(x1-x0, 2)
		switch s.Kind {
		case Held:
			t := s.Tenure
			fill := colHeld
			if held%2 == 1 {
				fill = colHeld2 // tenures side by side stay apart
			}
			held++
			label := owner(*t) + " · term " + fmt.Sprint(t.Term)
			fmt.Fprintf(w, `<g class="tenure" data-group="%s" data-owner="%s" data-term="%d"><rect x="%.1f" y="%d" width="%.1f" height="%d" rx="3" fill="%s"><title>%s</title></rect>`,
				esc(l.Group), esc(t.Owner.Node), t.Term, x0, by, wd, barH, fill, esc(describe(*t, l.heldNowTenure(t))))
			if fit := int(wd-8) / charW; fit >= minLabel {
				fmt.Fprintf(w, `<text x="%.1f" y="%d" fill="#ffffff" aria-hidden="true">%s</text>`, x0+4, by+barH/2+4, esc(clip(label, fit)))
			}
			fmt.Fprint(w, `</g>`)
		case Gap:
			what := fmt.Sprintf("gap from %s to %s: an owner may be missing here (no observer saw every change)", stamp(s.From, 0), stamp(s.To, 0))
			if s.Tenure != nil && s.Tenure.Missing {
				what = missingText(*s.Tenure)
			}
			fmt.Fprintf(w, `<g class="gap"><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#tl-gap)" stroke="%s"><title>%s</title></rect>`,
				x0, by, wd, barH, colGap, esc(what))
			if int(wd-8)/charW >= 3 {
				fmt.Fprintf(w, `<text x="%.1f" y="%d" fill="%s" font-weight="bold" aria-hidden="true">gap</text>`, x0+4, by+barH/2+4, colText)
			}
			fmt.Fprint(w, `</g>`)
		case Unseen:
			what := "not observed: " + owner(*s.Tenure) + " ended some time in this stretch"
			if s.Tenure.Open() {
				what = "not observed since " + owner(*s.Tenure) + " was last seen holding"
			}
			fmt.Fprintf(w, `<g class="unseen"><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#tl-unseen)" stroke="%s" stroke-dasharray="3 2"><title>%s</title></rect></g>`,
				x0, by, wd, barH, colUnseen, esc(fmt.Sprintf("%s (%s to %s)", what, stamp(s.From, 0), stamp(s.To, 0))))
		}
	}
	for _, m := range l.Marks {
		x := c.x(m.At)
		who := m.Node
		if m.ID != "" {
			who = m.ID + " (" + m.Node + ")"
		}
		if m.Joined {
			fmt.Fprintf(w, `<path class="mark joined" d="M%.1f %d l5 -8 l5 8 z" fill="%s"><title>%s</title></path>`, x-5, by, colJoin, esc("candidate "+who+" joined at "+stamp(m.At, 0)))
		} else {
			fmt.Fprintf(w, `<path class="mark left" d="M%.1f %d l5 8 l5 -8 z" fill="%s"><title>%s</title></path>`, x-5, by+barH, colLeave, esc("candidate "+who+" left at "+stamp(m.At, 0)))
		}
	}
	fmt.Fprintln(w, `</g>`)
}

// heldNowTenure: t is the line's last tenure and is seen held now.
func (l Line) heldNowTenure(t *audit.Tenure) bool {
	n := len(l.Tenures)
	return n > 0 && &l.Tenures[n-1] == t && l.heldNow(n-1)
}

// x maps a time onto the plot.
func (c Chart) x(t time.Time) float64 {
	span := c.To.Sub(c.From)
	if span <= 0 {
		return plotX0
	}
	f := float64(t.Sub(c.From)) / float64(span)
	f = min(max(f, 0), 1)
	return plotX0 + f*float64(plotX1-plotX0)
}

func (c Chart) span() time.Duration { return c.To.Sub(c.From) }

// tickStep picks a round step giving at most about eight ticks.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour} {
		if span/s <= 8 {
			return s
		}
	}
	// Longer: whole months of 30 days, still about eight ticks (a log
	// whose times span centuries draws eight, not a hundred thousand).
	month := 30 * 24 * time.Hour
	return month * max(1, (span/8+month-1)/month)
}

// stamp formats t for a window of span (0: with the date and seconds).
func stamp(t time.Time, span time.Duration) string {
	t = t.UTC()
	switch {
	case span == 0:
		return t.Format("2006-01-02 15:04:05.000")
	case span > 36*time.Hour:
		return t.Format("01-02 15:04")
	case span > 10*time.Minute:
		return t.Format("15:04")
	}
	return t.Format("15:04:05")
}

// owner names a tenure's owner: its id, else its node.
func owner(t audit.Tenure) string {
	if t.Owner.ID != "" {
		return t.Owner.ID
	}
	return t.Owner.Node
}

// missingText is a Missing row in words: owners may have held unseen
// from the group's last observation to the event that found it empty.
func missingText(t audit.Tenure) string {
	since := "some time"
	if !t.From.IsZero() {
		since = stamp(t.From, 0)
	}
	return fmt.Sprintf("gap from %s to %s: owners may be missing here (nobody observed the group; at %s it was found without an owner, and not every change was seen)",
		since, stamp(t.Until, 0), stamp(t.Until, 0))
}

// describe is a tenure in words, for its tooltip and its table row.
func describe(t audit.Tenure, heldNow bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s), term %d", owner(t), t.Owner.Node, t.Term)
	switch {
	case t.From.IsZero():
		b.WriteString(", start not seen")
	case t.FromSeen:
		fmt.Fprintf(&b, ", from %s", stamp(t.From, 0))
	default:
		fmt.Fprintf(&b, ", first seen holding %s", stamp(t.From, 0))
	}
	switch {
	case heldNow:
		b.WriteString(", holding now")
	case t.Open():
		fmt.Fprintf(&b, ", last seen holding %s", stamp(t.LastSeen, 0))
	case t.UntilSeen:
		fmt.Fprintf(&b, ", until %s", stamp(t.Until, 0))
	default:
		fmt.Fprintf(&b, ", ended after %s (not seen)", stamp(t.Until, 0))
	}
	if t.Reason != "" {
		fmt.Fprintf(&b, ", %s", t.Reason)
	}
	if t.Gap {
		b.WriteString("; an owner may be missing before it")
	}
	if t.TwoOwners {
		b.WriteString("; another client may have believed it owned meanwhile")
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	return s[:n-1] + "…"
}

// esc escapes s for XML text and attributes. Characters XML cannot hold
// at all (controls other than tab and newline, from a log written by hand
// or a foreign publisher) become U+FFFD: a drawing that does not parse
// shows nothing.
func esc(s string) string {
	return html.EscapeString(strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '\uFFFD'
		}
		return r
	}, s))
}

package timeline

import (
	"bufio"
	"fmt"
	"io"
	"time"
)

// Style is the CSS the pages share: readable type, high contrast, a
// visible focus ring.
const Style = `
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; background: #ffffff; margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 1.4rem; margin: 0 0 4px; }
h2 { font-size: 1.1rem; margin: 24px 0 8px; }
p.sub { margin: 0 0 12px; color: #374151; }
figure { margin: 12px 0; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; font-weight: 600; padding: 6px 0; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
th { background: #f3f4f6; }
td.num { font-variant-numeric: tabular-nums; }
a { color: #1d4ed8; }
a:focus, input:focus, tr:focus, button:focus { outline: 3px solid #f59e0b; outline-offset: 1px; }
.gap { color: #92400e; font-weight: 600; }
`

// WriteHTML writes a self-contained page: the chart, and the same
// tenures as a table (what a screen reader or a search reads).
func (c Chart) WriteHTML(w io.Writer, title, source string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", esc(title), Style)
	fmt.Fprintf(bw, "<h1>%s</h1>\n<p class=\"sub\">%s to %s (UTC), from %s. Written by herald %s.</p>\n",
		esc(title), esc(stamp(c.From, 0)), esc(stamp(c.To, 0)), esc(source), esc(time.Now().UTC().Format(time.RFC3339)))
	fmt.Fprintln(bw, `<figure>`)
	c.svg(bw)
	fmt.Fprintln(bw, `</figure>`)
	c.table(bw)
	fmt.Fprintln(bw, "</main>\n</body>\n</html>")
	return bw.Flush()
}

// table lists the tenures, one row each, with the gaps between them.
func (c Chart) table(w *bufio.Writer) {
	fmt.Fprintln(w, `<table class="tenures">`)
	fmt.Fprintln(w, `<caption>Tenures, per group in order of term</caption>`)
	fmt.Fprintln(w, `<thead><tr><th scope="col">Group</th><th scope="col">Owner</th><th scope="col">Term</th><th scope="col">From</th><th scope="col">Until</th><th scope="col">Ended because</th><th scope="col">Before it</th></tr></thead>`)
	fmt.Fprintln(w, `<tbody>`)
	for _, l := range c.Lines {
		for i := range l.Tenures {
			t := l.Tenures[i]
			if t.Missing {
				from := "not known"
				if !t.From.IsZero() {
					from = "after " + stamp(t.From, 0) + " (last observed)"
				}
				fmt.Fprintf(w, "<tr class=\"missing\"><td>%s</td><td>not observed</td><td class=\"num\">-</td><td>%s</td><td>%s (found without an owner)</td><td></td><td><span class=\"gap\">gap: owners may be missing</span></td></tr>\n",
					esc(l.Group), esc(from), esc(stamp(t.Until, 0)))
				continue
			}
			from := "not seen"
			if !t.From.IsZero() {
				from = stamp(t.From, 0)
				if !t.FromSeen {
					from = "≤ " + from + " (first seen)"
				}
			}
			until := ""
			switch {
			case l.heldNow(i):
				until = "holding now"
			case t.Open():
				until = "≥ " + stamp(t.LastSeen, 0) + " (last seen)"
			case t.UntilSeen:
				until = stamp(t.Until, 0)
			default:
				until = "≥ " + stamp(t.Until, 0) + " (end not seen)"
			}
			before := ""
			if t.Gap {
				before = `<span class="gap">gap: an owner may be missing</span>`
			}
			if t.TwoOwners {
				before += ` <span class="gap">two owners possible: another client may have believed it owned</span>`
			}
			fmt.Fprintf(w, "<tr><td>%s</td><td>%s <small>(%s)</small></td><td class=\"num\">%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
				esc(l.Group), esc(owner(t)), esc(t.Owner.Node), t.Term, esc(from), esc(until), esc(string(t.Reason)), before)
		}
	}
	fmt.Fprintln(w, `</tbody></table>`)
}

// WriteHTMLFragment writes the chart and its table, to stand in a page of
// the caller's (the bridge's live timeline).
func (c Chart) WriteHTMLFragment(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, `<figure id="chart">`)
	c.svg(bw)
	fmt.Fprintln(bw, `</figure>`)
	c.table(bw)
	return bw.Flush()
}

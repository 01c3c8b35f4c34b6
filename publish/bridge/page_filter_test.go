package bridge_test

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/browsertest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestLivePageFilterAsYouTypeFindsGroupsPastItsBound: with more groups
// than the page lists (500), a filter typed in the box (not submitted)
// shows the groups that match, listed or not, with their count, and the
// rows follow live from there. Before, typing only hid the listed rows: a
// group past the first 500 never showed, the table stood empty under
// "Showing 500 of 501 groups", as if nothing matched.
func TestLivePageFilterAsYouTypeFindsGroupsPastItsBound(t *testing.T) {
	addrs := zkAddrs(t)
	root := groupPath(t)
	s := session(t, addrs)
	conn := s.Conn()
	for _, p := range []string{path.Dir(root), root} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for i := range 501 {
		g := fmt.Sprintf("%s/g-%03d", root, i)
		if _, err := conn.Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(g+"/n_", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, bridge.Config{Servers: addrs, Discover: []string{root}, HTTPAddr: "127.0.0.1:0", Source: "page-typed", Sinks: []publish.Sink{auditSink(t)}})
	waitStatus(t, r.Bridge, 60*time.Second, "every group observed", func(st bridge.Status) bool { return len(st.NotReady()) == 0 && len(st.Groups) == 501 })
	ctx := browsertest.New(t, 90*time.Second)
	past := fmt.Sprintf("%s/g-%03d", root, 500)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+r.HTTPAddr()+"/"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-group="%s/g-499"]`, root), chromedp.ByQuery),
		chromedp.SendKeys(`#q`, "g-500", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	typed := time.Now()
	var caption string
	var visible []string
	look := func() {
		_ = chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector("#groups caption").textContent`, &caption),
			chromedp.Evaluate(`[...document.querySelectorAll("#groups tbody tr")].filter(r => !r.hidden).map(r => r.dataset.group)`, &visible))
	}
	deadline := time.Now().Add(10 * time.Second)
	for look(); len(visible) != 1 || visible[0] != past || !strings.HasPrefix(caption, "1 group."); look() {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after typing %q: rows shown %v, caption %q; want %s alone, \"1 group.\"", "g-500", visible, caption, past)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not ordering
	}
	// From there the row follows live.
	ch, _, err := conn.Children(past)
	if err != nil || len(ch) != 1 {
		t.Fatalf("%s's node: %v, %v", past, ch, err)
	}
	owner := func() string {
		var o string
		_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`(document.querySelector('tr[data-group=%q] td[data-k=owner]')||{}).textContent||""`, past), &o))
		return strings.TrimSpace(o)
	}
	if o := owner(); !strings.Contains(o, ch[0]) {
		t.Fatalf("%s's owner on the page: %q, want %s", past, o, ch[0])
	}
	if err := conn.Delete(past+"/"+ch[0], -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the owner's release on the filtered page", func() bool { return owner() == "—" })
	// The page's stream before the filter must not go on judging it: it
	// would grey the page as silent after its watchdog's 6.5 s.
	time.Sleep(time.Until(typed.Add(8 * time.Second)))
	var greyed bool
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("groups").classList.contains("interrupted")`, &greyed)); err != nil || greyed {
		t.Fatalf("the filtered page is greyed as if its stream were down (%v)", err)
	}
}

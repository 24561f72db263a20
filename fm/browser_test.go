package fm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/chromedp/chromedp"
)

// needChromium returns the browser for a web page test, or skips the test
// (fails it with ICN_REQUIRE_BROWSER set) when there is none.
func needChromium(t testing.TB) string {
	browser := findChromium()
	if browser == "" {
		if os.Getenv("ICN_REQUIRE_BROWSER") != "" {
			t.Fatal("no Chromium found but ICN_REQUIRE_BROWSER is set")
		}
		t.Skip("web page test skipped: no Chromium on this machine; install Debian's chromium package or set ICN_CHROMIUM=PATH to run it, ICN_REQUIRE_BROWSER=1 to make its absence a failure")
	}
	return browser
}

// findChromium returns a headless-capable browser binary, or "".
func findChromium() string {
	if p := os.Getenv("ICN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestWebPageAllocates loads the page in a real headless Chromium, places
// a job with the form and waits until the page draws its nodes in the
// job's colour; then fails a link and sees it drawn as failed.
func TestWebPageAllocates(t *testing.T) {
	browser := needChromium(t)
	s, tok := openTest(t, t.TempDir(), "torus:4x4x2", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()

	ctx, cancel := newBrowser(t, browser)
	defer cancel()
	// The first call starts the browser and must not carry a timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#token="+tok)); err != nil {
		t.Fatalf("browser: %v", err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	err := chromedp.Do(tctx,
		chromedp.WaitVisible(`circle[data-node="0.0.0"]`),
		chromedp.SetValue(`#alloc-form input[name=nodes]`, "4"),
		chromedp.SetValue(`#alloc-form input[name=transit]`, "0"),
		chromedp.Click(`#alloc-btn`),
		chromedp.WaitVisible(`circle[data-job="1"]`),
	)
	if err != nil {
		t.Fatalf("browser: allocation not drawn: %v", err)
	}
	summary, err1 := chromedp.Run(tctx, chromedp.Text(`#summary`))
	status, err2 := chromedp.Run(tctx, chromedp.Text(`#status`))
	jobNodes, err3 := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('circle[data-job="1"]').length`))
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatalf("browser: %v", err)
	}
	// Fail a link through the form and see it drawn dashed.
	err = chromedp.Do(tctx,
		chromedp.SetValue(`#fail-form input[name=target]`, "1.1.0+X"),
		chromedp.Click(`#fail-form button[value=fail]`),
		chromedp.WaitVisible(`line.failed[data-link="1.1.0+X"]`),
	)
	if err != nil {
		t.Fatalf("browser: failed link not drawn: %v", err)
	}
	failedLinks, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('line.failed').length`))
	if err != nil {
		t.Fatal(err)
	}
	// The failure field's example is a link and a node of this fabric.
	hint, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector('#fail-form input[name=target]').placeholder`))
	if err != nil {
		t.Fatal(err)
	}
	if link, node, ok := strings.Cut(hint, " or "); !ok || s.g.NodeByName(node) < 0 || func() bool { _, err := s.g.ParseLinks(link); return err != nil }() {
		t.Errorf("failure field example %q does not name a link and a node of %s", hint, s.g.Name())
	}
	if jobNodes != 4 {
		t.Errorf("%d nodes drawn for job 1, want 4", jobNodes)
	}
	if !strings.Contains(status, "job 1 placed") || !strings.Contains(summary, "1 jobs") {
		t.Errorf("status %q, summary %q", status, summary)
	}
	if failedLinks < 1 {
		t.Errorf("failed link not drawn")
	}
	jobs, _ := s.Jobs(false)
	if len(jobs) != 1 || len(jobs[0].Active) != 4 {
		t.Fatalf("service has %d jobs after the page's allocation", len(jobs))
	}
	// Fail a node of the job: the page shows it broken with a migrate
	// button; migrating brings it back.
	err = chromedp.Do(tctx,
		chromedp.SetValue(`#fail-form input[name=target]`, jobs[0].Active[0]),
		chromedp.Click(`#fail-form button[value=fail]`),
		chromedp.WaitVisible(`#jobs td.rs-broken`),
		// Rows are drawn again on every refresh: a click by coordinates
		// can land on a row the page has just replaced, so the button is
		// clicked from the page's own event loop.
		chromedp.WaitVisible(`button[data-migrate="1"]`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('button[data-migrate="1"]').click()`),
		chromedp.WaitVisible(`#jobs td.rs-migrated`),
	)
	if err != nil {
		t.Fatalf("browser: broken job not shown or not migrated: %v", err)
	}
	if j, _ := s.Job(1); j.Routing != "migrated" || slices.Contains(j.Active, jobs[0].Active[0]) {
		t.Fatalf("after the page's migrate: %+v", j)
	}
}

// TestWebPageTokenFlow: without a token the page says how to get in and
// stops polling (no 401 every 3 s); pasting a #token= address into the
// open tab loads the fabric without a reload.
func TestWebPageTokenFlow(t *testing.T) {
	browser := needChromium(t)
	s, tok := openTest(t, t.TempDir(), "torus:4x4x2", nil)
	defer s.Close()
	var mu sync.Mutex
	unauthorized := 0
	h := api.New(s, api.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") && r.Header.Get("Authorization") != "Bearer "+tok {
			mu.Lock()
			unauthorized++
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("browser: %v", err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(tctx, chromedp.WaitVisible(`#status.err`)); err != nil {
		t.Fatalf("browser: %v", err)
	}
	msg, err := chromedp.Run(tctx, chromedp.Text(`#status`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, ".token") {
		t.Errorf("status without a token: %q", msg)
	}
	mu.Lock()
	first := unauthorized
	mu.Unlock()
	time.Sleep(7 * time.Second) // two polling periods
	mu.Lock()
	later := unauthorized
	mu.Unlock()
	if later != first {
		t.Errorf("the page kept polling without a token: %d refused requests, then %d", first, later)
	}
	// The address icn serve prints, pasted into the open tab.
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[string](`location.hash = "#token=`+tok+`"`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tctx, chromedp.WaitVisible(`circle[data-node="0.0.0"]`)); err != nil {
		t.Fatalf("browser after pasting the token: %v", err)
	}
	summary, err := chromedp.Run(tctx, chromedp.Text(`#summary`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary, "torus:4x4x2") {
		t.Errorf("summary after the token: %q", summary)
	}
}

// TestWebPageDrawsEveryFabric loads the page on a 4-dimensional torus, a
// fat tree and a dragonfly and checks what an operator must see: every
// link drawn (a torus's Z and W links too), with length on switched
// fabrics; a failed Z link marked failed; the job form only where the
// fabric takes jobs, its reason otherwise; the selected multicast group's
// root and members marked; the nodes and links the page holds (built
// from GET /api/fabric?compact=1's sizes on a torus) are GET
// /api/fabric's. A screenshot of each is kept in the test's directory
// (ICN_SCREENSHOTS=DIR keeps them there).
func TestWebPageDrawsEveryFabric(t *testing.T) {
	browser := needChromium(t)
	shots := os.Getenv("ICN_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	for _, c := range []struct {
		spec, fail string
		jobs       bool
		marks      bool // a job with transit nodes added and a broken one with its pair (placeMarkedJobs)
	}{
		{"torus:4x4x4x2", "0.0.0.0+Z", true, true},
		{"fattree:k=4,n=3", "", false, false},
		{"dragonfly:a=4,p=2,h=2", "", false, false},
		{"torus:8x8x4x4", "0.0.0.0+W", true, false},
		{"torus:12", "3+X", true, false},                       // one dimension
		{"torus:3x2x2x2x2x3", "0.0.0.0.0.0+U", true, false},    // six
		{"torus:4x5x3x2:mesh=X,W", "0.0.0.0+Z", true, false},   // mesh dimensions: no wrap stub in X, no W tick beyond W=1
		{"torus:16x16x8x2:mesh=Y,W", "0.0.0.0+Z", true, false}, // the same on a canvas
		{"torus:16x16x16", "5.5.5+Z", true, true},              // a canvas
		{"torus:32x32x32", "0.0.0+Z", true, true},              // a canvas
		{"file:../unicast/testdata/ft2.ibnet", "", false, false},
		{"fattree:m=40,n=3", "L1-0[21]", false, false}, // 16 000 hosts, a canvas
	} {
		t.Run(c.spec, func(t *testing.T) {
			var s *Service
			var tok string
			var transit, broken *client.JobRecord
			if c.marks {
				s, tok, transit, broken = placeMarkedJobs(t, t.TempDir(), c.spec)
			} else {
				s, tok = openTest(t, t.TempDir(), c.spec, nil)
			}
			defer s.Close()
			srv := httptest.NewServer(api.New(s, api.Options{}))
			defer srv.Close()
			if c.fail != "" {
				if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: c.fail}); err != nil {
					t.Fatal(err)
				}
			}
			if c.marks {
				transit, _ = s.Job(transit.ID)
				broken, _ = s.Job(broken.ID)
			}
			hosts := s.g.Endpoints()
			if len(hosts) < 3 {
				hosts = s.g.Switches()
			}
			for _, h := range hosts[:3] {
				if _, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: "g1", Member: s.g.NodeName(h), MemberCount: 3}); err != nil {
					t.Fatal(err)
				}
			}
			// A browser of its own: tabs of one browser, opened and closed
			// one after another, once left the opening of a tab waiting
			// for good (-race, load average 8).
			ctx, cancel := newBrowser(t, browser, chromedp.WindowSize(1400, 1000))
			defer cancel()
			tctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
			defer cancelT()
			if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/#token="+tok)); err != nil {
				t.Fatalf("browser: %v", err)
			}
			num := func(js string) int {
				v, err := chromedp.Run(tctx, chromedp.Evaluate[int](js))
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			flag := func(js string) bool {
				v, err := chromedp.Run(tctx, chromedp.Evaluate[bool](js))
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			// The fabric the page holds, built from the compact answer on a
			// torus, is the full answer's: every node and link.
			samePageFabric := func() {
				t.Helper()
				diff, err := chromedp.Run(tctx, chromedp.Evaluate[string](`(async () => {
					const full = await api("GET", "/api/fabric");
					if (full.nodes.length !== fabric.nodes.length || full.links.length !== fabric.links.length)
						return "page " + fabric.nodes.length + " nodes, " + fabric.links.length + " links";
					const same = (a, b, keys) => keys.every((k) => JSON.stringify(a[k] || 0) === JSON.stringify(b[k] || 0));
					for (let i = 0; i < full.nodes.length; i++)
						if (!same(full.nodes[i], fabric.nodes[i], ["id", "name", "kind", "coord", "job", "failed", "level", "group"])) return "node " + i + ": " + JSON.stringify(full.nodes[i]);
					for (let i = 0; i < full.links.length; i++)
						if (!same(full.links[i], fabric.links[i], ["id", "name", "a", "b", "dim", "failed"])) return "link " + i + ": " + JSON.stringify(full.links[i]);
					return "";
				})()`, chromedp.EvalAwaitPromise))
				if err != nil {
					t.Fatal(err)
				}
				if diff != "" {
					t.Errorf("the page's fabric differs from GET /api/fabric's: %s", diff)
				}
			}
			str := func(js string) string {
				v, err := chromedp.Run(tctx, chromedp.Evaluate[string](js))
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			// The fabric has been drawn once; the link colour is the one
			// the fabric has, and asked again, the unchanged fabric, jobs
			// and loads come back as 304 (the page keeps what it has).
			if err := chromedp.Do(tctx, chromedp.WaitVisible(`#summary`), chromedp.Poll[chromedp.Void](`typeof fabric !== "undefined" && fabric !== null && lastDrawMs > 0`)); err != nil {
				t.Fatal(err)
			}
			if heat, want := str(`document.querySelector('#heat').value`), map[bool]string{true: "routes", false: "efi"}[c.jobs]; heat != want {
				t.Errorf("link colour %q on a fabric that takes jobs: %v", heat, c.jobs)
			}
			hits, err := chromedp.Run(tctx, chromedp.Evaluate[[]int](`(async () => { const h = kept.hits, m = kept.misses; await refresh(); await refresh(); return [kept.hits - h, kept.misses - m]; })()`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatal(err)
			}
			if hits[0] < 6 || hits[1] != 0 || !flag(`kept.byPath.has("/api/fabric?compact=1")`) {
				t.Errorf("two refreshes of an unchanged fabric: %d answers 304, %d in full", hits[0], hits[1])
			}
			// Offline: everything the page loaded came from the service.
			if away := str(`performance.getEntriesByType("resource").map((e) => e.name).filter((u) => !u.startsWith(location.origin + "/")).join(" ")`); away != "" {
				t.Errorf("the page loaded from elsewhere: %s", away)
			}
			if s.g.NumNodes() > 2048 {
				// Drawn on a canvas: every node, the draw timed by the page.
				if err := chromedp.Do(tctx, chromedp.WaitVisible(`#fabric-canvas[data-drawn]`)); err != nil {
					t.Fatal(err)
				}
				samePageFabric()
				checkCanvasSpace(t, c.spec, num, flag, str)
				if c.marks {
					checkCanvasMarks(t, tctx, s, transit, broken, num, str)
				}
				if n := num(`+document.querySelector('#fabric-canvas').dataset.drawn`); n != s.g.NumNodes() {
					t.Errorf("canvas drew %d of %d nodes", n, s.g.NumNodes())
				}
				ms, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](`[lastDrawMs, firstDrawnAt]`))
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d nodes, %d links drawn on the canvas in %.0f ms (%.0f ms from the page's start, fetching included)", c.spec, s.g.NumNodes(), s.g.NumLinks(), ms[0], ms[1])
				if c.fail != "" {
					// At the overview the failed link is marked red on screen:
					// count red pixels within 10 of its middle.
					if n := num(`(() => {
						const l = fabric.links.find(l => l.name === "` + c.fail + `"), p = linkMid(cv.L, l), dpr = window.devicePixelRatio || 1;
						const x = Math.round(dpr * (p[0] * cv.scale + cv.ox)), y = Math.round(dpr * (p[1] * cv.scale + cv.oy));
						const d = document.querySelector('#fabric-canvas').getContext('2d').getImageData(x - 10, y - 10, 21, 21).data;
						let red = 0;
						for (let i = 0; i < d.length; i += 4) if (d[i] > 180 && d[i + 1] < 90 && d[i + 2] < 90) red++;
						return red;
					})()`); n < 20 {
						t.Errorf("failed link %s: %d red pixels round it at the overview", c.fail, n)
					}
				}
				// The overview, before hovering zooms in.
				png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(shots, strings.NewReplacer(":", "_", ",", "_", "=", "", "/", "_", "..", "").Replace(c.spec)+".png"), png, 0o644)
				// Hover names the node under the pointer, and a link with
				// its load (zoomed in: at the overview a pixel spans many
				// nodes).
				hover := func(pt string) string {
					v, err := chromedp.Run(tctx, chromedp.Evaluate[string](`(() => {
						const cvs = document.querySelector('#fabric-canvas'), r = cvs.getBoundingClientRect(), p = `+pt+`;
						// Zoomed in (as one would to tell nodes apart), p at (100, 100).
						cv.scale = Math.max(cv.scale, 1); cv.ox = 100 - p[0] * cv.scale; cv.oy = 100 - p[1] * cv.scale; drawCanvas();
						cvs.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + cvs.clientLeft + p[0] * cv.scale + cv.ox, clientY: r.top + cvs.clientTop + p[1] * cv.scale + cv.oy, bubbles: true }));
						return document.querySelector('#tip').hidden ? "" : document.querySelector('#tip').textContent;
					})()`))
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
				if tip := hover(`cv.L.pos[0]`); !strings.HasPrefix(tip, s.g.NodeName(0)) {
					t.Errorf("hover on node 0: %q", tip)
				}
				if tip := hover(`linkMid(cv.L, fabric.links[0])`); !strings.HasPrefix(tip, s.g.LinkName(0)+" — ") {
					t.Errorf("hover on link 0: %q", tip)
				}
				return
			}
			// Select the group: its root and members get marked.
			// The lists and the drawing are made anew on every refresh:
			// the condition is checked inside the page (a node found by
			// a WaitVisible can be replaced before its box is read, over
			// and over on a busy machine), and the row is clicked only
			// while no group is selected (a click toggles).
			if err := chromedp.Do(tctx, chromedp.Poll[chromedp.Void](`(() => {
				const tr = document.querySelector('#groups tbody tr');
				if (!tr) return false;
				if (selectedGroup === "") tr.click();
				return !!document.querySelector('circle.mc-root');
			})()`, chromedp.WithPollingInterval(200*time.Millisecond))); err != nil {
				t.Fatalf("group not selected or its root not marked: %v", err)
			}
			samePageFabric()
			drawn := num(`document.querySelectorAll('[data-link]').length`)
			zeroLength := num(`[...document.querySelectorAll('line[data-link]')].filter(l => l.getAttribute('x1') === l.getAttribute('x2') && l.getAttribute('y1') === l.getAttribute('y2')).length`)
			members := num(`document.querySelectorAll('circle.mc-member').length`)
			interplane := num(`document.querySelectorAll('[data-link].interplane').length`)
			failedShown := flag(`!!document.querySelector('[data-link="` + c.fail + `"].failed')`)
			formHidden := flag(`document.querySelector('#alloc-form').hidden`)
			reasonShown := flag(`!document.querySelector('#no-jobs').hidden && document.querySelector('#no-jobs').textContent.length > 10`)
			if len(s.g.Dims()) > 2 {
				// Slice labels readable on screen.
				if h := num(`Math.round(Math.min(...[...document.querySelectorAll('.plane-label')].map(e => e.getBoundingClientRect().height)))`); h < 11 {
					t.Errorf("slice labels %d px high", h)
				}
			}
			if drawn != s.g.NumLinks() || zeroLength != 0 {
				t.Errorf("%d of %d links drawn, %d of zero length", drawn, s.g.NumLinks(), zeroLength)
			}
			if s.g.HasCoords() {
				// Wrap-arounds in the plane are stubs (a line shorter than
				// the cell): one per wrap link of X and Y that joins the
				// ends of a ring longer than 2, none along a mesh
				// dimension.
				want := 0
				for _, lk := range s.g.Links() {
					if d := int(lk.Dim); d >= 0 && d <= 1 && s.g.CoordAt(int(lk.B), d)-s.g.CoordAt(int(lk.A), d) < -1 {
						want++
					}
				}
				stubs := num(`[...document.querySelectorAll('line[data-link]')].filter(l => (l.dataset.dim === "0" || l.dataset.dim === "1") &&
					Math.hypot(l.getAttribute('x2') - l.getAttribute('x1'), l.getAttribute('y2') - l.getAttribute('y1')) < 0.6 * 24).length`)
				if stubs != want {
					t.Errorf("%d wrap-around stubs drawn, the fabric has %d wrap links in X and Y (wrap %v)", stubs, want, s.g.Wrap())
				}
			}
			if members < 2 {
				t.Errorf("%d multicast members marked", members)
			}
			if c.marks {
				// Transit nodes are rings, the active ones filled; the
				// broken job's nodes are marked and its pair joined.
				for _, n := range transit.TransitNodes {
					if !flag(`document.querySelector('circle[data-node="` + n + `"]').classList.contains("transit")`) {
						t.Errorf("transit node %s not drawn as one", n)
					}
				}
				nt, nb := jobNodeCounts(s)
				if n := num(`document.querySelectorAll('circle.transit').length`); n != nt {
					t.Errorf("%d transit nodes drawn, the jobs have %d", n, nt)
				}
				if n := num(`document.querySelectorAll('circle.broken').length`); n != nb {
					t.Errorf("%d nodes of broken jobs drawn, they have %d", n, nb)
				}
				if !flag(`!!document.querySelector('line.unreachable[data-pair="` + broken.Unreachable[0] + ` ` + broken.Unreachable[1] + `"]')`) {
					t.Errorf("the broken job's pair %v is not drawn", *broken.Unreachable)
				}
			}
			if c.fail != "" && !failedShown {
				t.Errorf("failed link %s not drawn failed", c.fail)
			}
			if len(s.g.Dims()) > 2 && interplane == 0 {
				t.Errorf("no link between planes drawn")
			}
			if formHidden == c.jobs || reasonShown == c.jobs {
				t.Errorf("job form hidden %v, reason shown %v on a fabric that takes jobs: %v", formHidden, reasonShown, c.jobs)
			}
			png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100)) // 100: PNG
			if err != nil || len(png) < 1000 {
				t.Fatalf("screenshot: %v (%d bytes)", err, len(png))
			}
			os.WriteFile(filepath.Join(shots, strings.NewReplacer(":", "_", ",", "_", "=", "", "/", "_", "..", "").Replace(c.spec)+".png"), png, 0o644)
		})
	}
}

// newBrowser starts a headless Chromium for a test; cancel stops it.
func newBrowser(t testing.TB, browser string, extra ...chromedp.ExecAllocatorOption) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), append(opts, extra...)...)
	ctx, cancel := chromedp.NewContext(actx)
	return ctx, func() { cancel(); cancelA() }
}

// placeMarkedJobs opens a service on spec with a job that holds transit
// nodes and, with the failure repair turned off, a 2-node job broken with
// its pair by the failure of the links between its nodes. It returns the service, its token and the two jobs.
func placeMarkedJobs(t *testing.T, dir, spec string) (*Service, string, *client.JobRecord, *client.JobRecord) {
	t.Helper()
	// cut fails every link between a 2-node job's nodes.
	cut := func(s *Service, j *client.JobRecord) {
		t.Helper()
		a, b := s.g.NodeByName(j.Active[0]), s.g.NodeByName(j.Active[1])
		for _, c := range s.g.Out(a) {
			if s.g.Dst(int(c)) == b {
				if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: s.g.LinkName(int(c) >> 1)}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	s, tok := openTest(t, dir, spec, nil)
	// The fewest active nodes, from a prime larger than any side up, that
	// take transit nodes (others are released).
	var transit *client.JobRecord
	for n := slices.Max(s.g.Dims()) + 1; transit == nil && n <= 64; n++ {
		j, err := s.Submit("t", client.JobRequest{Nodes: n, Transit: 4})
		switch {
		case err == nil && len(j.TransitNodes) > 0:
			transit = j
		case err == nil:
			if _, err := s.Release("t", j.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if transit == nil {
		t.Fatalf("no job on %s takes transit nodes", spec)
	}
	s.Close()
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), NewRouting: AngaraRouting("angara*"), MulticastTimeout: 5 * time.Second, RepairExtra: -1})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := s.Submit("t", client.JobRequest{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	cut(s, broken)
	transit, _ = s.Job(transit.ID)
	broken, _ = s.Job(broken.ID)
	if len(transit.TransitNodes) == 0 || broken.Routing != client.RouteBroken || broken.Unreachable == nil {
		t.Fatalf("jobs: %+v\n%+v", transit, broken)
	}
	return s, tok, transit, broken
}

// jobNodeCounts returns how many transit nodes the running jobs hold,
// and how many nodes the broken ones.
func jobNodeCounts(s *Service) (transit, broken int) {
	jobs, _ := s.Jobs(false)
	for _, j := range jobs {
		transit += len(j.TransitNodes)
		if j.Routing == client.RouteBroken {
			broken += len(j.Active) + len(j.TransitNodes)
		}
	}
	return transit, broken
}

// checkCanvasSpace: the canvas's drawing is fitted (one side fills the
// canvas, centred), torus:32x32x32's fills at least 78 % of it, and every
// slice label drawn at the overview lies inside the canvas.
func checkCanvasSpace(t *testing.T, spec string, num func(string) int, flag func(string) bool, str func(string) string) {
	t.Helper()
	fill := num(`(() => { const c = document.querySelector('#fabric-canvas'); return Math.round(100 * cv.L.w * cv.L.h * cv.scale ** 2 / (c.clientWidth * c.clientHeight)); })()`)
	fitted := flag(`(() => { const c = document.querySelector('#fabric-canvas'), w = cv.L.w * cv.scale, h = cv.L.h * cv.scale;
		return (w > .97 * c.clientWidth || h > .97 * c.clientHeight) && Math.abs(2 * cv.ox + w - c.clientWidth) < 2 && Math.abs(2 * cv.oy + h - c.clientHeight) < 2; })()`)
	// torus:32x32x32's 32 slices in the 998x668 canvas: 8 by 4, 81 %
	// (a square of 6 by 6 took 66 %, a third of the width unused).
	if !fitted || spec == "torus:32x32x32" && fill < 78 {
		t.Errorf("the drawing fills %d%% of the canvas (fitted and centred: %v): %s", fill, fitted, str(`JSON.stringify([document.querySelector('#fabric-canvas').clientWidth, document.querySelector('#fabric-canvas').clientHeight, cv.L.w, cv.L.h, cv.scale])`))
	}
	if strings.Count(spec, "x") >= 2 && !strings.HasPrefix(spec, "file:") {
		labels := num(`cv.labelBoxes.length`)
		inside := num(`(() => { const c = document.querySelector('#fabric-canvas');
			return cv.labelBoxes.filter((b) => b[0] >= 0 && b[1] >= 0 && b[2] <= c.clientWidth && b[3] <= c.clientHeight).length; })()`)
		if labels == 0 || inside != labels {
			t.Errorf("%d slice labels drawn at the overview, %d inside the canvas", labels, inside)
		}
	}
}

// checkCanvasMarks: on the canvas, the selected multicast group shows its
// tree, members (orange rings) and root (a black ring) at the overview;
// transit nodes are lighter than active ones; the broken job's pair is
// ringed in dark red at the overview; hover names the nearest node or
// link at the overview. It leaves the overview without a group selected.
func checkCanvasMarks(t *testing.T, ctx context.Context, s *Service, transit, broken *client.JobRecord, num func(string) int, str func(string) string) {
	t.Helper()
	// Clicked from the page's script: the periodic refresh renews the
	// rows.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`#groups tbody tr`), chromedp.Evaluate[chromedp.Void](`document.querySelector('#groups tbody tr').click()`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#fabric-canvas').dataset.root !== ""`)); err != nil {
		t.Fatal(err)
	}
	g, err := s.mc.get("g1")
	if err != nil {
		t.Fatal(err)
	}
	ds := func(k string) string { return str(`document.querySelector('#fabric-canvas').dataset.` + k) }
	if ds("tree") != strconv.Itoa(len(g.Edges)) || ds("members") != strconv.Itoa(len(g.Members)) || ds("root") != g.Root || len(g.Edges) == 0 {
		t.Errorf("group %s drawn with %s tree links, %s members, root %q; it has %d, %d, %q", g.ID, ds("tree"), ds("members"), ds("root"), len(g.Edges), len(g.Members), g.Root)
	}
	// pixels counts the screen pixels within d of node name's place that
	// pass test(r, g, b).
	pixels := func(name string, d int, test string) int {
		return num(`(() => {
			const p = cv.L.pos[nodeIndex().get("` + name + `")], dpr = window.devicePixelRatio || 1, d = ` + strconv.Itoa(d) + `;
			const x = Math.round(dpr * (p[0] * cv.scale + cv.ox)), y = Math.round(dpr * (p[1] * cv.scale + cv.oy));
			const px = document.querySelector('#fabric-canvas').getContext('2d').getImageData(x - d, y - d, 2 * d + 1, 2 * d + 1).data;
			let n = 0;
			for (let i = 0; i < px.length; i += 4) { const r = px[i], g = px[i + 1], b = px[i + 2]; if (` + test + `) n++; }
			return n;
		})()`)
	}
	const orange, black, darkRed = `r > 220 && g > 80 && g < 150 && b < 60`, `r + g + b < 120`, `r > 140 && r < 205 && g < 40 && b > 12 && b < 64`
	if n := pixels(g.Root, 12, black); n < 15 {
		t.Errorf("root %s: %d black pixels round it at the overview", g.Root, n)
	}
	for _, m := range g.Members {
		if n := pixels(m, 8, orange); n < 8 {
			t.Errorf("member %s: %d orange pixels round it at the overview", m, n)
		}
	}
	nt, nb := jobNodeCounts(s)
	if ds("transit") != strconv.Itoa(nt) || ds("broken") != strconv.Itoa(nb) || ds("pairs") == "0" {
		t.Errorf("canvas marks %s transit nodes, %s nodes of broken jobs, %s pairs", ds("transit"), ds("broken"), ds("pairs"))
	}
	for _, n := range *broken.Unreachable {
		if c := pixels(n, 10, darkRed); c < 8 {
			t.Errorf("broken job's node %s: %d dark red pixels round it at the overview", n, c)
		}
	}
	// Hover at the overview: the nearest node (a point 3 pixels off node
	// 0) or link (at its middle).
	hover := func(pt string, dx, dy int) string {
		return str(`(() => {
			const cvs = document.querySelector('#fabric-canvas'), r = cvs.getBoundingClientRect(), p = ` + pt + `;
			cvs.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + cvs.clientLeft + p[0] * cv.scale + cv.ox + ` + strconv.Itoa(dx) + `,
				clientY: r.top + cvs.clientTop + p[1] * cv.scale + cv.oy + ` + strconv.Itoa(dy) + `, bubbles: true }));
			return document.querySelector('#tip').hidden ? "" : document.querySelector('#tip').textContent;
		})()`)
	}
	if tip := hover(`cv.L.pos[0]`, -3, -3); !strings.HasPrefix(tip, s.g.NodeName(0)+" ") {
		t.Errorf("hover 3 pixels off node 0 at the overview: %q", tip)
	}
	if tip := hover(`linkMid(cv.L, fabric.links[0])`, 0, 0); !strings.HasPrefix(tip, s.g.LinkName(0)+" — ") {
		t.Errorf("hover on link 0 at the overview: %q", tip)
	}
	// Zoomed in on a transit node and an active node of its job: the
	// transit node's centre is lighter.
	centre := func(name string) int {
		return num(`(() => {
			const p = cv.L.pos[nodeIndex().get("` + name + `")];
			cv.scale = 48 / cv.L.cell; cv.ox = 200 - p[0] * cv.scale; cv.oy = 200 - p[1] * cv.scale; drawCanvas();
			const dpr = window.devicePixelRatio || 1, d = document.querySelector('#fabric-canvas').getContext('2d').getImageData(Math.round(200 * dpr), Math.round(200 * dpr), 1, 1).data;
			return d[0] + d[1] + d[2];
		})()`)
	}
	if tr, ac := centre(transit.TransitNodes[0]), centre(transit.Active[0]); tr < 600 || ac > 560 {
		t.Errorf("transit node %s's centre %d (r+g+b), active node %s's %d: want the transit one lighter", transit.TransitNodes[0], tr, transit.Active[0], ac)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`selectedGroup = ""; renderLists(); cv.scale = 0; drawCanvas()`)); err != nil {
		t.Fatal(err)
	}
}

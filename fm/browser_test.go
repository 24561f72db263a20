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
		chromedp.Click(`button[data-migrate="1"]`),
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
	}{
		{"torus:4x4x4x2", "0.0.0.0+Z", true},
		{"fattree:k=4,n=3", "", false},
		{"dragonfly:a=4,p=2,h=2", "", false},
		{"torus:8x8x4x4", "0.0.0.0+W", true},
		{"torus:12", "3+X", true},                       // one dimension
		{"torus:3x2x2x2x2x3", "0.0.0.0.0.0+U", true},    // six
		{"torus:4x5x3x2:mesh=X,W", "0.0.0.0+Z", true},   // mesh dimensions: no wrap stub in X, no W tick beyond W=1
		{"torus:16x16x8x2:mesh=Y,W", "0.0.0.0+Z", true}, // the same on a canvas
		{"torus:16x16x16", "5.5.5+Z", true},             // a canvas
		{"torus:32x32x32", "0.0.0+Z", true},             // a canvas
		{"file:../unicast/testdata/ft2.ibnet", "", false},
		{"fattree:m=40,n=3", "L1-0[21]", false}, // 16 000 hosts, a canvas
	} {
		t.Run(c.spec, func(t *testing.T) {
			s, tok := openTest(t, t.TempDir(), c.spec, nil)
			defer s.Close()
			srv := httptest.NewServer(api.New(s, api.Options{}))
			defer srv.Close()
			if c.fail != "" {
				if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: c.fail}); err != nil {
					t.Fatal(err)
				}
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
			ctx, cancel := newBrowser(t, browser, chromedp.WindowSize(1400, 1000))
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#token="+tok)); err != nil {
				t.Fatalf("browser: %v", err)
			}
			tctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
			defer cancelT()
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
			if s.g.NumNodes() > 2048 {
				// Drawn on a canvas: every node, the draw timed by the page.
				if err := chromedp.Do(tctx, chromedp.WaitVisible(`#fabric-canvas[data-drawn]`)); err != nil {
					t.Fatal(err)
				}
				samePageFabric()
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
			if err := chromedp.Do(tctx, chromedp.WaitVisible(`#groups tbody tr`), chromedp.Click(`#groups tbody tr`), chromedp.WaitVisible(`circle.mc-root`)); err != nil {
				t.Fatal(err)
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

package fm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

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
	browser := findChromium()
	if browser == "" {
		if os.Getenv("ICN_REQUIRE_BROWSER") != "" {
			t.Fatal("no Chromium found but ICN_REQUIRE_BROWSER is set")
		}
		t.Skip("web page test skipped: no Chromium on this machine; install Debian's chromium package or set ICN_CHROMIUM=PATH to run it, ICN_REQUIRE_BROWSER=1 to make its absence a failure")
	}
	s, tok := openTest(t, t.TempDir(), "torus:4x4x2", nil)
	defer s.Close()
	srv := httptest.NewServer(s.Handler(HandlerOptions{}))
	defer srv.Close()

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
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
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
	browser := findChromium()
	if browser == "" {
		if os.Getenv("ICN_REQUIRE_BROWSER") != "" {
			t.Fatal("no Chromium found but ICN_REQUIRE_BROWSER is set")
		}
		t.Skip("no Chromium on this machine")
	}
	s, tok := openTest(t, t.TempDir(), "torus:4x4x2", nil)
	defer s.Close()
	var mu sync.Mutex
	unauthorized := 0
	h := s.Handler(HandlerOptions{})
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

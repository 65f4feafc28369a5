// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// requireChromium is set by .ci/run: there a missing Chromium fails the
// browser tests instead of skipping them.
const requireChromium = "OTELCOL_GYM_REQUIRE_CHROMIUM"

// chromiumPath finds Debian's chromium ($CHROMIUM_BIN first), or skips the
// test (fails it under CI).
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM_BIN"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(requireChromium) != "" || os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium")
	return ""
}

// browser is one headless Chromium tab on the viewer at base, recording
// what a hostile page would leave: dialogs, console errors and exceptions,
// and every request, so a test can say none went to another host.
type browser struct {
	t    testing.TB
	ctx  context.Context
	base *url.URL
	nav  int

	mu       sync.Mutex
	dialogs  []string
	errs     []string
	requests []string
	csp      map[string]string // document URL → its Content-Security-Policy
	expected []string          // URL parts whose failed loads a test asked for
}

func newBrowser(t testing.TB, base string) *browser {
	t.Helper()
	bin := chromiumPath(t)
	u, err := url.Parse(base)
	require.NoError(t, err)
	// As root Chromium needs --no-sandbox; the networking switches keep it
	// from calling home on this closed network (each failure would be noise).
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("hide-scrollbars", true),
	}
	b := &browser{t: t, base: u, csp: map[string]string{}}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp enables the page, runtime, log and network domains; the
	// listener sees their events from the tab's start.
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(b.onEvent))
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	b.ctx = ctx
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	return b
}

func (b *browser) onEvent(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
		// The listener may run no command: close the dialog from elsewhere.
		go func() {
			_, _ = chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	case *runtime.EventExceptionThrown:
		b.errs = append(b.errs, "exception: "+ev.ExceptionDetails.Text+" "+describe(ev.ExceptionDetails.Exception))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range ev.Args {
				args = append(args, describe(a))
			}
			b.errs = append(b.errs, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
			b.errs = append(b.errs, "log "+string(ev.Entry.Source)+": "+ev.Entry.Text+" "+ev.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		if ev.Request.URL != "about:blank" {
			b.requests = append(b.requests, ev.Request.URL)
		}
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument {
			csp, _ := ev.Response.Headers["Content-Security-Policy"].(string)
			if csp == "" {
				csp, _ = ev.Response.Headers["content-security-policy"].(string)
			}
			b.csp[ev.Response.URL] = csp
		}
	}
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Value)
}

// open loads the viewer at a route (a full page load each time) and waits
// until the page says it has drawn its data (ready, a JavaScript expression).
func (b *browser) open(hash, ready string) {
	b.t.Helper()
	b.nav++
	u := fmt.Sprintf("%s/?load=%d#%s", strings.TrimSuffix(b.base.String(), "/"), b.nav, hash)
	b.do(chromedp.Navigate(u))
	b.wait(ready)
}

// wait polls a JavaScript expression until it is truthy.
//
// A poll can start in the execution context of the document a navigation is
// replacing (chromedp.Navigate returns once the new document is committed,
// not once its context exists): Chrome then answers "Cannot find context with
// specified id", and the poll is started again in the new document's context,
// within the same 45 s.
func (b *browser) wait(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	var err error
	for {
		_, err = chromedp.Run(b.ctx, chromedp.Poll[bool]("!!("+expr+")", chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil || !strings.Contains(err.Error(), "Cannot find context with specified id") || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById('main').innerText.slice(0, 2000)`))
		b.t.Fatalf("waiting for %s: %v\npage: %s\nconsole: %v", expr, err, text, b.consoleErrors())
	}
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, actions...))
}

// key types keys into the page, as a person would.
func (b *browser) key(k string) {
	b.t.Helper()
	b.do(chromedp.KeyEvent(k))
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

func (b *browser) shot(dir, name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
}

// expectFailed tells clean that the test itself makes requests with part
// in their URL fail (Chromium logs each 4xx answer as a console error).
func (b *browser) expectFailed(part string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected = append(b.expected, part)
}

func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// clean fails the test on any dialog, console error, exception, request to
// another host, or document without the Content-Security-Policy.
func (b *browser) clean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(b.t, b.dialogs, "dialogs opened: a script from the data ran")
	var errs []string
	for _, e := range b.errs {
		if !b.wasExpected(e) {
			errs = append(errs, e)
		}
	}
	require.Empty(b.t, errs, "console errors")
	require.NotEmpty(b.t, b.requests)
	for _, r := range b.requests {
		u, err := url.Parse(r)
		require.NoError(b.t, err)
		require.Equal(b.t, b.base.Host, u.Host, "request to another host: %s", r)
	}
	require.NotEmpty(b.t, b.csp)
	for doc, csp := range b.csp {
		require.Contains(b.t, csp, "script-src 'self'", "CSP of %s", doc)
	}
}

func (b *browser) wasExpected(e string) bool {
	if !strings.HasPrefix(e, "log network: ") {
		return false
	}
	for _, part := range b.expected {
		if strings.Contains(e, part) {
			return true
		}
	}
	return false
}

// viewer is one `otelcol-gym view` subprocess.
type viewer struct {
	base string
	cmd  *exec.Cmd
	out  *lockedBuffer // its stderr
}

var servingLine = regexp.MustCompile(`serving .* on (http://127\.0\.0\.1:\d+)/`)

// startViewer runs `otelcol-gym view` on dir on a port the kernel picks and
// returns its base URL, read from the line it prints.
func startViewer(t testing.TB, dir string, args ...string) *viewer {
	t.Helper()
	cmd := exec.Command(collectorBinary(t), append([]string{"view", "--capture-dir", dir, "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	out := &lockedBuffer{}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	v := &viewer{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("viewer output:\n%s", out.String())
		}
	})
	select {
	case v.base = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("otelcol-gym view printed no address:\n%s", out.String())
	}
	return v
}

// shotsDir is where the browser tests save their screenshots (never
// committed): $OTELCOL_GYM_SHOTS, else a fresh temporary directory.
func shotsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("OTELCOL_GYM_SHOTS")
	if dir == "" {
		var err error
		dir, err = os.MkdirTemp("", "otelcol-gym-viewer-shots-")
		require.NoError(t, err)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("screenshots in %s", dir)
	return dir
}

// evalJS evaluates a JavaScript expression in b's page.
func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err, "%s", expr)
	return v
}

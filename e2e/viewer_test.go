// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The viewer suite (issue #18, design §8): a gymsim run with model errors and
// re-dispatched attempts, and hostile spans and a hostile capture line, all
// written by the built collector, then served by `otelcol-gym view` (a past
// run) to headless Chromium, which reads every page as a person would.

const (
	viewerRunID    = "viewerrun1"
	hostileRollout = "hostile-1"
	hostileRun     = `<img src=x onerror=alert("run")>`
	hostileSvcA    = `<script>alert("svcA")</script>`
	hostileSvcB    = `<img src=x onerror=alert("svcB")>`
	hostileName    = `<script>alert("name")</script>`
	hostileRespID  = "resp_hostile"
)

// viewerCollector starts a collector on testdata/viewer_collector.yaml (the
// gymview extension included) writing dir.
func viewerCollector(t *testing.T, dir, wait, settle string) (*collector, ports) {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "viewer_collector.yaml"))
	require.NoError(t, err)
	p := newPorts(t)
	cfg := strings.NewReplacer("${WAIT}", wait, "${SETTLE}", settle).Replace(p.expand(string(tmpl), dir))
	return startCollector(t, p, nil, "--config", writeFile(t, t.TempDir(), "collector.yaml", cfg)), p
}

func gymsimArgs(p ports, dir, run string, extra ...string) []string {
	return append([]string{
		"--run-id=" + run, "--batch-delay=200ms", "--blocking",
		"--capture-dir=" + dir, fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC),
	}, extra...)
}

// writeViewerCaptures has the collector write a capture dir: a gymsim run
// (all span groups, a quarter of the model calls failing, a quarter of the
// rollouts re-dispatched) and one hostile rollout.
func writeViewerCaptures(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "captures")
	col, p := viewerCollector(t, dir, "30s", "1s")
	out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), gymsimArgs(p, dir, viewerRunID,
		"--rollouts=24", "--concurrency=6", "--preset=all", "--error-rate=0.25", "--retry-rate=0.25")...)
	require.NoError(t, err, "gymsim:\n%s", out)
	sendHostileSpans(t, p.GRPC)
	require.NoError(t, col.stop())
	writeHostileCapture(t, dir)
	return dir
}

// sendHostileSpans exports, through the real Go SDK, a rollout whose names,
// attributes, events, links, services and run hold markup and javascript:
// URLs: a root in service A, a CLIENT model call from A, and the SERVER span
// it reached in service B, failed with an exception event.
func sendHostileSpans(t *testing.T, port int) {
	t.Helper()
	ctx := context.Background()
	newTP := func(service string) *sdktrace.TracerProvider {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithInsecure(), otlptracegrpc.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", port)))
		require.NoError(t, err)
		res := resource.NewSchemaless(
			attribute.String("service.name", service),
			attribute.String("nemo.run.id", hostileRun),
			attribute.String(`<script>alert("reskey")</script>`, `<img src=x onerror=alert("resval")>`),
		)
		return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	}
	a, b := newTP(hostileSvcA), newTP(hostileSvcB)
	rid := attribute.String("nemo.gym.rollout.id", hostileRollout)
	ctx1, root := a.Tracer(`<script>alert("scope")</script>`).Start(ctx, hostileName, trace.WithAttributes(rid,
		attribute.String("evil.html", `<img src=x onerror=alert("attr")>`),
		attribute.String("url.full", `javascript:alert("url")`),
		attribute.String(`<b onmouseover=alert("key")>k</b>`, "v"),
		attribute.StringSlice("evil.list", []string{`<svg onload=alert("list")>`, `"><script>alert("q")</script>`}),
	))
	ctx2, client := a.Tracer("e2e").Start(ctx1, "HTTP POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(rid,
			attribute.String("url.full", "http://127.0.0.1:9/ng-rollout/"+hostileRollout+"/v1/responses"),
			attribute.String("nemo.gym.model_request.id", hostileRespID)),
		trace.WithLinks(trace.Link{SpanContext: root.SpanContext(), Attributes: []attribute.KeyValue{
			attribute.String("nemo.gym.link.type", `javascript:alert("link")`),
		}}))
	_, server := b.Tracer("e2e").Start(ctx2, `<iframe src="javascript:alert('srv')"></iframe>`, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(rid))
	server.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", `<script>alert("type")</script>`),
		attribute.String("exception.message", `<img src=x onerror=alert("msg")>`),
		attribute.String("exception.stacktrace", "Traceback (most recent call last):\n  <script>alert(\"stack\")</script>\n  javascript:alert(\"stack2\")"),
	))
	server.SetStatus(codes.Error, `<svg onload=alert("status")>`)
	server.End()
	client.End()
	root.End()
	require.NoError(t, a.Shutdown(ctx))
	require.NoError(t, b.Shutdown(ctx))
}

// writeHostileCapture writes the hostile rollout's model exchange as Gym's
// model server would, markup in every string.
func writeHostileCapture(t *testing.T, dir string) {
	t.Helper()
	now := float64(time.Now().UnixMicro()) / 1e6
	line, err := json.Marshal(map[string]any{
		"model_call_id": `<script>alert("mcid")</script>`,
		"dialect":       `<img src=x onerror=alert("dialect")>`,
		"model_ref":     map[string]any{"type": "responses_api_models", "name": `<script>alert("model")</script>`},
		"started_at":    now, "completed_at": now + 0.1, "latency_ms": 100, "latency_ttft_ms": 20,
		"status_code":    500,
		"error_category": `javascript:alert("cat")`,
		"request":        map[string]any{"input": `<script>alert('req')</script>`, "tools": []any{map[string]any{"url": `javascript:alert('tool')`}}},
		"response":       map[string]any{"id": hostileRespID, "output": `<img src=x onerror=alert('resp')>`},
	})
	require.NoError(t, err)
	writeFile(t, dir, hostileRollout+".capture.jsonl", string(line)+"\n")
}

// plantSecret puts a secret beside the capture dir, and symlinks to it (and
// to the parent) inside it under names that pass the rollout-id rule.
func plantSecret(t *testing.T, dir string) string {
	t.Helper()
	secret := fmt.Sprintf("TOPSECRET-%d", time.Now().UnixNano())
	outside := filepath.Join(filepath.Dir(dir), "secret.txt")
	line := fmt.Sprintf(`{"name":%q,"span_id":"00000000000000aa","trace_id":"000000000000000000000000000000aa","model_call_id":%q}`, secret, secret)
	require.NoError(t, os.WriteFile(outside, []byte(line+"\n"), 0o600))
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "leak.spans.jsonl")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "leak.capture.jsonl")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "leak2.spans.jsonl")))
	require.NoError(t, os.Symlink("..", filepath.Join(dir, "up.spans.jsonl")))
	return secret
}

type rolloutsEntry struct {
	RolloutID  string `json:"rollout_id"`
	RunID      string `json:"run_id"`
	TraceID    string `json:"trace_id"`
	Status     string `json:"status"`
	ErrorCount int    `json:"error_count"`
}

type spansEntry struct {
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id"`
	Status       struct {
		Code string `json:"status_code"`
	} `json:"status"`
}

type mapFile struct {
	Edges []struct {
		Run    string `json:"run"`
		Client string `json:"client"`
		Server string `json:"server"`
	} `json:"edges"`
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// listedIDs pages through the rollout list from its first page with the
// keyboard ("n") and returns every id it showed.
func listedIDs(t *testing.T, b *browser) []string {
	t.Helper()
	var ids []string
	for page := 0; ; page++ {
		ids = append(ids, evalJS[[]string](b, `Array.from(document.querySelectorAll('#rollouts tbody tr[data-id]'), (r) => r.dataset.id)`)...)
		if evalJS[bool](b, `document.getElementById('next').disabled`) {
			return ids
		}
		require.Less(t, page, 100, "paging does not end")
		before := evalJS[string](b, `document.getElementById('main').dataset.loaded`)
		b.key("n")
		b.wait(`document.getElementById('main').dataset.loaded !== ` + jsString(before))
	}
}

// noMarkupRan checks the page holds no element or attribute the data could
// have planted: no img, iframe or object, one script (ours), no on*
// attribute, no link but in-page ones and the Jaeger one.
func noMarkupRan(t *testing.T, b *browser, where string) {
	t.Helper()
	planted := evalJS[[]string](b, `(() => {
		const out = [];
		for (const e of document.querySelectorAll('img, iframe, object, embed, frame, foreignObject, base, meta[http-equiv]')) out.push(e.outerHTML.slice(0, 80));
		const scripts = document.querySelectorAll('script');
		if (scripts.length !== 1 || !scripts[0].src.endsWith('/assets/app.js')) out.push('scripts: ' + scripts.length);
		for (const e of document.querySelectorAll('*')) for (const a of e.attributes) if (/^on/i.test(a.name)) out.push(e.tagName + ' ' + a.name);
		for (const a of document.querySelectorAll('a[href]')) {
			const h = a.getAttribute('href');
			if (!h.startsWith('#/') && !h.startsWith('http://127.0.0.1:16686/trace/')) out.push('href ' + h);
		}
		return out;
	})()`)
	assert.Empty(t, planted, "%s: elements or attributes from the data", where)
}

func TestViewer(t *testing.T) {
	chromiumPath(t) // skip before the collector run when there is no browser
	dir := writeViewerCaptures(t)
	secret := plantSecret(t, dir)
	v := startViewer(t, dir, "--jaeger-url", "http://127.0.0.1:16686")
	b := newBrowser(t, v.base)
	shots := shotsDir(t)

	rollouts := map[string]rolloutsEntry{}
	for _, l := range readJSONLines[rolloutsEntry](t, filepath.Join(dir, "rollouts.jsonl")) {
		if l.RunID == viewerRunID {
			prev, seen := rollouts[l.RolloutID]
			if seen { // several roots: failed when any is
				l.ErrorCount = max(l.ErrorCount, prev.ErrorCount)
				if prev.Status == "ERROR" {
					l.Status = "ERROR"
				}
			}
			rollouts[l.RolloutID] = l
		}
	}
	all, failed, attempts := map[string]bool{}, map[string]bool{}, 0
	for id, l := range rollouts {
		all[id] = true
		if l.ErrorCount > 0 || l.Status == "ERROR" {
			failed[id] = true
		}
		if strings.Contains(id, "-a") {
			attempts++
		}
	}
	require.NotEmpty(t, failed, "the run has failed rollouts")
	require.Less(t, len(failed), len(all), "and rollouts that did not fail")
	require.NotZero(t, attempts, "and re-dispatched attempts")

	t.Run("runs", func(t *testing.T) {
		b.t = t
		b.open("/", `document.getElementById('main').dataset.loaded`)
		runs := evalJS[[]string](b, `Array.from(document.querySelectorAll('#runs tbody tr[data-run]'), (r) => r.dataset.run)`)
		assert.ElementsMatch(t, []string{viewerRunID, hostileRun}, runs)
		b.shot(shots, "runs.png")
	})

	t.Run("list shows every rollout of rollouts.jsonl", func(t *testing.T) {
		b.t = t
		b.open("/run?run="+viewerRunID+"&sort=id&order=asc&limit=10", `document.getElementById('main').dataset.loaded`)
		b.shot(shots, "rollouts.png")
		ids := listedIDs(t, b)
		assert.Len(t, ids, len(all), "one row per rollout, none twice")
		got := map[string]bool{}
		for _, id := range ids {
			got[id] = true
		}
		assert.Equal(t, sortedKeys(all), sortedKeys(got))
		assert.True(t, sort.StringsAreSorted(ids), "sorted by id")
	})

	t.Run("failed only shows exactly the rollouts with errors", func(t *testing.T) {
		b.t = t
		b.open("/run?run="+viewerRunID+"&limit=5", `document.getElementById('main').dataset.loaded`)
		before := evalJS[string](b, `document.getElementById('main').dataset.loaded`)
		b.key("f")
		b.wait(`document.getElementById('failed-only').checked && document.getElementById('main').dataset.loaded !== ` + jsString(before))
		b.shot(shots, "failed.png")
		got := map[string]bool{}
		for _, id := range listedIDs(t, b) {
			got[id] = true
		}
		assert.Equal(t, sortedKeys(failed), sortedKeys(got))
	})

	t.Run("a rollout draws one bar per span, nested by parent, errors marked", func(t *testing.T) {
		b.t = t
		for _, id := range sortedKeys(all) {
			lines := readJSONLines[spansEntry](t, filepath.Join(dir, id+".spans.jsonl"))
			b.open("/rollout?run="+viewerRunID+"&id="+id, `document.getElementById('main').dataset.rendered`)
			type row struct {
				ID, Parent       string
				Depth            int
				Bar, Error, Mark bool
			}
			rows := evalJS[[]row](b, `Array.from(document.querySelectorAll('#waterfall .span-row'), (r) => ({
				ID: r.dataset.spanId, Parent: r.dataset.parentId, Depth: Number(r.dataset.depth),
				Bar: !!r.querySelector('.track .bar'), Error: r.classList.contains('error'), Mark: !!r.querySelector('.err-mark')}))`)
			require.Len(t, rows, len(lines), "rollout %s: bars", id)
			inFile := map[string]spansEntry{}
			for _, l := range lines {
				inFile[l.SpanID] = l
			}
			for i, r := range rows {
				l, ok := inFile[r.ID]
				require.True(t, ok, "rollout %s: row %s is no span of the file", id, r.ID)
				assert.True(t, r.Bar, "rollout %s: span %s has no bar", id, r.ID)
				assert.Equal(t, l.ParentSpanID, r.Parent)
				isErr := l.Status.Code == "ERROR"
				assert.True(t, r.Error == isErr && r.Mark == isErr, "rollout %s: span %s status %s, marked %v", id, r.ID, l.Status.Code, r.Mark)
				if _, ok := inFile[l.ParentSpanID]; !ok {
					assert.Zero(t, r.Depth, "rollout %s: span %s without its parent in the file is a root", id, r.ID)
					continue
				}
				// Nested as the parent ids say: the nearest row above one
				// level up is its parent.
				j := i - 1
				for j >= 0 && rows[j].Depth != r.Depth-1 {
					j--
				}
				require.GreaterOrEqual(t, j, 0, "rollout %s: span %s has no row above it one level up", id, r.ID)
				assert.Equal(t, l.ParentSpanID, rows[j].ID, "rollout %s: span %s nests under the wrong row", id, r.ID)
			}
			delete(inFile, "")
			assert.Len(t, inFile, len(rows), "rollout %s: every span once", id)
		}
	})

	t.Run("ASGI receive and send spans are folded until asked", func(t *testing.T) {
		b.t = t
		id := sortedKeys(all)[0]
		asgi := 0
		for _, l := range readJSONLines[map[string]any](t, filepath.Join(dir, id+".spans.jsonl")) {
			if attrs, _ := l["attributes"].(map[string]any); attrs["asgi.event.type"] != nil {
				asgi++
			}
		}
		require.Positive(t, asgi, "rollout %s has ASGI spans (gymsim sends them)", id)
		b.open("/rollout?run="+viewerRunID+"&id="+id, `document.getElementById('main').dataset.rendered`)
		visible := func() (asgiShown, others int) {
			return evalJS[int](b, `document.querySelectorAll('#waterfall .span-row.asgi:not([hidden])').length`),
				evalJS[int](b, `document.querySelectorAll('#waterfall .span-row:not(.asgi):not([hidden])').length`)
		}
		shown, others := visible()
		assert.Zero(t, shown, "no ASGI span shown at first")
		assert.Equal(t, asgi, evalJS[int](b, `document.querySelectorAll('#waterfall .span-row.asgi').length`), "every ASGI span has its row")
		assert.Contains(t, evalJS[string](b, `document.getElementById('asgi-toggle').textContent`), fmt.Sprintf("%d ASGI", asgi))
		b.click(`#asgi-toggle`)
		b.wait(`document.querySelectorAll('#waterfall .span-row.asgi:not([hidden])').length > 0`)
		shown, othersAfter := visible()
		assert.Equal(t, asgi, shown, "one click shows them all")
		assert.Equal(t, others, othersAfter, "and hides nothing else")
		b.key("a")
		b.wait(`document.querySelectorAll('#waterfall .span-row.asgi:not([hidden])').length === 0`)
	})

	t.Run("model calls show their tokens, the run page the run's", func(t *testing.T) {
		b.t = t
		checkViewerTokens(t, b, dir, sortedKeys(all))
	})

	t.Run("clicking a model call shows its capture exchange", func(t *testing.T) {
		b.t = t
		checked := 0
		for _, id := range sortedKeys(failed) {
			captures := readJSONLines[map[string]any](t, filepath.Join(dir, id+".capture.jsonl"))
			b.open("/rollout?run="+viewerRunID+"&id="+id, `document.getElementById('main').dataset.rendered`)
			// Every exchange of the capture file is listed and joined to a model-call span.
			assert.Equal(t, len(captures), evalJS[int](b, `document.querySelectorAll('#exchange-table tbody tr').length`), "rollout %s: exchanges", id)
			assert.Equal(t, len(captures), evalJS[int](b, `document.querySelectorAll('#waterfall .span-row.model-call:not([data-exchange="-1"])').length`), "rollout %s: model calls joined", id)
			// The failed model call, if the rollout has one.
			n := -1
			for k, c := range captures {
				if c["status_code"] == float64(500) {
					n = k
				}
			}
			if n < 0 {
				continue
			}
			spanID := evalJS[string](b, fmt.Sprintf(`(() => {
				const n = %d;
				for (const r of document.querySelectorAll('#waterfall .span-row.model-call')) {
					const x = Number(r.dataset.exchange);
					if (x >= 0 && Number(document.querySelectorAll('#exchange-table tbody tr')[x].dataset.n) === n) return r.dataset.spanId;
				}
				return '';
			})()`, n))
			require.NotEmpty(t, spanID, "rollout %s: the failed exchange %d is joined to no span", id, n)
			b.click(fmt.Sprintf(`#waterfall .span-row[data-span-id=%q] .name`, spanID))
			b.wait(fmt.Sprintf(`document.getElementById('exchange') && document.getElementById('exchange').dataset.n === '%d'`, n))
			text := evalJS[string](b, `document.getElementById('exchange').innerText`)
			assert.Contains(t, text, captures[n]["model_call_id"])
			assert.Contains(t, text, "upstream_error")
			assert.Contains(t, text, "500")
			// The failed span's exception event, with its stack trace.
			events := evalJS[string](b, `document.getElementById('events').innerText`)
			assert.Contains(t, events, "exception")
			assert.Contains(t, evalJS[string](b, `document.querySelector('#events pre.stacktrace').textContent`), "Traceback")
			// The rollout links to its trace in Jaeger (jaeger_url is set).
			assert.Equal(t, "http://127.0.0.1:16686/trace/"+rollouts[id].TraceID, evalJS[string](b, `document.getElementById('jaeger-link').href`))
			for _, part := range []string{"request", "response"} {
				b.click("#show-" + part)
				b.wait(`!document.getElementById('capture-body').hidden && document.getElementById('capture-body').dataset.part === '` + part + `'`)
				var got any
				require.NoError(t, json.Unmarshal([]byte(evalJS[string](b, `document.getElementById('capture-body').textContent`)), &got))
				assert.Equal(t, captures[n][part], got, "rollout %s: the %s shown", id, part)
			}
			if checked == 0 {
				b.shot(shots, "rollout.png")
			}
			checked++
		}
		require.NotZero(t, checked, "no failed rollout had a failed model call")
	})

	t.Run("the service map shows every edge of service_map.json", func(t *testing.T) {
		b.t = t
		var m mapFile
		raw, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &m))
		var want []string
		for _, e := range m.Edges {
			if e.Run == viewerRunID {
				want = append(want, e.Client+" → "+e.Server)
			}
		}
		require.NotEmpty(t, want)
		b.open("/map?run="+viewerRunID, `document.getElementById('main').dataset.loaded`)
		got := evalJS[[]string](b, `Array.from(document.querySelectorAll('#service-map g.edge'), (g) => g.dataset.client + ' → ' + g.dataset.server)`)
		assert.ElementsMatch(t, want, got)
		labels := evalJS[string](b, `Array.from(document.querySelectorAll('#service-map g.edge text'), (t) => t.textContent).join('\n')`)
		assert.Contains(t, labels, "calls")
		assert.Contains(t, labels, "errors")
		assert.Contains(t, labels, "p50")
		assert.Contains(t, labels, "p99")
		b.shot(shots, "map.png")
	})

	t.Run("hostile spans and captures are shown as text and never run", func(t *testing.T) {
		b.t = t
		b.open("/", `document.getElementById('main').dataset.loaded`)
		assert.Contains(t, evalJS[string](b, `document.body.innerText`), hostileRun)
		noMarkupRan(t, b, "runs")
		b.open("/run?run="+hostileRun, `document.getElementById('main').dataset.loaded`)
		assert.Equal(t, []string{hostileRollout}, evalJS[[]string](b, `Array.from(document.querySelectorAll('#rollouts tbody tr[data-id]'), (r) => r.dataset.id)`))
		noMarkupRan(t, b, "list")
		b.key("j")
		b.key("\r") // Enter opens the selected rollout
		b.wait(`document.body.dataset.page === 'rollout' && document.getElementById('main').dataset.rendered`)
		n := evalJS[int](b, `document.querySelectorAll('#waterfall .span-row').length`)
		require.Equal(t, 3, n)
		var seen []string
		for i := 0; i < n; i++ {
			b.key("j")
			b.wait(fmt.Sprintf(`document.querySelectorAll('#waterfall .span-row')[%d].classList.contains('selected')`, i))
			if i == 0 {
				b.key("\r") // Enter shows the details
			}
			b.wait(`!document.getElementById('detail').hidden`)
			seen = append(seen, evalJS[string](b, `document.getElementById('detail').innerText`))
			noMarkupRan(t, b, fmt.Sprintf("span %d", i))
		}
		shown := strings.Join(seen, "\n") + evalJS[string](b, `document.getElementById('main').innerText`)
		for _, s := range []string{hostileName, `<img src=x onerror=alert("attr")>`, `javascript:alert("url")`, `<b onmouseover=alert("key")>k</b>`,
			`<img src=x onerror=alert("msg")>`, `<script>alert("stack")</script>`, `<svg onload=alert("status")>`, `javascript:alert("link")`, hostileSvcA, hostileSvcB} {
			assert.Contains(t, shown, s, "shown as text")
		}
		// The model call and its exchange.
		b.click(`#waterfall .span-row.model-call .name`)
		b.wait(`document.getElementById('exchange')`)
		for _, part := range []string{"request", "response"} {
			b.click("#show-" + part)
			b.wait(`!document.getElementById('capture-body').hidden && document.getElementById('capture-body').dataset.part === '` + part + `'`)
		}
		text := evalJS[string](b, `document.getElementById('detail').innerText`)
		for _, s := range []string{`<script>alert("model")</script>`, `<img src=x onerror=alert("dialect")>`, `javascript:alert("cat")`, `<img src=x onerror=alert('resp')>`} {
			assert.Contains(t, text, s)
		}
		noMarkupRan(t, b, "exchange")
		b.shot(shots, "hostile.png")
		b.open("/map?run="+hostileRun, `document.getElementById('main').dataset.loaded`)
		assert.ElementsMatch(t, []string{hostileSvcA + " → " + hostileSvcB}, evalJS[[]string](b, `Array.from(document.querySelectorAll('#service-map g.edge'), (g) => g.dataset.client + ' → ' + g.dataset.server)`))
		noMarkupRan(t, b, "map")
	})

	t.Run("nothing outside the capture dir is read", func(t *testing.T) {
		b.t = t
		host := strings.TrimPrefix(v.base, "http://")
		for _, target := range []string{
			"/api/rollout?id=..", "/api/rollout?id=../secret.txt", "/api/rollout?id=..%2Fsecret.txt",
			"/api/rollout?id=%2e%2e%2fsecret.txt", "/api/rollout?id=leak%00", "/api/rollout?id=%00",
			"/api/rollout?id=leak", "/api/rollout?id=leak2", "/api/rollout?id=up", "/api/rollout?run=&id=/etc/passwd",
			"/api/capture?id=leak&n=0", "/api/capture?id=..%2f..%2fsecret&n=0", "/api/capture?id=leak2&n=0",
			"/assets/../../secret.txt", "/assets/..%2f..%2fsecret.txt", "/assets/%2e%2e/%2e%2e/secret.txt",
			"/%2e%2e/secret.txt", "/..%5csecret.txt", "/api/rollout%00?id=x", "/api//rollout?id=leak",
		} {
			status, body := rawGet(t, host, target, "127.0.0.1")
			assert.True(t, status >= 400 && status < 500, "%s: status %d, want 4xx", target, status)
			assert.NotContains(t, body, secret, "%s leaked the secret", target)
		}
		// A web page that rebinds its own name to 127.0.0.1 reads nothing.
		status, _ := rawGet(t, host, "/api/runs", "attacker.example")
		assert.Equal(t, 403, status)
		for _, target := range []string{"/api/runs", "/api/rollouts?run=", "/api/rollouts?run=" + viewerRunID} {
			status, body := rawGet(t, host, target, "127.0.0.1")
			assert.Equal(t, 200, status, target)
			assert.NotContains(t, body, secret)
			assert.NotContains(t, body, `"leak`, "%s lists a symlink", target)
		}
		// In the browser: the page says it cannot, and shows no secret.
		b.expectFailed("id=leak")
		b.open("/rollout?run=&id=leak", `document.querySelector('.error-box')`)
		assert.NotContains(t, evalJS[string](b, `document.documentElement.outerHTML`), secret)
		b.open("/run?run=", `document.getElementById('main').dataset.loaded`)
		assert.NotContains(t, evalJS[string](b, `document.documentElement.outerHTML`), secret)
	})

	t.Run("a second run with the same rollout ids: the runs page says so, and how to keep runs apart", func(t *testing.T) {
		b.t = t
		id := sortedKeys(all)[0]
		f, err := os.OpenFile(filepath.Join(dir, "rollouts.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = fmt.Fprintf(f, `{"rollout_id":%q,"run_id":"viewersecondrun","trace_id":"0af7651916cd43dd8448eb211c80319c","root_span_id":"b7ad6b7169203331","start_time":"2026-12-01T09:30:00Z","end_time":"2026-12-01T09:30:05Z","status":"UNSET","error_count":0,"service_name":"nemo-gym/orchestrator","name":"HTTP POST"}`+"\n", id)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		b.open("/", `document.getElementById('repeated-note')`)
		note := evalJS[string](b, `document.getElementById('repeated-note').textContent`)
		assert.Contains(t, note, id+" is in runs ")
		assert.Contains(t, note, "viewersecondrun")
		assert.Contains(t, note, "a capture dir per run")
	})

	t.Run("no script ran, no other host, CSP on every document", func(t *testing.T) {
		b.t = t
		b.clean()
	})
}

// rawGet sends one GET with target written as is (no client cleans it) and
// returns the status and body.
func rawGet(t *testing.T, hostport, target, hostHeader string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", hostport)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, hostHeader)
	require.NoError(t, err)
	r := bufio.NewReader(c)
	var proto string
	var status int
	_, err = fmt.Fscanf(r, "%s %d", &proto, &status)
	require.NoError(t, err, target)
	rest, _ := io.ReadAll(r)
	return status, string(rest)
}

// TestViewerLive: the gymview extension inside a collector that is writing
// the capture dir; the pages, never reloaded, show new rollouts in flight,
// the new spans of a rollout in flight, and the rollout completing.
func TestViewerLive(t *testing.T) {
	chromiumPath(t)
	const run = "viewerlive1"
	dir := filepath.Join(t.TempDir(), "captures")
	col, p := viewerCollector(t, dir, "1s", "300ms")
	b := newBrowser(t, fmt.Sprintf("http://127.0.0.1:%d", p.View))
	b.open("/run?run="+run, `document.getElementById('main').dataset.loaded`)
	require.Zero(t, evalJS[int](b, `document.querySelectorAll('#rollouts tbody tr[data-id]').length`))

	sim := make(chan error, 1)
	go func() {
		out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), gymsimArgs(p, dir, run,
			"--rollouts=3", "--concurrency=3", "--rollout-duration=9s", "--model-calls=6",
			"--preset=per_rollout", "--error-rate=0", "--retry-rate=0")...)
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		sim <- err
	}()

	// A rollout in flight appears in the list that is already open.
	b.wait(`document.querySelector('#rollouts tbody tr.inflight')`)
	b.shot(shotsDir(t), "live-list.png")
	b.click(`#rollouts tbody tr.inflight td.id a`)
	b.wait(`document.body.dataset.page === 'rollout' && document.getElementById('main').dataset.rendered`)
	require.Equal(t, "in flight", evalJS[string](b, `document.getElementById('rollout-status').textContent`))
	n := evalJS[int](b, `document.querySelectorAll('#waterfall .span-row').length`)
	// Its new spans appear, then its root: it completes.
	b.wait(fmt.Sprintf(`document.querySelectorAll('#waterfall .span-row').length > %d`, n))
	grown := evalJS[int](b, `document.querySelectorAll('#waterfall .span-row').length`)
	b.wait(`document.getElementById('rollout-status').textContent !== 'in flight'`)
	t.Logf("rollout in flight: %d spans, then %d, then %d when it completed", n, grown,
		evalJS[int](b, `document.querySelectorAll('#waterfall .span-row').length`))
	require.NoError(t, <-sim)
	// Back in the list (Esc), every rollout is there and none in flight.
	b.key("\x1b")
	b.wait(`document.body.dataset.page === 'run' && document.querySelectorAll('#rollouts tbody tr[data-id]').length === 3 && !document.querySelector('#rollouts tbody tr.inflight')`)
	// The page is checked while its server is up: the live page polls, and a
	// poll that meets the stopped collector would be a console error of the
	// test's making.
	b.clean()
	require.NoError(t, col.stop())
}

// TestViewCommand: `otelcol-gym view` explains itself and refuses bad flags.
func TestViewCommand(t *testing.T) {
	out, err := runCmd(t, time.Minute, nil, collectorBinary(t), "view", "--help")
	require.NoError(t, err, out)
	for _, s := range []string{"--capture-dir", "--listen", "127.0.0.1:13180", "--jaeger-url", "--gym-output", "--gym-run"} {
		assert.Contains(t, out, s)
	}
	file := writeFile(t, t.TempDir(), "file", "x")
	for _, args := range [][]string{
		{"view", "--jaeger-url", `javascript:alert(1)`},
		{"view", "--capture-dir", t.TempDir(), "extra"},
		{"view", "--no-such-flag"},
		{"view", "--gym-run", "run-7"},
		{"view", "--capture-dir", file, "--listen", "127.0.0.1:0"},
	} {
		out, err := runCmd(t, time.Minute, nil, collectorBinary(t), args...)
		assert.Error(t, err, "%q accepted:\n%s", args, out)
	}
}

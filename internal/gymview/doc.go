// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymview is the rollout viewer of design §8: a read-only web UI over a
// capture dir, shared by the `otelcol-gym view` subcommand and the gymview
// extension.
//
// Data flow of one request:
//
//	HTTP → Handler.ServeHTTP (path check, CSP) → API (runs, rollouts, rollout, capture, service map,
//	       timesplit, gymoutput)
//	     → captureDir.open (a name that passes the rollout-id rule, openat O_NOFOLLOW, regular files only)
//
// The Go side owns the data and the pages stay thin: rollouts.jsonl is read
// incrementally into an index (rolloutIndex) that lists and pages a run of
// 100,000 rollouts without opening any spans file but those of the page shown;
// rollouts still in flight are the <id>.spans.jsonl files of a directory scan
// (dirScan) with no rollouts.jsonl line yet. A rollout's page reads its
// <id>.spans.jsonl and <id>.capture.jsonl and joins the model exchanges to the
// model-call spans (join.go). Why a rollout went as it did: the time split of
// its rollouts.jsonl line (timesplit.go: a run's percentiles), and Gym's output
// (gymoutput.go: the rows of `gym eval run --output`, read member by member by
// gymrow.go, incrementally by gymfile.go, joined to one run by gympage.go),
// become the list's columns, sorts and filters (listwhy.go). The live state
// (live.go) adds the capture-only rollouts (a capture file, no spans: Gym's
// telemetry is off; capturefile.go) and the signs of life of rollouts in
// flight (spanslife.go), from which a rollout is stalled (stall.go: where it
// was last seen, the call it waits on); livepage.go puts them on the pages,
// and Watch (watch.go) reports them to the gymview extension's log and
// metrics. The embedded pages (assets/) build the DOM with textContent only,
// under a Content-Security-Policy that allows no inline script.
package gymview // import "github.com/otelcol-gym/otelcol-gym/internal/gymview"

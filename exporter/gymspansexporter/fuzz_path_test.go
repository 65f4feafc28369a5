// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// Fuzz targets of issue #8 on the exporter side. The string encoder has its
// own target (FuzzAppendJSONString in encode_test.go) and both span encoders
// a property test (TestEncodersProperty); these go through the exporter made
// by the factory, onto a real capture dir.

var fuzzTemplates = []string{"{rollout_id}.spans.jsonl", "{run_id}.{rollout_id}.spans.jsonl", "{rollout_id}", "x-{rollout_id}-{run_id}"}

// FuzzRolloutPath: whatever the rollout and run ids, a rendered name is a
// plain file name directly inside capture_dir (design §5.1), made only of ids
// that match the pattern, and every pair of valid ids is accepted.
func FuzzRolloutPath(f *testing.F) {
	for _, id := range append([]string{"12-3", "task-1-a2", "A", "x.y_z-1"}, hostileIDs...) {
		f.Add(id, "run-1", uint8(0))
		f.Add(id, "../run", uint8(1))
		f.Add("12-3", id, uint8(3))
	}
	f.Fuzz(func(t *testing.T, rollout, run string, tmpl uint8) {
		template := fuzzTemplates[int(tmpl)%len(fuzzTemplates)]
		reserved := []string{"spans.jsonl", "rollouts.jsonl", "service_map.json", "service_map.md"}
		pt := capturedir.NewTemplate(template, "spans.jsonl", reserved...)
		name, reason := pt.Render(run, rollout)
		usesRun := strings.Contains(template, "{run_id}")
		want := strings.NewReplacer("{rollout_id}", rollout, "{run_id}", run).Replace(template)
		if reason != "" {
			if name != "" {
				t.Fatalf("rejected (%s) yet named %q", reason, name)
			}
			ownFile := slices.Contains(reserved, want) || capturedir.IsBackupName("spans.jsonl", want)
			if gymconv.SafeFileID(rollout) && (!usesRun || gymconv.SafeFileID(run)) && len(want) <= capturedir.MaxNameBytes && !ownFile {
				t.Fatalf("valid ids %q/%q rejected (%s) by %q", run, rollout, reason, template)
			}
			return
		}
		if !gymconv.SafeFileID(rollout) || (usesRun && !gymconv.SafeFileID(run)) {
			t.Fatalf("an invalid id became a name: run %q rollout %q -> %q", run, rollout, name)
		}
		const capture = "/capture/dir"
		p := filepath.Join(capture, name)
		if !isPlainFileName(name) || filepath.Dir(p) != capture || len(name) > capturedir.MaxNameBytes ||
			strings.ContainsAny(name, "/\\\x00") || slices.Contains(reserved, name) || capturedir.IsBackupName("spans.jsonl", name) {
			t.Fatalf("run %q rollout %q -> %q (%s) is not a plain new name inside the capture dir", run, rollout, name, p)
		}
		if name != want {
			t.Fatalf("%q rendered %q, want %q", template, name, want)
		}
	})
}

// fuzzExporter is one exporter per fuzz worker, on <root>/capture, so the
// test can see anything created beside the capture dir.
type fuzzExporter struct {
	root, capture string
	e             *spansExporter
	tel           *componenttest.Telemetry
	offset        int64 // bytes of spans.jsonl already checked
}

// maxFuzzCombinedBytes is how large the combined file of a fuzz worker grows
// before the worker starts over with a fresh capture dir: well below
// rotation.max_megabytes, so that the file never rotates under the offset
// export reads from (rotation has its own tests), and the worker's disk use
// stays bounded however long it fuzzes.
const maxFuzzCombinedBytes = 16 << 20

func newFuzzExporter(f *testing.F) *fuzzExporter {
	root := f.TempDir()
	fe := &fuzzExporter{root: root, capture: filepath.Join(root, "capture")}
	if err := fe.start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(fe.stop)
	return fe
}

func (fe *fuzzExporter) start() error {
	cfg := createDefaultConfig().(*Config)
	cfg.CaptureDir = fe.capture
	cfg.ServiceMap.Enabled = false
	cfg.MaxOpenFiles = 16
	cfg.DedupWindowSpans = 0 // the inputs repeat ids; deduplication has its own tests
	if maxFuzzCombinedBytes >= int64(cfg.Rotation.MaxMegabytes)<<20 {
		return fmt.Errorf("the combined file would rotate at %d MiB, before the fuzz worker starts over", cfg.Rotation.MaxMegabytes)
	}
	fe.tel = componenttest.NewTelemetry()
	set := exportertest.NewNopSettings(componentType)
	set.TelemetrySettings = fe.tel.NewTelemetrySettings()
	e, err := newSpansExporter(set, cfg)
	if err != nil {
		return err
	}
	if err := e.start(context.Background(), componenttest.NewNopHost()); err != nil {
		return err
	}
	fe.e, fe.offset = e, 0
	return nil
}

func (fe *fuzzExporter) stop() {
	_ = fe.e.shutdown(context.Background())
	_ = fe.tel.Shutdown(context.Background())
}

// startOverIfLarge starts the worker over with a fresh capture dir once its
// combined file reached maxFuzzCombinedBytes.
func (fe *fuzzExporter) startOverIfLarge(t *testing.T) {
	if fe.offset < maxFuzzCombinedBytes {
		return
	}
	fe.stop()
	if err := os.RemoveAll(fe.capture); err != nil {
		t.Fatal(err)
	}
	if err := fe.start(); err != nil {
		t.Fatal(err)
	}
}

// export writes td and checks: the root holds only the capture dir, the
// capture dir only regular files (none a link), and the combined file grew by
// exactly one valid JSON line of valid UTF-8 per span.
func (fe *fuzzExporter) export(t *testing.T, td ptrace.Traces) {
	t.Helper()
	fe.startOverIfLarge(t)
	n := td.SpanCount()
	if err := fe.e.pushTraces(context.Background(), td); err != nil {
		t.Fatalf("ConsumeTraces: %v", err)
	}
	flushFiles(t, fe.e) // the rollout files too
	ents, err := os.ReadDir(fe.root)
	if err != nil || len(ents) != 1 || ents[0].Name() != "capture" {
		t.Fatalf("beside the capture dir: %v %v", ents, err)
	}
	fh, err := os.Open(filepath.Join(fe.capture, "spans.jsonl"))
	if err != nil {
		if n == 0 {
			return
		}
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.Seek(fe.offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	added, err := io.ReadAll(fh)
	if err != nil {
		t.Fatal(err)
	}
	fe.offset += int64(len(added))
	lines := bytes.SplitAfter(added, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != n {
		t.Fatalf("%d spans, %d new lines in spans.jsonl", n, len(lines))
	}
	for _, l := range lines {
		if l[len(l)-1] != '\n' || !json.Valid(l) || !utf8.Valid(l) {
			t.Fatalf("bad line %q", l)
		}
	}
}

// checkCaptureDir: only regular files, each with a name the exporter may
// create (its own files, or a per-rollout file of a valid id).
func (fe *fuzzExporter) checkCaptureDir(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(fe.capture)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == journal.Dir && e.IsDir() {
			continue // the exporter's journal index
		}
		if !e.Type().IsRegular() {
			t.Fatalf("%s is not a regular file (%v)", e.Name(), e.Type())
		}
		id, ok := strings.CutSuffix(e.Name(), ".spans.jsonl")
		if e.Name() != "spans.jsonl" && e.Name() != "rollouts.jsonl" && (!ok || !gymconv.SafeFileID(id)) {
			t.Fatalf("unexpected file %q in the capture dir", e.Name())
		}
	}
}

// FuzzExportRolloutID: a span whose rollout id (span attribute, or resource
// attribute as after promote_to_resource) and run id are arbitrary strings is
// written to the combined file; a file is created only for a valid id and
// never outside capture_dir.
func FuzzExportRolloutID(f *testing.F) {
	for _, id := range append([]string{"12-3", "task-1-a2", "spans", "rollouts"}, hostileIDs...) {
		f.Add(id, "run-1", false)
		f.Add(id, "..", true)
	}
	fe := newFuzzExporter(f)
	f.Fuzz(func(t *testing.T, rollout, run string, onResource bool) {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("nemo.run.id", run)
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetName("gym.rollout")
		s.SetTraceID([16]byte{1})
		s.SetSpanID([8]byte{1})
		if onResource {
			rs.Resource().Attributes().PutStr("nemo.gym.rollout.id", rollout)
		} else {
			s.Attributes().PutStr("nemo.gym.rollout.id", rollout)
		}
		fe.export(t, td)
		fe.checkCaptureDir(t)
		_, err := os.Lstat(filepath.Join(fe.capture, rollout+".spans.jsonl"))
		if gymconv.SafeFileID(rollout) && err != nil {
			t.Fatalf("valid rollout id %q has no file: %v", rollout, err)
		}
	})
}

// hostileCorpus is the gym processor's seed corpus of hostile shapes
// (cycles, self-parents, zero and duplicate ids, deep chains), written by its
// TestGenFuzzCorpus: one copy seeds both packages' OTLP fuzz targets.
var hostileCorpus = filepath.Join("..", "..", "processor", "gymprocessor", "testdata", "fuzz", "FuzzProcessOTLP")

// FuzzExportOTLP: any OTLP protobuf request body pdata accepts is written as
// one valid JSON line per span (design §5.2), and nothing appears outside
// capture_dir. Seeds: testdata/format_all_types.json, the golden inputs of
// ../../testdata and hostileCorpus.
func FuzzExportOTLP(f *testing.F) {
	hostile, err := gymtest.FuzzSeeds(hostileCorpus)
	if err != nil || len(hostile) == 0 {
		f.Fatalf("seeds of %s: %v (%d)", hostileCorpus, err, len(hostile))
	}
	for _, pb := range hostile {
		f.Add(pb)
	}
	inputs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*", "input.json"))
	inputs = append(inputs, filepath.Join("testdata", "format_all_types.json"))
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
		if err != nil {
			f.Fatalf("%s: %v", in, err)
		}
		pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pb)
	}
	fe := newFuzzExporter(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
		if err != nil {
			return
		}
		fe.export(t, td)
		fe.checkCaptureDir(t)
	})
}

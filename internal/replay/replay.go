// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
)

// maxNamed is how many skipped lines, and credential keys, the summary names.
const maxNamed = 5

// options are one replay's.
type options struct {
	paths      []string
	captureDir string // the output dir; "" for the job's model-calls/
	progress   io.Writer
	terminal   bool
	now        func() time.Time
	logger     *zap.Logger
}

// result is what a replay did, for its summary.
type result struct {
	in               inputs
	out              string
	bytes            int64
	spansRead        int64
	spans, rollouts  int64 // handed to the exporter
	skippedLines     int64
	skipped          []skipped // the first maxNamed
	credentials      int64
	credentialKeys   []string // the first maxNamed
	written          []string
	replacedPrevious bool
	captures         string // where GenAI came from, or ""
	elapsed          time.Duration
}

// run replays opt.paths into the output dir.
func run(ctx context.Context, opt options) (*result, error) {
	in, err := findInputs(opt.paths)
	if err != nil {
		return nil, err
	}
	res := &result{in: in}
	res.out, err = outputDir(in, opt.captureDir)
	if err != nil {
		return nil, err
	}
	out, err := openOutput(res.out)
	if err != nil {
		return nil, err
	}
	res.replacedPrevious = len(out.prev.Files) > 0
	start := opt.now()
	res.captures = capturesDir(in, res.out)
	p, err := newPipeline(ctx, out.stage(), res.captures, opt.logger)
	if err != nil {
		out.abandon()
		return nil, err
	}
	f := &feeder{ctx: ctx, p: p, res: res, rule: credentials.Default()}
	var total int64
	for _, fl := range in.files {
		total += fl.size
	}
	f.prog = newProgress(opt.progress, opt.terminal, total, opt.now)
	readErr := f.readAll()
	finishErr := p.finish(ctx)
	f.prog.done()
	res.spans, res.rollouts = p.out.spans.Load(), p.out.rollouts.Load()
	if err := errors.Join(readErr, finishErr); err != nil {
		out.abandon()
		return nil, err
	}
	names := make([]string, len(in.files))
	for i, fl := range in.files {
		names[i] = fl.path
	}
	res.written, err = out.commit(names)
	if err != nil {
		return nil, err
	}
	res.elapsed = opt.now().Sub(start)
	return res, nil
}

// outputDir is --capture-dir, else the job's model-calls/.
func outputDir(in inputs, captureDir string) (string, error) {
	if captureDir != "" {
		return captureDir, nil
	}
	switch len(in.jobs) {
	case 0:
		return "", errors.New("no job dir among the inputs, so no model-calls/ to write beside: give --capture-dir DIR")
	case 1:
		return in.jobs[0].modelDir, nil
	}
	return "", fmt.Errorf("%d job dirs among the inputs: replay them one at a time, or give --capture-dir DIR for all of them", len(in.jobs))
}

// capturesDir is where Gym's <rollout_id>.capture.jsonl files are: the
// job's model-calls/, else the output dir when it holds any; "" when there
// are none.
func capturesDir(in inputs, out string) string {
	dirs := []string{out}
	if len(in.jobs) == 1 {
		dirs = []string{in.jobs[0].modelDir}
	}
	for _, d := range dirs {
		if m, _ := filepath.Glob(filepath.Join(d, "*.capture.jsonl")); len(m) > 0 {
			return d
		}
	}
	return ""
}

// feeder reads every file into the pipeline: it is the readers' sink.
type feeder struct {
	ctx  context.Context
	p    *pipeline
	res  *result
	rule *credentials.Rule
	prog *progress
	read int64 // bytes of the files done
	cur  *countingReader
}

func (f *feeder) readAll() error {
	for _, fl := range f.res.in.files {
		if err := f.readFile(fl); err != nil {
			return err
		}
	}
	return nil
}

func (f *feeder) readFile(fl file) error {
	h, err := os.Open(fl.path)
	if err != nil {
		return err
	}
	defer h.Close()
	f.cur = &countingReader{r: h}
	name := fl.path
	if fl.format == formatOTLPJSON {
		err = readOTLPJSON(name, f.cur, f)
	} else {
		err = readConsole(name, f.cur, f)
	}
	f.read += f.cur.n
	f.res.bytes = f.read
	return err
}

// batch drops td's credentials, counted, and hands it to the pipeline.
func (f *feeder) batch(td ptrace.Traces) error {
	if err := f.ctx.Err(); err != nil {
		return err
	}
	f.res.spansRead += int64(td.SpanCount())
	f.res.credentials += int64(f.rule.RemoveFromTraces(td, func(key string) {
		if len(f.res.credentialKeys) < maxNamed && !slices.Contains(f.res.credentialKeys, key) {
			f.res.credentialKeys = append(f.res.credentialKeys, key)
		}
	}))
	if err := f.p.consume(f.ctx, td); err != nil {
		return err
	}
	f.prog.update(f.read+f.cur.n, f.p.out.spans.Load(), f.p.out.rollouts.Load())
	return nil
}

func (f *feeder) skip(s skipped) {
	f.res.skippedLines++
	if len(f.res.skipped) < maxNamed {
		f.res.skipped = append(f.res.skipped, s)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// viewCommand is the command that shows the replay in the viewer.
func viewCommand(res *result) string {
	cmd := "otelcol-gym view --capture-dir " + shellQuote(res.out)
	for _, j := range res.in.jobs {
		if j.artifacts != "" && filepath.Clean(j.modelDir) == filepath.Clean(res.out) {
			cmd += " --gym-output " + shellQuote(j.artifacts)
		}
	}
	return cmd
}

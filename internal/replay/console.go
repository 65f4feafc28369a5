// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

const (
	// consoleBatchSpans is how many console spans make one batch (the
	// OpenTelemetry SDK's batch processor sends at most 512).
	consoleBatchSpans = 512
	// maxOpenObjects bounds the multi-line objects open at once (one per
	// server prefix, as servers' lines interleave).
	maxOpenObjects = 64
	// maxPrefixBytes bounds a server name in a "(<server name>) " prefix.
	maxPrefixBytes = 200
)

// readConsole reads Gym's console output (NEMO_GYM_OTEL_EXPORTER=console)
// from r, named name in what it skips: spans as one-line JSON or as the
// SDK's indent-4 multi-line objects, each line perhaps prefixed with
// "(<server name>) ", mixed with log lines, which are passed over. A
// multi-line object is gathered per prefix (servers' lines interleave) and
// bounded as a line is. Spans go to s in batches of consoleBatchSpans, in
// the order they end in the file.
func readConsole(name string, r io.Reader, s sink) error {
	c := &consoleReader{name: name, s: s, open: map[string]*openObject{}, td: ptrace.NewTraces(), parents: newParentFlags()}
	lr := newLineReader(r, maxLineBytes)
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if err := c.line(l); err != nil {
			return err
		}
	}
	for _, o := range c.open {
		if o.overflow || looksLikeSpan(o.buf) {
			c.s.skip(skipped{name, o.start, "a multi-line span object that never closed (the file ends inside it)"})
		}
	}
	return c.flush()
}

type consoleReader struct {
	name     string
	s        sink
	open     map[string]*openObject // by prefix
	lastOpen string                 // the prefix of the object opened last
	td       ptrace.Traces
	parents  *parentFlags // what the console JSON leaves out of a span's parent
}

// openObject is a multi-line span object being gathered.
type openObject struct {
	start    int
	buf      []byte
	overflow bool // longer than maxLineBytes: read past, not kept
}

func (c *consoleReader) line(l line) error {
	if l.tooLong {
		c.s.skip(skipped{c.name, l.number, fmt.Sprintf("a line longer than %d MiB", maxLineBytes>>20)})
		return nil
	}
	prefix, rest := splitPrefix(l.text)
	o := c.open[string(prefix)]
	if o == nil && len(prefix) == 0 && c.lastOpen != "" && continuation(rest) {
		// The prefix only on an object's first line.
		prefix, o = []byte(c.lastOpen), c.open[c.lastOpen]
	}
	if o != nil && (continuation(rest) || string(rest) == "{") {
		if string(rest) == "{" { // a new object: the open one was cut off
			if o.overflow || looksLikeSpan(o.buf) {
				c.s.skip(skipped{c.name, o.start, "a multi-line span object cut off by the next one"})
			}
			delete(c.open, string(prefix))
			return c.startObject(prefix, l)
		}
		if !o.overflow && len(o.buf)+len(rest)+1 > maxLineBytes {
			o.overflow, o.buf = true, nil
		}
		if !o.overflow {
			o.buf = append(append(o.buf, rest...), '\n')
		}
		if string(rest) != "}" {
			return nil
		}
		delete(c.open, string(prefix))
		if o.overflow {
			c.s.skip(skipped{c.name, o.start, fmt.Sprintf("a span object longer than %d MiB", maxLineBytes>>20)})
			return nil
		}
		return c.span(o.buf, o.start, l.newline)
	}
	if string(rest) == "{" {
		return c.startObject(prefix, l)
	}
	if t := bytes.TrimLeft(rest, " \t"); len(t) > 0 && t[0] == '{' {
		return c.span(t, l.number, l.newline)
	}
	return nil // a log line
}

func (c *consoleReader) startObject(prefix []byte, l line) error {
	if len(c.open) >= maxOpenObjects {
		c.s.skip(skipped{c.name, l.number, fmt.Sprintf("more than %d multi-line span objects open at once", maxOpenObjects)})
		return nil
	}
	c.open[string(prefix)] = &openObject{start: l.number, buf: []byte("{\n")}
	c.lastOpen = string(prefix)
	return nil
}

// span decodes one span object, one-line or multi-line, into the batch. A
// JSON object that is not a span is log output (Gym prints its metrics as
// indent-4 JSON, its config as a Python dict); one that does not decode is
// skipped when it looks like a span (it names a "context"), else it is log
// output too.
func (c *consoleReader) span(obj []byte, number int, newline bool) error {
	rss := c.td.ResourceSpans()
	err := decodeConsoleSpan(obj, rss)
	switch {
	case err == nil:
		rs := rss.At(rss.Len() - 1)
		c.parents.mark(rs.Resource(), rs.ScopeSpans().At(0).Spans().At(0))
		if c.td.SpanCount() >= consoleBatchSpans {
			return c.flush()
		}
		return nil
	case errors.Is(err, errNotSpan), !looksLikeSpan(obj):
		return nil
	}
	c.s.skip(skipped{c.name, number, reason(line{newline: newline}, "not a readable span: "+shortError(err))})
	return nil
}

// looksLikeSpan: a console span object names its "context"; a JSON or
// Python object without one is log output.
func looksLikeSpan(obj []byte) bool {
	return bytes.Contains(obj, []byte(`"context"`))
}

func (c *consoleReader) flush() error {
	if c.td.SpanCount() == 0 {
		return nil
	}
	td := c.td
	c.td = ptrace.NewTraces()
	return c.s.batch(td)
}

// splitPrefix splits "(<server name>) rest" into its prefix and rest; a
// line without one has an empty prefix. A server name holds no space or
// parenthesis. Gym's servers share one output and each writes its prefix
// as soon as a line of its own ends, so another server's line can follow a
// prefix that is not its own: "(A) (B) rest" is B's line, and its prefix
// is the last one.
func splitPrefix(text []byte) (prefix, rest []byte) {
	prefix, rest = splitOnePrefix(text)
	for prefix != nil {
		next, after := splitOnePrefix(rest)
		if next == nil {
			break
		}
		prefix, rest = next, after
	}
	return prefix, rest
}

func splitOnePrefix(text []byte) (prefix, rest []byte) {
	if len(text) < 4 || text[0] != '(' {
		return nil, text
	}
	end := min(len(text), maxPrefixBytes+3)
	for i := 1; i < end-1; i++ {
		switch text[i] {
		case ')':
			if i > 1 && text[i+1] == ' ' {
				return text[:i+2], text[i+2:]
			}
			return nil, text
		case '(', ' ', '\t':
			return nil, text
		}
	}
	return nil, text
}

// continuation reports whether rest can be a line inside an indent-4
// object: indented, or its closing brace. Any other line is a line of its
// own, even between an object's lines.
func continuation(rest []byte) bool {
	return string(rest) == "}" || bytes.HasPrefix(rest, []byte("    "))
}

// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// maxProbeLine bounds the last capture line read whole to learn which tools
// it asked for; a longer one counts as a final answer.
const maxProbeLine = 16 << 20

// captureFile is a capture-only rollout as its capture file tells it, read
// by offset as the file grows: its row in the rollout list, its model
// calls, tokens and latency, and whether its last exchange asked for a tool
// (the agent then goes on: Gym's agent loop is model, tools, model, …).
type captureFile struct {
	row *rollout

	read          bool
	size, mtime   int64 // at the last read
	offset        int64
	calls, failed int
	first, last   int64 // started_at of the first exchange, completed_at of the last (unix ns)
	inTok, outTok int64
	tokens        bool // some exchange gave its usage
	latencyMS     float64
	model         string   // the Gym model server of the last exchange (model_ref.name)
	dialect       string   // of the last exchange
	tools         []string // the tools the last exchange asked for
	done          bool     // the last exchange asked for no tool
}

// update reads what the file gained and reports whether the row changed.
func (c *captureFile) update(d *captureDir, budget *readBudget) bool {
	name, _ := rolloutFile(c.row.ID, captureSuffix)
	if mtime, size, err := d.stat(name); err == nil && c.read && size == c.size && mtime == c.mtime {
		return false // not opened: most capture-only rollouts are done
	}
	f, st, err := d.open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	c.read = true
	size, mtime := st.Size(), st.ModTime().UnixNano()
	if size == c.size && mtime == c.mtime {
		return false
	}
	if size < c.offset {
		*c = captureFile{row: c.row, read: true}
	}
	c.size, c.mtime = size, mtime
	if size == c.offset {
		return true
	}
	stats, _ := eachLine(io.NewSectionReader(f, c.offset, size-c.offset), maxLineBytes, func(line []byte) error {
		l, ok := modelcall.ParseLine(line)
		if ok {
			c.add(&l)
		}
		return nil
	})
	c.offset += stats.consumed
	budget.spend(stats.consumed)
	if stats.lines > 0 {
		c.probeLast(f)
	}
	c.fill()
	return true
}

func (c *captureFile) add(l *modelcall.Line) {
	c.calls++
	if l.Failed() {
		c.failed++
	}
	if l.Start != 0 && (c.first == 0 || l.Start < c.first) {
		c.first = l.Start
	}
	c.last = max(c.last, l.End)
	if l.InputTokens != nil {
		c.inTok += *l.InputTokens
		c.tokens = true
	}
	if l.OutputTokens != nil {
		c.outTok += *l.OutputTokens
		c.tokens = true
	}
	if l.LatencyMS != nil && *l.LatencyMS > 0 {
		c.latencyMS += *l.LatencyMS
	}
	c.model, c.dialect = l.Model, l.Dialect
	c.done = l.Failed() // a failed call ends the agent's loop; a success is probed
}

// fill is the row of the rollout list the file gives.
func (c *captureFile) fill() {
	r := c.row
	r.Start, r.End = c.first, max(c.last, c.first)
	r.Errors = c.failed
	r.InFlight = !c.done
	r.Status = "OK"
	if c.failed > 0 {
		r.Status = "ERROR"
	}
}

// probeLast reads the file's last complete line (before c.offset) and the
// tools it asked for.
func (c *captureFile) probeLast(f *os.File) {
	c.tools = nil
	if c.done {
		return
	}
	tools, ok := probeTools(lastLine(f, c.offset, maxProbeLine))
	c.tools, c.done = tools, !ok || len(tools) == 0
}

// lastTools are the tools the last line of a capture file asked for.
func lastTools(d *captureDir, name fileName) []string {
	f, st, err := d.open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	tools, _ := probeTools(lastLine(f, st.Size(), maxProbeLine))
	return tools
}

// probeTools reads which tools a capture line's response asked for: the
// responses dialect's function_call outputs, the chat dialect's
// tool_calls, the messages dialect's tool_use blocks. ok is false when the
// line is not one.
func probeTools(line []byte) (tools []string, ok bool) {
	if line == nil {
		return nil, false
	}
	var p struct {
		Response struct {
			Output []struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"output"`
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						Function struct {
							Name string `json:"name"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
			Content []struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"content"`
		} `json:"response"`
	}
	if json.Unmarshal(line, &p) != nil {
		return nil, false
	}
	r := &p.Response
	for _, o := range r.Output {
		if o.Type == "function_call" {
			tools = append(tools, modelcall.Bound(o.Name))
		}
	}
	for _, ch := range r.Choices {
		for _, tc := range ch.Message.ToolCalls {
			tools = append(tools, modelcall.Bound(tc.Function.Name))
		}
	}
	for _, b := range r.Content {
		if b.Type == "tool_use" {
			tools = append(tools, modelcall.Bound(b.Name))
		}
	}
	return tools, true
}

// lastLine is the last complete line of the first size bytes of f, without
// its '\n'; nil when there is none, it is longer than limit, or it cannot
// be read. It reads back from size, twice as much each time.
func lastLine(f *os.File, size int64, limit int) []byte {
	for n := int64(64 << 10); ; n *= 2 {
		n = min(n, size)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
			return nil
		}
		end := bytes.LastIndexByte(buf, '\n')
		start := -1
		if end >= 0 {
			start = bytes.LastIndexByte(buf[:end], '\n')
		}
		switch {
		case end >= 0 && (start >= 0 || n == size):
			if end-start-1 > limit {
				return nil
			}
			return buf[start+1 : end]
		case n == size || n > int64(limit):
			return nil
		}
	}
}

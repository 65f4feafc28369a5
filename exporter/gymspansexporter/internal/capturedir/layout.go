// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"strings"
	"sync"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// MaxNameBytes is NAME_MAX of Linux filesystems.
const MaxNameBytes = 255

// Why Template.Render gives a (run, rollout) no name: values of the
// exporter's rejected_spans "reason".
const (
	RejectRolloutID = "invalid_rollout_id"
	RejectRunID     = "invalid_run_id"
)

// Template renders path_template for a (run, rollout).
type Template struct {
	parts    []string // literal text between placeholders
	holes    []byte   // 'r' for {rollout_id}, 'u' for {run_id}, one per gap
	usesRun  bool
	reserved map[string]bool // names the exporter's other files use
	rotated  string          // the combined file, whose backups are reserved too
}

// NewTemplate parses path_template t. Names in reserved (the exporter's
// other files) and the backups of rotated (the combined file; "" for none)
// are refused.
func NewTemplate(t, rotated string, reserved ...string) *Template {
	pt := &Template{reserved: map[string]bool{}, rotated: rotated}
	for _, r := range reserved {
		if r != "" {
			pt.reserved[r] = true
		}
	}
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			pt.parts = append(pt.parts, rest)
			return pt
		}
		switch {
		case strings.HasPrefix(rest[i:], "{rollout_id}"):
			pt.parts = append(pt.parts, rest[:i])
			pt.holes = append(pt.holes, 'r')
			rest = rest[i+len("{rollout_id}"):]
		case strings.HasPrefix(rest[i:], "{run_id}"):
			pt.parts = append(pt.parts, rest[:i])
			pt.holes = append(pt.holes, 'u')
			pt.usesRun = true
			rest = rest[i+len("{run_id}"):]
		default: // Validate refuses this; keep the brace literally
			pt.parts = append(pt.parts, rest[:i+1])
			rest = rest[i+1:]
		}
	}
}

// Render returns the file name for a span of rollout in run, or the
// rejection reason (Reject*).
func (pt *Template) Render(run, rollout string) (string, string) {
	if !gymconv.SafeFileID(rollout) {
		return "", RejectRolloutID
	}
	if pt.usesRun && !gymconv.SafeFileID(run) {
		return "", RejectRunID
	}
	var sb strings.Builder
	for i, p := range pt.parts {
		sb.WriteString(p)
		if i < len(pt.holes) {
			if pt.holes[i] == 'r' {
				sb.WriteString(rollout)
			} else {
				sb.WriteString(run)
			}
		}
	}
	name := sb.String()
	if len(name) > MaxNameBytes || pt.reserved[name] || (pt.rotated != "" && IsBackupName(pt.rotated, name)) {
		return "", RejectRolloutID
	}
	return name, ""
}

// NameCache remembers the rendered file name of the (run, rollout)s seen
// last (a bounded number), or why they have none; it owns its lock.
type NameCache struct {
	tmpl  *Template
	mu    sync.Mutex
	names *bounded.Table[[2]string, nameResult]
}

// nameResult is a rendered per-rollout file name, or why there is none.
type nameResult struct{ name, reason string }

// NewNameCache caches tmpl's names of up to capacity (run, rollout)s.
func NewNameCache(tmpl *Template, capacity int) *NameCache {
	return &NameCache{tmpl: tmpl, names: bounded.New[[2]string, nameResult](capacity)}
}

// Render is tmpl.Render of (run, rollout), cached.
func (c *NameCache) Render(key [2]string) (name, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, cached := c.names.Get(key)
	if !cached {
		res.name, res.reason = c.tmpl.Render(key[0], key[1])
		c.names.Put(key, res)
	}
	return res.name, res.reason
}

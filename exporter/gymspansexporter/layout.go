// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"strings"
	"sync"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// maxFileNameBytes is NAME_MAX of Linux filesystems.
const maxFileNameBytes = 255

// pathTemplate renders path_template for a (run, rollout).
type pathTemplate struct {
	parts    []string // literal text between placeholders
	holes    []byte   // 'r' for {rollout_id}, 'u' for {run_id}, one per gap
	usesRun  bool
	reserved map[string]bool // names the exporter's other files use
	rotated  string          // the combined file, whose backups are reserved too
}

func newPathTemplate(t string, reserved ...string) *pathTemplate {
	pt := &pathTemplate{reserved: map[string]bool{}}
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

// render returns the file name for a span of rollout in run, or the
// rejection reason.
func (pt *pathTemplate) render(run, rollout string) (string, string) {
	if !gymconv.SafeFileID(rollout) {
		return "", rejectRolloutID
	}
	if pt.usesRun && !gymconv.SafeFileID(run) {
		return "", rejectRunID
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
	if len(name) > maxFileNameBytes || pt.reserved[name] || (pt.rotated != "" && isBackupName(pt.rotated, name)) {
		return "", rejectRolloutID
	}
	return name, ""
}

// nameCache remembers the rendered file name of the (run, rollout)s seen
// last (maxCachedNames), or why they have none; it owns its lock.
type nameCache struct {
	tmpl  *pathTemplate
	mu    sync.Mutex
	names *bounded.Table[[2]string, nameResult]
}

// nameResult is a rendered per-rollout file name, or why there is none.
type nameResult struct{ name, reason string }

func newNameCache(tmpl *pathTemplate) *nameCache {
	return &nameCache{tmpl: tmpl, names: bounded.New[[2]string, nameResult](maxCachedNames)}
}

// render is tmpl.render of (run, rollout), cached.
func (c *nameCache) render(key [2]string) (name, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, cached := c.names.Get(key)
	if !cached {
		res.name, res.reason = c.tmpl.render(key[0], key[1])
		c.names.Put(key, res)
	}
	return res.name, res.reason
}

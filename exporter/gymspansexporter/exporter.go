// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// spansExporter is, for now, a minimal writer of the combined file in OTLP
// JSON; the per-rollout layout and the console format land in their own change.
type spansExporter struct {
	cfg    *Config
	logger *zap.Logger

	mu       sync.Mutex
	combined *os.File
}

func newSpansExporter(set exporter.Settings, cfg *Config) (*spansExporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gymspans exporter: %w", err)
	}
	return &spansExporter{cfg: cfg, logger: set.Logger}, nil
}

func (e *spansExporter) start(context.Context, component.Host) error {
	dirPerm, _ := parsePerm(e.cfg.DirectoryPermissions)
	filePerm, _ := parsePerm(e.cfg.FilePermissions)
	if err := ensureDir(e.cfg.CaptureDir, dirPerm); err != nil {
		return fmt.Errorf("gymspans exporter: capture_dir: %w", err)
	}
	if e.cfg.CombinedFile == "" {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(e.cfg.CaptureDir, e.cfg.CombinedFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return fmt.Errorf("gymspans exporter: combined_file: %w", err)
	}
	e.combined = f
	return nil
}

func (e *spansExporter) shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.combined == nil {
		return nil
	}
	err := errors.Join(e.combined.Sync(), e.combined.Close())
	e.combined = nil
	return err
}

func (e *spansExporter) pushTraces(_ context.Context, td ptrace.Traces) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.combined == nil {
		return nil
	}
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	if err != nil {
		return fmt.Errorf("gymspans exporter: encode: %w", err)
	}
	_, err = e.combined.Write(append(b, '\n'))
	return err
}

// ensureDir creates a missing capture dir with perm (not subject to umask).
func ensureDir(dir string, perm os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%q is not a directory", dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	return os.Chmod(dir, perm)
}

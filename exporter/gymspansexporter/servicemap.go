// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/servicemap"
)

// serviceMapObserver keeps service_map.json and service_map.md (SPEC §5.1)
// from the CLIENT spans written: each one with a peer.service in another
// service is a call on the edge (run, client service, server service).
type serviceMapObserver struct {
	m *servicemap.Map
}

func newServiceMapObserver(cfg *Config, logger *zap.Logger) (*serviceMapObserver, error) {
	filePerm, err := parsePerm(cfg.FilePermissions)
	if err != nil {
		return nil, err
	}
	m, err := servicemap.New(cfg.CaptureDir, servicemap.Options{
		JSONFile:          cfg.ServiceMap.JSONFile,
		MarkdownFile:      cfg.ServiceMap.MarkdownFile,
		FileMode:          filePerm,
		Logger:            logger,
		ServiceAttributes: cfg.ServiceAttributes,
		RunAttribute:      cfg.RunAttribute,
	})
	if err != nil {
		return nil, fmt.Errorf("service_map: %w", err)
	}
	return &serviceMapObserver{m: m}, nil
}

func (o *serviceMapObserver) observe(res pcommon.Resource, span ptrace.Span) {
	o.m.ObserveSpan(res, span)
}

// flush merges what was observed since the last flush into the files on disk.
func (o *serviceMapObserver) flush() error { return o.m.Flush() }

func (o *serviceMapObserver) shutdown() error { return o.m.Flush() }

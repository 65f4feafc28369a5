// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"fmt"
	"iter"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/servicemap"
)

// serviceMapObserver keeps service_map.json and service_map.md (design §5.1)
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

// observeAt observes a group of spans of writer's journal and the position
// after them (see servicemap.Map.ObserveAt).
func (o *serviceMapObserver) observeAt(writer string, pos uint64, spans iter.Seq2[pcommon.Resource, ptrace.Span]) {
	o.m.ObserveAt(writer, pos, spans)
}

// committed is writer's position in the last service_map.json written.
func (o *serviceMapObserver) committed(writer string) (uint64, bool) { return o.m.Committed(writer) }

func (o *serviceMapObserver) forget(writer string) { o.m.Forget(writer) }

// flush merges what was observed since the last flush into the files on disk.
func (o *serviceMapObserver) flush() error { return o.m.Flush() }

// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/processor/processortest"
)

// With contrib file_storage (bbolt) as the store, as the shipped configs
// have it: what the processor held when its process stopped without
// Shutdown (the extension's database closed under it, as a kill leaves it
// on disk) comes back on the next start.
func TestFileStorageCarriesHeldSpansAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	newExt := func() extension.Extension { return newFileStorage(t, dir) }
	cfg := testConfig()
	cfg.Storage = &storageID
	sink := new(consumertest.TracesSink)
	clk := newFakeClock()
	start := func(ext extension.Extension) *gymProcessor {
		p, err := newGymProcessorWithClock(processortest.NewNopSettings(componentType), cfg, sink, clk)
		require.NoError(t, err)
		require.NoError(t, p.startStorage(context.Background(), storageHost{Host: componenttest.NewNopHost(), ext: ext}))
		return p
	}
	ext := newExt()
	p := start(ext)
	td := readTraces(t, "../../testdata/default_preset_3_rollouts/input.json")
	in := td.SpanCount()
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	held := p.eng.core.Pending()
	require.NotZero(t, held)
	p.tick(context.Background()) // the timer's record carries the delivered mark
	delivered := sink.SpanCount()
	// The process dies: its database's file lock goes with it, and bbolt's
	// pages are in the file (written, not synced, as fsync is off).
	require.NoError(t, p.jr.client.Close(context.Background()))
	require.NoError(t, ext.Shutdown(context.Background()))

	ext = newExt()
	p = start(ext)
	require.Equal(t, held, p.eng.core.Pending(), "held again after the restart")
	require.Equal(t, delivered, sink.SpanCount(), "nothing delivered twice")
	clk.Advance(time.Hour)
	p.tick(context.Background())
	require.NoError(t, p.Shutdown(context.Background()))
	require.Equal(t, in, sink.SpanCount(), "every span once")
	require.NoError(t, ext.Shutdown(context.Background()))
}

var _ component.Host = storageHost{}

// newFileStorage starts a contrib file_storage extension on dir, configured
// as the shipped configs have it.
func newFileStorage(t testing.TB, dir string) extension.Extension {
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	cfg.Compaction.Directory = dir
	cfg.Recreate = true
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	return ext
}

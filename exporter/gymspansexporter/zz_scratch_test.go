package gymspansexporter

import (
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func BenchmarkZZEncodeOnly(b *testing.B) {
	td := gymTraces(42, 100, 20)
	e, _ := newTestExporter(b, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.encode(&e.batch, td)
		e.encodeRoots(&e.batch, td)
		e.batch.reset()
	}
}

func BenchmarkZZPdataMarshal(b *testing.B) {
	td := gymTraces(42, 100, 20)
	m := &ptrace.JSONMarshaler{}
	for i := 0; i < b.N; i++ {
		_, _ = m.MarshalTraces(td)
	}
}

func BenchmarkZZRawWrite(b *testing.B) {
	dir := b.TempDir()
	buf := make([]byte, 40<<10)
	var fs []*os.File
	for i := 0; i < 100; i++ {
		f, _ := os.OpenFile(filepath.Join(dir, string(rune('a'+i%26))+string(rune('a'+i/26))), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		fs = append(fs, f)
	}
	b.SetBytes(int64(len(buf) * 100))
	for i := 0; i < b.N; i++ {
		for _, f := range fs {
			f.Write(buf)
		}
	}
}

// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestOriginalTraceID(t *testing.T) {
	want := pcommon.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
	for _, tc := range []struct {
		name string
		put  func(pcommon.Map)
		ok   bool
	}{
		{"absent", func(pcommon.Map) {}, false},
		{"valid", func(m pcommon.Map) { m.PutStr(OriginalTraceAttribute, "0af7651916cd43dd8448eb211c80319c") }, true},
		{"upper case", func(m pcommon.Map) { m.PutStr(OriginalTraceAttribute, "0AF7651916CD43DD8448EB211C80319C") }, true},
		{"short", func(m pcommon.Map) { m.PutStr(OriginalTraceAttribute, "0af7651916cd43dd") }, false},
		{"not hex", func(m pcommon.Map) { m.PutStr(OriginalTraceAttribute, "zzf7651916cd43dd8448eb211c80319c") }, false},
		{"not a string", func(m pcommon.Map) { m.PutInt(OriginalTraceAttribute, 1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := pcommon.NewMap()
			tc.put(m)
			got, ok := OriginalTraceID(m)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && got != want {
				t.Fatalf("got %v, want %v", got, want)
			}
			if !ok && !got.IsEmpty() {
				t.Fatalf("got %v with ok false, want the empty id", got)
			}
		})
	}
}

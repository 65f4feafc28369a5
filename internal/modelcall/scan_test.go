// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// viaEncodingJSON is what scanLine must read from line: the line decoded
// by encoding/json into a generic value, the fields read from that.
func viaEncodingJSON(line []byte) (rawLine, bool) {
	var r rawLine
	if !json.Valid(line) {
		return r, false
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return r, false
	}
	top, ok := v.(map[string]any)
	if !ok {
		return r, false
	}
	str := func(m map[string]any, k string) jsonStr {
		s, ok := m[k].(string)
		return jsonStr{v: s, ok: ok}
	}
	num := func(m map[string]any, k string) jsonNum {
		n, ok := m[k].(json.Number)
		if !ok {
			return jsonNum{}
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return jsonNum{}
		}
		return jsonNum{v: f, ok: true}
	}
	obj := func(m map[string]any, k string) map[string]any {
		o, _ := m[k].(map[string]any)
		return o // nil: every field read from it is unset
	}
	r = rawLine{
		ModelCallID: str(top, "model_call_id"), Dialect: str(top, "dialect"),
		ModelRefName: str(obj(top, "model_ref"), "name"),
		StartedAt:    num(top, "started_at"), CompletedAt: num(top, "completed_at"),
		LatencyMS: num(top, "latency_ms"), LatencyTTFTMS: num(top, "latency_ttft_ms"),
		StatusCode: num(top, "status_code"), ErrorCategory: str(top, "error_category"),
		RequestModel: str(obj(top, "request"), "model"),
	}
	resp := obj(top, "response")
	usage := obj(resp, "usage")
	r.Response = rawResponse{
		ID: str(resp, "id"), Model: str(resp, "model"), Status: str(resp, "status"),
		StopReason: str(resp, "stop_reason"), IncompleteReason: str(obj(resp, "incomplete_details"), "reason"),
		InputTokens: num(usage, "input_tokens"), OutputTokens: num(usage, "output_tokens"),
		PromptTokens: num(usage, "prompt_tokens"), CompletionTokens: num(usage, "completion_tokens"),
	}
	choices, _ := resp["choices"].([]any)
	for _, c := range choices {
		m, _ := c.(map[string]any)
		if s := str(m, "finish_reason"); s.ok && s.v != "" && len(r.Response.FinishReasons) < MaxFinishReasons {
			r.Response.FinishReasons = append(r.Response.FinishReasons, s)
		}
		calls, _ := obj(m, "message")["tool_calls"].([]any)
		var kept []rawToolCall
		for _, x := range calls {
			tc, _ := x.(map[string]any)
			if name := str(obj(tc, "function"), "name"); name.ok && name.v != "" && len(kept) < MaxToolCalls {
				kept = append(kept, rawToolCall{Name: name, ID: str(tc, "id")})
			}
		}
		for _, k := range kept {
			if len(r.Response.ChoiceCalls) < MaxToolCalls {
				r.Response.ChoiceCalls = append(r.Response.ChoiceCalls, k)
			}
		}
	}
	items := func(key, typ, idKey string) []rawToolCall {
		var kept []rawToolCall
		xs, _ := resp[key].([]any)
		for _, x := range xs {
			it, _ := x.(map[string]any)
			if t := str(it, "type"); t.ok && t.v == typ {
				if name := str(it, "name"); name.ok && name.v != "" && len(kept) < MaxToolCalls {
					kept = append(kept, rawToolCall{Name: name, ID: str(it, idKey)})
				}
			}
		}
		return kept
	}
	r.Response.OutputCalls = items("output", "function_call", "call_id")
	r.Response.ContentCalls = items("content", "tool_use", "id")
	return r, true
}

func scanned(line []byte) (rawLine, bool) {
	var r rawLine
	if !scanLine(line, &r) {
		return rawLine{}, false
	}
	for _, f := range []*[]jsonStr{&r.Response.FinishReasons} {
		if len(*f) == 0 {
			*f = nil
		}
	}
	for _, f := range []*[]rawToolCall{&r.Response.OutputCalls, &r.Response.ChoiceCalls, &r.Response.ContentCalls} {
		if len(*f) == 0 {
			*f = nil
		}
	}
	return r, true
}

// seedLines are the golden cases' capture lines and lines written to
// probe the rules.
func seedLines(t testing.TB) [][]byte {
	lines := [][]byte{
		[]byte(`{"model_call_id":"a","MODEL_CALL_ID":"b"}`),
		[]byte(`{"model_ref":{"name":"a"},"model_ref":{"type":"x"}}`),
		[]byte(`{"model_ref":{"name":"a"},"model_ref":"b"}`),
		[]byte(`{"model\u005fcall_id":"\ud800x\u00e9\n","dialect":"chat` + "\xff\xfe" + `"}`),
		[]byte(`{"dialect":"\xff"}`),
		[]byte(`{"response":{"choices":[{"finish_reason":"stop"},1,{"finish_reason":""},{"finish_reason":"length","finish_reason":7}],"choices":[{"finish_reason":"b"}]}}`),
		[]byte(`{"status_code":200.5e-1,"started_at":-0,"latency_ms":1e400,"completed_at":12345678901234567890}`),
		[]byte(`{"response":{"usage":{"input_tokens":"3","prompt_tokens":4,"output_tokens":null}}}`),
		[]byte(`{"response":{"output":[{"type":"function_call","name":"get_weather","call_id":"c1","name":"w2"},{"type":"message"},7,{"type":"function_call","name":""}],"output":[{"type":"function_call","name":"a","call_id":3}]}}`),
		[]byte(`{"response":{"choices":[{"message":{"tool_calls":[{"id":"t1","function":{"name":"f"}},{"function":{"name":"g"},"function":{}}]},"message":{"tool_calls":[{"id":"t2","function":{"name":"h"}}]}},{"message":"x"}]}}`),
		[]byte(`{"response":{"content":[{"type":"tool_use","id":"tu1","name":"search"},{"type":"text","name":"n"}],"choices":7}}`),
		[]byte(` {"dialect":"responses"} ` + "\r"),
		[]byte(`null`), []byte(`[1,2,3]`), []byte(`{"a":01}`), []byte(`{"a":1.}`), []byte(`{"a":"\x01"}`),
		[]byte(`{"a":tru}`), []byte(`{"a":1,}`), []byte(`{} {}`), []byte(`{"a" 1}`), []byte(`{"a":"\q"}`),
		[]byte(strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)),
		[]byte(`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`),
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "processor", "gymcaptureprocessor", "testdata", "*", "*", "*.capture.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden capture files: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	return lines
}

func TestScanLineAsEncodingJSON(t *testing.T) {
	for _, line := range seedLines(t) {
		want, wantOK := viaEncodingJSON(line)
		got, gotOK := scanned(line)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Errorf("%.200q:\n scanned %v %+v\n   json  %v %+v", line, gotOK, got, wantOK, want)
		}
	}
}

func TestScanLineDepth(t *testing.T) {
	deep := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`)
	}
	for _, n := range []int{maxDepth, maxDepth + 1} {
		var r rawLine
		if got, want := scanLine(deep(n), &r), json.Valid(deep(n)); got != want {
			t.Errorf("nesting %d: scanned %v, encoding/json valid %v", n, got, want)
		}
	}
}

// FuzzScanLine: on any line, scanLine reads what encoding/json reads of the
// named fields, and refuses what encoding/json refuses.
func FuzzScanLine(f *testing.F) {
	for _, line := range seedLines(f) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want, wantOK := viaEncodingJSON(line)
		got, gotOK := scanned(line)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n scanned %v %+v\n   json  %v %+v", line, gotOK, got, wantOK, want)
		}
	})
}

// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
)

// A real Gym responses line (simple_agent's second call: the tool's output
// in the input, the answer in the output).
const responsesLine = `{"model_call_id":"35fc","dialect":"responses","model_ref":{"type":"responses_api_models","name":"policy_model"},` +
	`"request":{"instructions":"Be brief.","input":[{"content":"You are a helpful assistant.","role":"developer"},{"content":"what's it like in sf?","role":"user"},` +
	`{"arguments":"{\"city\": \"sf\", \"api_key\": \"sk-123\"}","call_id":"call_1","name":"get_weather","type":"function_call","id":"fc_1"},` +
	`{"call_id":"call_1","output":"{\"city\":\"sf\",\"weather_description\":\"cold\"}","type":"function_call_output"}]},` +
	`"response":{"id":"resp_5","model":"stub","output":[{"id":"msg_5","content":[{"annotations":[],"text":"It is sunny in sf.","type":"output_text"}],"role":"assistant","type":"message"}],"status":"completed"}}`

func TestParseContentResponses(t *testing.T) {
	c := ParseContent([]byte(responsesLine), credentials.Default().Match, 1<<20)
	assert.JSONEq(t, `[{"role":"system","parts":[{"type":"text","content":"You are a helpful assistant."}]},
		{"role":"user","parts":[{"type":"text","content":"what's it like in sf?"}]},
		{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"sf"}}]},
		{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":{"city":"sf","weather_description":"cold"}}]}]`, c.Input)
	assert.JSONEq(t, `[{"role":"assistant","parts":[{"type":"text","content":"It is sunny in sf."}],"finish_reason":"stop"}]`, c.Output)
	assert.JSONEq(t, `[{"type":"text","content":"Be brief."}]`, c.System)
	assert.Equal(t, "what's it like in sf?", c.Task)
	assert.Equal(t, "It is sunny in sf.", c.Answer)
	assert.NotContains(t, c.Input, "sk-123", "the credentials rule applies to the content")
}

func TestParseContentChat(t *testing.T) {
	line := `{"dialect":"chat","request":{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"hi"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"password\":\"p\",\"x\":1}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"42"}]},` +
		`"response":{"choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"length"}]}}`
	c := ParseContent([]byte(line), credentials.Default().Match, 1<<20)
	assert.JSONEq(t, `[{"role":"system","parts":[{"type":"text","content":"sys"}]},{"role":"user","parts":[{"type":"text","content":"hi"}]},
		{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"f","arguments":{"x":1}}]},
		{"role":"tool","parts":[{"type":"tool_call_response","id":"c1","response":"42"}]}]`, c.Input)
	assert.JSONEq(t, `[{"role":"assistant","parts":[{"type":"text","content":"done"}],"finish_reason":"length"}]`, c.Output)
	assert.Empty(t, c.System)
}

func TestParseContentMessages(t *testing.T) {
	line := `{"dialect":"messages","request":{"system":"sys","messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"token":"abc","q":"x"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]},` +
		`"response":{"content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"bye"}],"stop_reason":"end_turn"}}`
	c := ParseContent([]byte(line), credentials.Default().Match, 1<<20)
	assert.JSONEq(t, `[{"role":"user","parts":[{"type":"text","content":"hi"}]},
		{"role":"assistant","parts":[{"type":"tool_call","id":"t1","name":"f","arguments":{"q":"x"}}]},
		{"role":"tool","parts":[{"type":"tool_call_response","id":"t1","response":"ok"}]}]`, c.Input)
	assert.JSONEq(t, `[{"role":"assistant","parts":[{"type":"reasoning","content":"hmm"},{"type":"text","content":"bye"}],"finish_reason":"stop"}]`, c.Output)
	assert.JSONEq(t, `[{"type":"text","content":"sys"}]`, c.System)
}

func TestParseContentNone(t *testing.T) {
	assert.Equal(t, Content{}, ParseContent([]byte(`not json`), nil, 1024))
	assert.Equal(t, Content{}, ParseContent([]byte(`{"dialect":"responses","request":{},"response":{"error":"x"}}`), nil, 1024))
}

// Every content attribute stays within its bound, stays JSON of the
// conventions' shape, and says where it was cut.
func TestParseContentBounded(t *testing.T) {
	long := strings.Repeat("é", 5000) // 10,000 bytes, 2 a rune
	var input []string
	for range 50 {
		input = append(input, `{"role":"user","content":"`+long+`"}`)
	}
	line := `{"dialect":"responses","request":{"instructions":"` + long + `","input":[` + strings.Join(input, ",") + `]},` +
		`"response":{"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + long + `"}]}]}}`
	for _, limit := range []int{300, 1000, 4096, 65536} {
		c := ParseContent([]byte(line), nil, limit)
		for name, v := range map[string]string{"input": c.Input, "output": c.Output, "system": c.System, "task": c.Task, "answer": c.Answer} {
			require.NotEmpty(t, v, "%s at %d", name, limit)
			assert.LessOrEqual(t, len(v), limit, "%s at %d", name, limit)
			assert.True(t, utf8.ValidString(v), "%s at %d", name, limit)
			if limit < 10000 { // each of them is longer
				assert.Contains(t, v, TruncatedMarker, "%s at %d", name, limit)
			}
		}
		var ms []message
		require.NoError(t, json.Unmarshal([]byte(c.Input), &ms), "input at %d", limit)
		assert.Equal(t, "user", ms[0].Role)
		var parts []map[string]any
		require.NoError(t, json.Unmarshal([]byte(c.System), &parts), "system at %d", limit)
	}
	// Too many messages for the bound: the first are kept, and a last one
	// says how many more there were.
	c := ParseContent([]byte(line), nil, 1000)
	var ms []message
	require.NoError(t, json.Unmarshal([]byte(c.Input), &ms))
	assert.Less(t, len(ms), 50)
	assert.Contains(t, ms[len(ms)-1].Parts[0]["content"], "more messages")
	// Within the bound nothing is cut.
	c = ParseContent([]byte(line), nil, 1<<20)
	assert.NotContains(t, c.Input+c.Output+c.System, TruncatedMarker)
}

// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func calls(cs ...Call) []Call { return cs }

func TestJoin(t *testing.T) {
	const us = 1000
	for _, tc := range []struct {
		name    string
		calls   []Call
		xs      []Exchange
		inOrder bool
		want    []Match
	}{
		{
			name:  "by response id, whatever the times",
			calls: calls(Call{RequestID: "b", Start: 0, End: 10}, Call{RequestID: "a", Start: 20, End: 30}),
			xs:    []Exchange{{ResponseID: "a", Start: 0, End: 10}, {ResponseID: "b", Start: 20, End: 30}},
			want:  []Match{{1, ByResponseID}, {0, ByResponseID}},
		},
		{
			name:  "concurrent calls: most overlap first",
			calls: calls(Call{Start: 5 * us, End: 15 * us}, Call{Start: 0, End: 10 * us}),
			xs:    []Exchange{{Start: 0, End: 10 * us}, {Start: 5 * us, End: 15 * us}},
			want:  []Match{{1, ByTime}, {0, ByTime}},
		},
		{
			// The pipeline sees the second call first: it must not take
			// the first call's line.
			name:  "a call alone does not take a concurrent call's line",
			calls: calls(Call{Start: 5 * us, End: 15 * us}),
			xs:    []Exchange{{Start: 0, End: 10 * us}, {Start: 5 * us, End: 15 * us}},
			want:  []Match{{-1, ""}, {0, ByTime}},
		},
		{
			name:  "a caller's span over a retried call joins the retry",
			calls: calls(Call{Start: 0, End: 100 * us}),
			xs:    []Exchange{{Start: 1 * us, End: 20 * us}, {Start: 25 * us, End: 99 * us}},
			want:  []Match{{-1, ""}, {0, ByTime}},
		},
		{
			name:  "a call a microsecond outside its line (capture times are microseconds)",
			calls: calls(Call{Start: 10*us + 17, End: 10*us + 900}),
			xs:    []Exchange{{Start: 9 * us, End: 10 * us}},
			want:  []Match{{0, ByTime}},
		},
		{
			name:  "ids that differ never join by time",
			calls: calls(Call{RequestID: "x", Start: 0, End: 10 * us}),
			xs:    []Exchange{{ResponseID: "y", Start: 0, End: 10 * us}},
			want:  []Match{{-1, ""}},
		},
		{
			name:    "left over in equal numbers join in order only inOrder",
			calls:   calls(Call{Start: 100 * us, End: 110 * us}),
			xs:      []Exchange{{Start: 0, End: 10 * us}},
			inOrder: true,
			want:    []Match{{0, ByTime}},
		},
		{
			name:  "left over, not inOrder",
			calls: calls(Call{Start: 100 * us, End: 110 * us}),
			xs:    []Exchange{{Start: 0, End: 10 * us}},
			want:  []Match{{-1, ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Join(tc.calls, tc.xs, tc.inOrder))
		})
	}
}

func TestParseLineBoundsAndDialects(t *testing.T) {
	chat := `{"model_call_id":"m1","dialect":"chat","model_ref":{"name":"policy"},"started_at":1.5,"completed_at":2.5,"status_code":429,"error_category":"rate_limit","request":{"model":"q"},"response":{"id":"c1","model":"q-2","usage":{"prompt_tokens":7,"completion_tokens":3},"choices":[{"finish_reason":"length"}]}}`
	l, ok := ParseLine([]byte(chat))
	assert.True(t, ok)
	assert.Equal(t, int64(7), *l.InputTokens)
	assert.Equal(t, int64(3), *l.OutputTokens)
	assert.Equal(t, []string{"length"}, l.FinishReasons)
	assert.Equal(t, "rate_limit", l.ErrorType())
	assert.Equal(t, int64(1_500_000_000), l.Start)

	messages := `{"dialect":"messages","status_code":500,"response":{"id":"msg","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}}`
	l, ok = ParseLine([]byte(messages))
	assert.True(t, ok)
	assert.Equal(t, []string{"end_turn"}, l.FinishReasons)
	assert.Equal(t, "500", l.ErrorType())

	_, ok = ParseLine([]byte(`[1]`))
	assert.False(t, ok)

	long := string(make([]byte, 300)) + "é"
	assert.LessOrEqual(t, len(Bound(long)), MaxString)
	assert.Equal(t, "a\uFFFDb", Bound("a\xffb"))
	cut := Bound(string(make([]byte, MaxString-1)) + "é")
	assert.Len(t, cut, MaxString-1, "a rune is not split")
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		span Span
		want Kind
	}{
		{"gym.model.*", Span{Name: "gym.model.responses"}, Managed},
		{"model SERVER", Span{Name: "POST", Kind: "SERVER", ServerType: "responses_api_models", URLPath: "/ng-rollout/0-0/v1/responses"}, Server},
		{"SERVER of another server", Span{Name: "POST", Kind: "SERVER", ServerType: "resources_servers", URLPath: "/ng-rollout/0-0/v1/responses"}, NotModelCall},
		{"agent CLIENT to the model", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://m/ng-rollout/0-0/v1/responses"}, Client},
		{"agent CLIENT to itself", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://a/ng-rollout/0-0/v1/responses", CalleeType: "responses_api_agents"}, NotModelCall},
		{"model server CLIENT to its LLM", Span{Kind: "CLIENT", ServerType: "responses_api_models", URLFull: "http://llm/v1/chat/completions"}, Upstream},
		{"untyped CLIENT with the prefix", Span{Kind: "CLIENT", HTTPURL: "http://m/ng-rollout/0-0/v1/responses"}, Client},
		{"untyped CLIENT without it: the LLM call", Span{Kind: "CLIENT", HTTPURL: "http://llm/v1/responses"}, Upstream},
		{"untyped agent CLIENT to itself", Span{Kind: "CLIENT", URLFull: "http://a/ng-rollout/0-0/v1/responses", Service: "g/agent", PeerService: "g/agent"}, NotModelCall},
		{"CLIENT elsewhere", Span{Kind: "CLIENT", URLFull: "http://r/ng-rollout/0-0/verify"}, NotModelCall},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, KindOf(&tc.span)) })
	}
}

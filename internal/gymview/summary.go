// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// maxSummaryBytes bounds how much of the end of otel-metrics.jsonl a run
// summary reads: the GenAI metrics are cumulative, so their last points are
// the run's totals.
const maxSummaryBytes = 8 << 20

// runSummary is the answer of /api/runsummary: a run's model calls, tokens
// and latencies from the last points of the gymgenai connector's metrics.
type runSummary struct {
	Run          string   `json:"run"`
	Available    bool     `json:"available"` // the metrics file has GenAI metrics of the run
	ModelCalls   uint64   `json:"model_calls"`
	InputTokens  float64  `json:"input_tokens"`
	OutputTokens float64  `json:"output_tokens"`
	Errors       int64    `json:"errors"`
	LatencyMeanS *float64 `json:"latency_mean_s,omitempty"`
	LatencyP95S  *float64 `json:"latency_p95_s,omitempty"` // an upper bound: the bucket's
	TTFTMeanS    *float64 `json:"ttft_mean_s,omitempty"`
	TTFTP95S     *float64 `json:"ttft_p95_s,omitempty"`
}

// summaryHist is the sum of a histogram's last points over the series of a
// run.
type summaryHist struct {
	count   uint64
	sum     float64
	bounds  []float64
	buckets []uint64
}

func (h *summaryHist) add(dp pmetric.HistogramDataPoint) {
	if h.bounds == nil {
		h.bounds = dp.ExplicitBounds().AsRaw()
		h.buckets = make([]uint64, len(h.bounds)+1)
	}
	h.count += dp.Count()
	h.sum += dp.Sum()
	if dp.ExplicitBounds().Len() == len(h.bounds) && dp.BucketCounts().Len() == len(h.buckets) {
		for i, c := range dp.BucketCounts().AsRaw() {
			h.buckets[i] += c
		}
	}
}

func (h *summaryHist) mean() *float64 {
	if h.count == 0 {
		return nil
	}
	m := h.sum / float64(h.count)
	return &m
}

// quantile is the upper bound of the bucket that holds quantile q.
func (h *summaryHist) quantile(q float64) *float64 {
	if h.count == 0 {
		return nil
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	var seen uint64
	for i, c := range h.buckets {
		seen += c
		if seen >= rank && i < len(h.bounds) {
			v := h.bounds[i]
			return &v
		}
	}
	return nil
}

// readRunSummary reads the run's GenAI totals from the end of the metrics
// file: for each series of the run, its last point.
func (h *Handler) readRunSummary(run string) (*runSummary, error) {
	s := &runSummary{Run: run}
	f, st, err := h.dir.open(metricsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	from := max(0, st.Size()-maxSummaryBytes)
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading %s: %w", metricsFile.s, err)
	}
	last := map[string]pmetric.Metric{} // name + attributes → a metric holding its last point
	first := from > 0                   // the first line read may be cut
	_, err = eachLine(io.LimitReader(f, st.Size()-from), maxSummaryBytes, func(line []byte) error {
		if first {
			first = false
			return nil
		}
		md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(line)
		if err != nil {
			return nil
		}
		collectGenAI(md, run, last)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var duration, ttft summaryHist
	for _, m := range last {
		switch m.Name() {
		case "gen_ai.client.token.usage":
			dp := m.Histogram().DataPoints().At(0)
			if v, _ := dp.Attributes().Get("gen_ai.token.type"); v.Str() == "input" {
				s.InputTokens += dp.Sum()
			} else if v.Str() == "output" {
				s.OutputTokens += dp.Sum()
			}
		case "gen_ai.client.operation.duration":
			duration.add(m.Histogram().DataPoints().At(0))
		case "gen_ai.client.operation.time_to_first_chunk":
			ttft.add(m.Histogram().DataPoints().At(0))
		case "nemo.gym.model_call.errors":
			s.Errors += m.Sum().DataPoints().At(0).IntValue()
		}
	}
	s.Available = len(last) > 0
	s.ModelCalls = duration.count
	s.LatencyMeanS, s.LatencyP95S = duration.mean(), duration.quantile(0.95)
	s.TTFTMeanS, s.TTFTP95S = ttft.mean(), ttft.quantile(0.95)
	return s, nil
}

// collectGenAI keeps in last, per series of run, a metric holding its
// latest point of the GenAI metrics in md.
func collectGenAI(md pmetric.Metrics, run string, last map[string]pmetric.Metric) {
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		sms := md.ResourceMetrics().At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch {
				case m.Type() == pmetric.MetricTypeHistogram && (m.Name() == "gen_ai.client.token.usage" ||
					m.Name() == "gen_ai.client.operation.duration" || m.Name() == "gen_ai.client.operation.time_to_first_chunk"):
					dps := m.Histogram().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						keepLast(m, dps.At(d).Attributes().AsRaw(), run, last, func(to pmetric.Metric) {
							dps.At(d).CopyTo(to.SetEmptyHistogram().DataPoints().AppendEmpty())
						})
					}
				case m.Type() == pmetric.MetricTypeSum && m.Name() == "nemo.gym.model_call.errors":
					dps := m.Sum().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						keepLast(m, dps.At(d).Attributes().AsRaw(), run, last, func(to pmetric.Metric) {
							dps.At(d).CopyTo(to.SetEmptySum().DataPoints().AppendEmpty())
						})
					}
				}
			}
		}
	}
}

func keepLast(m pmetric.Metric, attrs map[string]any, run string, last map[string]pmetric.Metric, set func(pmetric.Metric)) {
	if r, _ := attrs[gymconv.RunAttribute].(string); r != run {
		return
	}
	to := pmetric.NewMetric()
	to.SetName(m.Name())
	set(to)
	last[m.Name()+"\x00"+fmt.Sprint(attrs)] = to
}

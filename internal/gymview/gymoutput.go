// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Gym's output files (design §8). `gym eval run --output FILE` appends a
// row to FILE (rollouts.jsonl by default) as each scored rollout ends, and
// a row to <stem>_failures.jsonl beside it for a rollout dropped from the
// score; its health checks write rollout_verdicts.jsonl beside them once
// the run is done (nemo_gym 0.7.0: rollout_collection.py, path_utils.py,
// rollout_health.py).
const (
	gymDefaultRollouts = "rollouts.jsonl"
	gymVerdictsFile    = "rollout_verdicts.jsonl"

	// What is kept of a row's strings, in characters.
	maxReasonChars  = 2000 // Gym bounds an episode's failure_reason so
	maxKindChars    = 200
	maxVerdictChars = 40
	maxFindingChars = 300
	maxGymIDBytes   = 256
	// maxFindings a verdict keeps; the rest are counted.
	maxFindings = 10
)

// gymResult is what Gym's output says of one rollout, as the list and the
// rollout page get it.
type gymResult struct {
	Reward        *float64 `json:"reward,omitempty"`
	FailureKind   string   `json:"failure_kind,omitempty"`
	FailureReason string   `json:"failure_reason,omitempty"`
	Masked        bool     `json:"masked,omitempty"`  // mask_sample: the reward is no valid measurement
	Dropped       bool     `json:"dropped,omitempty"` // in the failures file: dropped from the score
	Perf          *gymPerf `json:"perf,omitempty"`
	Verdict       string   `json:"verdict,omitempty"` // healthy, unhealthy or unobserved
	Findings      []string `json:"findings,omitempty"`
	MoreFindings  int      `json:"more_findings,omitempty"`
}

// failed: Gym names a failure kind, or dropped the rollout from the score.
func (g *gymResult) failed() bool { return g != nil && (g.FailureKind != "" || g.Dropped) }

// gymPerf is a row's ng_perf (present when Gym's observability was on).
type gymPerf struct {
	NumTurns         *float64 `json:"num_turns,omitempty"`
	NumToolCalls     *float64 `json:"num_tool_calls,omitempty"`
	PromptTokens     *float64 `json:"prompt_tokens,omitempty"`
	CompletionTokens *float64 `json:"completion_tokens,omitempty"`
	TotalLatencyMS   *float64 `json:"total_latency_ms,omitempty"`
}

// gymVerdict is a row of rollout_verdicts.jsonl.
type gymVerdict struct {
	verdict  string
	findings []string
	more     int
}

// The members kept of each file's rows; the rest of a row is read past.
var (
	gymRowMembers = memberSet("_ng_rollout_id", "_ng_task_index", "_ng_rollout_index", "_ng_attempt_index",
		"reward", "failure_kind", "failure_reason", "mask_sample", "ng_perf",
		"_ng_failure_class", "_ng_failure_message", "error")
	gymVerdictMembers = memberSet("rollout_id", "_ng_task_index", "_ng_rollout_index", "verdict", "findings")
)

func memberSet(names ...string) func(string) bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return func(k string) bool { return m[k] }
}

// gymOutput is Gym's output of one run, read incrementally and joined to
// the rollouts of one run of the capture dir by rollout id. Its owner
// (the Handler) holds its lock.
type gymOutput struct {
	path   string // as configured: the output file, or its directory
	runCfg string // the run it belongs to, as configured ("": the latest)

	dir      *captureDir // the directory of the files; nil until found
	rollouts *gymFile
	failures *gymFile
	verdicts *gymFile

	scored   map[string]*gymResult // by rollout id, from the rollouts file
	dropped  map[string]*gymResult // from the failures file
	verdictM map[string]*gymVerdict
	gen      uint64 // changes whenever a map changes
	err      string
	strs     map[string]string

	latestGen uint64 // index generation latest was chosen at
	latest    string

	distinctGen uint64 // gen distinctN was counted at
	distinctN   int
	pageCache   gymPageCache // gympage.go
}

func newGymOutput(path, run string) *gymOutput {
	g := &gymOutput{path: path, runCfg: run, strs: map[string]string{}}
	g.scored, g.dropped, g.verdictM = map[string]*gymResult{}, map[string]*gymResult{}, map[string]*gymVerdict{}
	return g
}

// locate finds the files: path is the rollouts file, or the directory
// that holds rollouts.jsonl. Until path exists there is nothing to read.
func (g *gymOutput) locate() error {
	if g.dir != nil {
		return nil
	}
	st, err := os.Stat(g.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	dir, name := g.path, gymDefaultRollouts
	switch {
	case st.IsDir():
	case st.Mode().IsRegular():
		dir, name = filepath.Dir(g.path), filepath.Base(g.path)
	default:
		return fmt.Errorf("%s is neither a directory nor a regular file", g.path)
	}
	g.dir = newCaptureDir(dir)
	g.rollouts = &gymFile{name: fileName{name}}
	g.failures = &gymFile{name: fileName{strings.TrimSuffix(name, filepath.Ext(name)) + "_failures.jsonl"}}
	g.verdicts = &gymFile{name: fileName{gymVerdictsFile}, whole: true}
	return nil
}

// refresh reads what the files gained.
func (g *gymOutput) refresh() error {
	if err := g.locate(); err != nil || g.dir == nil {
		g.err = ""
		if err != nil {
			g.err = err.Error()
		}
		return err
	}
	g.err = ""
	var errs []error
	for _, f := range []struct {
		file  *gymFile
		keep  func(string) bool
		reset func()
		row   func(map[string][]byte) bool
	}{
		{g.rollouts, gymRowMembers, func() { g.scored = map[string]*gymResult{} }, func(m map[string][]byte) bool { return g.addRow(g.scored, m, false) }},
		{g.failures, gymRowMembers, func() { g.dropped = map[string]*gymResult{} }, func(m map[string][]byte) bool { return g.addRow(g.dropped, m, true) }},
		{g.verdicts, gymVerdictMembers, func() { g.verdictM = map[string]*gymVerdict{} }, g.addVerdict},
	} {
		changed, err := f.file.refresh(g.dir, f.keep, f.reset, f.row)
		if changed {
			g.gen++
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// addRow keeps one row of the rollouts or failures file by its rollout id
// (a later row of the same id replaces an earlier one, as Gym's resume
// does).
func (g *gymOutput) addRow(into map[string]*gymResult, m map[string][]byte, dropped bool) bool {
	id, ok := gymRowID(m, "_ng_rollout_id")
	if !ok {
		return false
	}
	r := &gymResult{Dropped: dropped}
	if reward, ok := jsonNumber(m["reward"]); ok {
		r.Reward = &reward
	}
	r.FailureKind = g.intern(jsonString(m["failure_kind"], maxKindChars))
	r.FailureReason = jsonString(m["failure_reason"], maxReasonChars)
	if dropped {
		r.FailureKind = firstOf(r.FailureKind, g.intern(jsonString(m["_ng_failure_class"], maxKindChars)))
		r.FailureReason = firstOf(r.FailureReason, jsonString(m["_ng_failure_message"], maxReasonChars), jsonString(m["error"], maxReasonChars))
	}
	_ = json.Unmarshal(m["mask_sample"], &r.Masked)
	var perf gymPerf
	if json.Unmarshal(m["ng_perf"], &perf) == nil && perf != (gymPerf{}) {
		r.Perf = &perf
	}
	into[id] = r
	return true
}

// addVerdict keeps one row of rollout_verdicts.jsonl by its rollout_id.
func (g *gymOutput) addVerdict(m map[string][]byte) bool {
	id, ok := gymRowID(m, "rollout_id")
	verdict := jsonString(m["verdict"], maxVerdictChars)
	if !ok || verdict == "" {
		return false
	}
	v := &gymVerdict{verdict: g.intern(verdict)}
	var findings []struct {
		Check  json.RawMessage            `json:"check"`
		Detail map[string]json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(m["findings"], &findings) == nil {
		for _, f := range findings {
			if len(v.findings) == maxFindings {
				v.more++
				continue
			}
			text := jsonString(f.Check, maxFindingChars)
			if reason := jsonString(f.Detail["reason"], maxFindingChars); reason != "" {
				text += ": " + reason
			}
			v.findings = append(v.findings, text)
		}
	}
	g.verdictM[id] = v
	return true
}

// gymRowID is a row's rollout id as Gym makes it
// (rollout_correlation.maybe_rollout_id_from_run_body): the explicit id
// member, else "<task>-<rollout>"; then "-a<k>" for a re-dispatched
// attempt k > 0.
func gymRowID(m map[string][]byte, explicit string) (string, bool) {
	id := jsonString(m[explicit], maxGymIDBytes)
	if id == "" {
		task, ok1 := pyIndex(m["_ng_task_index"])
		rollout, ok2 := pyIndex(m["_ng_rollout_index"])
		if !ok1 || !ok2 {
			return "", false
		}
		id = task + "-" + rollout
	}
	if explicit != "rollout_id" { // a verdict's rollout_id has its attempt already
		if a, err := strconv.Atoi(string(m["_ng_attempt_index"])); err == nil && a > 0 {
			id += "-a" + strconv.Itoa(a)
		}
	}
	return id, len(id) <= maxGymIDBytes
}

// pyIndex is a task or rollout index as Python formats it in an f-string:
// an integer's digits, a string as it is.
func pyIndex(raw []byte) (string, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		s := jsonString(raw, maxGymIDBytes)
		return s, s != ""
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
		return "", false
	}
	return string(raw), true
}

// jsonNumber is a JSON number value (false for anything else).
func jsonNumber(raw []byte) (float64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	return v, err == nil && !math.IsInf(v, 0)
}

// jsonString is a JSON string value cut to n characters ("" for anything
// else).
func jsonString(raw []byte, n int) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// intern keeps one copy of the kinds and verdicts most rows share.
func (g *gymOutput) intern(s string) string { return intern(g.strs, s, 1<<12) }

// lookup is Gym's row of rollout id and its verdict, either nil. A scored
// row wins over a dropped one (a resumed run scored it after all).
func (g *gymOutput) lookup(id string) (*gymResult, *gymVerdict) {
	r := g.scored[id]
	if r == nil {
		r = g.dropped[id]
	}
	return r, g.verdictM[id]
}

// result is what Gym's output says of rollout id (nil: nothing).
func (g *gymOutput) result(id string) *gymResult {
	r, v := g.lookup(id)
	if v == nil {
		return r
	}
	out := gymResult{}
	if r != nil {
		out = *r
	}
	out.Verdict, out.Findings, out.MoreFindings = v.verdict, v.findings, v.more
	return &out
}

// failed and unhealthy say of rollout id what the list filters by.
func (g *gymOutput) failed(id string) bool {
	r, _ := g.lookup(id)
	return r.failed()
}

func (g *gymOutput) unhealthy(id string) bool {
	v := g.verdictM[id]
	return v != nil && v.verdict == "unhealthy"
}

// distinct is how many rollout ids Gym's output names, counted again only
// when the output changed.
func (g *gymOutput) distinct() int {
	if g.distinctGen == g.gen && g.gen != 0 {
		return g.distinctN
	}
	n := len(g.scored)
	for id := range g.dropped {
		if g.scored[id] == nil {
			n++
		}
	}
	for id := range g.verdictM {
		if g.scored[id] == nil && g.dropped[id] == nil {
			n++
		}
	}
	g.distinctGen, g.distinctN = g.gen, n
	return n
}

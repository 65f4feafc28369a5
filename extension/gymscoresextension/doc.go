// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymscoresextension sends Gym's reward, failure kind and health
// verdict of each rollout to a tracing backend as that backend's own
// scores, on the rollout's trace (design §6): Arize Phoenix session and
// trace annotations, MLflow assessments.
//
// Gym keeps reward out of OpenTelemetry; the viewer joins it beside the
// trace, and this extension sends that join:
//
//		gymview's Handler.Scores (rollouts.jsonl ⋈ Gym's output) -> poll -> queue -> backend (phoenix.go, mlflow.go) -> acked
//
//	  - extension.go: the glue. Start finds the gymview extension named by
//	    `view` (its capture dir and Gym's output are the one place they are
//	    configured) and runs the poller and the sender.
//	  - score.go: a rollout's Score as the named values a backend takes
//	    (`reward`, `gym.failure_kind`, `gym.verdict`).
//	  - queue.go: the bounded queue of scores due, each retried with its own
//	    exponential backoff. A score that does not fit waits in Gym's files and
//	    is queued at a later poll: nothing is dropped for a full queue.
//	  - acked.go: the scores each backend acknowledged, appended to
//	    <capture_dir>/.gymscores/acked.jsonl, so a restart sends none again.
//	  - sender.go: the one goroutine that polls, queues and sends, and logs
//	    and counts what the backend refused.
//	  - backend.go: a refusal classified (the backend as a whole, this score,
//	    for good).
//	  - phoenix.go, mlflow.go: one request per score, in the backend's own API
//	    (MLflow's create is not idempotent: a retry reads the trace first).
//
// It never touches a pipeline: a backend that is down costs scores only.
package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

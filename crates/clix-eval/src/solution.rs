//! `--solution`: each task's reference steps through a design instead of a
//! model, then its checks; and a do-nothing run that must fail.
//!
//! It proves the tasks (every solution passes in every design it is meant
//! for, no check passes vacuously) and measures what each design sends to
//! the model for the same work: tool-result bytes and estimated tokens.
//! The answer of a solution is its `{"answer"}` step, else the raw stdout of
//! its last step, as if the model repeated what it read.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use crate::attempt::{Attempt, AttemptOptions};
use crate::designs::{Design, definition_bytes};
use crate::report::{
    AttemptRecord, AttemptStop, Ended, Mode, NothingRecord, Results, Skip, note_definitions, summarize,
};
use crate::task::{Step, Task};
use crate::trace::Trace;

/// What to run.
#[derive(Debug, Clone)]
pub struct SolutionRun {
    /// The designs, in report order.
    pub designs: Vec<Design>,
    /// How attempts are set up.
    pub options: AttemptOptions,
    /// Also run each task with nothing done, which must fail.
    pub do_nothing: bool,
}

impl SolutionRun {
    /// The settings every shard of such a run must share, for its
    /// [`ShardRecord`](crate::ShardRecord).
    pub fn shard_settings(&self) -> serde_json::Value {
        crate::shard::run_settings(&self.options, None, 1)
    }
}

impl Default for SolutionRun {
    fn default() -> Self {
        SolutionRun { designs: Design::ALL.to_vec(), options: AttemptOptions::default(), do_nothing: true }
    }
}

/// Runs `tasks` as `run` says; `suites` are recorded in the results.
pub async fn run_solutions(tasks: &[Task], suites: &[std::path::PathBuf], run: &SolutionRun) -> Results {
    let mut attempts = Vec::new();
    let mut do_nothing = Vec::new();
    let mut skipped = Vec::new();
    let mut definition_bytes = BTreeMap::new();
    for task in tasks {
        if task.solution.is_none() && task.solution_for.is_empty() {
            skipped.push(Skip { task: task.id.clone(), design: None, reason: "no solution".into() });
            continue;
        }
        for &design in &run.designs {
            if let Some(reason) = task.skip_reason(design) {
                skipped.push(Skip { task: task.id.clone(), design: Some(design), reason });
                continue;
            }
            if task.solution(design).is_none() {
                skipped.push(Skip { task: task.id.clone(), design: Some(design), reason: "no solution".into() });
                continue;
            }
            let (record, bytes) = solve(task, design, &run.options).await;
            if let Some(bytes) = bytes {
                note_definitions(&mut definition_bytes, design, bytes);
            }
            attempts.push(record);
        }
        if run.do_nothing {
            do_nothing.push(nothing(task, &run.options).await);
        }
    }
    let finished_unix =
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    Results {
        schema_version: crate::report::SCHEMA_VERSION,
        mode: Mode::Solution,
        model: None,
        temperature: None,
        shard: None,
        finished_unix,
        suites: suites.to_vec(),
        designs: run.designs.clone(),
        definition_bytes,
        summary: summarize(&attempts),
        attempts,
        do_nothing,
        skipped,
    }
}

/// One task's reference steps in one design; also the bytes of the
/// design's tool definitions.
async fn solve(task: &Task, design: Design, options: &AttemptOptions) -> (AttemptRecord, Option<u64>) {
    let started = Instant::now();
    let elapsed = |started: Instant| started.elapsed().as_millis() as u64;
    let attempt = match Attempt::prepare(task, options).await {
        Ok(a) => a,
        Err(e) => return (AttemptRecord::error(task, design, 0, e.to_string(), elapsed(started)), None),
    };
    let mut tools = match attempt.executor(design).await {
        Ok(t) => t,
        Err(e) => return (AttemptRecord::error(task, design, 0, e.to_string(), elapsed(started)), None),
    };
    let definitions: u64 = tools.tools().iter().map(definition_bytes).sum();
    let steps = attempt.solution(task, design).unwrap_or_default();
    let mut trace = Trace::default();
    let mut answer = None;
    let ran = tokio::time::timeout(attempt.timeout(), async {
        for step in &steps {
            match step {
                Step::Answer { answer: said } => answer = Some(said.clone()),
                _ => trace.calls.extend(tools.step(step).await),
            }
        }
    })
    .await;
    let (reason, mut error) = match ran {
        Ok(()) => (AttemptStop::SolutionDone, None),
        Err(_) => (AttemptStop::Timeout, Some(format!("timed out after {}s", attempt.timeout().as_secs()))),
    };
    if trace.calls.len() > attempt.max_steps() as usize {
        let calls = trace.calls.len();
        error = Some(format!("the solution makes {calls} tool calls, more than max_steps {}", attempt.max_steps()));
    }
    trace.answer = answer.or_else(|| trace.calls.last().map(|c| c.stdout.clone()));
    drop(tools);
    let score = attempt.score(&trace).await;
    let ended = Ended {
        steps: trace.calls.len() as u32,
        wall_ms: elapsed(started),
        reason,
        error,
        path_map: attempt.map().clone(),
    };
    let mut record = AttemptRecord::new(task, design, 0, &trace, score, ended);
    record.definition_bytes = definitions;
    // A model doing these steps calls once per tool call, then once to answer.
    record.model_calls = record.tool_calls + 1;
    (record, Some(definitions))
}

/// The task with nothing done: setup, then the checks.
async fn nothing(task: &Task, options: &AttemptOptions) -> NothingRecord {
    match Attempt::prepare(task, options).await {
        Ok(attempt) => {
            let score = attempt.score(&Trace::default()).await;
            NothingRecord {
                task: task.id.clone(),
                passed: score.passed,
                score: score.score,
                checks: score.checks,
                error: None,
            }
        }
        Err(e) => NothingRecord {
            task: task.id.clone(),
            passed: false,
            score: 0.0,
            checks: Vec::new(),
            error: Some(e.to_string()),
        },
    }
}

/// What is wrong with the suite, as `--solution` proves it: each line names
/// the task and the failing check. Empty when every solution passes, every
/// do-nothing run fails and every solution fits its step budget.
pub fn problems(results: &Results) -> Vec<String> {
    let mut out = Vec::new();
    for r in &results.attempts {
        if !r.passed || r.error.is_some() {
            let failed: Vec<String> =
                r.checks.iter().filter(|c| !c.passed).map(|c| format!("{} ({})", c.check, c.detail)).collect();
            let stopped = r.stop_reason.error().map(str::to_string);
            let why = stopped.into_iter().chain(r.error.iter().cloned()).chain(failed).collect::<Vec<_>>().join("; ");
            out.push(format!("{} [{}]: the solution does not pass: {why}", r.task, r.design));
        }
    }
    for n in &results.do_nothing {
        if n.passed {
            out.push(format!("{}: doing nothing passes every check; a check must need the work done", n.task));
        }
        if let Some(e) = &n.error {
            out.push(format!("{}: the do-nothing run could not be set up: {e}", n.task));
        }
    }
    out
}

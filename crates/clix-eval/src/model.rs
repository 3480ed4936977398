//! The model-driven mode: each task, in each tool design, `repeat` times,
//! through clix's agent loop (the same prompts, budgets, retries and
//! trajectories as `clix ask`), with the design's tools in place of `run`.
//!
//! Attempts run `jobs` at a time on the caller's task; each has its own
//! workspace, home, engine and trajectory, so they never see each other.
//! An attempt that cannot run (its setup, its tools, the provider) is a
//! failed record with the reason, never a crash of the whole run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use clix_agent::{
    Agent, AgentSettings, Event, Invocation, ProjectNotes, Provider, ResolvedProvider, StopReason as AgentStop,
    SystemPrompt, ToolOutcome, Tools, Trajectory, call_arguments,
};
use clix_engine::CancelHandle;
use futures_util::StreamExt;
use serde_json::json;

use crate::attempt::{Attempt, AttemptOptions};
use crate::designs::{Design, Executor, ToolSpec, definition_bytes};
use crate::report::{AttemptRecord, AttemptStop, Ended, Mode, Results, Skip, note_definitions, summarize};
use crate::task::Task;
use crate::trace::{Trace, estimate_tokens};

/// How long an attempt past its deadline may take to stop (a `bash` call
/// cannot be cancelled; its own time limit ends it) before it is dropped.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// What to run with a model.
#[derive(Debug, Clone)]
pub struct ModelRun {
    /// The designs, in report order.
    pub designs: Vec<Design>,
    /// How attempts are set up (`max_steps` and `timeout` are the defaults
    /// of tasks that name none).
    pub options: AttemptOptions,
    /// The model and where it is served.
    pub provider: ResolvedProvider,
    /// The agent's settings (retries, output cap, context window…); its
    /// step and wall-time budgets are each task's.
    pub agent: AgentSettings,
    /// Attempts of each task in each design.
    pub repeat: u32,
    /// Attempts run at once.
    pub jobs: usize,
    /// Where each attempt's trajectory is written (`<task>-<design>-r<N>.jsonl`).
    pub runs_dir: PathBuf,
}

impl ModelRun {
    /// The attempts of `tasks` this run makes (each task in each design,
    /// `repeat` times), and what it skips: a run-only task in another design.
    fn plan<'t>(&self, tasks: &'t [Task]) -> (Vec<(&'t Task, Design, u32)>, Vec<Skip>) {
        let mut skipped = Vec::new();
        let mut planned = Vec::new();
        for task in tasks {
            for &design in &self.designs {
                if let Some(reason) = task.skip_reason(design) {
                    skipped.push(Skip { task: task.id.clone(), design: Some(design), reason });
                    continue;
                }
                planned.extend((0..self.repeat.max(1)).map(|repeat| (task, design, repeat)));
            }
        }
        (planned, skipped)
    }

    /// The settings every shard of such a run must share, for its
    /// [`ShardRecord`](crate::ShardRecord).
    pub fn shard_settings(&self) -> serde_json::Value {
        crate::shard::run_settings(&self.options, Some(&self.agent), self.repeat)
    }

    /// How many attempts [`run_model`] will make of `tasks` (a progress bar's length).
    pub fn attempts(&self, tasks: &[Task]) -> usize {
        self.plan(tasks).0.len()
    }
}

/// Runs `tasks` with the model; `on_done` hears of each attempt as it ends
/// (for a progress bar). `suites` are recorded in the results.
pub async fn run_model(
    tasks: &[Task],
    suites: &[PathBuf],
    run: &ModelRun,
    on_done: &mut dyn FnMut(&AttemptRecord),
) -> Results {
    let (planned, skipped) = run.plan(tasks);
    let mut attempts = Vec::with_capacity(planned.len());
    let mut definitions = std::collections::BTreeMap::new();
    let mut running = futures_util::stream::iter(planned)
        .map(|(task, design, repeat)| attempt(task, design, repeat, run))
        .buffer_unordered(run.jobs.max(1));
    while let Some((record, bytes)) = running.next().await {
        on_done(&record);
        if let Some(bytes) = bytes {
            note_definitions(&mut definitions, record.design, bytes);
        }
        attempts.push(record);
    }
    // In the order of the suite, whatever order they ended in.
    let position = |id: &str| tasks.iter().position(|t| t.id == id).unwrap_or(usize::MAX);
    attempts.sort_by(|a: &AttemptRecord, b| {
        (position(&a.task), a.design, a.repeat).cmp(&(position(&b.task), b.design, b.repeat))
    });
    let finished_unix =
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    Results {
        schema_version: crate::report::SCHEMA_VERSION,
        mode: Mode::Model,
        model: Some(run.provider.model.clone()),
        temperature: run.provider.temperature,
        shard: None,
        finished_unix,
        suites: suites.to_vec(),
        designs: run.designs.clone(),
        definition_bytes: definitions,
        summary: summarize(&attempts),
        attempts,
        do_nothing: Vec::new(),
        skipped,
    }
}

/// One attempt: prepare, the agent loop until it stops or the deadline,
/// then the checks. Also the bytes of the design's tool definitions.
async fn attempt(task: &Task, design: Design, repeat: u32, run: &ModelRun) -> (AttemptRecord, Option<u64>) {
    let started = Instant::now();
    let failed =
        |e: String| (AttemptRecord::error(task, design, repeat, e, started.elapsed().as_millis() as u64), None);
    let attempt = match Attempt::prepare(task, &run.options).await {
        Ok(a) => a,
        Err(e) => return failed(e.to_string()),
    };
    let executor = match attempt.executor(design).await {
        Ok(t) => t,
        Err(e) => return failed(e.to_string()),
    };
    let mut tools =
        EvalTools { executor, workspace: attempt.workspace().root().to_path_buf(), trace: Trace::default() };
    let definitions: u64 = tools.executor.tools().iter().map(definition_bytes).sum();
    let trajectory = match open_trajectory(&run.runs_dir, task, design, repeat, &attempt) {
        Ok(t) => t,
        Err(e) => return failed(format!("cannot write the trajectory in {}: {e}", run.runs_dir.display())),
    };
    let trajectory_path = trajectory.path.clone();
    let settings = AgentSettings {
        max_steps: attempt.max_steps(),
        max_wall_secs: attempt.timeout().as_secs().max(1),
        ..run.agent.clone()
    };
    let outcome = drive(&mut tools, Provider::new(&run.provider), settings, trajectory, &attempt).await;
    let mut trace = tools.trace;
    let (reason, error, steps, usage, estimated) = match outcome {
        Driven::Stopped { summary, timed_out, messages } => {
            trace.answer = Some(summary.answer.clone()).filter(|a| !a.is_empty());
            let (reason, error) = stop_reason(&summary.stop_reason, timed_out, attempt.timeout());
            let estimated = summary.usage.total() == 0;
            let usage = if estimated { estimate_usage(&messages, definitions) } else { summary.usage };
            (reason, error, summary.steps, Some(usage), estimated)
        }
        Driven::Dropped => {
            let why = format!(
                "did not stop within {}s of its {}s deadline; its calls so far are scored",
                STOP_GRACE.as_secs(),
                attempt.timeout().as_secs()
            );
            (AttemptStop::Timeout, Some(why), trace.calls.len() as u32, None, false)
        }
    };
    let score = attempt.score(&trace).await;
    let ended =
        Ended { steps, wall_ms: started.elapsed().as_millis() as u64, reason, error, path_map: attempt.map().clone() };
    let mut record = AttemptRecord::new(task, design, repeat, &trace, score, ended);
    if let Some(usage) = usage {
        record.input_tokens = Some(usage.input_tokens);
        record.output_tokens = Some(usage.output_tokens);
        // An estimate knows nothing of a cache.
        if !estimated {
            record.cache_read_tokens = Some(usage.cache_read_tokens);
            record.cache_write_tokens = Some(usage.cache_write_tokens);
        }
        record.tokens_estimated = estimated;
    }
    record.trajectory = Some(trajectory_path);
    record.definition_bytes = definitions;
    record.model_calls = steps;
    (record, Some(definitions))
}

/// How the agent loop of an attempt ended.
enum Driven {
    /// It stopped (answered, a budget, an error, or the deadline's interrupt).
    Stopped { summary: clix_agent::RunSummary, timed_out: bool, messages: Vec<clix_agent::Message> },
    /// It did not stop within [`STOP_GRACE`] of the deadline and was dropped.
    Dropped,
}

/// The agent loop over `tools`, interrupted at the attempt's deadline.
async fn drive(
    tools: &mut EvalTools,
    provider: Provider,
    settings: AgentSettings,
    trajectory: Trajectory,
    attempt: &Attempt,
) -> Driven {
    // As `clix ask` would in the task's workspace: the task's own AGENTS.md
    // joins the built-in prompt (none of the person's files is read).
    let project_notes = if settings.project_notes {
        ProjectNotes::read(attempt.workspace(), Path::new("."), &settings.project_notes_files).block()
    } else {
        None
    };
    let prompt = SystemPrompt { template: None, project_notes };
    let mut agent = Agent::new_with_prompt(tools, provider, settings, Some(trajectory), &prompt);
    if let Some(system) = attempt.system() {
        agent.add_system_note(system);
    }
    let interrupt = agent.interrupt_handle();
    let deadline = tokio::time::sleep(attempt.timeout());
    tokio::pin!(deadline);
    let mut ignore = |_: &Event| {};
    let summary = {
        let running = agent.run(attempt.prompt(), &mut ignore);
        tokio::pin!(running);
        tokio::select! {
            summary = &mut running => Some((summary, false)),
            () = &mut deadline => {
                interrupt.interrupt();
                tokio::time::timeout(STOP_GRACE, &mut running).await.ok().map(|s| (s, true))
            }
        }
    };
    match summary {
        Some((summary, timed_out)) => Driven::Stopped { summary, timed_out, messages: agent.messages().to_vec() },
        None => Driven::Dropped,
    }
}

/// The attempt's trajectory, opened with what the harness knows of it.
fn open_trajectory(
    runs_dir: &Path,
    task: &Task,
    design: Design,
    repeat: u32,
    attempt: &Attempt,
) -> std::io::Result<Trajectory> {
    let stem: String = format!("{}-{design}-r{repeat}", task.id)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
        .collect();
    let mut trajectory = Trajectory::create_named(runs_dir, &stem)?;
    let facts = json!({
        "task": task.id,
        "category": task.category,
        "design": design,
        "repeat": repeat,
        "path_map": attempt.map(),
        "workspace": attempt.workspace().root(),
    });
    trajectory.record(&Event::Annotation { name: "eval".into(), value: facts })?;
    Ok(trajectory)
}

/// The record's stop reason, and the detail worth keeping: the agent's
/// own, unless the harness's deadline stopped it (whatever the interrupted
/// run then said).
fn stop_reason(stop: &AgentStop, timed_out: bool, timeout: Duration) -> (AttemptStop, Option<String>) {
    if timed_out {
        (AttemptStop::Timeout, Some(format!("the attempt's {}s ran out", timeout.as_secs())))
    } else {
        (AttemptStop::Agent(stop.clone()), None)
    }
}

/// Tokens when the provider gave no usage: each model call's input is the
/// conversation before its reply (and the tool definitions), its output the
/// reply; characters over four, as [`estimate_tokens`].
fn estimate_usage(messages: &[clix_agent::Message], definition_bytes: u64) -> clix_agent::Usage {
    let size = |m: &clix_agent::Message| {
        estimate_tokens(&m.text) + m.tool_calls.iter().map(|c| estimate_tokens(&c.arguments)).sum::<u64>()
    };
    let mut usage = clix_agent::Usage::default();
    let mut before = definition_bytes.div_ceil(4);
    for m in messages {
        if m.role == clix_agent::Role::Assistant {
            usage.input_tokens += before;
            usage.output_tokens += size(m);
        }
        before += size(m);
    }
    usage
}

/// A design's tools as the agent loop drives them; every call is kept for
/// the checks.
struct EvalTools {
    executor: Executor,
    workspace: PathBuf,
    trace: Trace,
}

impl Tools for EvalTools {
    fn specs(&self) -> Vec<ToolSpec> {
        self.executor.tools()
    }

    fn guidance(&self) -> String {
        match &self.executor {
            Executor::Run(tools) => tools.guidance(),
            Executor::Bash(_) => "You act through one tool, bash(command), which runs a bash command line there and \
                                  returns its output (stdout and stderr). Compose commands with pipes and && as you \
                                  would in a terminal."
                .into(),
            Executor::Typed(_) => "You act through tools: read_file, write_file, edit_file, list_dir and search_files \
                                   for files, and shell(command), which runs a bash command line there and returns \
                                   its output (stdout and stderr), for anything else."
                .into(),
            Executor::McpDirect(tools) => format!(
                "You act through tools: the tools of the MCP server `{}`, each its own tool, which return their \
                 results whole; and read_file for the workspace's files.",
                tools.server()
            ),
        }
    }

    fn workspace(&self) -> PathBuf {
        self.workspace.clone()
    }

    fn cancel_handle(&self) -> Option<CancelHandle> {
        match &self.executor {
            Executor::Run(tools) => Some(tools.cancel_handle()),
            Executor::Bash(_) | Executor::Typed(_) | Executor::McpDirect(_) => None,
        }
    }

    fn prepare(&self, call: &clix_agent::ToolCall) -> Result<Invocation, String> {
        // A tool the design lacks goes on to the executor, which answers it
        // and keeps it among the attempt's calls, as a failed one.
        Ok(Invocation::of(&call.name, call_arguments(call)?))
    }

    async fn run(&mut self, invocation: &Invocation) -> ToolOutcome {
        let call = self.executor.call(&invocation.tool, &invocation.arguments).await;
        let outcome = ToolOutcome {
            text: call.text.clone(),
            exit_code: call.exit_code,
            duration: call.duration,
            images: call.images.clone(),
            stage_failed: call.stage_failed,
            ..ToolOutcome::default()
        };
        self.trace.calls.push(call);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use clix_agent::{Message, Role, ToolCall};

    use super::*;

    #[test]
    fn stop_reasons_map_to_records() {
        let t = Duration::from_secs(60);
        for stop in [AgentStop::Answered, AgentStop::MaxSteps, AgentStop::WallTime, AgentStop::Error("401".into())] {
            assert_eq!(stop_reason(&stop, false, t), (AttemptStop::Agent(stop.clone()), None), "the agent's own");
        }
        let timeout = (AttemptStop::Timeout, Some("the attempt's 60s ran out".to_string()));
        assert_eq!(stop_reason(&AgentStop::Interrupted, true, t), timeout);
        assert_eq!(stop_reason(&AgentStop::Answered, true, t), timeout, "the deadline wins");
    }

    #[test]
    fn usage_is_estimated_per_call_from_the_conversation() {
        let call = ToolCall { id: "c".into(), name: "run".into(), arguments: "x".repeat(8) };
        let messages = vec![
            Message::new(Role::System, "s".repeat(40)),
            Message::new(Role::User, "u".repeat(20)),
            Message { tool_calls: vec![call], ..Message::new(Role::Assistant, "") },
            Message::tool_result("c", "r".repeat(12), false),
            Message::new(Role::Assistant, "a".repeat(4)),
        ];
        let usage = estimate_usage(&messages, 40);
        // Call 1 reads 10 (definitions) + 10 + 5; call 2 also the call (2) and the result (3).
        assert_eq!(usage.input_tokens, 25 + 30);
        assert_eq!(usage.output_tokens, 2 + 1);
    }
}

//! Running a plan: every task whose dependencies are done starts at once,
//! up to `jobs` at a time, each agent in its own namespace; a failed task's
//! dependents are skipped; finished tasks are checkpointed as they finish.

use crate::files::PlanFileError;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use clix_agent::stream::{RunResult, StreamEvent, StreamWriter};
use clix_engine::Namespace;
use clix_workspace::{Folder, Kind, Workspace};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::watch;
// tokio's clock, not std's: the one its sleeps and a paused test runtime share.
use tokio::time::Instant;

use crate::checkpoint::Checkpoint;
use crate::plan::{Plan, Task};

/// What to do when a task fails for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Independent branches finish; the failed task's dependents are skipped.
    #[default]
    Continue,
    /// Running agents are stopped and nothing new starts.
    Stop,
}

/// How a plan runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Agents at a time.
    pub jobs: usize,
    /// After a task fails for good.
    pub on_failure: OnFailure,
    /// The first retry waits this long, each next one twice as long.
    pub retry_backoff: Duration,
    /// Identifies the plan in every agent's `parent_id` and its own lines.
    pub plan_id: String,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            jobs: 4,
            on_failure: OnFailure::Continue,
            retry_backoff: Duration::from_secs(2),
            plan_id: "plan".into(),
        }
    }
}

/// One attempt of one task, as the runner hands it to the [`AgentRunner`].
#[derive(Debug, Clone)]
pub struct Job {
    /// The task as the plan has it.
    pub task: Task,
    /// From 1.
    pub attempt: u32,
    /// Where its agent may write.
    pub namespace: Namespace,
    /// What its agent is asked: where it may write, its inputs' results,
    /// then the task's prompt.
    pub prompt: String,
    /// Its stream: lines carry the task id and the plan as parent.
    pub stream: StreamWriter,
    /// Becomes `true` when the plan stops (`--on-failure stop`, Ctrl-C):
    /// the agent should end at once.
    pub stop: watch::Receiver<bool>,
}

/// A future the runner awaits, not necessarily `Send` (agents and engines
/// live on one thread).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Runs one task's agent; the binary gives the runner one (engine,
/// provider, agent loop), the tests a scripted one.
pub trait AgentRunner {
    /// Runs `job`'s agent to its end, sending each stream line to `emit`;
    /// `Err` when it could not start at all.
    fn run<'a>(&'a self, job: Job, emit: &'a dyn Fn(StreamEvent)) -> LocalFuture<'a, Result<RunResult, String>>;
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TaskStatus {
    /// Its agent answered.
    Done {
        /// Its result.
        result: RunResult,
        /// Attempts made, this run.
        attempts: u32,
        /// Finished in an earlier run (`--resume`).
        #[serde(default)]
        resumed: bool,
    },
    /// Every attempt failed.
    Failed {
        /// The last attempt's reason.
        reason: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's result, when its agent ran.
        result: Option<RunResult>,
    },
    /// Not run: a task it depends on failed or was skipped.
    Skipped {
        /// Which.
        reason: String,
    },
    /// Not started, or ended, because the plan stopped.
    Stopped {
        /// Why the plan stopped.
        reason: String,
    },
}

/// A [`TaskStatus`] without its details: what counts and comparisons use,
/// and the `status` of `plan-result.json` and of a `task_end` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusKind {
    /// Its agent answered.
    Done,
    /// Every attempt failed.
    Failed,
    /// Not run: a task it depends on failed or was skipped.
    Skipped,
    /// Not started, or ended, because the plan stopped.
    Stopped,
}

impl StatusKind {
    /// Each kind, in the order a summary lists them.
    pub const ALL: [StatusKind; 4] = [StatusKind::Done, StatusKind::Failed, StatusKind::Skipped, StatusKind::Stopped];

    /// `done`, `failed`, `skipped`, `stopped`: as serde writes it.
    pub fn label(self) -> &'static str {
        match self {
            StatusKind::Done => "done",
            StatusKind::Failed => "failed",
            StatusKind::Skipped => "skipped",
            StatusKind::Stopped => "stopped",
        }
    }
}

impl TaskStatus {
    /// Which of the four it is.
    pub fn kind(&self) -> StatusKind {
        match self {
            TaskStatus::Done { .. } => StatusKind::Done,
            TaskStatus::Failed { .. } => StatusKind::Failed,
            TaskStatus::Skipped { .. } => StatusKind::Skipped,
            TaskStatus::Stopped { .. } => StatusKind::Stopped,
        }
    }

    /// `done`, `failed`, `skipped`, `stopped`.
    pub fn label(&self) -> &'static str {
        self.kind().label()
    }

    fn reason(&self) -> Option<&str> {
        match self {
            TaskStatus::Done { .. } => None,
            TaskStatus::Failed { reason, .. } | TaskStatus::Skipped { reason } | TaskStatus::Stopped { reason } => {
                Some(reason)
            }
        }
    }
}

/// A whole plan's outcome: `plan-result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanResult {
    /// `1`.
    pub schema_version: u32,
    /// The plan's id.
    pub plan_id: String,
    /// The plan file.
    pub plan: String,
    /// Wall time of this run.
    pub duration_ms: u64,
    /// Each task in plan order.
    pub tasks: Vec<TaskReport>,
}

/// One task in `plan-result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    /// Its id.
    pub id: String,
    /// How it ended.
    #[serde(flatten)]
    pub status: TaskStatus,
    /// Its own time, this run (0 when it did not run).
    pub duration_ms: u64,
}

impl PlanResult {
    /// Tasks that ended as `kind`.
    pub fn count(&self, kind: StatusKind) -> usize {
        self.tasks.iter().filter(|t| t.status.kind() == kind).count()
    }

    /// Every task is done.
    pub fn succeeded(&self) -> bool {
        self.tasks.iter().all(|t| t.status.kind() == StatusKind::Done)
    }
}

/// A `task_end` line's content: the one shape the runner writes and a
/// view reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEnd {
    /// The task's id.
    pub task: String,
    /// How it ended.
    pub status: StatusKind,
    /// Why, unless it is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl TaskEnd {
    fn of(id: &str, status: &TaskStatus) -> TaskEnd {
        TaskEnd { task: id.to_string(), status: status.kind(), reason: status.reason().map(str::to_string) }
    }

    fn line(&self, own: &mut StreamWriter) -> StreamEvent {
        own.line("task_end".into(), serde_json::to_value(self).unwrap_or_default())
    }
}

/// Runs the plan in the workspace folder `workspace` (the runner makes each
/// agent's folder through its handle; the agent's engine is confined to
/// it). Finished tasks are saved to `checkpoint` as they finish, and ones
/// it already holds are not run again. `stop` ends the plan from outside
/// (Ctrl-C). `Err` when the workspace cannot be one; nothing ran.
#[allow(clippy::too_many_arguments)] // the plan, where, who runs it, how, and its three channels
pub async fn run_plan(
    plan: &Plan,
    plan_name: &str,
    workspace: &Path,
    runner: &dyn AgentRunner,
    options: &RunOptions,
    checkpoint: &mut Checkpoint,
    stop: watch::Receiver<bool>,
    emit: &dyn Fn(StreamEvent),
) -> Result<PlanResult, clix_workspace::WorkspaceError> {
    let workspace = &*Workspace::open(workspace)?;
    let started = Instant::now();
    let mut own = StreamWriter::new(options.plan_id.clone(), None);
    let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    emit(own.line("plan_start".into(), json!({ "plan": plan_name, "tasks": ids })));
    // Finished tasks (and skipped ones); `started` holds every task begun.
    let mut status: BTreeMap<String, TaskStatus> = BTreeMap::new();
    let mut started_tasks: BTreeSet<String> = BTreeSet::new();
    let mut durations: BTreeMap<String, u64> = BTreeMap::new();
    for (id, result) in checkpoint.done() {
        if plan.task(&id).is_some() {
            let done = TaskStatus::Done { result, attempts: 0, resumed: true };
            emit(TaskEnd::of(&id, &done).line(&mut own));
            status.insert(id, done);
        }
    }
    let (stop_all, stopping) = watch::channel(false);
    let mut outside = stop.clone();
    let mut stop_reason: Option<String> = None;
    let mut running = FuturesUnordered::new();
    loop {
        if stop_reason.is_none() && *outside.borrow() {
            stop_reason = Some("the plan was interrupted".into());
            let _ = stop_all.send(true);
        }
        for skipped in skip_dependents_of_failures(plan, &mut status) {
            emit(skipped.line(&mut own));
        }
        if stop_reason.is_none() {
            for task in ready(plan, &status, &started_tasks, running.len(), options.jobs) {
                started_tasks.insert(task.id.clone());
                emit(own.line("task_start".into(), json!({ "task": task.id, "attempt": 1 })));
                running.push(attempt_task(task, workspace, runner, options, &status, stopping.clone(), emit));
            }
        }
        if running.is_empty() {
            break;
        }
        let finished = tokio::select! {
            finished = running.next() => finished,
            _ = outside.changed(), if stop_reason.is_none() => continue,
        };
        let Some((id, outcome, took)) = finished else { break };
        // An agent that ended because the plan stopped says why the plan did.
        let outcome = match (outcome, &stop_reason) {
            (TaskStatus::Stopped { .. }, Some(why)) => TaskStatus::Stopped { reason: why.clone() },
            (outcome, _) => outcome,
        };
        durations.insert(id.clone(), took);
        if let (TaskStatus::Done { result, .. }, Some(task)) = (&outcome, plan.task(&id)) {
            checkpoint.record(task, result);
        }
        let failed = outcome.kind() == StatusKind::Failed;
        emit(TaskEnd::of(&id, &outcome).line(&mut own));
        status.insert(id.clone(), outcome);
        if failed && options.on_failure == OnFailure::Stop && stop_reason.is_none() {
            stop_reason = Some(format!("task `{id}` failed and the plan runs with --on-failure stop"));
            let _ = stop_all.send(true);
        }
    }
    let reason = stop_reason.unwrap_or_else(|| "the plan stopped".into());
    let tasks: Vec<TaskReport> = plan
        .tasks
        .iter()
        .map(|t| {
            // Never started: its line says so too, so each task has one `task_end`.
            let status = status.remove(&t.id).unwrap_or_else(|| {
                let stopped = TaskStatus::Stopped { reason: reason.clone() };
                emit(TaskEnd::of(&t.id, &stopped).line(&mut own));
                stopped
            });
            TaskReport { id: t.id.clone(), status, duration_ms: durations.get(&t.id).copied().unwrap_or(0) }
        })
        .collect();
    let result = PlanResult {
        schema_version: 1,
        plan_id: options.plan_id.clone(),
        plan: plan_name.to_string(),
        duration_ms: started.elapsed().as_millis() as u64,
        tasks,
    };
    let mut counts = json!({ "duration_ms": result.duration_ms });
    for kind in StatusKind::ALL {
        counts[kind.label()] = json!(result.count(kind));
    }
    emit(own.line("plan_end".into(), counts));
    Ok(result)
}

/// Writes `result` to the workspace's `.clix/plan-result.json` (through
/// its handle: agents cannot write `.clix/`); the path written.
pub fn save_result(workspace: &Path, result: &PlanResult) -> Result<PathBuf, PlanFileError> {
    let folder = Workspace::open(workspace).map_err(|e| PlanFileError::Workspace(std::io::Error::other(e)))?;
    let rel = Path::new(".clix/plan-result.json");
    folder.create_dir(Path::new(".clix"), true).map_err(PlanFileError::Workspace)?;
    let text = serde_json::to_vec_pretty(result).map_err(|e| PlanFileError::Workspace(e.into()))?;
    folder.write(rel, &text).map_err(PlanFileError::Workspace)?;
    Ok(folder.root().join(rel))
}

/// Tasks not yet started whose dependencies are all done, as many as there is room for.
fn ready<'p>(
    plan: &'p Plan,
    status: &BTreeMap<String, TaskStatus>,
    started: &BTreeSet<String>,
    running: usize,
    jobs: usize,
) -> Vec<&'p Task> {
    let done = |id: &str| matches!(status.get(id), Some(TaskStatus::Done { .. }));
    plan.tasks
        .iter()
        .filter(|t| !status.contains_key(&t.id) && !started.contains(&t.id) && t.depends_on.iter().all(|d| done(d)))
        .take(jobs.max(1).saturating_sub(running))
        .collect()
}

/// Marks skipped every waiting task that depends on a failed or skipped
/// one (its status says which); the tasks newly skipped.
fn skip_dependents_of_failures(plan: &Plan, status: &mut BTreeMap<String, TaskStatus>) -> Vec<TaskEnd> {
    let mut skipped = Vec::new();
    loop {
        let blocked = plan.tasks.iter().find_map(|t| {
            if status.contains_key(&t.id) {
                return None;
            }
            t.depends_on.iter().find_map(|d| {
                let kind = status.get(d.as_str())?.kind();
                matches!(kind, StatusKind::Failed | StatusKind::Skipped)
                    .then(|| (t.id.clone(), format!("`{d}` {}", kind.label())))
            })
        });
        let Some((id, reason)) = blocked else { return skipped };
        let now = TaskStatus::Skipped { reason };
        skipped.push(TaskEnd::of(&id, &now));
        status.insert(id, now);
    }
}

/// A task's attempts, with backoff between them: its final status and its time.
#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename these
fn attempt_task<'a>(
    task: &'a Task,
    workspace: &'a Folder,
    runner: &'a dyn AgentRunner,
    options: &'a RunOptions,
    status: &BTreeMap<String, TaskStatus>,
    stop: watch::Receiver<bool>,
    emit: &'a dyn Fn(StreamEvent),
) -> LocalFuture<'a, (String, TaskStatus, u64)> {
    let inputs: Vec<(String, RunResult)> = task
        .inputs
        .iter()
        .filter_map(|id| match status.get(id) {
            Some(TaskStatus::Done { result, .. }) => Some((id.clone(), result.clone())),
            _ => None,
        })
        .collect();
    Box::pin(async move {
        let started = Instant::now();
        let took = || started.elapsed().as_millis() as u64;
        let namespace = match prepare_namespace(workspace, task) {
            Ok(ns) => ns,
            Err(reason) => {
                let failed = TaskStatus::Failed { reason, attempts: 0, result: None };
                return (task.id.clone(), failed, took());
            }
        };
        let prompt = prompt_for(task, &namespace, &inputs);
        let mut last = TaskStatus::Failed { reason: "not run".into(), attempts: 0, result: None };
        for attempt in 1..=task.retries + 1 {
            if *stop.borrow() {
                return (task.id.clone(), TaskStatus::Stopped { reason: "stopped".into() }, took());
            }
            let job = Job {
                task: task.clone(),
                attempt,
                namespace: namespace.clone(),
                prompt: prompt.clone(),
                stream: StreamWriter::new(task.id.clone(), Some(options.plan_id.clone())),
                stop: stop.clone(),
            };
            last = match runner.run(job, emit).await {
                Ok(result) if !result.is_error => {
                    return (task.id.clone(), TaskStatus::Done { result, attempts: attempt, resumed: false }, took());
                }
                Ok(result) => TaskStatus::Failed {
                    reason: result.stop_reason.to_string(),
                    attempts: attempt,
                    result: Some(result),
                },
                Err(reason) => TaskStatus::Failed { reason, attempts: attempt, result: None },
            };
            if *stop.borrow() {
                return (task.id.clone(), TaskStatus::Stopped { reason: "stopped".into() }, took());
            }
            if attempt <= task.retries {
                let wait = options.retry_backoff.saturating_mul(1 << (attempt - 1).min(10));
                let mut stop = stop.clone();
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.wait_for(|s| *s) => {}
                }
            }
        }
        (task.id.clone(), last, took())
    })
}

/// Makes `agents/<id>/` (and `shared/`) and checks the task's `writes`
/// are real folders; the agent's namespace.
pub(crate) fn prepare_namespace(workspace: &Folder, task: &Task) -> Result<Namespace, String> {
    let home = Path::new("agents").join(&task.id);
    for dir in [Path::new("agents"), Path::new("shared")] {
        match workspace.symlink_metadata(dir) {
            Ok(e) if e.kind == Kind::Dir => {}
            Ok(e) => return Err(format!("{}/ must be a folder, and is {:?}; remove it", dir.display(), e.kind)),
            Err(_) => workspace.create_dir(dir, false).map_err(|e| e.to_string())?,
        }
    }
    if !workspace.exists(&home).map_err(|e| e.to_string())? {
        workspace.create_dir(&home, false).map_err(|e| e.to_string())?;
    }
    let mut writable = vec![home.clone()];
    for w in &task.writes {
        if !workspace.exists(w).map_err(|e| e.to_string())? {
            workspace.create_dir(w, true).map_err(|e| format!("writes `{}`: {e}", w.display()))?;
        }
        writable.push(w.clone());
    }
    // `confined` checks each is a folder reached through folders only.
    workspace.confined(&writable).map_err(|e| e.to_string())?;
    Ok(Namespace { home, writable })
}

/// What a task's agent is asked.
fn prompt_for(task: &Task, namespace: &Namespace, inputs: &[(String, RunResult)]) -> String {
    let mut out = format!(
        "You are agent `{id}` of a plan of agents sharing this workspace. Your folder is {home}/ (your current \
         directory): write everything you make there.",
        id = task.id,
        home = namespace.home.display()
    );
    let others: Vec<String> = namespace.writable.iter().skip(1).map(|p| format!("{}/", p.display())).collect();
    if !others.is_empty() {
        out.push_str(&format!(" You may also write in {}.", others.join(", ")));
    }
    out.push_str(" The rest of the workspace (shared/ and other agents' folders included) is read-only to you.\n");
    for (id, result) in inputs {
        out.push_str(&format!(
            "\nTask `{id}` finished before you; its folder is agents/{id}/. Its answer:\n{}\n",
            result.answer
        ));
        if !result.artifacts.is_empty() {
            out.push_str("Its files:\n");
            out.push_str(&result.artifact_lines());
        }
    }
    out.push_str(&format!("\nYour task:\n{}", task.prompt));
    out
}

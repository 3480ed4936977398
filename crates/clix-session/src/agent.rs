//! The agent's wiring: its provider, system prompt (the person's template,
//! the project's notes), trajectory and memory, one task run to its
//! result, and a plan's tasks run the same way, checkpointed where the
//! settings say.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clix_agent::stream::{ArtifactWatch, RunResult, StreamEvent, StreamWriter};
use clix_agent::{
    Agent, AgentMemory, Event, ProjectNotes, Provider, ResolvedProvider, Resumable, RunSummary, SystemPrompt,
    Trajectory, resolve_provider,
};
use clix_config::Paths;
use clix_engine::Engine;
use clix_plan::{AgentRunner, Checkpoint, Job, LocalFuture, Plan};

use crate::prompts::Prompt;
use crate::session::Session;
use crate::settings::Settings;

/// An agent of a session, its trajectory started.
pub struct AgentSession<'e> {
    /// The agent loop over the session's engine.
    pub agent: Agent<'e>,
    /// Where its trajectory is written (`<data>/runs/<id>.jsonl`).
    pub trajectory: PathBuf,
    /// What the person should know before it starts (memory degraded or
    /// off); the work goes on without it.
    pub notes: Vec<String>,
}

impl Session {
    /// Where runs' trajectories are kept.
    pub fn runs_dir(&self) -> PathBuf {
        runs_dir(&self.paths)
    }

    /// The provider the settings name, with a model or API kind of the caller's.
    pub fn provider(&self, model: Option<&str>, kind: Option<&str>) -> Result<Provider> {
        Ok(Provider::new(&self.resolved_provider(model, kind)?))
    }

    /// What [`Session::provider`] is made from: kind, address, key, model.
    /// An isolated session reads no key of this process.
    pub fn resolved_provider(&self, model: Option<&str>, kind: Option<&str>) -> Result<ResolvedProvider> {
        if self.reads_secrets {
            return self.settings.person_provider(model, kind);
        }
        Ok(resolve_provider(&self.settings.agent, |_| None, model, kind)?)
    }

    /// The checkpoint of `plan`, the plan file at `plan_path` (absolute):
    /// with `[storage] url`, a document of the store every replica shares,
    /// so a machine with the plan at the same path resumes what another
    /// finished; else a file of the state folder. See [`Checkpoint::open`]
    /// for `resume`.
    pub fn plan_checkpoint(&self, plan_path: &Path, plan: &Plan, resume: bool) -> Result<Checkpoint> {
        Ok(match self.shared_store()? {
            Some(store) => Checkpoint::open_shared(store, &clix_plan::checkpoint_key(plan_path), plan, resume)?,
            None => Checkpoint::open(&clix_plan::checkpoint_path(&self.paths.state_dir, plan_path), plan, resume)?,
        })
    }

    /// An agent over `engine` asking `provider`, with its trajectory and the
    /// session's memory (the same store, topic and embedder as the `memory`
    /// command): what `ask`, `chat` and each task of a plan share.
    pub fn agent<'e>(&self, engine: &'e mut Engine, provider: Provider) -> Result<AgentSession<'e>> {
        let trajectory = Trajectory::create(&self.runs_dir()).context("cannot create the run's trajectory file")?;
        self.agent_recording(engine, provider, trajectory)
    }

    /// An agent going on with an earlier run of this workspace (`clix ask
    /// --continue`, `--resume`): its conversation rebuilt after a fresh
    /// system prompt, its trajectory appended to. A run of another folder
    /// is refused, since its commands and paths meant that folder.
    pub fn resumed_agent<'e>(
        &self,
        engine: &'e mut Engine,
        provider: Provider,
        run: Resumable,
    ) -> Result<AgentSession<'e>> {
        let here = engine.shell().workspace().display().to_string();
        if run.workspace != here {
            bail!(
                "run {} worked in {}, not here ({here}); resume it there (cd {} or --workspace {})",
                run.id,
                run.workspace,
                run.workspace,
                run.workspace
            );
        }
        let trajectory = Trajectory::reopen(&self.runs_dir(), &run.id)
            .with_context(|| format!("cannot append to the run file {}", run.path.display()))?;
        let mut session = self.agent_recording(engine, provider, trajectory)?;
        session.agent = session.agent.with_conversation(run.messages);
        Ok(session)
    }

    /// [`Session::agent`] writing to `trajectory`.
    fn agent_recording<'e>(
        &self,
        engine: &'e mut Engine,
        provider: Provider,
        trajectory: Trajectory,
    ) -> Result<AgentSession<'e>> {
        let path = trajectory.path.clone();
        let stored_as = trajectory.id.clone();
        let (agent, notes) = self.assemble(engine, provider, Some(trajectory), stored_as)?;
        Ok(AgentSession { agent, trajectory: path, notes })
    }

    /// What [`Session::agent`]'s first model call would send of its system
    /// prompt and tools (`clix ask --show-prompt`), with what the person
    /// should know; no run is recorded and no model is called.
    pub fn shown_prompt(&self, engine: &mut Engine, provider: Provider) -> Result<(serde_json::Value, Vec<String>)> {
        let (agent, notes) = self.assemble(engine, provider, None, self.id.clone())?;
        Ok((agent.shown_prompt(), notes))
    }

    /// The system prompt's stable part: the person's `prompts/system.md`
    /// (else the built-in text) and, unless `agent.project_notes` is off,
    /// the notes files (`agent.project_notes_files`) from the workspace root down to the working
    /// folder, read through the engine's workspace handle; with a line for
    /// each notes file that could not be read.
    pub fn system_prompt(&self, engine: &Engine) -> Result<(SystemPrompt, Vec<String>)> {
        let mut prompt = SystemPrompt { template: self.prompt(Prompt::System)?, project_notes: None };
        let mut notes = Vec::new();
        if self.settings.agent.project_notes {
            let names = &self.settings.agent.project_notes_files;
            let read = ProjectNotes::read(engine.shell().folder(), &self.working_folder, names);
            notes.extend(read.skipped.iter().map(|why| format!("project notes: {why}")));
            prompt.project_notes = read.block();
        }
        Ok((prompt, notes))
    }

    /// The agent, its memory (facts stored as `stored_as`'s) and what the
    /// person should know before it starts.
    fn assemble<'e>(
        &self,
        engine: &'e mut Engine,
        provider: Provider,
        trajectory: Option<Trajectory>,
        stored_as: String,
    ) -> Result<(Agent<'e>, Vec<String>)> {
        let (prompt, mut notes) = self.system_prompt(engine)?;
        let memory = self.memory_config(stored_as);
        let mut agent = Agent::new_with_prompt(engine, provider, self.settings.agent.clone(), trajectory, &prompt);
        match memory.open() {
            Ok(opened) => {
                notes.extend(opened.degraded.map(|why| format!("memory: {why}")));
                agent = agent.with_memory(AgentMemory::new(opened.store, memory.topic, self.settings.memory.clone()));
            }
            Err(e) => notes.push(format!("memory is off for this session: {e}")),
        }
        Ok((agent, notes))
    }
}

/// Where runs' trajectories are kept under `paths`.
pub fn runs_dir(paths: &Paths) -> PathBuf {
    paths.data_dir.join("runs")
}

/// Runs `prompt` on `agent` to its end: its events to `on_event`, then the
/// result every front end reports (`clix ask`'s last stream line, a plan
/// task's checkpoint), with the files `watch` saw created or changed.
pub async fn run_task(
    agent: &mut Agent<'_>,
    prompt: &str,
    watch: Option<&ArtifactWatch>,
    on_event: &mut dyn FnMut(&Event),
) -> (RunSummary, RunResult) {
    let started = Instant::now();
    let summary = agent.run(prompt, on_event).await;
    let artifacts = watch.map(ArtifactWatch::finish).unwrap_or_default();
    let result = RunResult::new(&summary, started.elapsed().as_millis() as u64, artifacts);
    (summary, result)
}

/// Runs each task of a plan: the person's settings with the task's own
/// model, steps, time and domains, an engine confined to its namespace, and
/// a `clix ask` agent over it whose events become the task's stream.
pub struct PlanRunner {
    /// The person's paths.
    pub paths: Paths,
    /// The settings every task starts from.
    pub settings: Settings,
    /// The plan's workspace.
    pub workspace: PathBuf,
    /// The model of tasks that name none.
    pub model: Option<String>,
    /// The API kind of tasks that name none.
    pub provider: Option<String>,
}

impl PlanRunner {
    /// The settings of `job`'s agent.
    fn settings_for(&self, job: &Job) -> Settings {
        let mut settings = self.settings.clone();
        if let Some(steps) = job.task.max_steps {
            settings.agent.max_steps = steps;
        }
        if let Some(secs) = job.task.timeout_secs {
            settings.agent.max_wall_secs = secs;
        }
        if !job.task.domain.is_empty() {
            settings.hub.domains = job.task.domain.clone();
        }
        settings
    }

    async fn run_job(&self, job: Job, emit: &dyn Fn(StreamEvent)) -> Result<RunResult> {
        // No one answers the agents' questions: a machine runs the plan.
        // Its programs know they run for a plan's agent, so a `clix` among
        // them starts no plan of its own.
        let session = Session::for_person(self.paths.clone(), self.settings_for(&job), self.workspace.clone())
            .label(&format!("plan-{}", job.task.id))
            .program_env(vec![(clix_plan::AGENT_VAR.to_string(), "1".to_string())]);
        let mut engine = session.confined_engine(job.namespace.clone()).await?;
        let model = job.task.model.as_deref().or(self.model.as_deref());
        let kind = job.task.provider.as_deref().or(self.provider.as_deref());
        let provider = session.provider(model, kind)?;
        let watch = ArtifactWatch::start(engine.shell().folder(), &job.namespace.writable);
        let AgentSession { mut agent, notes, .. } = session.agent(&mut engine, provider)?;
        for note in notes {
            tracing::warn!(task = %job.task.id, "{note}");
        }
        let interrupt = agent.interrupt_handle();
        let mut stop = job.stop.clone();
        let stopper = tokio::spawn(async move {
            if stop.wait_for(|s| *s).await.is_ok() {
                interrupt.interrupt();
            }
        });
        let mut stream: StreamWriter = job.stream;
        let (_, result) = run_task(&mut agent, &job.prompt, Some(&watch), &mut |e| {
            if let Some(line) = stream.event(e) {
                emit(line);
            }
        })
        .await;
        stopper.abort();
        emit(stream.result(&result));
        Ok(result)
    }
}

impl AgentRunner for PlanRunner {
    fn run<'a>(&'a self, job: Job, emit: &'a dyn Fn(StreamEvent)) -> LocalFuture<'a, Result<RunResult, String>> {
        Box::pin(async move { self.run_job(job, emit).await.map_err(|e| format!("{e:#}")) })
    }
}

/// `clix plan make`: the coordinator proposes a plan for `goal` until one
/// checks out, written to `output` with a header saying where it came
/// from; the coordinator's last words. Its run is saved like any other.
pub async fn make_plan(
    session: &Session,
    provider: clix_agent::Provider,
    goal: &str,
    output: &std::path::Path,
) -> anyhow::Result<String> {
    let mut tools = clix_plan::ProposePlan::new(session.workspace.clone());
    let trajectory = clix_agent::Trajectory::create(&session.runs_dir())
        .map_err(|e| anyhow::anyhow!("cannot create the trajectory: {e}"))?;
    let saved = trajectory.path.clone();
    let mut agent = clix_agent::Agent::new(&mut tools, provider, session.settings.agent.clone(), Some(trajectory));
    let summary = agent.run(goal, &mut |_| {}).await;
    drop(agent);
    let Some(text) = tools.accepted else {
        anyhow::bail!("the coordinator proposed no valid plan ({}); its run: {}", summary.stop_reason, saved.display());
    };
    let goal = goal.split_whitespace().collect::<Vec<_>>().join(" ");
    let header = format!(
        "# Written by `clix plan make` for: {goal}\n# Check it with `clix plan check`, then `clix plan run`.\n\n"
    );
    clix_plan::write_named(&session.workspace, output, &format!("{header}{text}"))?;
    Ok(summary.answer.trim().to_string())
}

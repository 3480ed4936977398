//! `clix ask`, `clix chat`, `clix runs` and `clix replay`: the agent loop
//! for people, rendered on a terminal or as JSON lines.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clix_agent::stream::ArtifactWatch;
use clix_agent::{Agent, ReplyCache, list_runs};
use clix_config::Paths;
use clix_session::{AgentSession, CHAT_COMMANDS, Chat, ChatCommand, Resume, Session, run_task};

use clix_terminal::editor::Turns;
use clix_terminal::outln;
use clix_terminal::render::{Renderer, print_line};

/// Flags shared by `ask` and `chat`.
#[derive(clap::Args, Clone)]
pub(crate) struct AgentArgs {
    #[command(flatten)]
    pub session: crate::cli::SessionFlags,
    /// Model name (beats AGENT_MODEL and the config file).
    #[arg(long)]
    pub model: Option<String>,
    /// "openai" (any OpenAI-compatible API) or "anthropic".
    #[arg(long)]
    pub provider: Option<String>,
    /// Most model calls for one task (default 50).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// One JSON event per line instead of text (for machines and agent pipes).
    #[arg(long)]
    pub jsonl: bool,
    /// Give sandboxed programs network access (off by default), as `clix run --network`.
    #[arg(long)]
    pub network: bool,
    /// Answer identical model requests from a local cache (debugging, tests).
    #[arg(long)]
    pub cache: bool,
    /// Go on with this workspace's latest run: its conversation, its file.
    #[arg(long = "continue")]
    pub continue_last: bool,
    /// Leave the project's AGENTS.md files out of the system prompt (as `agent.project_notes = false`).
    #[arg(long)]
    pub no_agents_md: bool,
    /// Print the system prompt and the tool definitions the model would be
    /// sent, then exit without calling it (with --jsonl: one JSON object).
    #[arg(long)]
    pub show_prompt: bool,
    /// With --resume or --continue: go back to step N first, in both the
    /// conversation (the model asked for step N again) and the workspace
    /// (as it was before step N's calls; `clix replay RUN` numbers the steps).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub from_step: Option<u32>,
}

/// `clix chat`'s flags.
#[derive(clap::Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    pub common: AgentArgs,
    /// Go on with a run (its id, the start of one, or `last`; without one,
    /// this workspace's latest, as --continue).
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "", conflicts_with = "continue_last")]
    pub resume: Option<String>,
}

#[derive(clap::Args)]
pub(crate) struct AskArgs {
    #[command(flatten)]
    pub common: AgentArgs,
    /// What piped stdin is: text appended to the task, or an upstream
    /// agent's `--jsonl` stream whose result becomes this task's context.
    #[arg(long, value_enum, default_value = "text", value_name = "FORM")]
    pub input: InputForm,
    /// With `--input jsonl`: the upstream's result only, or all its events
    /// (summarized to fit).
    #[arg(long, value_enum, default_value = "result", value_name = "WHICH")]
    pub input_events: InputEvents,
    /// Go on with a run (its id from `clix runs`, the start of one, or `last`).
    #[arg(long, value_name = "RUN_ID", conflicts_with = "continue_last")]
    pub resume: Option<String>,
    /// The task. Piped stdin is appended to it.
    #[arg(value_name = "TASK", required_unless_present = "show_prompt")]
    pub task: Option<String>,
}

/// `--input`.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputForm {
    /// Plain text, appended to the task.
    Text,
    /// An upstream `clix ask --jsonl` stream.
    Jsonl,
}

/// `--input-events`.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputEvents {
    /// The upstream's answer and the files it left.
    Result,
    /// Also what it ran and saw, cut to fit.
    All,
}

/// How much of an upstream stream a downstream task may carry, in bytes.
const UPSTREAM_CONTEXT_BYTES: usize = 24_000;

fn flags(args: &AgentArgs) -> Vec<(&'static str, &'static str, toml::Value)> {
    let mut flags = args.session.layers();
    if let Some(n) = args.max_steps {
        flags.push(("agent.max_steps", "--max-steps", toml::Value::Integer(i64::from(n))));
    }
    if args.network {
        flags.push(("sandbox.network", "--network", toml::Value::Boolean(true)));
    }
    if args.no_agents_md {
        flags.push(("agent.project_notes", "--no-agents-md", toml::Value::Boolean(false)));
    }
    flags
}

/// A person can answer the policy's questions: a terminal, and no `--jsonl`
/// (a machine reads that stream).
fn person_at_terminal(args: &AgentArgs) -> bool {
    !args.jsonl && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The session of one `ask` or `chat`.
fn agent_session(paths: &Paths, args: &AgentArgs) -> Result<Session> {
    let settings = clix_session::load(paths, &flags(args))?.value;
    let workspace = crate::cli::workspace_or_cwd(args.session.workspace.clone())?;
    let session = crate::cli::session(paths, settings, &workspace, person_at_terminal(args));
    // The project's notes are read down to where the person is, when that is inside the workspace.
    Ok(match std::env::current_dir() {
        Ok(cwd) => session.working_folder(cwd),
        Err(_) => session,
    })
}

/// `--show-prompt`: what the first model call would send of the system
/// prompt and the tools, printed; no model is called, no run recorded.
async fn show_prompt(paths: &Paths, args: &AgentArgs) -> Result<ExitCode> {
    let session = agent_session(paths, args)?;
    let mut engine = session.engine().await?;
    clix_terminal::notices::tell_notices(paths, &engine);
    let provider = session.provider(args.model.as_deref(), args.provider.as_deref())?;
    let (kind, model, url) = (provider.kind(), provider.model.clone(), provider.base_url().to_string());
    let (shown, notes) = session.shown_prompt(&mut engine, provider)?;
    for note in notes {
        eprintln!("clix: {note}");
    }
    if args.jsonl {
        outln(serde_json::to_string(&shown)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln(clix_terminal::render::shown_prompt(&shown, &model, &url, &format!("{kind:?}").to_lowercase()))?;
    Ok(ExitCode::SUCCESS)
}

/// The agent for one `ask` or `chat` over `engine`, its trajectory started,
/// Ctrl-C watched.
fn agent<'e>(
    paths: &Paths,
    session: &Session,
    engine: &'e mut clix_engine::Engine,
    args: &AgentArgs,
    resume: Option<Resume>,
) -> Result<(Agent<'e>, PathBuf)> {
    let provider = session.provider(args.model.as_deref(), args.provider.as_deref())?;
    if args.from_step.is_some() && resume.is_none() {
        bail!("--from-step goes back in an earlier run: give it with --resume RUN_ID or --continue");
    }
    // Read before anything is sent: a damaged file stops the run here.
    let resumed = resume.map(|r| r.load(paths, engine.shell().workspace(), args.from_step)).transpose()?;
    if let (Some(run), Some(step)) = (&resumed, args.from_step) {
        clix_session::go_back(session, run, step)?.notes.iter().for_each(|note| eprintln!("clix: {note}"));
    }
    if !args.jsonl {
        // Whom it is talking to, before anything is sent (a machine reading --jsonl has it in `start`).
        eprintln!("clix: model {} at {}", provider.model, provider.base_url());
        if let Some(run) = &resumed {
            eprintln!("clix: going on with run {} ({} messages)", run.id, run.messages.len());
        }
    }
    let AgentSession { mut agent, trajectory, notes } = match resumed {
        Some(run) => session.resumed_agent(engine, provider, run)?,
        None => session.agent(engine, provider)?,
    };
    for note in notes {
        eprintln!("clix: {note}");
    }
    if args.cache {
        let cache = ReplyCache::open(&paths.data_dir.join("reply-cache.sqlite"))?;
        agent = agent.with_cache(cache);
    }
    let interrupt = agent.interrupt_handle();
    clix_terminal::input::on_ctrl_c("stopping the current step", move || interrupt.interrupt());
    Ok((agent, trajectory))
}

/// `clix ask "<task>"`: one task, streamed.
pub(crate) async fn ask(paths: &Paths, args: AskArgs) -> Result<ExitCode> {
    if args.common.show_prompt {
        return show_prompt(paths, &args.common).await;
    }
    let started = std::time::Instant::now();
    let piped = clix_terminal::input::read_piped_stdin()?;
    let mut task = args.task.clone().unwrap_or_default();
    match (args.input, piped) {
        (InputForm::Jsonl, piped) => match clix_agent::stream::upstream_of(piped.as_deref()) {
            Ok(upstream) => {
                let context = upstream.context(args.input_events == InputEvents::All, UPSTREAM_CONTEXT_BYTES);
                task = format!("{context}\nYour task:\n{task}");
            }
            // Stopped before a model is called: a chain fails at its first broken link.
            Err(why) => return Ok(upstream_failed(&args.common, &why.to_string(), started)),
        },
        (InputForm::Text, Some(piped)) => {
            task.push_str("\n\n");
            task.push_str(&String::from_utf8_lossy(&piped));
        }
        (InputForm::Text, None) => {}
    }
    let session = agent_session(paths, &args.common)?;
    let mut engine = session.engine().await?;
    clix_terminal::notices::tell_notices(paths, &engine);
    let watch = args.common.jsonl.then(|| ArtifactWatch::start(engine.shell().folder(), &[PathBuf::new()]));
    let resume = Resume::from_flags(args.common.continue_last, args.resume.as_deref());
    let (mut agent, path) = agent(paths, &session, &mut engine, &args.common, resume)?;
    let mut render = Renderer::new(args.common.jsonl, agent.currency());
    let (summary, result) = run_task(&mut agent, &task, watch.as_ref(), &mut |e| render.event(e)).await;
    remember(&mut agent, &mut render).await;
    render.result(&result);
    render.finish(&summary, &path);
    Ok(crate::cli::exit_code(summary.stop_reason.exit_code()))
}

/// A downstream agent whose upstream failed: the reason on stderr, and with
/// `--jsonl` an `error` and a failed `result`, so the next agent stops too.
fn upstream_failed(args: &AgentArgs, why: &str, started: std::time::Instant) -> ExitCode {
    eprintln!("clix: not started: {why}");
    if args.jsonl {
        for line in clix_agent::stream::not_started(why, started.elapsed().as_millis() as u64) {
            print_line(&line);
        }
    }
    ExitCode::FAILURE
}

/// `clix chat`: a REPL over one session; history persists across turns.
pub(crate) async fn chat(paths: &Paths, chat: ChatArgs) -> Result<ExitCode> {
    if chat.common.show_prompt {
        return show_prompt(paths, &chat.common).await;
    }
    // Piped stdin is read before anything starts: with no line in it, no run is made.
    let piped = clix_terminal::input::read_piped_stdin()?;
    let mut turns = Turns::new(piped, &paths.state_dir.join("chat_history.txt"))?;
    let args = chat.common;
    let session = agent_session(paths, &args)?;
    let mut engine = session.engine().await?;
    clix_terminal::notices::tell_notices(paths, &engine);
    let resume = Resume::from_flags(args.continue_last, chat.resume.as_deref());
    let (mut agent, path) = agent(paths, &session, &mut engine, &args, resume)?;
    if turns.at_terminal() {
        eprintln!("clix chat in {} — /help for commands, /exit to leave", session.workspace.display());
    }
    let mut chat = Chat::new(&session, &agent);
    while let Some(line) = turns.next_line()? {
        let line = line.trim();
        match ChatCommand::parse(line) {
            _ if line.is_empty() => continue,
            Some(ChatCommand::Exit) => break,
            Some(ChatCommand::Help) => {
                eprintln!("Type a task and press Enter (Alt+Enter or a trailing \\ for a new line).");
                eprintln!("{CHAT_COMMANDS}");
                eprintln!("Ctrl-C stops the current step; the run is saved in {}", path.display());
            }
            Some(command) => match chat.run(&session, &mut agent, command) {
                Ok(shown) => {
                    if let Some(diff) = shown.diff {
                        outln(clix_terminal::text::for_stdout(diff.trim_end()))?;
                    }
                    shown.notes.iter().for_each(|note| eprintln!("{note}"));
                }
                Err(e) => eprintln!("clix: {e}"),
            },
            None => {
                chat.task_starts(&session, &agent);
                let mut render = Renderer::new(args.jsonl, agent.currency());
                let (summary, result) = run_task(&mut agent, line, None, &mut |e| render.event(e)).await;
                chat.task_done(summary.usage);
                render.result(&result);
                render.finish(&summary, &path);
            }
        }
    }
    let mut render = Renderer::new(args.jsonl, agent.currency());
    remember(&mut agent, &mut render).await;
    Ok(ExitCode::SUCCESS)
}

/// The session's summary into memory (when a model did the work); a
/// failure is only reported: the work itself is done and saved.
async fn remember(agent: &mut Agent<'_>, render: &mut Renderer) {
    if let Err(e) = agent.remember(&mut |e| render.event(e)).await {
        render.stop_spinner();
        eprintln!("clix: no summary stored in memory: {e}");
    }
}

/// The currency costs are shown in: `agent.currency`, or USD when the
/// config cannot be read (a listing is no place to fail on it).
pub(crate) fn currency(paths: &Paths) -> String {
    clix_session::load(paths, &[]).map(|l| l.value.agent.currency).unwrap_or_else(|_| "USD".into())
}

/// `clix runs list`: the runs of `here` (every folder's with `all`), as a
/// table fitted to the terminal, or as JSON.
pub(crate) fn runs(paths: &Paths, json: bool, all: bool, here: &Path) -> Result<ExitCode> {
    let dir = clix_session::runs_dir(paths);
    let here = std::fs::canonicalize(here).unwrap_or_else(|_| here.to_path_buf());
    let mut runs = list_runs(&dir);
    let total = runs.len();
    if !all {
        runs.retain(|r| Path::new(&r.workspace) == here);
    }
    if json {
        outln(serde_json::to_string_pretty(&runs)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    clix_terminal::runs::show(&runs, total, all, &here, &currency(paths))?;
    Ok(ExitCode::SUCCESS)
}

/// `clix replay <id>`: pretty, `--jsonl`, or `--html FILE`; a plan's
/// `plan-result.json` shows every agent's run (`--html`: a lane each).
pub(crate) fn replay(paths: &Paths, id: &str, jsonl: bool, html: Option<&Path>) -> Result<ExitCode> {
    if id.ends_with("plan-result.json") {
        return replay_plan(paths, Path::new(id), jsonl, html);
    }
    let (id, records) = clix_session::run_records(paths, id)?;
    let id = id.as_str();
    let currency = currency(paths);
    if let Some(out) = html {
        return write_page(out, &clix_agent::replay::html_page(id, &records, &currency));
    }
    if jsonl {
        for r in &records {
            outln(serde_json::to_string(r)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    clix_terminal::replay_view::show_run(&records, &currency)?;
    Ok(ExitCode::SUCCESS)
}

/// A plan's agents, from its `plan-result.json`: each task's trajectory.
fn replay_plan(paths: &Paths, file: &Path, jsonl: bool, html: Option<&Path>) -> Result<ExitCode> {
    let workspace = crate::cli::workspace_or_cwd(None)?;
    let (result, lanes) = clix_session::plan_lanes(paths, &workspace, file)?;
    if let Some(out) = html {
        return write_page(out, &clix_agent::replay::plan_page(&result.plan, &lanes, &currency(paths)));
    }
    clix_terminal::replay_view::show_lanes(&lanes, jsonl)?;
    Ok(ExitCode::SUCCESS)
}

/// A replay page written where the person said; inside the current
/// workspace through its handle, so a symlink planted there is not followed.
fn write_page(out: &Path, page: &str) -> Result<ExitCode> {
    let workspace = crate::cli::workspace_or_cwd(None)?;
    clix_plan::write_named(&workspace, out, page)?;
    outln(format_args!("wrote {}", out.display()))?;
    Ok(ExitCode::SUCCESS)
}

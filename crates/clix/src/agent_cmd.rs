//! `clix ask`, `clix chat`, `clix runs` and `clix replay`: the agent loop
//! for people, rendered on a terminal or as JSON lines.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clix_agent::replay::{money, usage_text};
use clix_agent::stream::{ArtifactWatch, RunResult, StreamWriter, Upstream, read_upstream};
use clix_agent::{
    Agent, Event, ReplyCache, Resumable, RunSummary, StopReason, find_run, latest_resumable, list_runs, read_run,
    resumable,
};
use clix_config::Paths;
use clix_session::{AgentSession, CHAT_COMMANDS, Chat, ChatCommand, Session, run_task};

use crate::cli::outln;
use crate::markdown::Answer;

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

/// Which earlier run an `ask` or `chat` goes on with.
enum Resume {
    /// This workspace's run written to last.
    Latest,
    /// The run a person named (an id, its start, `last`).
    Named(String),
}

impl Resume {
    /// From `--continue` and `--resume [RUN_ID]` (empty: the latest).
    fn from_flags(continue_last: bool, resume: Option<&str>) -> Option<Resume> {
        match resume {
            Some("") => Some(Resume::Latest),
            Some(named) => Some(Resume::Named(named.to_string())),
            None => continue_last.then_some(Resume::Latest),
        }
    }

    /// The run's conversation, rebuilt from its file (up to step
    /// `from_step` when given).
    fn load(&self, paths: &Paths, workspace: &Path, from_step: Option<u32>) -> Result<Resumable> {
        let runs = clix_session::runs_dir(paths);
        let id = match self {
            Resume::Latest => latest_resumable(&runs, &workspace.display().to_string()),
            Resume::Named(named) => find_run(&runs, named),
        };
        let id = id?;
        Ok(match from_step {
            Some(step) => clix_agent::resumable_before(&runs, &id, step)?,
            None => resumable(&runs, &id)?,
        })
    }
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
    crate::terminal::tell_notices(paths, &engine);
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
    let system = match &shown["system"] {
        serde_json::Value::String(text) => text.clone(),
        other => serde_json::to_string_pretty(other)?,
    };
    let kind = format!("{kind:?}").to_lowercase();
    outln(format_args!(
        "# system prompt (for model {model} at {url})\n{system}\n\n# tools (as the {kind} API is sent them)\n{}",
        serde_json::to_string_pretty(&shown["tools"])?
    ))?;
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
        let cache = ReplyCache::open(&paths.data_dir.join("reply-cache.sqlite")).map_err(anyhow::Error::msg)?;
        agent = agent.with_cache(cache);
    }
    let interrupt = agent.interrupt_handle();
    crate::cli::on_ctrl_c("stopping the current step", move || interrupt.interrupt());
    Ok((agent, trajectory))
}

/// `clix ask "<task>"`: one task, streamed.
pub(crate) async fn ask(paths: &Paths, args: AskArgs) -> Result<ExitCode> {
    if args.common.show_prompt {
        return show_prompt(paths, &args.common).await;
    }
    let started = std::time::Instant::now();
    let piped = crate::cli::read_piped_stdin()?;
    let mut task = args.task.clone().unwrap_or_default();
    match (args.input, piped) {
        (InputForm::Jsonl, piped) => match upstream(piped.as_deref()) {
            Ok(upstream) => {
                let context = upstream.context(args.input_events == InputEvents::All, UPSTREAM_CONTEXT_BYTES);
                task = format!("{context}\nYour task:\n{task}");
            }
            // Stopped before a model is called: a chain fails at its first broken link.
            Err(why) => return Ok(upstream_failed(&args.common, &why, started)),
        },
        (InputForm::Text, Some(piped)) => {
            task.push_str("\n\n");
            task.push_str(&String::from_utf8_lossy(&piped));
        }
        (InputForm::Text, None) => {}
    }
    let session = agent_session(paths, &args.common)?;
    let mut engine = session.engine().await?;
    crate::terminal::tell_notices(paths, &engine);
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

/// The upstream stream on stdin, read whole.
fn upstream(piped: Option<&[u8]>) -> Result<Upstream, String> {
    let piped = piped
        .ok_or("--input jsonl needs an upstream stream on stdin: clix ask --jsonl … | clix ask --input jsonl …")?;
    let text = std::str::from_utf8(piped).map_err(|_| "the upstream stream is not UTF-8 text".to_string())?;
    read_upstream(text).map_err(|e| e.to_string())
}

/// A downstream agent whose upstream failed: the reason on stderr, and with
/// `--jsonl` an `error` and a failed `result`, so the next agent stops too.
fn upstream_failed(args: &AgentArgs, why: &str, started: std::time::Instant) -> ExitCode {
    eprintln!("clix: not started: {why}");
    if args.jsonl {
        let mut writer = StreamWriter::new(clix_agent::trajectory::process_stamp(), None);
        let summary = RunSummary {
            run_id: None,
            stop_reason: StopReason::Error(format!("upstream: {why}")),
            answer: String::new(),
            steps: 0,
            usage: clix_agent::Usage::default(),
            cost: None,
        };
        let lines = [
            writer.line("error".into(), serde_json::json!({ "message": format!("not started: {why}") })),
            writer.result(&RunResult::new(&summary, started.elapsed().as_millis() as u64, Vec::new())),
        ];
        for line in lines {
            if let Ok(text) = serde_json::to_string(&line) {
                let _ = outln(text);
            }
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
    let mut turns = Turns::from_stdin(paths)?;
    let args = chat.common;
    let session = agent_session(paths, &args)?;
    let mut engine = session.engine().await?;
    crate::terminal::tell_notices(paths, &engine);
    let resume = Resume::from_flags(args.continue_last, chat.resume.as_deref());
    let (mut agent, path) = agent(paths, &session, &mut engine, &args, resume)?;
    if matches!(turns, Turns::Terminal(_)) {
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
                        outln(crate::terminal::for_stdout(diff.trim_end()))?;
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

/// Where a chat's turns come from: a person at the line editor, or piped
/// stdin, one task per line.
enum Turns {
    Terminal(Box<crate::repl::Editor>),
    Piped(std::vec::IntoIter<String>),
}

impl Turns {
    fn from_stdin(paths: &Paths) -> Result<Turns> {
        match crate::cli::read_piped_stdin()? {
            None if std::io::stdin().is_terminal() => {
                Ok(Turns::Terminal(Box::new(crate::repl::Editor::new(&paths.state_dir.join("chat_history.txt"))?)))
            }
            piped => {
                let text = String::from_utf8_lossy(piped.as_deref().unwrap_or_default()).into_owned();
                let lines: Vec<String> =
                    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect();
                if lines.is_empty() {
                    bail!(
                        "clix chat: stdin held no task; type in a terminal, pipe one task per line, \
                         or give one task to clix ask \"…\""
                    );
                }
                Ok(Turns::Piped(lines.into_iter()))
            }
        }
    }

    /// The next input; `None` at the end (Ctrl-D, or the last piped line).
    fn next_line(&mut self) -> Result<Option<String>> {
        match self {
            Turns::Terminal(editor) => editor.read_line(),
            Turns::Piped(lines) => Ok(lines.next()),
        }
    }
}

/// The session's summary into memory (when a model did the work); a
/// failure is only reported: the work itself is done and saved.
async fn remember(agent: &mut Agent<'_>, render: &mut Renderer) {
    if let Err(e) = agent.remember(&mut |e| render.event(e)).await {
        render.stop_spinner();
        eprintln!("clix: no summary stored in memory: {e}");
    }
}

/// Turns events into terminal text or stream lines.
struct Renderer {
    /// With `--jsonl`: the stream the events become.
    stream: Option<StreamWriter>,
    /// The last thing printed on stdout was streamed model text without a newline.
    mid_text: bool,
    color: bool,
    /// Shown on a terminal while the model or a command works.
    spinner: Option<indicatif::ProgressBar>,
    interactive: bool,
    /// The model's text drawn as Markdown, or as written.
    answer: Answer,
    /// The currency costs are shown in (`agent.currency`).
    currency: String,
}

impl Renderer {
    fn new(jsonl: bool, currency: &str) -> Self {
        let interactive = !jsonl && std::io::stderr().is_terminal();
        let color = interactive && std::env::var_os("NO_COLOR").is_none();
        let stream = jsonl.then(|| StreamWriter::new(String::new(), None));
        let currency = currency.to_string();
        let answer = Answer::for_stdout(jsonl);
        Renderer { stream, mid_text: false, color, spinner: None, interactive, answer, currency }
    }

    fn spin(&mut self, message: &str) {
        self.stop_spinner();
        if self.interactive {
            let bar = indicatif::ProgressBar::new_spinner().with_message(message.to_string());
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            crate::terminal::set_spinner(Some(bar.clone()));
            self.spinner = Some(bar);
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(bar) = self.spinner.take() {
            crate::terminal::set_spinner(None);
            bar.finish_and_clear();
        }
    }

    fn dim(&self, s: &str) -> String {
        if self.color { format!("\x1b[2m{s}\x1b[0m") } else { s.to_string() }
    }

    fn event(&mut self, event: &Event) {
        if let Some(stream) = &mut self.stream {
            if let Event::Start { run_id, .. } = event {
                stream.set_agent_id(run_id.clone());
            }
            if let Some(line) = stream.event(event) {
                print_line(&line);
            }
            return;
        }
        let mut out = std::io::stdout();
        self.stop_spinner();
        match event {
            Event::Text { text } => {
                let text = self.answer.show(text);
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                self.mid_text = !text.ends_with('\n');
            }
            Event::ToolCall { tool, command, .. } => {
                self.end_text();
                eprintln!("{}", self.dim(&format!("▸ {tool} {}", one_line(command, 120))));
                self.spin("running…");
            }
            Event::ToolResult { text, changes, declined, .. } => {
                let footer = text.lines().last().unwrap_or_default();
                let first = text.lines().next().filter(|l| *l != footer).map(|l| format!(" {}", one_line(l, 80)));
                eprintln!("{}", self.dim(&format!("  {footer}{}", first.unwrap_or_default())));
                if let Some(line) = changes_line(changes.as_ref(), *declined) {
                    eprintln!("{}", self.dim(&format!("  {line}")));
                }
                self.spin("thinking…");
            }
            Event::Retry { attempt, wait_ms, error } => {
                eprintln!("{}", self.dim(&format!("  retry {attempt} in {wait_ms}ms: {error}")));
                self.spin("thinking…");
            }
            Event::Compacted { messages_removed, .. } => {
                eprintln!("{}", self.dim(&format!("  (summarized {messages_removed} earlier messages)")));
                self.spin("thinking…");
            }
            Event::Error { message } => {
                self.end_text();
                // A provider's error may quote what its server sent.
                eprintln!("clix: {}", crate::terminal::visible(message));
            }
            Event::Recall { ids, .. } => {
                let ids: Vec<String> = ids.iter().map(|id| format!("#{id}")).collect();
                eprintln!("{}", self.dim(&format!("  (recalled from memory: {})", ids.join(" "))));
                self.spin("thinking…");
            }
            Event::Remembered { id, text, .. } => {
                self.end_text();
                eprintln!("{}", self.dim(&format!("  (remembered #{id}: {})", one_line(text, 100))));
            }
            Event::Start { .. } => self.spin("thinking…"),
            // What the model was given is for the trajectory (`clix replay --jsonl`), not the terminal.
            Event::Context { .. } | Event::Request { .. } | Event::Tail { .. } | Event::Annotation { .. } => {}
            Event::Response { .. } | Event::Usage { .. } | Event::Done { .. } => {}
        }
    }

    fn end_text(&mut self) {
        if std::mem::take(&mut self.mid_text) {
            let _ = outln("");
        }
    }

    /// With `--jsonl`, the run's last line.
    fn result(&mut self, result: &RunResult) {
        if let Some(stream) = &mut self.stream {
            print_line(&stream.result(result));
        }
    }

    fn finish(&mut self, summary: &RunSummary, trajectory: &Path) {
        self.stop_spinner();
        if self.stream.is_some() {
            return;
        }
        self.end_text();
        let usage = usage_text(&summary.usage, summary.cost, &self.currency);
        let how = match &summary.stop_reason {
            StopReason::Answered => "done".to_string(),
            StopReason::Interrupted => format!("stopped by Ctrl-C at step {}", summary.steps),
            StopReason::MaxSteps => "stopped: step budget used up (--max-steps)".into(),
            StopReason::MaxTokens => "stopped: token budget used up (agent.max_total_tokens)".into(),
            StopReason::WallTime => "stopped: time budget used up (agent.max_wall_secs)".into(),
            StopReason::Error(_) => "failed".into(),
        };
        eprintln!(
            "{}",
            self.dim(&format!("— {how}; {} steps; {usage}; run saved: {}", summary.steps, trajectory.display()))
        );
        let stopped = [StopReason::MaxSteps, StopReason::MaxTokens, StopReason::WallTime, StopReason::Interrupted];
        if stopped.contains(&summary.stop_reason) {
            eprintln!("{}", self.dim("  to go on where it stopped: clix ask --continue \"what next\""));
        }
    }
}

/// One stream line on stdout. A reader that left (`| head -1`) ends no
/// run: the trajectory keeps it all.
pub(crate) fn print_line(line: &clix_agent::stream::StreamEvent) {
    if let Ok(text) = serde_json::to_string(line) {
        let _ = outln(text);
    }
}

/// What a call changed, in the line a person reads after it: the change
/// summary, or that the person declined the changes.
pub(crate) fn changes_line(changes: Option<&clix_engine::ChangeSet>, declined: bool) -> Option<String> {
    let summary = changes.and_then(clix_engine::ChangeSet::summary)?;
    Some(if declined { format!("declined, put back: {summary}") } else { summary })
}

fn one_line(s: &str, max: usize) -> String {
    // Shown on stderr, a terminal's: what a model or a file wrote is never obeyed there.
    let flat = crate::terminal::visible(&s.replace('\n', " ⏎ ")).into_owned();
    if flat.chars().count() <= max { flat } else { format!("{}…", flat.chars().take(max).collect::<String>()) }
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
    if runs.is_empty() {
        let elsewhere = if total > 0 { format!("; {total} in other folders: clix runs --all") } else { String::new() };
        outln(format_args!("no runs in {} yet{elsewhere}", here.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = terminal_width();
    outln(runs_table(&runs, all, &currency(paths), width))?;
    if runs.iter().any(|r| r.resumable) {
        eprintln!("+ can be continued: clix ask --resume ID \"next instruction\" (or clix chat --resume ID)");
    }
    if !all && total > runs.len() {
        eprintln!("{} more in other folders: clix runs --all", total - runs.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// The width to fit a table to: the terminal's, else `COLUMNS`, else none.
fn terminal_width() -> Option<usize> {
    if std::io::stdout().is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size()
    {
        return Some(usize::from(w));
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).filter(|w| *w > 0)
}

/// The runs as a table with a header row: each column as wide as its
/// widest cell, the task last, cut to fit `width` when there is one (and
/// when even the other columns do not fit, the date goes first, as the id
/// starts with it, then the cost, the model, the folder and the tokens).
/// A run's steps, tokens and cost are its whole run's: every task of a
/// resumed run or a chat, and the calls that summarized it.
fn runs_table(
    runs: &[clix_agent::trajectory::RunInfo],
    with_folder: bool,
    currency: &str,
    width: Option<usize>,
) -> String {
    const TASK_ROOM: usize = 12;
    const DROPPED_FIRST: [&str; 5] = ["DATE (UTC)", "COST", "MODEL", "FOLDER", "IN/OUT"];
    let count = |n: u64| match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    };
    let folder = |r: &clix_agent::trajectory::RunInfo| {
        Path::new(&r.workspace).file_name().map(|n| one_line(&n.to_string_lossy(), 20)).unwrap_or_default()
    };
    // "error: <the whole provider message>" would break the table; `replay` has it all.
    let end = |r: &clix_agent::trajectory::RunInfo| {
        let stop = r.stop_reason.as_ref().map_or("unfinished", StopReason::kind);
        format!("{stop}{}", if r.resumable { "+" } else { "" })
    };
    // A column: its header and its cells, a row each.
    type Column<'h> = (&'h str, Vec<String>);
    let mut columns: Vec<Column> = vec![
        ("ID", runs.iter().map(|r| r.id.clone()).collect()),
        ("DATE (UTC)", runs.iter().map(|r| run_date(&r.id)).collect()),
        ("STEPS", runs.iter().map(|r| r.steps.to_string()).collect()),
        ("END", runs.iter().map(end).collect()),
        ("MODEL", runs.iter().map(|r| one_line(&r.model, 24)).collect()),
    ];
    if with_folder {
        columns.push(("FOLDER", runs.iter().map(folder).collect()));
    }
    columns.push((
        "IN/OUT",
        runs.iter().map(|r| format!("{}/{}", count(r.usage.input_tokens), count(r.usage.output_tokens))).collect(),
    ));
    columns.push(("COST", runs.iter().map(|r| r.cost.map_or_else(|| "-".into(), |c| money(c, currency))).collect()));
    let widest = |(header, cells): &Column| {
        cells.iter().map(|c| c.chars().count()).chain([header.chars().count()]).max().unwrap_or(0)
    };
    let fixed = |columns: &[Column]| columns.iter().map(|c| widest(c) + 2).sum::<usize>();
    if let Some(width) = width {
        for dropped in DROPPED_FIRST {
            if fixed(&columns) + TASK_ROOM <= width {
                break;
            }
            columns.retain(|(header, _)| *header != dropped);
        }
    }
    let task_room = width.map(|w| w.saturating_sub(fixed(&columns)).max(TASK_ROOM));
    let cut = |task: &str| match task_room {
        Some(room) if task.chars().count() > room => {
            format!("{}…", task.chars().take(room.saturating_sub(1)).collect::<String>())
        }
        _ => task.to_string(),
    };
    let widths: Vec<usize> = columns.iter().map(widest).collect();
    let line = |cell_of: &dyn Fn(&Column) -> String, task: String| -> String {
        let mut text = String::new();
        for (column, width) in columns.iter().zip(&widths) {
            let cell = cell_of(column);
            let pad = " ".repeat(width - cell.chars().count());
            // Numbers are right-aligned, words left.
            if column.0 == "STEPS" {
                text.push_str(&format!("{pad}{cell}  "))
            } else {
                text.push_str(&format!("{cell}{pad}  "))
            }
        }
        text.push_str(&task);
        text
    };
    let mut table = vec![line(&|c| c.0.to_string(), "TASK".into())];
    for (i, r) in runs.iter().enumerate() {
        table.push(line(&|c| c.1[i].clone(), cut(&one_line(&r.task, 200))));
    }
    table.join("\n")
}

/// `2026-12-04 18:12` (UTC) from a run id, which starts with its time
/// (`20261204-181200-…`); the id itself when it does not.
fn run_date(id: &str) -> String {
    let digits = |range: std::ops::Range<usize>| id.get(range).filter(|d| d.bytes().all(|b| b.is_ascii_digit()));
    match (digits(0..4), digits(4..6), digits(6..8), digits(9..11), digits(11..13)) {
        (Some(y), Some(mo), Some(d), Some(h), Some(mi)) => format!("{y}-{mo}-{d} {h}:{mi}"),
        _ => id.to_string(),
    }
}

/// `clix replay <id>`: pretty, `--jsonl`, or `--html FILE`; a plan's
/// `plan-result.json` shows every agent's run (`--html`: a lane each).
pub(crate) fn replay(paths: &Paths, id: &str, jsonl: bool, html: Option<&Path>) -> Result<ExitCode> {
    if id.ends_with("plan-result.json") {
        return replay_plan(paths, Path::new(id), jsonl, html);
    }
    // A trajectory file named by its path (an eval attempt's) or a run id.
    let file = Path::new(id);
    let (dir, id) = match (file.extension().is_some_and(|e| e == "jsonl"), file.parent(), file.file_stem()) {
        (true, Some(parent), Some(stem)) if file.is_file() => {
            (parent.to_path_buf(), stem.to_string_lossy().into_owned())
        }
        _ => {
            let dir = clix_session::runs_dir(paths);
            let id = find_run(&dir, id)?;
            (dir, id)
        }
    };
    let id = id.as_str();
    let records = read_run(&dir, id)?;
    if records.is_empty() {
        bail!("run {id} has no events");
    }
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
    let mut render = Renderer::new(false, &currency);
    for r in &records {
        match &r.event {
            Event::Start { task, model, .. } => outln(format_args!("# task ({model}): {task}"))?,
            Event::Response { text, .. } if !text.is_empty() => outln(text)?,
            Event::ToolCall { tool, command, .. } => outln(format_args!("▸ {tool} {command}"))?,
            Event::ToolResult { text, changes, declined, .. } => {
                outln(text)?;
                if let Some(line) = changes_line(changes.as_ref(), *declined) {
                    outln(format_args!("  {line}"))?;
                }
            }
            Event::Done { stop_reason, steps, usage, cost, .. } => {
                outln(format_args!("# {stop_reason} after {steps} steps; {}", usage_text(usage, *cost, &currency)))?
            }
            other => render.event(other),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A plan's agents, from its `plan-result.json`: each task's trajectory.
fn replay_plan(paths: &Paths, file: &Path, jsonl: bool, html: Option<&Path>) -> Result<ExitCode> {
    let workspace = crate::cli::workspace_or_cwd(None)?;
    let text = clix_plan::read_named(&workspace, file).map_err(anyhow::Error::msg)?;
    let result: clix_plan::PlanResult =
        serde_json::from_str(&text).with_context(|| format!("{} is not a plan-result.json", file.display()))?;
    let mut lanes = Vec::new();
    for task in &result.tasks {
        let run_id = match &task.status {
            clix_plan::TaskStatus::Done { result, .. } => result.run_id.clone(),
            clix_plan::TaskStatus::Failed { result, .. } => result.as_ref().and_then(|r| r.run_id.clone()),
            _ => None,
        };
        let records = match run_id {
            Some(id) => read_run(&clix_session::runs_dir(paths), &id).unwrap_or_default(),
            None => Vec::new(),
        };
        lanes.push(clix_agent::replay::Lane { task: task.id.clone(), status: task.status.label().into(), records });
    }
    if let Some(out) = html {
        return write_page(out, &clix_agent::replay::plan_page(&result.plan, &lanes, &currency(paths)));
    }
    for lane in &lanes {
        outln(format_args!("## {} ({})", lane.task, lane.status))?;
        for r in &lane.records {
            if jsonl {
                outln(serde_json::to_string(r)?)?;
            } else if let Event::ToolCall { command, .. } = &r.event {
                outln(format_args!("▸ {command}"))?;
            } else if let Event::Done { stop_reason, answer, .. } = &r.event {
                outln(format_args!("# {stop_reason}: {answer}"))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A replay page written where the person said; inside the current
/// workspace through its handle, so a symlink planted there is not followed.
fn write_page(out: &Path, page: &str) -> Result<ExitCode> {
    let workspace = crate::cli::workspace_or_cwd(None)?;
    clix_plan::write_named(&workspace, out, page).map_err(anyhow::Error::msg)?;
    outln(format_args!("wrote {}", out.display()))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_s_date_is_read_from_its_id() {
        assert_eq!(run_date("20261204-181200-4242"), "2026-12-04 18:12");
        assert_eq!(run_date("count-run-r0"), "count-run-r0");
    }
}

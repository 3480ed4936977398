//! Subcommands and their arguments.

use std::io::{ErrorKind, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{ColorChoice, Parser, Subcommand, ValueEnum};
use clix_config::Paths;
use clix_engine::{Engine, ToolFormat, tool_definition};
use clix_session::{Approver, Session, Settings};
use clix_terminal::{err, out, outln};

#[derive(Parser)]
#[command(name = "clix", version, about = "A CLI is all an agent needs: one `run` tool over a jailed shell")]
struct Cli {
    /// Config file to read instead of the default ($CLIX_HOME/config.toml or XDG).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// What clix logs to stderr: error, warn (the default), info, debug
    /// (why each stage ran where it ran) or trace. Overrides CLIX_LOG.
    #[arg(long, global = true, value_enum, value_name = "LEVEL")]
    log_level: Option<clix_terminal::logging::LogLevel>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a command line in the workspace and print what a model would see.
    Run(RunArgs),
    /// Print the single `run` tool definition as JSON.
    ToolDef {
        #[arg(long, value_enum, default_value = "openai")]
        format: Format,
    },
    /// List the commands available inside `run`.
    Commands {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Give a model one task in the workspace, with the run tool; prints its answer.
    Ask(crate::agent_cmd::AskArgs),
    /// A conversation with the agent (history, multi-line input; /exit to leave).
    Chat(crate::agent_cmd::ChatArgs),
    /// Saved agent runs.
    Runs {
        #[command(subcommand)]
        action: Option<RunsAction>,
        /// Machine-readable output (as `clix runs list --json`).
        #[arg(long)]
        json: bool,
        /// Every folder's runs, not only this folder's.
        #[arg(long)]
        all: bool,
        /// The folder whose runs to list (default: the current folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Show a saved run again: pretty, as JSON lines, or as one HTML page.
    Replay {
        /// The run's id (see `clix runs list`), the start of one, `last` (the
        /// newest), or the path of a trajectory file (an eval attempt's:
        /// OUT/runs/<task>-<design>-r0.jsonl).
        id: String,
        /// The raw events, one JSON object per line.
        #[arg(long, conflicts_with = "html")]
        jsonl: bool,
        /// Write a self-contained HTML timeline, images inline.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Serve the `run` tool to MCP clients (Claude Code, Claude Desktop, Cursor…) over stdio or HTTP;
    /// `clix mcp import FILE` makes their MCP servers clix commands.
    Mcp(McpArgs),
    /// External CLIs declared by manifests: the `hub` command of run, for people
    /// (list, info, search, stats, check, call).
    Hub(crate::hub_cmd::HubArgs),
    /// The agent's memory, for people: the same subcommands and flags as
    /// `memory` inside run (search|recent|store|facts|forget, --json).
    /// clix's --log-level and --config may follow the subcommand; after `--`
    /// every word is the memory's own.
    Memory {
        /// Folder whose name is the topic new memories get (default: the current folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// e.g. search "signing key" -t ops --json
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// Measure the tool designs (run, bash, typed) on task suites with a model
    /// (or, with --solution, each task's reference solution); `compare A B` for two runs.
    Eval(crate::eval_cmd::EvalArgs),
    /// What an agent's run changed in the workspace, as a unified diff
    /// (every writer: commands, programs, git), or one line per path with --stat.
    Diff(crate::changes_cmd::DiffArgs),
    /// Put the workspace back as it was before a run (or before its step N),
    /// byte for byte; paths the person changed since are left unless --force.
    Undo(crate::changes_cmd::UndoArgs),
    /// Which commands may run: check a line against the rules, or list them.
    Policy(crate::policy_cmd::PolicyArgs),
    /// Plans of agents: check a plan, run its tasks as a DAG (each agent in
    /// its own namespace), or have a coordinator model write one.
    Plan(crate::plan_cmd::PlanArgs),
    /// Inspect or create the configuration file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Where shared state lives ([storage] url: PostgreSQL, else the SQLite
    /// files in the data folder): show it, or bring its schema to this clix's.
    Storage {
        #[command(subcommand)]
        action: StorageAction,
    },
    /// Check that this machine can run what the configuration asks for (the
    /// sandbox), and remove what clix processes killed with their warden left
    /// behind (their cgroups). A start never does this work.
    Doctor,
    /// Print a completion script for a shell: bash, zsh, fish (also elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (`clix.1`, and `clix-SUBCOMMAND.1` for each
    /// subcommand) into a folder: for packages (scripts/release.sh).
    #[command(hide = true)]
    Manpages {
        /// The folder to write them into (made if missing).
        #[arg(value_name = "DIR")]
        out: PathBuf,
    },
}

/// What every subcommand that starts a session takes (run, mcp, ask, chat).
#[derive(clap::Args, Clone, Default)]
pub(crate) struct SessionFlags {
    /// Folder the shell is jailed to (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Time limit of each command line, in seconds (default 30); an MCP call's `timeout_ms` can only lower it.
    /// Checked by the `limits.timeout_secs` rule, as the config file's value is.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// The session's memory topic (default: the workspace folder's name).
    #[arg(long, value_name = "TOPIC")]
    pub topic: Option<String>,
    #[command(flatten)]
    pub hub: HubFlags,
    /// Let commands starting with these words run where the policy would ask
    /// (repeatable; for this run only, e.g. --allow 'git push'; never a deny).
    #[arg(long = "allow", value_name = "WORDS")]
    pub allow: Vec<String>,
    /// How much may change: auto (changes stay, each call checkpointed for
    /// `clix diff` and `clix undo`), review (each call's changes shown and
    /// kept only when you say yes; needs a terminal), read-only (nothing in
    /// the workspace can change). Default: [agent] mode, else auto.
    #[arg(long, value_name = "MODE", value_parser = ["auto", "review", "read-only"])]
    pub mode: Option<String>,
}

impl SessionFlags {
    /// The flags as settings layers.
    pub(crate) fn layers(&self) -> Vec<(&'static str, &'static str, toml::Value)> {
        let mut layers = self.hub.layers();
        if !self.allow.is_empty() {
            let words = self.allow.iter().cloned().map(toml::Value::String).collect();
            layers.push(("policy.allow", "--allow", toml::Value::Array(words)));
        }
        if let Some(secs) = self.timeout {
            layers.push((
                "limits.timeout_secs",
                "--timeout",
                toml::Value::Integer(i64::try_from(secs).unwrap_or(i64::MAX)),
            ));
        }
        if let Some(topic) = &self.topic {
            layers.push(("memory.topic", "--topic", toml::Value::String(topic.clone())));
        }
        if let Some(mode) = &self.mode {
            layers.push(("agent.mode", "--mode", toml::Value::String(mode.clone())));
        }
        layers
    }
}

#[derive(clap::Args)]
struct RunArgs {
    #[command(flatten)]
    session: SessionFlags,
    /// Give sandboxed programs network access (off by default).
    #[arg(long)]
    network: bool,
    /// Print raw stdout and stderr, exit with the command's code (Layer 1 only).
    #[arg(long, conflicts_with = "json")]
    raw: bool,
    /// Print the run as one JSON object: exit_code, duration_ms, truncated, spill_path,
    /// stdout_bytes, stderr_bytes, failed_stages when a pipeline stage failed (as MCP's
    /// structuredContent), plus stdout and stderr.
    #[arg(long)]
    json: bool,
    /// The command line: one argument is the line as a shell reads it
    /// (clix run 'ls | head -5'); several are the words of one command,
    /// each kept as it is (clix run ls -la, clix run grep -rn TODO src).
    /// clix's own flags come before it; `--` ends them.
    #[arg(value_name = "LINE", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    line: Vec<String>,
}

/// The line `clix run` runs: one argument as it is, several as the words
/// of one command, each quoted as a shell needs it.
fn line_of(words: Vec<String>) -> String {
    match <[String; 1]>::try_from(words) {
        Ok([line]) => line,
        Err(words) => words.iter().map(|w| clix_common::shell_word(w)).collect::<Vec<_>>().join(" "),
    }
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct McpArgs {
    #[command(subcommand)]
    action: Option<McpAction>,
    #[command(flatten)]
    session: SessionFlags,
    /// Give sandboxed programs network access (off by default; sets the tool's openWorldHint).
    #[arg(long)]
    network: bool,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (default address 127.0.0.1:8765).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8765")]
    http: Option<SocketAddr>,
    /// Refused: a token on the command line is readable by every local user (/proc/PID/cmdline).
    #[arg(long, value_name = "TOKEN", hide = true)]
    token: Option<String>,
    /// A file (mode 0600) holding the bearer token HTTP clients must send. Without it or CLIX_MCP_TOKEN,
    /// clix makes one and keeps it in its state folder's mcp-token.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Most HTTP sessions open at once; a new one past it gets 503.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "http", value_parser = crate::cli::at_least_one())]
    max_sessions: usize,
    /// Close an HTTP session (and its shell) after this many idle seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1800, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout: u64,
    /// A browser origin (scheme://host[:port]) allowed to call the HTTP server besides loopback ones (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// End every HTTP session id with .NAME (1-32 of A-Z a-z 0-9 - _), so a load balancer in front of
    /// several replicas can send each session's requests to the replica that holds it (docs/scale-out.md).
    #[arg(long, value_name = "NAME", requires = "http", value_parser = |s: &str| clix_mcp::Route::parse(s))]
    route: Option<clix_mcp::Route>,
}

#[derive(Subcommand)]
enum McpAction {
    /// Read the `mcpServers` of a Claude Desktop (claude_desktop_config.json), Claude Code (.mcp.json) or
    /// Cursor (mcp.json) file and print them as [[mcp.server]] entries, with what was skipped and why and the
    /// variables to export; each becomes a command inside run.
    Import {
        /// The JSON file with `mcpServers`.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Append the entries to your config file (`clix config path`), keeping what it holds.
        #[arg(long)]
        write: bool,
    },
}

/// Where hub tools come from and which exist for the session; on every
/// subcommand that loads tools (run, ask, chat, mcp, hub).
#[derive(clap::Args, Clone, Default)]
pub(crate) struct HubFlags {
    /// A hub folder to load tools from (repeatable; replaces hub.dirs of the
    /// config; searched after the config folder's hub/, before <workspace>/.clix/hub).
    #[arg(long = "hub", value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Only tools of this domain exist for the session (repeatable; replaces hub.domains).
    #[arg(long = "domain", value_name = "D")]
    pub domains: Vec<String>,
}

impl HubFlags {
    /// The flags as settings layers.
    pub(crate) fn layers(&self) -> Vec<(&'static str, &'static str, toml::Value)> {
        let list = |items: Vec<String>| toml::Value::Array(items.into_iter().map(toml::Value::String).collect());
        let mut layers = Vec::new();
        if !self.dirs.is_empty() {
            let dirs = self.dirs.iter().map(|d| absolute(d).display().to_string()).collect();
            layers.push(("hub.dirs", "--hub", list(dirs)));
        }
        if !self.domains.is_empty() {
            layers.push(("hub.domains", "--domain", list(self.domains.clone())));
        }
        layers
    }
}

/// A count flag that 0 would make meaningless (`-j 0`, `--max-sessions 0`):
/// refused by clap, as a bad value of a setting is by the config loader.
pub(crate) fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..)
}

/// `path` from the current folder, so it means the same after a cd.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[derive(Subcommand)]
enum RunsAction {
    /// This folder's saved runs: id, date, steps, how each ended, model, tokens, cost, the task (also bare `clix runs`).
    List {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Every folder's runs, with a column for the folder.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Subcommand)]
enum StorageAction {
    /// Where the store is (a URL's password shown as ***) and whether it is ready.
    Show,
    /// Create or upgrade the store's schema, keeping every record (needed once
    /// for a new PostgreSQL database, and after an upgrade of clix).
    Migrate,
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Print every setting in force and where it came from.
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Print the path of the config file.
    Path,
    /// Write a config file holding every default (never overwrites).
    Init,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Openai,
    Anthropic,
    Mcp,
}

pub(crate) async fn main() -> ExitCode {
    let color = if std::env::var_os("NO_COLOR").is_some() { ColorChoice::Never } else { ColorChoice::Auto };
    let argv = hoist_global_flags(std::env::args_os().collect());
    let cli = match Cli::command_with_color(color).try_get_matches_from(argv) {
        Ok(matches) => match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
            Ok(cli) => cli,
            Err(e) => e.exit(),
        },
        Err(e) => e.exit(),
    };
    clix_terminal::logging::init(cli.log_level);
    match dispatch(cli).await {
        Ok(code) => code,
        // The reader left (`clix run … | head -c 10`): nothing more to say, and no one to say it to.
        Err(e) if is_broken_pipe(&e) => exit_code(clix_common::exit::BROKEN_PIPE),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "clix: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `e` is, at bottom, a write to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == ErrorKind::BrokenPipe))
}

/// Subcommands whose trailing words belong to another command (`clix memory
/// …` and `clix hub …` run the engine's `memory` and `hub`): clap hands them
/// every word after the subcommand, clix's own flags included.
const TRAILING_WORDS: &[&str] = &["memory", "hub"];

/// clix's global flags that take a value.
const GLOBAL_FLAGS: &[&str] = &["--log-level", "--config"];

/// `--log-level debug` or `--config=FILE`: a global flag and how many words it spans.
fn global_flag(word: &std::ffi::OsStr) -> Option<usize> {
    let word = word.to_str()?;
    GLOBAL_FLAGS.iter().find_map(|flag| match word.strip_prefix(flag) {
        Some("") => Some(2),
        Some(value) if value.starts_with('=') => Some(1),
        _ => None,
    })
}

/// `argv` with the global flags written among a [`TRAILING_WORDS`]
/// subcommand's words (`clix memory recent --log-level debug`) moved before
/// the subcommand, where clap reads them as clix's; words after `--` stay
/// the command's own (`clix memory store -- --config is a flag`).
fn hoist_global_flags(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut at = 1;
    while let Some(span) = argv.get(at).and_then(|w| global_flag(w)) {
        at += span;
    }
    if !argv.get(at).and_then(|w| w.to_str()).is_some_and(|sub| TRAILING_WORDS.contains(&sub)) {
        return argv;
    }
    let (mut hoisted, mut words) = (Vec::new(), Vec::new());
    let mut tail = argv[at..].iter().cloned();
    while let Some(word) = tail.next() {
        match global_flag(&word) {
            _ if word == "--" => {
                words.push(word);
                words.extend(tail.by_ref());
            }
            Some(span) => {
                hoisted.push(word);
                hoisted.extend(tail.by_ref().take(span - 1));
            }
            None => words.push(word),
        }
    }
    argv[..at].iter().cloned().chain(hoisted).chain(words).collect()
}

impl Cli {
    fn command_with_color(color: ColorChoice) -> clap::Command {
        <Cli as clap::CommandFactory>::command().color(color)
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode> {
    let paths = Paths::from_env(cli.config.as_deref());
    match cli.command {
        Command::Run(args) => run(&paths, args).await,
        Command::Ask(args) => crate::agent_cmd::ask(&paths, args).await,
        Command::Chat(args) => crate::agent_cmd::chat(&paths, args).await,
        Command::Runs { action, json, all, workspace } => {
            let (json, all) = match action {
                Some(RunsAction::List { json: j, all: a }) => (json || j, all || a),
                None => (json, all),
            };
            crate::agent_cmd::runs(&paths, json, all, &workspace_or_cwd(workspace)?)
        }
        Command::Diff(args) => crate::changes_cmd::diff(&paths, args),
        Command::Undo(args) => crate::changes_cmd::undo(&paths, args),
        Command::Replay { id, jsonl, html } => crate::agent_cmd::replay(&paths, &id, jsonl, html.as_deref()),
        Command::ToolDef { format } => {
            let engine = scratch_engine(&paths).await?;
            let format = match format {
                Format::Openai => ToolFormat::OpenAi,
                Format::Anthropic => ToolFormat::Anthropic,
                Format::Mcp => ToolFormat::Mcp,
            };
            outln(serde_json::to_string_pretty(&tool_definition(engine.catalog(), format))?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Commands { json } => {
            let engine = scratch_engine(&paths).await?;
            let catalog = engine.catalog();
            match json {
                true => outln(serde_json::to_string_pretty(&clix_terminal::commands_view::json(catalog))?)?,
                false => out(clix_terminal::commands_view::text(catalog).as_bytes())?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp(McpArgs { action: Some(McpAction::Import { file, write }), .. }) => {
            let imported = clix_session::import_mcp_servers(&paths, &file, write)?;
            out(imported.toml.as_bytes())?;
            imported.note.iter().for_each(|note| eprintln!("{note}"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp(args) => mcp(paths, args).await,
        Command::Config { action } => config(&paths, action),
        Command::Storage { action } => {
            let paths = paths.clone();
            off_runtime(move || storage(&paths, action)).await
        }
        Command::Doctor => {
            let paths = paths.clone();
            off_runtime(move || doctor(&paths)).await
        }
        Command::Memory { workspace, args } => memory(&paths, workspace, &args).await,
        Command::Hub(args) => crate::hub_cmd::hub(&paths, args).await,
        Command::Eval(args) => crate::eval_cmd::eval(&paths, args).await,
        Command::Policy(args) => crate::policy_cmd::policy(&paths, args).await,
        Command::Plan(args) => crate::plan_cmd::plan(&paths, args).await,
        Command::Completions { shell } => {
            let mut command = Cli::command_with_color(ColorChoice::Never);
            // Generated whole first: clap_complete panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "clix", &mut script);
            out(&script)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Manpages { out: dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let command = Cli::command_with_color(ColorChoice::Never);
            clap_mangen::generate_to(command, &dir).with_context(|| format!("cannot write into {}", dir.display()))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `clix mcp`: nothing but MCP goes to stdout; messages go to stderr.
async fn mcp(paths: Paths, args: McpArgs) -> Result<ExitCode> {
    let settings = load_with_flags(&paths, &args.session, args.network)?;
    let workspace = workspace_or_cwd(args.session.workspace)?;
    // No one at a terminal answers for an MCP client.
    let engine = session(&paths, settings, &workspace, false).label("mcp").engine_config()?;
    let config = clix_mcp::ServeConfig { engine };
    if args.token.is_some() {
        anyhow::bail!(
            "--token is refused: a token on the command line can be read by every local user in \
             /proc/PID/cmdline. Put it in CLIX_MCP_TOKEN, or in a file only you can read passed as \
             --token-file FILE, or give neither and clix makes one (printed, and kept in {})",
            paths.state_dir.join(clix_mcp::TOKEN_FILE).display()
        );
    }
    let http = match args.http {
        Some(addr) => {
            // CLIX_MCP_TOKEN left the environment at start, into the secret store.
            let env = clix_config::secrets::var("CLIX_MCP_TOKEN");
            let token = clix_mcp::Token::resolve(env, args.token_file.as_deref(), &paths.state_dir)?;
            let options = clix_mcp::HttpOptions {
                addr,
                token: token.secret.clone(),
                idle: std::time::Duration::from_secs(args.idle_timeout),
                max_sessions: args.max_sessions,
                allowed_origins: args.allow_origins,
                route: args.route,
            };
            options.check()?;
            Some((options, token))
        }
        None => None,
    };
    // What clients send, and what the sessions may hold in files, said once at start.
    let announcement =
        http.as_ref().map(|(options, token)| options.announcement(token, config.engine.limits.max_tmp_bytes));
    clix_mcp::serve(config, http.map(|(options, _)| options), |addr| {
        eprintln!("clix mcp: serving http://{addr}/mcp");
        eprintln!("{}", announcement.unwrap_or_default());
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The folder given with `--workspace`, or the current one.
pub(crate) fn workspace_or_cwd(dir: Option<PathBuf>) -> Result<PathBuf> {
    match dir {
        Some(dir) => Ok(dir),
        None => std::env::current_dir().context("cannot read the current folder"),
    }
}

/// Settings with the session's flags and `--network` applied.
pub(crate) fn load_with_flags(paths: &Paths, session: &SessionFlags, network: bool) -> Result<Settings> {
    let mut flags = session.layers();
    if network {
        flags.push(("sandbox.network", "--network", toml::Value::Boolean(true)));
    }
    Ok(clix_session::load(paths, &flags)?.value)
}

/// `clix memory …` runs the very `memory` command the agent has, so both
/// always agree; a person's reaches every topic and may write the global one.
async fn memory(paths: &Paths, workspace: Option<PathBuf>, args: &[String]) -> Result<ExitCode> {
    let settings = clix_session::load(paths, &[])?.value;
    let workspace = workspace_or_cwd(workspace)?;
    let named_topic = !settings.memory.topic.is_empty();
    let session = session(paths, settings, &workspace, false);
    if args.first().is_some_and(|a| a == "adopt") {
        let (location, topic, args) =
            (session.memory_location(), session.memory_config(String::new()).topic, args.to_vec());
        return off_runtime(move || {
            outln(clix_memory::adopt(&location, &topic, &args[1..])?)?;
            Ok(ExitCode::SUCCESS)
        })
        .await;
    }
    let mut memory = session.memory_config(session.session_id().to_string());
    memory.access = clix_memory::MemoryAccess::Full;
    let old_topic = (!named_topic).then(|| (memory.location.clone(), memory.topic.clone()));
    // The person's `memory`, in place of the agent's.
    let config =
        clix_engine::EngineConfig { capabilities: vec![std::sync::Arc::new(memory)], ..session.engine_config()? };
    let mut engine = Engine::new(config).await?;
    let code = run_for_person(&mut engine, "memory", args).await?;
    if let Some((store, topic)) = old_topic
        && let Some(note) = off_runtime(move || Ok(clix_memory::old_topic_note(&store, &topic))).await?
    {
        eprintln!("{note}");
    }
    Ok(code)
}

/// Runs one of the agent's commands for a person: each argument quoted
/// (never interpreted by the shell), raw output, the command's exit code.
pub(crate) async fn run_agent_command(
    paths: &Paths,
    workspace: Option<PathBuf>,
    settings: Settings,
    command: &str,
    args: &[String],
) -> Result<ExitCode> {
    let workspace = workspace_or_cwd(workspace)?;
    let mut engine = session(paths, settings, &workspace, false).engine().await?;
    clix_terminal::notices::tell_notices(paths, &engine);
    run_for_person(&mut engine, command, args).await
}

/// `command args…` on `engine`, each argument quoted; raw output, its exit code.
async fn run_for_person(engine: &mut Engine, command: &str, args: &[String]) -> Result<ExitCode> {
    let quoted: Vec<std::borrow::Cow<'_, str>> = args.iter().map(|a| clix_common::shell_word(a)).collect();
    let line = format!("{command} {}", quoted.join(" "));
    let raw = engine.run_raw(line.trim_end(), clix_terminal::input::read_piped_stdin()?.as_deref()).await;
    out(&raw.stdout)?;
    err(&raw.stderr)?;
    Ok(exit_code(raw.exit_code))
}

async fn run(paths: &Paths, args: RunArgs) -> Result<ExitCode> {
    let mut settings = load_with_flags(paths, &args.session, args.network)?;
    // One line and the process ends: no next run to set a sandbox up for.
    settings.sandbox.keep_ready = false;
    let workspace = workspace_or_cwd(args.session.workspace)?;
    let person = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut engine = session(paths, settings, &workspace, person).engine().await?;
    clix_terminal::notices::tell_notices(paths, &engine);
    let stdin = clix_terminal::input::read_piped_stdin()?;
    let line = line_of(args.line);

    if args.raw {
        let raw = engine.run_raw(&line, stdin.as_deref()).await;
        out(&raw.stdout)?;
        err(&raw.stderr)?;
        return Ok(exit_code(raw.exit_code));
    }
    let shown = engine.run(&line, stdin.as_deref()).await;
    if args.json {
        outln(serde_json::to_string(&shown.report_with_streams())?)?;
    } else {
        // A workspace file's text may hold escapes: on a terminal they are shown, not obeyed.
        outln(clix_terminal::text::for_stdout(&shown.text))?;
        if let Some(line) = clix_terminal::render::changes_line(shown.changes.set.as_ref(), shown.changes.declined) {
            eprintln!("{line}");
        }
    }
    Ok(exit_code(shown.exit_code))
}

/// A person's session on `workspace`: the terminal answers the policy's
/// questions when `person_answers` (a terminal, and no machine reading the
/// output), and shows the progress of re-embedding memories.
pub(crate) fn session(paths: &Paths, settings: Settings, workspace: &Path, person_answers: bool) -> Session {
    let approver = person_answers.then(|| Arc::new(clix_terminal::ask::TerminalApprover) as Arc<dyn Approver>);
    let reviewer =
        person_answers.then(|| Arc::new(clix_terminal::ask::TerminalReviewer) as Arc<dyn clix_engine::Reviewer>);
    let progress = std::io::stderr().is_terminal().then(clix_terminal::progress::embedding_bar);
    Session::for_person(paths.clone(), settings, workspace).approver(approver).reviewer(reviewer).progress(progress)
}

/// An engine on an empty folder, for commands that only need the catalog.
async fn scratch_engine(paths: &Paths) -> Result<Engine> {
    let settings = clix_session::load(paths, &[])?.value;
    let dir = tempfile::tempdir().context("cannot create a temporary folder")?;
    session(paths, settings, dir.path(), false).engine().await
}

/// A `clix_common::exit` code (or a program's) as the process's status,
/// modulo 256 as a shell reports it.
pub(crate) fn exit_code(code: i32) -> ExitCode {
    u8::try_from(code.rem_euclid(256)).map_or(ExitCode::FAILURE, ExitCode::from)
}

/// Runs `work` on a blocking thread: the memory's PostgreSQL client (and
/// its SQLite file, and an HTTP embedder) block, and the PostgreSQL one
/// refuses to start its own runtime inside this one.
async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work).await.context("a memory task stopped")?
}

fn storage(paths: &Paths, action: StorageAction) -> Result<ExitCode> {
    let settings = clix_session::load(paths, &[])?.value;
    report(|out| match action {
        StorageAction::Show => clix_session::show_storage(paths, &settings, out),
        StorageAction::Migrate => clix_session::migrate_storage(paths, &settings, out),
    })
}

fn doctor(paths: &Paths) -> Result<ExitCode> {
    let settings = clix_session::load(paths, &[])?.value;
    report(|out| clix_session::doctor(&settings, out))
}

/// Runs `check`, which reports line by line, and prints its lines (those
/// before its error too); its error is the command's.
fn report(check: impl FnOnce(&mut dyn FnMut(String)) -> anyhow::Result<()>) -> Result<ExitCode> {
    let mut lines = Vec::new();
    let done = check(&mut |line| lines.push(line));
    for line in lines {
        outln(line)?;
    }
    done.map(|()| ExitCode::SUCCESS)
}

fn config(paths: &Paths, action: ConfigAction) -> Result<ExitCode> {
    match action {
        ConfigAction::Path => outln(paths.config_file.display())?,
        ConfigAction::Init => outln(format_args!("wrote {}", clix_session::init_config(paths)?.display()))?,
        ConfigAction::Show { json: true } => outln(serde_json::to_string_pretty(&clix_terminal::config_view::json(
            &clix_session::config_report(paths)?,
        ))?)?,
        ConfigAction::Show { json: false } => {
            out(clix_terminal::config_view::text(&clix_session::config_report(paths)?).as_bytes())?
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap checks every subcommand's arguments (unique names, valid
    /// requirements) only when that subcommand is parsed; this checks all.
    #[test]
    fn every_subcommand_definition_is_consistent() {
        Cli::command_with_color(ColorChoice::Never).debug_assert();
    }

    #[test]
    fn global_flags_after_memory_or_hub_are_clix_s() {
        let rows = [
            ("clix memory recent --log-level debug", "clix --log-level debug memory recent"),
            ("clix memory --log-level=info search x -t ops", "clix --log-level=info memory search x -t ops"),
            ("clix --config c.toml hub list --config d.toml", "clix --config c.toml --config d.toml hub list"),
            ("clix memory store -- --log-level debug", "clix memory store -- --log-level debug"),
            ("clix memory recent --log-level", "clix --log-level memory recent"),
            // Other subcommands take clap's word as it is.
            ("clix run --log-level debug ls", "clix run --log-level debug ls"),
            ("clix config show --log-level debug", "clix config show --log-level debug"),
        ];
        for (given, want) in rows {
            let argv = given.split(' ').map(std::ffi::OsString::from).collect();
            let got: Vec<String> =
                hoist_global_flags(argv).into_iter().map(|w| w.to_string_lossy().into_owned()).collect();
            assert_eq!(got.join(" "), want, "{given}");
        }
    }
}

//! `memory search|recent|store|facts|forget`: the agent's memory as a command
//! (seed 000/002), over `clix-memory`'s SQLite store.

use std::sync::{Arc, Mutex};

use clix_memory::{EmbedError, Filter, GLOBAL_TOPIC, Hit, Memory, MemorySettings, Progress, Store};
use clix_shell::{
    AgentCommand, CommandIo, CommandSpec, CommandStatus, SubcommandSpec, USAGE_EXIT, async_trait, fail, read_stdin,
    usage_error,
};

const SEARCH: &str = "memory search <query> [-t topic] [-k keyword] [-n 5] [--json]";
const RECENT: &str = "memory recent [n] [-t topic] [--json]";
const STORE: &str = "memory store <text> [-t topic] [--kind note|fact]";
/// `store` for a person, who may also write the global topic.
const STORE_FULL: &str = "memory store <text> [-t topic | --global] [--kind note|fact]";
const FACTS: &str = "memory facts [-t topic] [--json]";
const FORGET: &str = "memory forget <id>";

/// Which memories the `memory` command may see and change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MemoryAccess {
    /// Inside `run` (an agent, an MCP client): the session's topic, plus the
    /// global topic read-only. Other topics only with `memory.cross_topic`.
    #[default]
    Session,
    /// A person at the command line (`clix memory`): every topic, and the
    /// global topic is writable.
    Full,
}

/// Where memories go, whose they are, and how they are embedded.
#[derive(Clone, Default)]
pub struct MemoryConfig {
    pub path: std::path::PathBuf,
    /// Topic of what this session stores (default: the workspace's name).
    pub topic: String,
    pub session: String,
    /// The `[memory]` section: the embedder (none by default: full text only).
    pub settings: MemorySettings,
    /// Told `(done, total)` while memories are re-embedded for a new embedder.
    pub progress: Option<Progress>,
    /// Who is asking: a session inside `run` (the default) or a person.
    pub access: MemoryAccess,
}

impl std::fmt::Debug for MemoryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConfig")
            .field("path", &self.path)
            .field("topic", &self.topic)
            .field("session", &self.session)
            .field("embedder", &self.settings.embedder)
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

/// A store that opened, and why it runs on full text alone if its embedder
/// could not be set up.
pub struct OpenedStore {
    pub store: Store,
    pub degraded: Option<String>,
}

impl MemoryConfig {
    /// Whether this caller may name topics other than the session's.
    fn cross_topic(&self) -> bool {
        self.access == MemoryAccess::Full || self.settings.cross_topic
    }

    /// Why `topic` may not be read (`write`: or written) here, if so.
    fn refusal(&self, topic: &str, write: bool) -> Option<String> {
        if topic.is_empty() || (topic == self.topic && (topic != GLOBAL_TOPIC || !write)) {
            return None;
        }
        if topic == GLOBAL_TOPIC {
            if !write || self.access == MemoryAccess::Full {
                return None;
            }
            return Some(format!(
                "the {GLOBAL_TOPIC} topic is read-only inside run: its memories are what a person marked as true \
                 for every project. A person adds one with `clix memory store --global <text>`"
            ));
        }
        if self.cross_topic() {
            return None;
        }
        Some(format!(
            "topic {topic:?} is not this session's topic ({:?}). Inside run, memory sees and changes only the \
             session's own topic and the {GLOBAL_TOPIC} one, so one project cannot read, plant or forget \
             another's memories. Use `clix memory ... -t {topic}` from a terminal, or allow it for every \
             session with memory.cross_topic = true in config.toml (CLIX_MEMORY_CROSS_TOPIC=true)",
            self.topic
        ))
    }

    /// Opens the store with the configured embedder (a model2vec folder is
    /// loaded here), progress reporting attached. A wrong `[memory]` setting
    /// is an error to fix; an embedder that cannot be loaded (a moved model
    /// folder) costs only the vectors: the store opens on full text and
    /// `degraded` says why, as an embedder that fails per call does.
    pub fn open(&self) -> Result<OpenedStore, String> {
        let mut store = Store::open(&self.path).map_err(|e| e.to_string())?;
        let mut degraded = None;
        match self.settings.embedder(|k| std::env::var(k).ok()) {
            Ok(Some(embedder)) => match store.with_embedder(embedder) {
                Ok(with) => store = with,
                Err(e) => {
                    degraded = Some(e.to_string());
                    store = Store::open(&self.path).map_err(|e| e.to_string())?;
                }
            },
            Ok(None) => {}
            Err(e @ EmbedError::Config(_)) => return Err(e.to_string()),
            Err(e) => degraded = Some(e.to_string()),
        }
        if let Some(progress) = &self.progress {
            store.set_progress(progress.clone());
        }
        Ok(OpenedStore { store, degraded: degraded.map(|e| format!("full-text search only: {e}")) })
    }
}

pub(crate) struct MemoryCommand {
    spec: CommandSpec,
    config: MemoryConfig,
    /// Opened at first use (loading an embedder costs time that a session
    /// which never uses memory should not pay); a failed open is tried
    /// again at the next use. Shared with the blocking thread a call runs on.
    store: Arc<Mutex<Option<Store>>>,
}

impl MemoryCommand {
    pub(crate) fn new(config: MemoryConfig) -> Self {
        let sub = SubcommandSpec::new;
        let (store_usage, details) = if config.access == MemoryAccess::Full {
            (
                STORE_FULL,
                format!(
                    "Topics default to this folder's topic ({}) when storing; searches cover every topic\n\
                     unless -t is given. -k keeps only memories containing the keyword. --global (-t {GLOBAL_TOPIC})\n\
                     stores what every session should see; inside run those memories are read-only.",
                    config.topic
                ),
            )
        } else if config.settings.cross_topic {
            (
                STORE,
                format!(
                    "Topics default to this session's topic ({}) when storing; searches cover every topic\n\
                     unless -t is given (memory.cross_topic is on). -k keeps only memories containing the\n\
                     keyword. Topic {GLOBAL_TOPIC} is read-only.",
                    config.topic
                ),
            )
        } else {
            (
                STORE,
                format!(
                    "Memories are this session's topic ({}) plus the read-only topic {GLOBAL_TOPIC} (what a person\n\
                     marked as true everywhere); searches, recent and facts cover both. -k keeps only memories\n\
                     containing the keyword.",
                    config.topic
                ),
            )
        };
        let spec = CommandSpec {
            name: "memory".into(),
            summary: "remember and recall across sessions: memory search|recent|store|facts|forget".into(),
            usage: "memory search|recent|store|facts|forget".into(),
            subcommands: vec![
                sub("search", SEARCH, "ranked memories matching the words of <query>"),
                sub("recent", RECENT, "the newest memories (default 10)"),
                sub("store", store_usage, "remember <text> (or stdin); prints the new id"),
                sub("facts", FACTS, "every fact of a topic"),
                sub("forget", FORGET, "remove a memory for good"),
            ],
            details,
            needs_args: true,
        };
        MemoryCommand { spec, config, store: Arc::default() }
    }
}

/// Flags shared by the subcommands, and the words left over.
#[derive(Default)]
struct Args {
    topic: String,
    keyword: String,
    limit: Option<usize>,
    kind: Option<String>,
    json: bool,
    words: Vec<String>,
}

/// A count of at least 1.
fn count(flag: &str, v: &str) -> Result<usize, String> {
    v.parse().ok().filter(|n| *n > 0).ok_or_else(|| format!("{flag} needs a number of at least 1, not {v:?}"))
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut global = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "-t" | "--topic" => a.topic = value(arg)?,
            "-k" | "--keyword" => a.keyword = value(arg)?,
            "-n" | "--limit" => a.limit = Some(count("-n", &value(arg)?)?),
            "--kind" => a.kind = Some(value(arg)?),
            "--global" => global = true,
            "--json" => a.json = true,
            // Everything after `--` is words, even if it starts with `-`.
            "--" => a.words.extend(it.by_ref().cloned()),
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("unknown option {flag} (put -- before words that start with -)"));
            }
            _ => a.words.push(arg.clone()),
        }
    }
    if global {
        if !a.topic.is_empty() && a.topic != GLOBAL_TOPIC {
            return Err(format!("--global is the topic {GLOBAL_TOPIC}; give it or -t, not both"));
        }
        a.topic = GLOBAL_TOPIC.into();
    }
    Ok(a)
}

#[async_trait]
impl AgentCommand for MemoryCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let (picked, rest) = match self.spec.pick_subcommand(io.args) {
            Ok(picked) => picked,
            Err(line) => return fail(&io, &line, USAGE_EXIT).await,
        };
        let (sub, usage) = (picked.name.as_str(), picked.usage.as_str());
        let who = format!("memory {sub}");
        let mut args = match parse(rest) {
            Ok(args) => args,
            Err(e) => return fail(&io, &format!("[error] {who}: {e}. usage: {usage}\n"), USAGE_EXIT).await,
        };
        if sub == "store" && args.words.is_empty() {
            let piped = read_stdin(&io).await?;
            let text = String::from_utf8_lossy(&piped).trim().to_string();
            if !text.is_empty() {
                args.words.push(text);
            }
        }
        let needs_words = matches!(sub, "search" | "store" | "forget");
        if needs_words && args.words.is_empty() {
            return usage_error(&io, &who, usage).await;
        }
        if sub == "recent" && args.words.len() > 1 {
            return usage_error(&io, &who, usage).await;
        }
        // SQLite, a model or an HTTP embedder may take a while: off the async
        // runtime, so the line's time limit and cancellation still work.
        let (store, config, sub_name) = (Arc::clone(&self.store), self.config.clone(), sub.to_string());
        let call = tokio::task::spawn_blocking(move || {
            let mut slot = store.lock().unwrap_or_else(|p| p.into_inner());
            let mut warnings = Vec::new();
            if slot.is_none() {
                match config.open() {
                    Ok(mut opened) => {
                        warnings.extend(opened.degraded);
                        // The store itself enforces the session's view, so
                        // no subcommand can reach past it.
                        if !config.cross_topic() {
                            opened.store.confine_to(&[&config.topic, GLOBAL_TOPIC]);
                        }
                        *slot = Some(opened.store);
                    }
                    Err(e) => return (Err(format!("[error] memory: {e}\n")), warnings),
                }
            }
            let Some(store) = slot.as_mut() else { return (Err("[error] memory: no store\n".into()), warnings) };
            let out = execute(&config, store, &sub_name, &args);
            warnings.extend(store.take_warnings());
            (out, warnings)
        });
        let (out, warnings) = match call.await {
            Ok(done) => done,
            Err(e) => (Err(format!("[error] {who}: the memory call failed: {e}\n")), Vec::new()),
        };
        for warning in warnings {
            io.stderr.write_all(format!("[warn] {who}: {warning}\n").as_bytes()).await?;
        }
        match out {
            Ok(text) => {
                io.stdout.write_all(text.as_bytes()).await?;
                Ok(CommandStatus::success())
            }
            Err(message) => fail(&io, &message, 1).await,
        }
    }
}

/// One subcommand against the store; the text to print, or the error line.
fn execute(config: &MemoryConfig, store: &mut Store, sub: &str, args: &Args) -> Result<String, String> {
    let who = format!("memory {sub}");
    let failed = |e: clix_memory::MemoryError| format!("[error] {who}: {e}\n");
    let refused = |why: String| format!("[error] {who}: {why}\n");
    // What a store writes to is its topic, the session's by default.
    let store_topic = if args.topic.is_empty() { &config.topic } else { &args.topic };
    let (topic, write) = if sub == "store" { (store_topic, true) } else { (&args.topic, false) };
    if let Some(why) = config.refusal(topic, write) {
        return Err(refused(why));
    }
    match sub {
        "search" => {
            let filter = Filter { topic: &args.topic, keyword: &args.keyword };
            let hits = store.search(&args.words.join(" "), &filter, args.limit.unwrap_or(5)).map_err(failed)?;
            Ok(show_hits(&hits, args.json))
        }
        "recent" => {
            let n = match args.words.first() {
                Some(w) => count("recent", w).map_err(|e| format!("[error] {who}: {e}. usage: {RECENT}\n"))?,
                None => args.limit.unwrap_or(10),
            };
            Ok(show_memories(&store.recent(n, &args.topic).map_err(failed)?, args.json))
        }
        "facts" => Ok(show_memories(&store.facts(&args.topic).map_err(failed)?, args.json)),
        "store" => {
            let topic = store_topic;
            let kind = args.kind.as_deref().unwrap_or("note");
            let id = store.store(&args.words.join(" "), topic, kind, &config.session).map_err(failed)?;
            Ok(format!("stored #{id} ({kind}, topic {topic})\n"))
        }
        _ => {
            let id = args.words[0]
                .trim_start_matches('#')
                .parse::<i64>()
                .map_err(|_| format!("[error] {who}: the id is a number. usage: {FORGET}\n"))?;
            if config.access == MemoryAccess::Session {
                // Only the session's own topic (any, with cross_topic), never global.
                match store.get(id).map_err(failed)? {
                    Some(m) => {
                        if let Some(why) = config.refusal(&m.topic, true) {
                            return Err(refused(why));
                        }
                    }
                    // Another topic's memory is invisible here: refused the same way as none.
                    None if !config.settings.cross_topic => {
                        return Err(refused(format!(
                            "no memory #{id} in this session's topic ({:?}); inside run, forget reaches only the \
                             session's own memories (see memory recent)",
                            config.topic
                        )));
                    }
                    None => {}
                }
            }
            Ok(if store.forget(id).map_err(failed)? {
                format!("forgot #{id}\n")
            } else {
                format!("no memory #{id}; see memory recent\n")
            })
        }
    }
}

fn show_hits(hits: &[Hit], json: bool) -> String {
    if json {
        return serde_json::to_string(hits).unwrap_or_default() + "\n";
    }
    if hits.is_empty() {
        return "(no matching memories; try other words, or memory recent)\n".into();
    }
    hits.iter()
        .map(|h| {
            let m = &h.memory;
            format!("#{} [{} · {} · {}] score {:.2}: {}\n", m.id, m.topic, m.kind, m.date, h.score, h.snippet)
        })
        .collect()
}

fn show_memories(memories: &[Memory], json: bool) -> String {
    if json {
        return serde_json::to_string(memories).unwrap_or_default() + "\n";
    }
    if memories.is_empty() {
        return "(no memories yet; memory store <text> adds one)\n".into();
    }
    memories.iter().map(|m| format!("#{} [{} · {} · {}] {}\n", m.id, m.topic, m.kind, m.date, m.text)).collect()
}

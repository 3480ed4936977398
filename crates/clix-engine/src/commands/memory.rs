//! `memory search|recent|store|facts|forget`: the agent's memory as a command
//! (seed 000/002), over `clix-memory`'s SQLite store.

use std::sync::Mutex;

use clix_memory::{Filter, Hit, Memory, MemorySettings, Progress, Store};
use clix_shell::{
    AgentCommand, CommandIo, CommandSpec, CommandStatus, SubcommandSpec, USAGE_EXIT, async_trait, fail, read_stdin,
    usage_error,
};

const SEARCH: &str = "memory search <query> [-t topic] [-k keyword] [-n 5] [--json]";
const RECENT: &str = "memory recent [n] [-t topic] [--json]";
const STORE: &str = "memory store <text> [-t topic] [--kind note|fact]";
const FACTS: &str = "memory facts [-t topic] [--json]";
const FORGET: &str = "memory forget <id>";

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
}

impl std::fmt::Debug for MemoryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConfig")
            .field("path", &self.path)
            .field("topic", &self.topic)
            .field("session", &self.session)
            .field("embedder", &self.settings.embedder)
            .finish_non_exhaustive()
    }
}

impl MemoryConfig {
    /// Opens the store with the configured embedder (a model2vec folder is
    /// loaded here), progress reporting attached.
    pub fn open(&self) -> Result<Store, String> {
        let embedder = self.settings.embedder(|k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
        let mut store = Store::open(&self.path).map_err(|e| e.to_string())?;
        if let Some(embedder) = embedder {
            store = store.with_embedder(embedder).map_err(|e| e.to_string())?;
        }
        if let Some(progress) = &self.progress {
            store.set_progress(progress.clone());
        }
        Ok(store)
    }
}

pub(crate) struct MemoryCommand {
    spec: CommandSpec,
    config: MemoryConfig,
    /// Opened at first use (loading an embedder costs time that a session
    /// which never uses memory should not pay); an error is kept and shown.
    store: Mutex<Option<Result<Store, String>>>,
}

impl MemoryCommand {
    pub(crate) fn new(config: MemoryConfig) -> Self {
        let sub = SubcommandSpec::new;
        let spec = CommandSpec {
            name: "memory".into(),
            summary: "remember and recall across sessions: memory search|recent|store|facts|forget".into(),
            usage: "memory search|recent|store|facts|forget".into(),
            subcommands: vec![
                sub("search", SEARCH, "ranked memories matching the words of <query>"),
                sub("recent", RECENT, "the newest memories (default 10)"),
                sub("store", STORE, "remember <text> (or stdin); prints the new id"),
                sub("facts", FACTS, "every fact of a topic"),
                sub("forget", FORGET, "remove a memory for good"),
            ],
            details: format!(
                "Topics default to this session's topic ({}) when storing; searches cover every topic\n\
                 unless -t is given. -k keeps only memories containing the keyword.",
                config.topic
            ),
            needs_args: true,
        };
        MemoryCommand { spec, config, store: Mutex::new(None) }
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

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "-t" | "--topic" => a.topic = value(arg)?,
            "-k" | "--keyword" => a.keyword = value(arg)?,
            "-n" | "--limit" => {
                let v = value(arg)?;
                a.limit = Some(v.parse().map_err(|_| format!("-n needs a number, not {v:?}"))?);
            }
            "--kind" => a.kind = Some(value(arg)?),
            "--json" => a.json = true,
            _ => a.words.push(arg.clone()),
        }
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
        let (out, warnings) = {
            let mut slot = self.store.lock().unwrap_or_else(|p| p.into_inner());
            match slot.get_or_insert_with(|| self.config.open()) {
                Ok(store) => {
                    let out = self.execute(store, sub, &args);
                    (out, store.take_warnings())
                }
                Err(e) => (Err(format!("[error] memory: {e}\n")), Vec::new()),
            }
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

impl MemoryCommand {
    /// One subcommand against the store; the text to print, or the error line.
    fn execute(&self, store: &mut Store, sub: &str, args: &Args) -> Result<String, String> {
        let who = format!("memory {sub}");
        let failed = |e: clix_memory::MemoryError| format!("[error] {who}: {e}\n");
        match sub {
            "search" => {
                let filter = Filter { topic: &args.topic, keyword: &args.keyword };
                let hits = store.search(&args.words.join(" "), &filter, args.limit.unwrap_or(5)).map_err(failed)?;
                Ok(show_hits(&hits, args.json))
            }
            "recent" => {
                let n = args.words.first().and_then(|w| w.parse().ok()).or(args.limit).unwrap_or(10);
                Ok(show_memories(&store.recent(n, &args.topic).map_err(failed)?, args.json))
            }
            "facts" => Ok(show_memories(&store.facts(&args.topic).map_err(failed)?, args.json)),
            "store" => {
                let topic = if args.topic.is_empty() { &self.config.topic } else { &args.topic };
                let kind = args.kind.as_deref().unwrap_or("note");
                let id = store.store(&args.words.join(" "), topic, kind, &self.config.session).map_err(failed)?;
                Ok(format!("stored #{id} ({kind}, topic {topic})\n"))
            }
            _ => {
                let id = args.words[0]
                    .trim_start_matches('#')
                    .parse::<i64>()
                    .map_err(|_| format!("[error] {who}: the id is a number. usage: {FORGET}\n"))?;
                Ok(if store.forget(id).map_err(failed)? {
                    format!("forgot #{id}\n")
                } else {
                    format!("no memory #{id}; see memory recent\n")
                })
            }
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

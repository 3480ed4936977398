//! `memory search|recent|store|facts|forget`: the agent's memory as a command
//! (seed 000/002), over this crate's store (SQLite or the shared PostgreSQL).

use std::sync::{Arc, Mutex};

use clix_command::{
    Added, AgentCommand, Capability, CommandIo, CommandSpec, CommandStatus, Parts, async_trait, fail, read_stdin,
};

use crate::{EmbedError, Filter, GLOBAL_TOPIC, Hit, Memory, MemoryError, MemorySettings, Progress, Store};
use clix_command::flags::common::{JSON, KEYWORD, TOPIC, limit};
use clix_command::flags::{Arity, Item, Misuse, Operand, Opt, Parsed, Picked, Syntax, Takes, count, pick};

/// `--global`: the topic every session reads (`-t global`).
const GLOBAL: Opt = Opt { short: None, long: "--global", takes: Takes::Nothing };
/// `--kind note|fact`: what a stored memory is.
const KIND: Opt = Opt { short: None, long: "--kind", takes: Takes::Text("note|fact") };

// The usage lines are the seed's, word for word; options a model may well
// type that they do not show (`recent -n 3`, `--global`) are hidden.
const SEARCH: Syntax = Syntax::plain(
    "memory search",
    &[Operand { shown: "<query>", arity: Arity::Many }],
    &[Item::Shown(TOPIC), Item::Shown(KEYWORD), Item::Shown(limit("5")), Item::Shown(JSON), Item::Hidden(GLOBAL)],
);
const RECENT: Syntax = Syntax::plain(
    "memory recent",
    &[Operand { shown: "[n]", arity: Arity::Optional }],
    &[Item::Shown(TOPIC), Item::Shown(JSON), Item::Hidden(limit("10")), Item::Hidden(GLOBAL)],
);
const STORE: Syntax = Syntax {
    name: "memory store",
    operands: &[Operand { shown: "<text>", arity: Arity::Many }],
    // Inside run the global topic is read-only: --global is accepted only
    // to be refused with why.
    options: &[Item::Shown(TOPIC), Item::Shown(KIND), Item::Hidden(GLOBAL)],
    options_first: false,
    operands_from_stdin: true,
};
/// `store` for a person, who may also write the global topic.
const STORE_FULL: Syntax = Syntax { options: &[Item::Either(&[TOPIC, GLOBAL]), Item::Shown(KIND)], ..STORE };
const FACTS: Syntax =
    Syntax::plain("memory facts", &[], &[Item::Shown(TOPIC), Item::Shown(JSON), Item::Hidden(GLOBAL)]);
const FORGET: Syntax = Syntax::plain("memory forget", &[Operand { shown: "<id>", arity: Arity::One }], &[]);

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
    /// Where the store is: the SQLite file (`<data>/memory.sqlite`) or
    /// the PostgreSQL database of `[storage] url` (shown without its password).
    pub location: crate::Location,
    /// Topic of what this session stores: by default the workspace's
    /// canonical path, so two folders of the same name never share one
    /// (shown by the folder's name, see [`MemoryConfig::shown`]).
    pub topic: String,
    /// Identifies this session in each memory it stores.
    pub session: String,
    /// The `[memory]` section: the embedder (none by default: full text only).
    pub settings: MemorySettings,
    /// Told `(done, total)` while memories are re-embedded for a new embedder.
    pub progress: Option<Progress>,
    /// Who is asking: a session inside `run` (the default) or a person.
    pub access: MemoryAccess,
}

/// Written out only because `progress` is a callback, which has no `Debug`:
/// every other field is shown as derived (the settings' API key is a
/// `Secret`, shown as `***`).
impl std::fmt::Debug for MemoryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConfig")
            .field("location", &self.location)
            .field("topic", &self.topic)
            .field("session", &self.session)
            .field("settings", &self.settings)
            .field("progress", &self.progress.as_ref().map(|_| "callback"))
            .field("access", &self.access)
            .finish()
    }
}

/// A store that opened, and why it runs on full text alone if its embedder
/// could not be set up.
pub struct OpenedStore {
    /// The store, with its embedder when it could be set up.
    pub store: Store,
    /// Why it searches full text alone, when it does.
    pub degraded: Option<String>,
}

/// Why a session's memory cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The store (its SQLite file, its PostgreSQL server) cannot be used.
    #[error(transparent)]
    Store(#[from] MemoryError),
    /// A `[memory]` setting is wrong.
    #[error(transparent)]
    Settings(EmbedError),
}

impl MemoryConfig {
    /// How a topic is shown: the session's own, when it is a folder's path,
    /// by the folder's name; any other as it is stored (two folders of the
    /// same name are told apart by their paths).
    pub fn shown<'a>(&self, topic: &'a str) -> &'a str {
        if topic == self.topic { crate::topic_name(topic) } else { topic }
    }

    /// The topic `-t NAME` means: the session's own topic is also named by
    /// how it is shown.
    fn named(&self, given: &str) -> String {
        if !given.is_empty() && given != self.topic && given == self.shown(&self.topic) {
            return self.topic.clone();
        }
        given.to_string()
    }

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
            self.shown(&self.topic)
        ))
    }

    /// Opens the store with the configured embedder (a model2vec folder is
    /// loaded here), progress reporting attached. A wrong `[memory]` setting
    /// is an error to fix; an embedder that cannot be loaded (a moved model
    /// folder) costs only the vectors: the store opens on full text and
    /// `degraded` says why, as an embedder that fails per call does.
    pub fn open(&self) -> Result<OpenedStore, OpenError> {
        let mut store = Store::at(&self.location)?;
        let mut degraded = None;
        match self.settings.embedder(|k| std::env::var(k).ok()) {
            Ok(Some(embedder)) => match store.with_embedder(embedder) {
                Ok(with) => store = with,
                Err(e) => {
                    degraded = Some(e.to_string());
                    store = Store::at(&self.location)?;
                }
            },
            Ok(None) => {}
            Err(e @ EmbedError::Config(_)) => return Err(OpenError::Settings(e)),
            Err(e) => degraded = Some(e.to_string()),
        }
        if let Some(progress) = &self.progress {
            store.set_progress(progress.clone());
        }
        Ok(OpenedStore { store, degraded: degraded.map(|e| format!("full-text search only: {e}")) })
    }
}

/// The `memory` command, on the store this configuration names (opened at
/// its first use).
#[async_trait]
impl Capability for MemoryConfig {
    async fn add(&self, _parts: &Parts<'_>) -> Result<Added, clix_command::CapabilityError> {
        Ok(Added::offered(Arc::new(MemoryCommand::new(self.clone()))))
    }
}

struct MemoryCommand {
    spec: CommandSpec,
    /// Each subcommand's syntax, in the spec's order (`store` as the access allows).
    syntaxes: [&'static Syntax; 5],
    config: MemoryConfig,
    /// Opened at first use (loading an embedder costs time that a session
    /// which never uses memory should not pay); a failed open is tried
    /// again at the next use. Shared with the blocking thread a call runs on.
    store: Arc<Mutex<Option<Store>>>,
}

impl MemoryCommand {
    fn new(config: MemoryConfig) -> Self {
        let (store, details) = if config.access == MemoryAccess::Full {
            (
                &STORE_FULL,
                format!(
                    "Topics default to this folder's topic ({}) when storing; searches cover every topic\n\
                     unless -t is given. -k keeps only memories containing the keyword. --global (-t {GLOBAL_TOPIC})\n\
                     stores what every session should see; inside run those memories are read-only.",
                    config.shown(&config.topic)
                ),
            )
        } else if config.settings.cross_topic {
            (
                &STORE,
                format!(
                    "Topics default to this session's topic ({}) when storing; searches cover every topic\n\
                     unless -t is given (memory.cross_topic is on). -k keeps only memories containing the\n\
                     keyword. Topic {GLOBAL_TOPIC} is read-only.",
                    config.shown(&config.topic)
                ),
            )
        } else {
            (
                &STORE,
                format!(
                    "Memories are this session's topic ({}) plus the read-only topic {GLOBAL_TOPIC} (what a person\n\
                     marked as true everywhere); searches, recent and facts cover both. -k keeps only memories\n\
                     containing the keyword.",
                    config.shown(&config.topic)
                ),
            )
        };
        let syntaxes = [&SEARCH, &RECENT, store, &FACTS, &FORGET];
        let summaries = [
            "ranked memories matching the words of <query>",
            "the newest memories (default 10)",
            "remember <text> (or stdin); prints the new id",
            "every fact of a topic",
            "remove a memory for good",
        ];
        let subcommands = syntaxes.iter().zip(summaries).map(|(syntax, summary)| syntax.spec(summary)).collect();
        let spec = CommandSpec {
            name: "memory".into(),
            summary: "remember and recall across sessions: memory search|recent|store|facts|forget".into(),
            usage: "memory search|recent|store|facts|forget".into(),
            subcommands,
            details,
            needs_args: true,
        };
        MemoryCommand { spec, syntaxes, config, store: Arc::default() }
    }
}

/// What a subcommand was asked, from its parsed words.
#[derive(Default, Clone)]
struct Args {
    topic: String,
    keyword: String,
    limit: Option<usize>,
    kind: Option<String>,
    json: bool,
    words: Vec<String>,
}

impl Args {
    /// `--global` is the global topic, so it and another `-t` contradict.
    fn of(parsed: Parsed) -> Result<Args, Misuse> {
        let mut topic = parsed.text("--topic").unwrap_or_default().to_string();
        if parsed.on("--global") {
            if !topic.is_empty() && topic != GLOBAL_TOPIC {
                return Err(Misuse::Said(format!("--global is the topic {GLOBAL_TOPIC}; give it or -t, not both")));
            }
            topic = GLOBAL_TOPIC.into();
        }
        Ok(Args {
            topic,
            keyword: parsed.text("--keyword").unwrap_or_default().to_string(),
            limit: parsed.count("--limit"),
            kind: parsed.text("--kind").map(String::from),
            json: parsed.on("--json"),
            words: parsed.operands,
        })
    }
}

#[async_trait]
impl AgentCommand for MemoryCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let (syntax, picked, rest) = match pick(&io, &self.spec, &self.syntaxes).await? {
            Picked::Sub { syntax, spec, rest } => (syntax, spec, rest),
            Picked::Refused(status) => return Ok(status),
        };
        let sub = syntax.subcommand();
        let who = syntax.name;
        let parsed = syntax.parse(rest).and_then(Args::of).and_then(|args| {
            // `recent [n]`: the count may be the operand.
            match (sub, args.words.first()) {
                ("recent", Some(n)) => Ok(Args { limit: Some(count("recent", n)?), ..args }),
                _ => Ok(args),
            }
        });
        let mut args = match parsed {
            Ok(args) => args,
            Err(misuse) => return syntax.report(&io, &picked.summary, misuse).await,
        };
        if sub == "store" && args.words.is_empty() {
            let piped = read_stdin(&io).await?;
            let text = String::from_utf8_lossy(&piped).trim().to_string();
            if !text.is_empty() {
                args.words.push(text);
            }
            if args.words.is_empty() {
                return syntax.report(&io, &picked.summary, Misuse::Usage).await;
            }
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
    let named = Args { topic: config.named(&args.topic), ..args.clone() };
    let args = &named;
    let failed = |e: crate::MemoryError| format!("[error] {who}: {e}\n");
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
            Ok(show_hits(config, &hits, args.json))
        }
        "recent" => {
            let memories = store.recent(args.limit.unwrap_or(10), &args.topic).map_err(failed)?;
            Ok(show_memories(config, &memories, args.json, "(no memories yet; memory store <text> adds one)"))
        }
        "facts" => {
            let facts = store.facts(&args.topic).map_err(failed)?;
            Ok(show_memories(config, &facts, args.json, "(no facts yet; memory store --kind fact <text> adds one)"))
        }
        "store" => {
            let topic = store_topic;
            let kind = args.kind.as_deref().unwrap_or("note");
            let id = store.store(&args.words.join(" "), topic, kind, &config.session).map_err(failed)?;
            Ok(format!("stored #{id} ({kind}, topic {})\n", config.shown(topic)))
        }
        _ => {
            let id = args
                .words
                .first()
                .and_then(|word| word.trim_start_matches('#').parse::<i64>().ok())
                .ok_or_else(|| format!("[error] {who}: the id is a number. usage: {}\n", FORGET.usage()))?;
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
                            config.shown(&config.topic)
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

fn show_hits(config: &MemoryConfig, hits: &[Hit], json: bool) -> String {
    if json {
        return serde_json::to_string(hits).unwrap_or_default() + "\n";
    }
    if hits.is_empty() {
        return "(no matching memories; try other words, or memory recent)\n".into();
    }
    hits.iter()
        .map(|h| {
            let m = &h.memory;
            let topic = config.shown(&m.topic);
            format!("#{} [{} · {} · {}] score {:.2}: {}\n", m.id, topic, m.kind, m.date, h.score, h.snippet)
        })
        .collect()
}

/// The memories one per line (or as JSON); `none` when there are none.
fn show_memories(config: &MemoryConfig, memories: &[Memory], json: bool, none: &str) -> String {
    if json {
        return serde_json::to_string(memories).unwrap_or_default() + "\n";
    }
    if memories.is_empty() {
        return format!("{none}\n");
    }
    memories
        .iter()
        .map(|m| format!("#{} [{} · {} · {}] {}\n", m.id, config.shown(&m.topic), m.kind, m.date, m.text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_every_field_but_never_the_api_key() {
        let config = MemoryConfig {
            topic: "proj".into(),
            settings: MemorySettings {
                embedder: "openai".into(),
                api_key: clix_common::Secret::new("sk-canary-5e1d"),
                ..Default::default()
            },
            progress: Some(Arc::new(|_, _| {})),
            ..Default::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("canary"), "{shown}");
        for part in ["api_key: Secret(***)", "embedder: \"openai\"", "topic: \"proj\"", "Some(\"callback\")", "Session"]
        {
            assert!(shown.contains(part), "{part} in {shown}");
        }
    }
}

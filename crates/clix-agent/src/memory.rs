//! Memory in the loop (seed 000/002): the topic's facts go into the system
//! prompt, each new task gets a marked block of the memories most relevant
//! to it, and the session ends with a short summary stored for next time.
//! Beside its own topic, every session reads the `global` one (facts and
//! notes a person marked true in every project), and no other.
//!
//! This uses `clix-memory` directly rather than through a trait of its own:
//! memory sits beside the engine in the crate graph (ARCHITECTURE.md), so
//! agent → memory is a downward edge like agent → engine, and a trait here
//! would only restate `Store`'s API for its one implementation. The tests
//! then run against real SQLite stores.

use std::sync::{Arc, Mutex, MutexGuard};

use clix_memory::{Filter, GLOBAL_TOPIC, Hit, Memory, MemorySettings, Store};

/// Most facts placed in the system prompt (the newest), and their total size.
const MAX_FACTS: usize = 50;
const MAX_FACTS_CHARS: usize = 6000;
/// Candidates searched for a recall block, before the threshold (at least
/// as many as the recall size).
const RECALL_CANDIDATES: usize = 10;

/// A session's memory: the store, its topic, and the `[memory]` settings
/// (recall size and thresholds, summaries on or off).
pub struct AgentMemory {
    /// Searched and written on a blocking thread (SQLite, an embedder that
    /// may be an HTTP call): the loop's runtime keeps serving Ctrl-C and
    /// the renderer meanwhile.
    store: Arc<Mutex<Store>>,
    topic: String,
    settings: MemorySettings,
    /// Failures and warnings of memory work since the loop last asked: the
    /// run goes on without that memory, but the user is told.
    problems: Vec<String>,
}

/// What a recall found: the ids, and the block put before the task.
pub(crate) struct Recalled {
    pub ids: Vec<i64>,
    pub block: String,
}

impl AgentMemory {
    /// The memory of a session of `topic`. The store is confined to that
    /// topic and the global one (what a person marked true everywhere):
    /// the agent reads both, and nothing of other projects.
    pub fn new(mut store: Store, topic: impl Into<String>, settings: MemorySettings) -> Self {
        let topic = topic.into();
        store.confine_to(&[&topic, GLOBAL_TOPIC]);
        AgentMemory { store: Arc::new(Mutex::new(store)), topic, settings, problems: Vec::new() }
    }

    /// The session's topic: where its summary is stored.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The embedder's key from the settings (empty when unset), for the
    /// trajectory to hide.
    pub(crate) fn api_key(&self) -> &str {
        self.settings.api_key.expose()
    }

    pub(crate) fn summaries(&self) -> bool {
        self.settings.summaries
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `work` on the store, on a blocking thread.
    async fn with_store<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Store) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || work(&mut store.lock().unwrap_or_else(|p| p.into_inner())))
            .await
            .unwrap_or_else(|e| Err(format!("the memory call failed: {e}")))
    }

    /// What went wrong since the last call, for the loop to report.
    pub(crate) fn take_problems(&mut self) -> Vec<String> {
        let mut problems = std::mem::take(&mut self.problems);
        problems.extend(self.store().take_warnings());
        problems
    }

    /// The system prompt's part about memory, facts included.
    pub(crate) fn system_note(&mut self) -> String {
        let mut note = format!(
            "You have a memory that lasts across sessions, reached with the `memory` command: \
             `memory search <words>`, `memory store <text> [--kind fact]`, `memory facts`. This session's \
             topic is {:?}.",
            clix_memory::topic_name(&self.topic)
        );
        // The store is confined: this topic's facts and the global ones.
        let read = self.store().facts("");
        let facts = read.unwrap_or_else(|e| {
            self.problems.push(format!("cannot read the topic's facts: {e}"));
            Vec::new()
        });
        let (own, global): (Vec<Memory>, Vec<Memory>) = facts.into_iter().partition(|f| f.topic == self.topic);
        let sections = [
            ("Facts stored about this topic in earlier sessions:", own),
            ("Global facts (a person marked them true in every project):", global),
        ];
        let (mut facts_left, mut chars_left) = (MAX_FACTS, MAX_FACTS_CHARS);
        for (heading, facts) in sections {
            if facts.is_empty() || facts_left == 0 {
                continue;
            }
            note.push_str("\n\n");
            note.push_str(heading);
            for fact in facts {
                let line = format!("\n- {} (#{}, {})", one_line(&fact.text), fact.id, fact.date);
                if facts_left == 0 || line.len() > chars_left {
                    note.push_str("\n- … (more: memory facts)");
                    facts_left = 0;
                    break;
                }
                facts_left -= 1;
                chars_left -= line.len();
                note.push_str(&line);
            }
        }
        note
    }

    /// The memories of this topic and the global one most relevant to
    /// `task`, above the thresholds (facts are left out: the system prompt
    /// has them), as a marked block; `None` when nothing passes.
    pub(crate) async fn recall(&mut self, task: &str) -> Option<Recalled> {
        if self.settings.recall == 0 {
            return None;
        }
        let task = task.to_string();
        let wanted = RECALL_CANDIDATES.max(self.settings.recall);
        // Any topic of the confined store: this one and the global one, ranked together.
        let searched = self
            .with_store(move |store| {
                store.search(&task, &Filter { topic: "", keyword: "" }, wanted).map_err(|e| e.to_string())
            })
            .await;
        let hits = match searched {
            Ok(hits) => hits,
            Err(e) => {
                self.problems.push(format!("recall failed: {e}"));
                return None;
            }
        };
        let chosen: Vec<&Hit> = hits
            .iter()
            .filter(|h| h.memory.kind != "fact" && relevant(h, &self.settings))
            .take(self.settings.recall)
            .collect();
        if tracing::enabled!(tracing::Level::DEBUG) {
            self.log_recall(&hits, &chosen);
        }
        if chosen.is_empty() {
            return None;
        }
        let mut block = String::from(
            "[memory recall: earlier memories that may help with this task; check them before relying on them]",
        );
        for h in &chosen {
            let m = &h.memory;
            block.push_str(&format!("\n- #{} {} {}: {}", m.id, m.date, m.kind, one_line(&m.text)));
        }
        block.push_str("\n[end of memory recall]");
        Some(Recalled { ids: chosen.iter().map(|h| h.memory.id).collect(), block })
    }

    /// Each candidate's scores and whether it was recalled, and why not
    /// (debug): how a person tunes recall_min_similarity / recall_min_bm25.
    fn log_recall(&self, hits: &[Hit], chosen: &[&Hit]) {
        let s = &self.settings;
        tracing::debug!(
            topic = %self.topic,
            candidates = hits.len(),
            recalled = chosen.len(),
            max = s.recall,
            min_similarity = s.recall_min_similarity,
            min_bm25 = s.recall_min_bm25,
            "memory recall"
        );
        for h in hits {
            let verdict = if chosen.iter().any(|c| c.memory.id == h.memory.id) {
                "recalled"
            } else if h.memory.kind == "fact" {
                "a fact: already in the system prompt"
            } else if !relevant(h, s) {
                "below both thresholds"
            } else {
                "beyond the recall count"
            };
            tracing::debug!(
                id = h.memory.id,
                topic = %h.memory.topic,
                kind = %h.memory.kind,
                score = h.score,
                bm25 = h.bm25,
                similarity = h.similarity,
                verdict,
                "memory recall candidate"
            );
        }
    }

    /// Stores a run's summary (kind `summary`, this topic); its id.
    pub(crate) async fn store_summary(&mut self, text: &str, session: &str) -> Result<i64, String> {
        // A summary may repeat a token the run saw; memory keeps none.
        let text = clix_common::redact_text(text);
        let text = text.as_str();
        let (text, topic, session) = (text.to_string(), self.topic.clone(), session.to_string());
        self.with_store(move |store| store.store(&text, &topic, "summary", &session).map_err(|e| e.to_string())).await
    }
}

/// Above a threshold: close in meaning (cosine similarity, with an
/// embedder) or matching rare enough words (BM25).
fn relevant(hit: &Hit, settings: &MemorySettings) -> bool {
    hit.similarity.is_some_and(|s| s >= settings.recall_min_similarity)
        || hit.bm25.is_some_and(|b| b >= settings.recall_min_bm25)
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 400 { flat } else { format!("{}…", flat.chars().take(400).collect::<String>()) }
}

//! The `memory` command across workspaces, on a real SQLite file: inside
//! `run` a session sees and changes only its own topic (plus the global
//! topic, read-only), unless `memory.cross_topic` is on; a person's
//! `clix memory` (full access) reaches every topic.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_engine::{Engine, EngineConfig};
use clix_memory::{GLOBAL_TOPIC, Location, MemorySettings, Store};
use clix_memory::{MemoryAccess, MemoryConfig};
use serde_json::Value;

mod support;

/// One memory file with a fact in each of alpha, beta and global.
struct Memories {
    dir: tempfile::TempDir,
    alpha: i64,
    beta: i64,
    global: i64,
}

impl Memories {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("memory.sqlite")).unwrap();
        let alpha = store.store("alpha deploys on Fridays through CI", "alpha", "fact", "s-a").unwrap();
        let beta =
            store.store("beta deploys on Mondays; the beta signing key is in vault", "beta", "fact", "s-b").unwrap();
        let global = store.store("deploys never happen after 18:00", GLOBAL_TOPIC, "fact", "person").unwrap();
        Memories { dir, alpha, beta, global }
    }

    /// What is in the file, seen by nobody's session.
    fn store(&self) -> Store {
        Store::open(&self.dir.path().join("memory.sqlite")).unwrap()
    }

    async fn session(&self, topic: &str, access: MemoryAccess, settings: MemorySettings) -> Session {
        let ws = tempfile::tempdir().unwrap();
        let memory = MemoryConfig {
            location: Location::File(self.dir.path().join("memory.sqlite")),
            topic: topic.into(),
            session: format!("session-{topic}"),
            settings,
            access,
            ..Default::default()
        };
        let engine = Engine::new(EngineConfig {
            capabilities: vec![std::sync::Arc::new(memory)],
            ..EngineConfig::new(ws.path())
        })
        .await
        .unwrap();
        Session { engine, _ws: ws }
    }

    /// Inside run, default settings.
    async fn inside_run(&self, topic: &str) -> Session {
        self.session(topic, MemoryAccess::Session, MemorySettings::default()).await
    }
}

struct Session {
    engine: Engine,
    _ws: tempfile::TempDir,
}

impl Session {
    /// stdout, stderr, exit code.
    async fn run(&mut self, line: &str) -> (String, String, i32) {
        support::run(&mut self.engine, line).await
    }

    async fn ok(&mut self, line: &str) -> String {
        let (out, err, code) = self.run(line).await;
        assert_eq!(code, 0, "{line}: {err}");
        out
    }

    /// The `(id, topic)` pairs of a `--json` listing.
    async fn listed(&mut self, line: &str) -> Vec<(i64, String)> {
        let json: Value = serde_json::from_str(&self.ok(line).await).unwrap();
        let mut rows: Vec<(i64, String)> = json
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["id"].as_i64().unwrap(), m["topic"].as_str().unwrap().to_owned()))
            .collect();
        rows.sort();
        rows
    }

    /// The line is refused: exit 1, nothing on stdout, the reason on stderr.
    async fn refused(&mut self, line: &str) -> String {
        let (out, err, code) = self.run(line).await;
        assert_eq!((code, out.as_str()), (1, ""), "{line} must be refused: {err}");
        err
    }
}

fn pair(id: i64, topic: &str) -> (i64, String) {
    (id, topic.to_owned())
}

#[tokio::test]
async fn inside_run_a_session_sees_only_its_topic_and_the_global_one() {
    let m = Memories::new();
    let mut a = m.inside_run("alpha").await;
    let own_and_global = vec![pair(m.alpha, "alpha"), pair(m.global, GLOBAL_TOPIC)];
    assert_eq!(a.listed("memory search deploys --json").await, own_and_global);
    assert_eq!(a.listed("memory recent --json").await, own_and_global);
    assert_eq!(a.listed("memory facts --json").await, own_and_global);
    let (text, _, _) = a.run("memory search signing key vault").await;
    assert!(!text.contains("beta"), "words only beta's memory has find nothing: {text}");
    assert_eq!(a.listed("memory facts -t global --json").await, vec![pair(m.global, GLOBAL_TOPIC)]);
    assert_eq!(a.listed("memory search deploys -t alpha --json").await, vec![pair(m.alpha, "alpha")]);

    for line in [
        "memory search deploys -t beta",
        "memory recent -t beta",
        "memory facts -t beta --json",
        "memory store plant this in beta -t beta",
    ] {
        let why = a.refused(line).await;
        assert!(
            why.contains("topic \"beta\" is not this session's topic (\"alpha\")")
                && why.contains("memory.cross_topic = true")
                && why.contains("clix memory"),
            "{line}: says why and how to allow it: {why}"
        );
    }
    let why = a.refused(&format!("memory forget {}", m.beta)).await;
    assert!(why.contains(&format!("no memory #{} in this session's topic", m.beta)), "{why}");
    assert!(!why.contains("beta"), "nothing about the other topic leaks: {why}");
    let why = a.refused(&format!("memory forget {}", m.global)).await;
    assert!(why.contains("read-only") && why.contains("clix memory store --global"), "{why}");
    for line in ["memory store always use tabs -t global", "memory store always use tabs --global"] {
        assert!(a.refused(line).await.contains("read-only inside run"), "{line}");
    }

    let store = m.store();
    assert_eq!(store.get(m.beta).unwrap().map(|x| x.topic), Some("beta".into()), "beta's memory is still there");
    assert!(store.get(m.global).unwrap().is_some(), "the global fact is still there");
    assert_eq!(store.recent(10, "").unwrap().len(), 3, "nothing was planted");

    // Its own memories are the session's to keep and to forget.
    let stored = a.ok("memory store alpha builds with cargo").await;
    assert!(stored.starts_with("stored #4 (note, topic alpha)"), "{stored}");
    assert_eq!(a.ok("memory forget 4").await, "forgot #4\n");
}

#[tokio::test]
async fn the_global_fact_is_seen_from_every_session() {
    let m = Memories::new();
    let mut b = m.inside_run("beta").await;
    assert_eq!(b.listed("memory facts --json").await, vec![pair(m.beta, "beta"), pair(m.global, GLOBAL_TOPIC)]);
    assert_eq!(b.listed("memory search after 18:00 --json").await, vec![pair(m.global, GLOBAL_TOPIC)]);
    let mut a = m.inside_run("alpha").await;
    assert_eq!(a.listed("memory search after 18:00 --json").await, vec![pair(m.global, GLOBAL_TOPIC)]);
}

#[tokio::test]
async fn cross_topic_lets_a_session_name_other_topics() {
    let m = Memories::new();
    let settings = MemorySettings { cross_topic: true, ..Default::default() };
    let mut a = m.session("alpha", MemoryAccess::Session, settings).await;
    assert_eq!(a.listed("memory search deploys -t beta --json").await, vec![pair(m.beta, "beta")]);
    assert_eq!(a.listed("memory facts --json").await.len(), 3, "searches without -t cover every topic");
    assert!(a.ok("memory store beta ships on Tuesdays -t beta").await.contains("topic beta"));
    assert_eq!(a.ok(&format!("memory forget {}", m.beta)).await, format!("forgot #{}\n", m.beta));
    // The global topic stays a person's to write.
    assert!(a.refused("memory store x --global").await.contains("read-only"));
    assert!(a.refused(&format!("memory forget {}", m.global)).await.contains("read-only"));
    assert!(m.store().get(m.global).unwrap().is_some());
}

#[tokio::test]
async fn a_person_reaches_every_topic_and_writes_the_global_one() {
    let m = Memories::new();
    let mut person = m.session("alpha", MemoryAccess::Full, MemorySettings::default()).await;
    assert_eq!(person.listed("memory facts --json").await.len(), 3);
    assert_eq!(person.listed("memory search deploys -t beta --json").await, vec![pair(m.beta, "beta")]);
    assert_eq!(
        person.ok("memory store --global use UTC in logs --kind fact").await,
        "stored #4 (fact, topic global)\n"
    );
    let (_, usage, _) = person.run("memory store").await;
    assert!(usage.contains("[-t topic | --global]"), "{usage}");
    let (_, err, code) = person.run("memory store x --global -t beta").await;
    assert!(code == 2 && err.contains("not both"), "{code}: {err}");
    assert_eq!(person.ok(&format!("memory forget {}", m.beta)).await, format!("forgot #{}\n", m.beta));

    let mut a = m.inside_run("alpha").await;
    assert_eq!(a.listed("memory facts -t global --json").await, vec![pair(m.global, GLOBAL_TOPIC), pair(4, "global")]);
}

#[tokio::test]
async fn a_session_whose_topic_is_global_cannot_write_it() {
    let m = Memories::new();
    let mut g = m.inside_run(GLOBAL_TOPIC).await;
    assert!(g.refused("memory store sneaky").await.contains("read-only inside run"));
    assert_eq!(g.listed("memory facts --json").await, vec![pair(m.global, GLOBAL_TOPIC)]);
}

//! The debug lines a person reads to learn why the loop did what it did: a
//! retry (attempt, wait, reason), a compaction (sizes before and after),
//! memory recall (each candidate's scores); and never a key in any line,
//! even at trace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::sync::{Arc, Mutex};

use clix_agent::{Agent, AgentMemory, AgentSettings, ProviderKind, StopReason};
use clix_memory::{MemorySettings, Store};
use support::{Reply, engine, openai_calls, openai_text, provider, run_call, start_with_summarizer};

const PROVIDER_KEY: &str = "sk-provider-canary-4e1b";
const SETTINGS_KEY: &str = "sk-settings-canary-93aa";
const MEMORY_KEY: &str = "sk-memory-canary-07fd";

/// The log as the subscriber wrote it.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The first line holding every one of `needles`.
fn line_with<'a>(log: &'a str, needles: &[&str]) -> &'a str {
    log.lines()
        .find(|l| needles.iter().all(|n| l.contains(n)))
        .unwrap_or_else(|| panic!("no line with {needles:?} in:\n{log}"))
}

#[tokio::test]
async fn retries_compaction_and_recall_are_explained_without_a_key() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber =
        tracing_subscriber::fmt().with_max_level(tracing::Level::TRACE).with_writer(move || writer.clone()).finish();
    let _log = tracing::subscriber::set_default(subscriber);

    let mut script = vec![Reply::Status(
        429,
        vec![("retry-after", "0".into())],
        format!(r#"{{"error":{{"message":"slow down, {PROVIDER_KEY}"}}}}"#),
    )];
    for i in 0..4 {
        script.push(openai_calls(&[("run", &run_call(&format!("seq 1 {}", 100 + i)))], 10, 1));
    }
    script.push(openai_text("counted", 1, 1));
    let server = start_with_summarizer(script, "SUMMARY: ran seq").await;

    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("memory.sqlite")).unwrap();
    store.store("counting with seq needs no loop", "proj", "note", "earlier").unwrap();
    store.store("lunch orders close at eleven", "proj", "note", "earlier").unwrap();
    let memory = MemorySettings { api_key: MEMORY_KEY.into(), summaries: false, ..MemorySettings::default() };
    let ws = tempfile::tempdir().unwrap();
    let mut engine = engine(ws.path()).await;
    let provider = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), Some(PROVIDER_KEY), "scripted", true);
    let settings = AgentSettings {
        api_key: SETTINGS_KEY.into(),
        model_call_tries: 3,
        model_call_secs: 10,
        context_window: 400,
        compact_at: 0.5,
        keep_last_messages: 2,
        max_steps: 10,
        ..AgentSettings::default()
    };
    let mut agent =
        Agent::new(&mut engine, provider, settings, None).with_memory(AgentMemory::new(store, "proj", memory));
    let summary = agent.run("count with seq", &mut |_| {}).await;
    assert_eq!(summary.stop_reason, StopReason::Answered);

    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let retry = line_with(&log, &["DEBUG", "model call failed; retrying", "attempt=1", "wait_ms=0"]);
    assert!(retry.contains("reason=") && retry.contains("slow down, ***"), "{retry}");
    let compacted = line_with(&log, &["DEBUG", "context compacted"]);
    for field in ["tokens_before=", "tokens_after=", "messages_before=", "messages_after="] {
        assert!(compacted.contains(field), "{field} in {compacted}");
    }
    let candidate = line_with(&log, &["DEBUG", "memory recall candidate", "topic=proj"]);
    for field in ["score=", "bm25=", "verdict="] {
        assert!(candidate.contains(field), "{field} in {candidate}");
    }
    for key in [PROVIDER_KEY, SETTINGS_KEY, MEMORY_KEY] {
        assert!(!log.contains(key), "{key} was logged:\n{log}");
    }
}

//! Memory in the loop against a scripted model server and a real store:
//! facts in the system prompt, a recall block before a task, a summary
//! stored when the session ends (and none without a model).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use clix_agent::{Agent, AgentMemory, AgentSettings, Event, ProviderKind, StopReason};
use clix_memory::{GLOBAL_TOPIC, MemorySettings, Store};
use support::{Server, engine, openai_calls, openai_text, provider, run_call, start, start_with_summarizer};

const NOTES: &[&str] = &[
    "deploys to staging need the VPN switched on first",
    "the release checklist lives in docs/release.md",
    "lunch orders close at eleven",
    "the flaky test is parser::tests::unicode, retried in CI",
    "coverage reports are uploaded by the nightly job",
    "the design review happens on Thursdays",
    "old branches are pruned monthly",
    "the logo files are in assets/brand",
];

/// A store in `dir` with this topic's facts and notes, and another topic's fact.
fn store(dir: &std::path::Path) -> Store {
    let mut s = Store::open(&dir.join("memory.sqlite")).unwrap();
    s.store("the signing key rotates every Friday", "proj", "fact", "earlier").unwrap();
    s.store("releases are tagged vX.Y.Z", "proj", "fact", "earlier").unwrap();
    s.store("the other project uses Go", "elsewhere", "fact", "earlier").unwrap();
    for n in NOTES {
        s.store(n, "proj", "note", "earlier").unwrap();
    }
    s
}

fn settings() -> AgentSettings {
    // One reply answers each task: a first answer is not asked again here.
    AgentSettings { model_call_tries: 1, model_call_secs: 10, look_first: false, ..AgentSettings::default() }
}

async fn session(
    server_url: &str,
    dir: &std::path::Path,
    memory: MemorySettings,
    tasks: &[&str],
) -> (Vec<StopReason>, Result<Option<i64>, clix_agent::SummaryError>, Vec<Event>) {
    let ws = tempfile::tempdir().unwrap();
    let mut engine = engine(ws.path()).await;
    let provider = provider(ProviderKind::OpenAi, format!("{server_url}/v1"), None, "scripted", true);
    let mut agent =
        Agent::new(&mut engine, provider, settings(), None).with_memory(AgentMemory::new(store(dir), "proj", memory));
    let mut events = Vec::new();
    let mut stops = Vec::new();
    for task in tasks {
        stops.push(agent.run(task, &mut |e| events.push(e.clone())).await.stop_reason);
    }
    let remembered = agent.remember(&mut |e| events.push(e.clone())).await;
    (stops, remembered, events)
}

fn content(server: &Server, request: usize, message: usize) -> String {
    server.requests()[request].body["messages"][message]["content"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn facts_recall_and_a_summary_at_the_end() {
    let server = start_with_summarizer(
        vec![
            openai_calls(&[("run", &run_call("echo checking"))], 1, 1),
            openai_text("Switch the VPN on, then deploy.", 1, 1),
        ],
        "Asked how to deploy to staging; answered: switch the VPN on first.",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (stops, remembered, events) =
        session(&server.url, dir.path(), MemorySettings::default(), &["how do I deploy to staging?"]).await;
    assert_eq!(stops, [StopReason::Answered]);

    let system = content(&server, 0, 0);
    assert!(system.contains("Facts stored about this topic"), "{system}");
    assert!(system.contains("the signing key rotates every Friday") && system.contains("releases are tagged"));
    assert!(!system.contains("the other project uses Go"), "another topic's facts stay out: {system}");
    assert!(system.contains("topic is \"proj\""), "{system}");

    let task = content(&server, 0, 1);
    assert!(task.starts_with("[memory recall: "), "{task}");
    assert!(task.contains("deploys to staging need the VPN switched on first"), "{task}");
    assert!(task.ends_with("[end of memory recall]\n\nhow do I deploy to staging?"), "{task}");
    assert!(!task.contains("lunch orders"), "below the threshold: {task}");
    assert!(!task.contains("signing key"), "facts are in the system prompt, not recalled again: {task}");
    let recall = events.iter().find_map(|e| match e {
        Event::Recall { ids, .. } => Some(ids.clone()),
        _ => None,
    });
    assert_eq!(recall.map(|ids| ids.len()), Some(1));

    // The summary: one more model call, stored as kind summary in the topic.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "two steps and the summary");
    let asked = content(&server, 2, 1);
    assert!(asked.contains("1 to 3 sentences") && asked.contains("how do I deploy to staging?"), "{asked}");
    let id = remembered.unwrap().expect("a summary was stored");
    let s = Store::open(&dir.path().join("memory.sqlite")).unwrap();
    let m = s.get(id).unwrap().unwrap();
    assert_eq!((m.kind.as_str(), m.topic.as_str()), ("summary", "proj"));
    assert_eq!(m.text, "Asked how to deploy to staging; answered: switch the VPN on first.");
    assert!(events.iter().any(|e| matches!(e, Event::Remembered { id: i, .. } if *i == id)));
}

#[tokio::test]
async fn an_unrelated_task_gets_no_recall_block() {
    let server = start(vec![openai_text("done", 1, 1)]).await;
    let dir = tempfile::tempdir().unwrap();
    let memory = MemorySettings { summaries: false, ..MemorySettings::default() };
    let (stops, remembered, events) = session(&server.url, dir.path(), memory, &["rename the variable x"]).await;
    assert_eq!(stops, [StopReason::Answered]);
    assert_eq!(content(&server, 0, 1), "rename the variable x");
    assert!(!events.iter().any(|e| matches!(e, Event::Recall { .. })));
    assert_eq!(remembered, Ok(None), "summaries off");
    assert_eq!(server.requests().len(), 1, "no summary call");
}

#[tokio::test]
async fn no_model_no_summary() {
    // Nothing listens: the model cannot be reached, as when none is configured.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let (stops, remembered, events) =
        session(&format!("http://127.0.0.1:{closed}"), dir.path(), MemorySettings::default(), &["deploy staging"])
            .await;
    assert!(matches!(stops[0], StopReason::Error(_)), "{stops:?}");
    assert_eq!(remembered, Ok(None));
    assert!(!events.iter().any(|e| matches!(e, Event::Remembered { .. })));
    let s = Store::open(&dir.path().join("memory.sqlite")).unwrap();
    assert!(s.recent(100, "proj").unwrap().iter().all(|m| m.kind != "summary"));
}

/// An embedder whose server is down.
struct Down;

impl clix_memory::Embedder for Down {
    fn id(&self) -> String {
        "test:down".into()
    }

    fn embed(&self, _: &[String]) -> Result<Vec<Vec<f32>>, clix_memory::EmbedError> {
        Err(clix_memory::EmbedError::Request { url: "http://127.0.0.1:9".into(), message: "connection refused".into() })
    }
}

#[tokio::test]
async fn memory_that_fails_is_reported_and_the_run_goes_on() {
    let server = start(vec![openai_text("done", 1, 1)]).await;
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut engine = engine(ws.path()).await;
    let provider = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), None, "scripted", true);
    let store = store(dir.path()).with_embedder(Box::new(Down)).unwrap();
    let memory = MemorySettings { summaries: false, ..MemorySettings::default() };
    let mut agent =
        Agent::new(&mut engine, provider, settings(), None).with_memory(AgentMemory::new(store, "proj", memory));
    let mut events = Vec::new();
    let stop = agent.run("how do I deploy to staging?", &mut |e| events.push(e.clone())).await.stop_reason;
    assert_eq!(stop, StopReason::Answered);
    let errors: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Error { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        errors.iter().any(|m| m.starts_with("memory: ") && m.contains("connection refused")),
        "the failing embedder is said: {errors:?}"
    );
}

#[tokio::test]
async fn the_global_topic_is_read_in_every_workspace_and_no_other_topic_is() {
    let server = start(vec![openai_text("In the ops channel, and never after 18:00.", 1, 1)]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut s = store(dir.path());
    s.store("never deploy to production after 18:00", GLOBAL_TOPIC, "fact", "person").unwrap();
    let global_note =
        s.store("production deploys are announced in the ops channel first", GLOBAL_TOPIC, "note", "person").unwrap();
    s.store("production deploys of the other project are announced by the release train", "elsewhere", "note", "x")
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut engine = engine(ws.path()).await;
    let provider = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), None, "scripted", true);
    let memory = MemorySettings { summaries: false, ..MemorySettings::default() };
    let mut agent =
        Agent::new(&mut engine, provider, settings(), None).with_memory(AgentMemory::new(s, "proj", memory));
    let mut events = Vec::new();
    let stop = agent.run("how are production deploys announced?", &mut |e| events.push(e.clone())).await.stop_reason;
    assert_eq!(stop, StopReason::Answered);

    let system = content(&server, 0, 0);
    let global = system.find("Global facts").expect("a section of global facts");
    assert!(system[global..].contains("never deploy to production after 18:00"), "{system}");
    assert!(system.contains("the signing key rotates every Friday"), "the topic's own facts stay: {system}");
    assert!(!system.contains("the other project uses Go"), "{system}");

    let task = content(&server, 0, 1);
    assert!(task.contains("production deploys are announced in the ops channel first"), "{task}");
    assert!(!task.contains("release train"), "another topic's note is never recalled: {task}");
    assert!(!task.contains("after 18:00"), "a global fact is in the system prompt, not recalled again: {task}");
    let recalled = events.iter().find_map(|e| match e {
        Event::Recall { ids, .. } => Some(ids.clone()),
        _ => None,
    });
    assert!(recalled.is_some_and(|ids| ids.contains(&global_note)));
}

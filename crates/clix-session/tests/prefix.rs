//! What a session sends a model first is the same from one session to the
//! next in one folder with one config: the composition (memory's note, the
//! engine's catalog, the tool) adds nothing that varies, so a provider's
//! prompt cache warmed by one session serves the next.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_agent::AgentSettings;
use clix_config::Paths;
use clix_engine::SandboxMode;
use clix_session::{AgentSession, Session, Settings};
use clix_testkit::model_server::{openai_text, start_fn};

#[tokio::test]
async fn two_sessions_in_one_folder_send_the_same_first_request() {
    let server = start_fn(|_| openai_text("Two files.", 10, 2)).await;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "alpha\n").unwrap();
    let mut settings = Settings {
        agent: AgentSettings {
            base_url: format!("{}/v1", server.url),
            model: "scripted".into(),
            look_first: false,
            ..AgentSettings::default()
        },
        ..Settings::default()
    };
    settings.sandbox.mode = SandboxMode::Off;
    for _ in 0..2 {
        let session = Session::isolated(Paths::at_home(home.path()), settings.clone(), ws.path());
        let mut engine = session.engine().await.unwrap();
        let provider = session.provider(None, None).unwrap();
        let AgentSession { mut agent, .. } = session.agent(&mut engine, provider).unwrap();
        agent.run("how many files are here?", &mut |_| {}).await;
    }
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("memory"), "the memory's note is part of it: {system}");
    assert_eq!(requests[0].body, requests[1].body);
}

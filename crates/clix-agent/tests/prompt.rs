//! The system prompt's stable part as the scripted servers receive it: a
//! person's template, the project's AGENTS.md notes; what `--show-prompt`
//! shows; and a refused default endpoint.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use clix_agent::{
    Agent, AgentSettings, Event, ProjectNotes, Provider, ProviderKind, ResolvedProvider, StopReason, SystemPrompt,
};
use clix_common::template::Template;
use support::{anthropic_reply, engine, openai_text, provider, start};

fn settings() -> AgentSettings {
    AgentSettings { model_call_tries: 3, look_first: false, retry_failed: false, ..AgentSettings::default() }
}

/// A workspace with notes at the root and in `sub`, a FIFO as the notes of
/// `sub/deep` and, in `sub/deep/deeper`, a link to a file outside.
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("sub/deep/deeper")).unwrap();
    std::fs::write(ws.path().join("AGENTS.md"), "Root notes: run `make test`.\n").unwrap();
    std::fs::write(ws.path().join("sub/AGENTS.md"), "Sub notes: the API lives here.\n").unwrap();
    let fifo = ws.path().join("sub/deep/AGENTS.md");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::write(outside.path().join("secret.md"), "OUTSIDE-CANARY").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), ws.path().join("sub/deep/deeper/AGENTS.md")).unwrap();
    (ws, outside)
}

#[tokio::test]
async fn notes_from_root_to_the_working_folder_follow_the_template_in_order_with_their_paths() {
    let (ws, _outside) = project();
    let server = start(vec![openai_text("done", 1, 1)]).await;
    let mut engine = engine(ws.path()).await;
    let started = Instant::now();
    let notes = ProjectNotes::read(engine.shell().folder(), &ws.path().join("sub/deep/deeper"), &names());
    assert!(started.elapsed() < Duration::from_secs(2), "a FIFO is never waited on");
    let paths: Vec<&Path> = notes.files.iter().map(|(p, _)| p.as_path()).collect();
    assert_eq!(paths, [Path::new("AGENTS.md"), Path::new("sub/AGENTS.md")]);
    assert_eq!(notes.skipped.len(), 2, "the FIFO and the link out: {:?}", notes.skipped);
    assert!(notes.skipped[0].starts_with("sub/deep/AGENTS.md: ") && notes.skipped[1].starts_with("sub/deep/deeper/"));

    let template =
        Template::checked("Mine, in {workspace}. {tool_guidance}\n", clix_agent::SYSTEM_PLACEHOLDERS).unwrap();
    let prompt = SystemPrompt { template: Some(template), project_notes: notes.block() };
    let p = provider(ProviderKind::OpenAi, format!("{}/v1", server.url), None, "m", false);
    let mut agent = Agent::new_with_prompt(&mut engine, p, settings(), None, &prompt);
    agent.add_system_note("A later note.");
    agent.run("hi", &mut |_| {}).await;
    let system = server.requests()[0].body["messages"][0]["content"].as_str().unwrap().to_string();
    let root = ws.path().canonicalize().unwrap();
    let want_start = format!("Mine, in {}. You act through one tool, run(command, stdin?)", root.display());
    assert!(system.starts_with(&want_start), "{system}");
    let order = [
        "You act through one tool",
        "cannot change your tools, settings or safety rules.",
        "--- AGENTS.md ---\nRoot notes: run `make test`.\n",
        "--- sub/AGENTS.md ---\nSub notes: the API lives here.\n",
        "\n\nA later note.",
    ];
    let at: Vec<usize> = order.iter().map(|s| system.find(s).unwrap_or_else(|| panic!("{s:?} in {system}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}: {system}");
    assert!(!system.contains("OUTSIDE-CANARY") && !system.contains("deep/AGENTS.md"), "{system}");
}

/// The default names of a folder's notes file.
fn names() -> Vec<String> {
    clix_agent::AgentSettings::default().project_notes_files
}

/// Issue 52: a project made for another agent carries only its file: in
/// each folder the first of AGENTS.md, CLAUDE.md, GEMINI.md is read, and
/// `agent.project_notes_files` changes the list.
#[tokio::test]
async fn each_folder_s_first_notes_file_of_the_list_is_read() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("a/b")).unwrap();
    for (file, text) in [
        ("AGENTS.md", "root agents"),
        ("CLAUDE.md", "root claude"),
        ("a/CLAUDE.md", "a claude"),
        ("a/GEMINI.md", "a gemini"),
        ("a/b/GEMINI.md", "b gemini"),
    ] {
        std::fs::write(ws.path().join(file), text).unwrap();
    }
    let engine = engine(ws.path()).await;
    let read = |names: &[String]| -> Vec<(String, String)> {
        ProjectNotes::read(engine.shell().folder(), Path::new("a/b"), names)
            .files
            .into_iter()
            .map(|(p, t)| (p.display().to_string(), t))
            .collect()
    };
    let pairs = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
        rows.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
    };
    assert_eq!(
        read(&names()),
        pairs(&[("AGENTS.md", "root agents"), ("a/CLAUDE.md", "a claude"), ("a/b/GEMINI.md", "b gemini")])
    );
    assert_eq!(read(&["CLAUDE.md".to_string()]), pairs(&[("CLAUDE.md", "root claude"), ("a/CLAUDE.md", "a claude")]));
    assert_eq!(read(&[]), pairs(&[]));
}

/// A link to a file inside the workspace (AGENTS.md → CLAUDE.md, a common
/// layout) is followed, once.
#[tokio::test]
async fn a_link_to_notes_inside_the_workspace_is_read() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("CLAUDE.md"), "Shared notes.").unwrap();
    std::os::unix::fs::symlink("CLAUDE.md", ws.path().join("AGENTS.md")).unwrap();
    let engine = engine(ws.path()).await;
    let notes = ProjectNotes::read(engine.shell().folder(), Path::new("."), &names());
    assert_eq!(notes.files, [(Path::new("AGENTS.md").to_path_buf(), "Shared notes.".to_string())]);
}

/// What `--show-prompt` prints is what the first call sends, byte for byte.
#[tokio::test]
async fn the_shown_prompt_is_what_the_first_request_carries() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("AGENTS.md"), "Notes.").unwrap();
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let (reply, url_suffix) = match kind {
            ProviderKind::OpenAi => (openai_text("done", 1, 1), "/v1"),
            ProviderKind::Anthropic => (anthropic_reply("done", &[], 1, 1), ""),
        };
        let server = start(vec![reply]).await;
        let mut engine = engine(ws.path()).await;
        let notes = ProjectNotes::read(engine.shell().folder(), Path::new("."), &names());
        let prompt = SystemPrompt { template: None, project_notes: notes.block() };
        let p = provider(kind, format!("{}{url_suffix}", server.url), Some("k"), "m", true);
        let mut agent = Agent::new_with_prompt(&mut engine, p, settings(), None, &prompt);
        let shown = agent.shown_prompt();
        agent.run("hi", &mut |_| {}).await;
        let body = &server.requests()[0].body;
        let sent_system = match kind {
            ProviderKind::OpenAi => body["messages"][0]["content"].clone(),
            ProviderKind::Anthropic => body["system"].clone(),
        };
        assert_eq!(shown["system"], sent_system, "{kind:?}");
        assert_eq!(shown["tools"], body["tools"], "{kind:?}");
        // Anthropic's is blocks, the stable part (with the notes) first.
        let stable = shown["system"].as_str().or_else(|| shown["system"][0]["text"].as_str()).unwrap();
        assert!(stable.contains("--- AGENTS.md ---\nNotes."), "{kind:?}: {stable}");
    }
}

/// An address where nothing listens.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// Refused at clix's fallback endpoint: no retry, and how to configure a
/// model; refused at an endpoint the person set: retried as before.
#[tokio::test]
async fn a_refused_default_endpoint_fails_at_once_a_configured_one_is_retried() {
    let ws = tempfile::tempdir().unwrap();
    for default_endpoint in [true, false] {
        let resolved = ResolvedProvider {
            kind: ProviderKind::OpenAi,
            base_url: closed_port(),
            api_key: None,
            model: "qwen2.5-coder:7b".into(),
            stream: true,
            temperature: None,
            from_env: Vec::new(),
            default_endpoint,
        };
        let mut engine = engine(ws.path()).await;
        let mut agent = Agent::new(&mut engine, Provider::new(&resolved), settings(), None);
        let mut retries = 0;
        let started = Instant::now();
        let summary = agent.run("hi", &mut |e| retries += usize::from(matches!(e, Event::Retry { .. }))).await;
        let took = started.elapsed();
        let StopReason::Error(message) = summary.stop_reason else { panic!("{:?}", summary.stop_reason) };
        if default_endpoint {
            assert_eq!(retries, 0);
            assert!(took < Duration::from_millis(500), "{took:?}");
            assert!(message.starts_with("nothing is listening at http://127.0.0.1:"), "{message}");
            for hint in ["[agent] base_url", "model", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "docs/agent.md"] {
                assert!(message.contains(hint), "{hint}: {message}");
            }
        } else {
            assert_eq!(retries, 2, "three tries");
            assert!(message.starts_with("cannot reach the model provider"), "{message}");
        }
    }
}

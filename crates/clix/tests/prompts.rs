//! Prompts as files, the project's AGENTS.md notes, `--show-prompt` and
//! `clix config show`'s sources, as a person meets them, against the
//! scripted model server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::process::{Command, Output};

use clix_testkit::model_server::{Server, openai_text, start};
use common::text;
use serde_json::{Value, json};

use common::agent_home::{AgentHome as Home, finish};

impl Home {
    /// A home with a system prompt of the person's, and a workspace with
    /// notes at its root and in `sub`.
    fn new() -> Self {
        let h = Home::with_files(&[
            ("AGENTS.md", b"Root: run `make test` before answering.\n"),
            ("sub/AGENTS.md", b"Sub: this folder is the API.\n"),
        ]);
        h.prompt("system.md", "Custom prompt for {workspace}.\n{tool_guidance}\n");
        h
    }

    fn prompt(&self, name: &str, text: &str) {
        std::fs::create_dir_all(self.home.path().join("prompts")).unwrap();
        std::fs::write(self.home.path().join("prompts").join(name), text).unwrap();
    }

    /// `clix ARGS` on the workspace from its `sub` folder.
    fn clix_sub(&self, server: Option<&Server>, args: &[&str]) -> Command {
        let mut cmd = self.clix_in(&self.ws.path().join("sub"), server, &args[..1]);
        cmd.arg("--workspace").arg(self.ws.path()).args(&args[1..]);
        cmd.env("CLIX_AGENT_LOOK_FIRST", "false");
        cmd
    }

    async fn output_sub(&self, server: Option<&Server>, args: &[&str]) -> Output {
        finish(self.clix_sub(server, args)).await
    }

    /// `--show-prompt --jsonl`'s object.
    async fn shown(&self, server: &Server, args: &[&str]) -> Value {
        let mut all = vec!["ask", "--show-prompt", "--jsonl"];
        all.extend_from_slice(args);
        let o = self.output_sub(Some(server), &all).await;
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)))
    }
}

#[tokio::test]
async fn show_prompt_is_the_first_request_with_the_template_and_the_notes_down_to_the_current_folder() {
    let h = Home::new();
    let server = start(vec![openai_text("done", 1, 1)]).await;
    let shown = h.shown(&server, &[]).await;
    assert!(server.requests().is_empty(), "--show-prompt calls no model");

    let o = h.output_sub(Some(&server), &["ask", "hi"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let body = &server.requests()[0].body;
    assert_eq!(shown["system"], body["messages"][0]["content"]);
    assert_eq!(shown["tools"], body["tools"]);

    let system = shown["system"].as_str().unwrap();
    let root = h.ws.path().canonicalize().unwrap();
    assert!(system.starts_with(&format!("Custom prompt for {}.\nYou act through one tool", root.display())));
    let order = ["--- AGENTS.md ---\nRoot: run `make test`", "--- sub/AGENTS.md ---\nSub: this folder is the API."];
    let at: Vec<usize> = order.iter().map(|s| system.find(s).unwrap_or_else(|| panic!("{s}: {system}"))).collect();
    assert!(at[0] < at[1], "{system}");

    // The text form says what it shows.
    let o = h.output_sub(Some(&server), &["ask", "--show-prompt"]).await;
    assert!(text(&o.stdout).starts_with("# system prompt (for model scripted at http://"), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("\n# tools (as the openai API is sent them)\n[\n"), "{}", text(&o.stdout));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_notes_are_off_with_the_flag_or_the_setting() {
    let h = Home::new();
    let server = start(vec![]).await;
    let has_notes = |v: &Value| v["system"].as_str().unwrap().contains("AGENTS.md");
    assert!(has_notes(&h.shown(&server, &[]).await));
    assert!(!has_notes(&h.shown(&server, &["--no-agents-md"]).await));
    std::fs::write(h.home.path().join("config.toml"), "[agent]\nproject_notes = false\n").unwrap();
    let off = h.shown(&server, &[]).await;
    assert!(!has_notes(&off) && off["system"].as_str().unwrap().starts_with("Custom prompt"), "{off}");
}

#[tokio::test]
async fn a_prompt_with_an_unknown_placeholder_stops_with_the_file_and_the_known_ones() {
    let h = Home::new();
    h.prompt("run-tool.md", "Run it. {comands}\n");
    let server = start(vec![]).await;
    let o = h.output_sub(Some(&server), &["ask", "--show-prompt"]).await;
    assert_eq!(o.status.code(), Some(1));
    let file = h.home.path().join("prompts/run-tool.md");
    let want = format!(
        "prompt file {}: unknown placeholder {{comands}}; did you mean {{commands}}? known placeholders: {{commands}}, {{skills}}, {{mcp}}",
        file.display()
    );
    assert!(text(&o.stderr).contains(&want), "{}", text(&o.stderr));
}

#[test]
fn config_show_lists_each_prompt_s_source_and_the_provider_s_variables() {
    let h = Home::new();
    let canary = "sk-prompts-canary-0123456789";
    let show = |json: bool| {
        let mut cmd = common::clix(h.home.path(), h.ws.path(), &["config", "show"]);
        if json {
            cmd.arg("--json");
        }
        let o = cmd
            .env("AGENT_MODEL", "m1")
            .env("OPENAI_API_KEY", canary)
            .env("OPENAI_ORG_ID", "org-1")
            .env("CLIX_AGENT_MAX_STEPS", "7")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(!text(&o.stdout).contains(canary));
        text(&o.stdout)
    };
    let shown = show(false);
    let system = h.home.path().join("prompts/system.md");
    for line in [
        format!("prompts/system.md   # file {}", system.display()),
        "prompts/run-tool.md # built-in".to_string(),
        "AGENT_MODEL          = m1           # fills agent.model".to_string(),
        "OPENAI_API_KEY       = ***          # fills agent.api_key (provider openai)".to_string(),
        "OPENAI_ORG_ID        = org-1        # fills nothing: clix does not read it".to_string(),
        "CLIX_AGENT_MAX_STEPS = 7            # fills agent.max_steps (config layer)".to_string(),
    ] {
        assert!(shown.lines().any(|l| l == line), "{line}\n{shown}");
    }
    let rows: Value = serde_json::from_str(&show(true)).unwrap();
    assert_eq!(rows["prompts/system.md"], json!({"source": format!("file {}", system.display())}));
    assert_eq!(rows["prompts/run-tool.md"], json!({"source": "built-in"}));
    assert_eq!(rows["env OPENAI_API_KEY"], json!({"value": "***", "fills": "agent.api_key (provider openai)"}));
    assert_eq!(rows["agent.max_steps"]["source"], "env CLIX_AGENT_MAX_STEPS");
}

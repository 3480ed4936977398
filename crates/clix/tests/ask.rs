//! `clix ask`, `clix runs` and `clix replay` as a person runs them, against a
//! scripted model server over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::text;
use support::{RED_PNG, Reply, openai_calls, openai_text, run_call, start, start_with_summarizer};

use common::agent_home::AgentHome as Home;

impl Home {
    fn new() -> Self {
        Home::with_files(&[("red.png", RED_PNG), ("notes.txt", b"one\ntwo\nthree\n")])
    }
}

#[tokio::test]
async fn a_guess_before_looking_is_asked_again_with_a_tool_call_required() {
    // The issue's example: asked how many ERROR lines app.log has, the
    // 1.5B model answered "2" without running anything (there are 3).
    let server = start(vec![
        openai_text("2", 10, 1),
        openai_calls(&[("run", &run_call("grep -c ERROR app.log"))], 10, 5),
        openai_text("3", 20, 1),
    ])
    .await;
    let h = Home::new();
    std::fs::write(h.ws.path().join("app.log"), "ERROR a\nINFO b\nERROR c\nERROR d\n").unwrap();
    let task = "How many ERROR lines are in app.log? Answer with just the number.";
    let o = h.output(Some(&server), &["ask", task]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).ends_with("3\n"), "{}", text(&o.stdout));
    let requests = server.requests();
    let choices: Vec<&serde_json::Value> = requests.iter().map(|r| &r.body["tool_choice"]).collect();
    assert_eq!(choices, ["auto", "required", "auto"], "on by default");
    let tool = requests[2].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned();
    assert!(tool.is_some_and(|t| t["content"].as_str().unwrap().starts_with("3\n[exit:0")));
}

#[tokio::test]
async fn a_guess_asked_again_for_is_not_printed() {
    // Issue 31: the model ignored `required` and answered again; both
    // answers were printed, `Hi! How can I help?Hi! How can I help?`.
    let server = start(vec![openai_text("Hi! How can I help?", 1, 1), openai_text("Hi! How can I help?", 1, 1)]).await;
    let h = Home::new();
    let o = h.output(Some(&server), &["ask", "hello there"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim_end(), "Hi! How can I help?");
    assert_eq!(server.requests().len(), 2, "asked again once");
}

#[tokio::test]
async fn ask_streams_the_answer_and_saves_a_run_that_replays() {
    let server = start(vec![
        openai_calls(&[("run", &run_call("wc -l < notes.txt")), ("run", &run_call("see red.png"))], 10, 5),
        openai_text("notes.txt has 3 lines and the image is red.", 20, 9),
    ])
    .await;
    let h = Home::new();
    let o = h.output(Some(&server), &["ask", "count the lines"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "notes.txt has 3 lines and the image is red.\n");
    let err = text(&o.stderr);
    // The first line names the model and the endpoint it is sent to.
    assert_eq!(err.lines().next(), Some(format!("clix: model scripted at {}/v1", server.url).as_str()), "{err}");
    assert!(err.contains("▸ run wc -l < notes.txt") && err.contains("[exit:0 | "), "{err}");
    assert!(err.contains("run saved: "), "{err}");

    let runs = h.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["stop_reason"], "answered");
    assert_eq!(runs[0]["task"], "count the lines");
    let id = runs[0]["id"].as_str().unwrap();

    let o = h.output(None, &["replay", id, "--jsonl"]).await;
    let kinds: Vec<String> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("start"));
    assert_eq!(kinds.last().map(String::as_str), Some("done"));
    assert_eq!(kinds.iter().filter(|k| *k == "tool_result").count(), 2);

    let page = h.home.path().join("run.html");
    let o = h.output(None, &["replay", id, "--html", page.to_str().unwrap()]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("$ wc -l &lt; notes.txt") && html.contains("data:image/png;base64,iVBORw0KGgo"));
    let o = h.output(None, &["replay", id]).await;
    assert!(text(&o.stdout).contains("▸ run see red.png"));
}

#[tokio::test]
async fn the_trajectory_records_what_the_model_was_given_and_hides_every_secret() {
    const ENV_KEY: &str = "canary-agent-key-5b1e07";
    const TOKEN: &str = "canary-token-9f3d22";
    const FILE_KEY: &str = "canary-file-key-c4a8e1";
    let server = start(vec![
        openai_calls(&[("run", &run_call("cat keys.txt"))], 10, 5),
        openai_text(&format!("The token is {TOKEN}."), 20, 9),
    ])
    .await;
    let h = Home::new();
    std::fs::write(h.ws.path().join("keys.txt"), format!("{ENV_KEY}\n{TOKEN}\n{FILE_KEY}\n")).unwrap();
    std::fs::write(h.home.path().join("config.toml"), format!("[agent]\napi_key = \"{FILE_KEY}\"\n")).unwrap();
    let mut cmd = h.clix(Some(&server), &["ask", "what is in keys.txt?"]);
    // The secret-named variables go to the process's secret store at start.
    cmd.env("AGENT_API_KEY", ENV_KEY).env("DEPLOY_TOKEN", TOKEN);
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));

    let id = h.runs()[0]["id"].as_str().unwrap().to_string();
    let file = std::fs::read_to_string(h.home.path().join(format!("data/runs/{id}.jsonl"))).unwrap();
    for secret in [ENV_KEY, TOKEN, FILE_KEY] {
        assert!(!file.contains(secret), "{secret} is in the trajectory:\n{file}");
    }
    let records: Vec<serde_json::Value> = file.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let context = records.iter().find(|r| r["type"] == "context").expect("a context record");
    let sent = &server.requests()[0].body;
    assert_eq!(context["system"], sent["messages"][0]["content"]);
    assert_eq!(context["tools"][0]["description"], sent["tools"][0]["function"]["description"]);
    assert_eq!(context["messages"][0]["text"], "what is in keys.txt?");
    let second = records.iter().filter(|r| r["type"] == "request").nth(1).expect("a request per model call");
    let result = second["added"][1]["text"].as_str().unwrap();
    assert!(result.starts_with("***\n***\n***\n[exit:0"), "the tool result, keys hidden: {result}");

    // The new records leave `replay` as it was.
    let o = h.output(None, &["replay", &id]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("The token is ***."), "{}", text(&o.stdout));
}

/// A stdout whose reader is gone before anything is written: every write
/// fails with EPIPE.
fn closed_stdout() -> Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the read end is ours and used nowhere else; the write end is
    // owned by the Stdio from here on.
    unsafe {
        libc::close(fds[0]);
        Stdio::from_raw_fd(fds[1])
    }
}

#[tokio::test]
async fn runs_and_replay_end_quietly_when_the_reader_left() {
    let server = start(vec![openai_text("ok", 1, 1)]).await;
    let h = Home::new();
    let o = h.output(Some(&server), &["ask", "say ok"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let id = h.runs()[0]["id"].as_str().unwrap().to_string();
    for args in
        [vec!["runs", "list"], vec!["runs", "list", "--json"], vec!["replay", &id], vec!["replay", &id, "--jsonl"]]
    {
        let o = h.clix(None, &args).stdout(closed_stdout()).output().unwrap();
        assert_eq!(o.status.code(), Some(141), "{args:?}: {}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "", "{args:?}: no panic, no message");
    }
}

#[tokio::test]
async fn jsonl_gives_one_event_per_line_and_stdin_joins_the_task() {
    let server = start(vec![openai_text("ok", 1, 1)]).await;
    let h = Home::new();
    let mut cmd = h.clix(Some(&server), &["ask", "--jsonl", "summarize this"]);
    cmd.env("CLIX_AGENT_LOOK_FIRST", "false"); // the one scripted reply is the answer
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"piped details").unwrap();
    let o = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let events: Vec<serde_json::Value> = text(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["start", "text", "response", "usage", "result"]);
    assert_eq!(events[0]["content"]["task"], "summarize this\n\npiped details");
    let task = &server.requests()[0].body["messages"][1]["content"];
    assert_eq!(task, "summarize this\n\npiped details");
}

#[tokio::test]
async fn ctrl_c_stops_the_step_and_keeps_the_trajectory() {
    let server = start(vec![openai_calls(&[("run", &run_call("sleep 30"))], 1, 1)]).await;
    let h = Home::new();
    let child =
        h.clix(Some(&server), &["ask", "wait a while"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Wait until the command is running: its tool_call is in the trajectory.
    let started = Instant::now();
    let runs_dir = h.home.path().join("data/runs");
    loop {
        let logged = std::fs::read_dir(&runs_dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_to_string(e.path()).unwrap_or_default().contains("\"type\":\"tool_call\""));
        if logged {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the tool call never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let stopped = Instant::now();
    let o = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    // Well before `sleep 30` (or its 30 s time limit) would have ended it.
    assert!(stopped.elapsed() < Duration::from_secs(15), "{:?}", stopped.elapsed());
    assert_eq!(o.status.code(), Some(130));
    assert!(text(&o.stderr).contains("stopped by Ctrl-C"), "{}", text(&o.stderr));
    let runs = h.runs();
    assert_eq!(runs[0]["stop_reason"], "interrupted");
}

#[tokio::test]
async fn two_agents_at_once_in_one_home_do_not_collide() {
    let a =
        start(vec![openai_calls(&[("run", &run_call("write a.txt from-a"))], 1, 1), openai_text("A done", 1, 1)]).await;
    let b =
        start(vec![openai_calls(&[("run", &run_call("write b.txt from-b"))], 1, 1), openai_text("B done", 1, 1)]).await;
    let h = Home::new();
    let (oa, ob) = tokio::join!(h.output(Some(&a), &["ask", "task a"]), h.output(Some(&b), &["ask", "task b"]));
    assert_eq!((text(&oa.stdout).trim(), text(&ob.stdout).trim()), ("A done", "B done"));
    let runs = h.runs();
    assert_eq!(runs.len(), 2);
    let mut tasks: Vec<&str> = runs.iter().map(|r| r["task"].as_str().unwrap()).collect();
    tasks.sort();
    assert_eq!(tasks, ["task a", "task b"]);
    assert!(runs.iter().all(|r| r["stop_reason"] == "answered"));
}

/// Issue 52: each way a provider fails says what to do, naming where the
/// setting at fault came from; the same for both API shapes.
#[tokio::test]
async fn each_provider_failure_says_what_to_fix() {
    let models = r#"{"object": "list", "data": [{"id": "qwen2.5-coder:7b"}, {"id": "llama3.2"}]}"#;
    let server = support::start_routes(move |request| {
        let status = |code: u16, body: &str| Reply::Status(code, vec![], body.to_string());
        match (request.path.as_str(), request.body["model"].as_str()) {
            ("/v1/models", _) => status(200, models),
            (_, Some("refused-key")) => status(401, r#"{"error": {"message": "Incorrect API key provided"}}"#),
            (_, Some("forbidden")) => status(403, r#"{"error": {"message": "not allowed"}}"#),
            (_, Some("slow")) => Reply::Delay(Duration::from_secs(5), Box::new(status(500, "{}"))),
            _ => status(404, r#"{"error": {"message": "model not found"}}"#),
        }
    })
    .await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let here = server.url.clone();
    let refused = format!("http://127.0.0.1:{closed}");
    /// What, provider, AGENT_BASE_URL, model, other variables, what stderr must say.
    type Row<'a> = (&'a str, &'a str, String, &'a str, Vec<(&'a str, &'a str)>, Vec<String>);
    let rows: Vec<Row> = vec![
        (
            "401 with a key",
            "openai",
            format!("{here}/v1"),
            "refused-key",
            vec![("AGENT_API_KEY", "sk-refused-0123456789")],
            vec![
                "HTTP 401 from the model provider: Incorrect API key provided".into(),
                "the API key was refused; check the key in AGENT_API_KEY".into(),
            ],
        ),
        (
            "403, the key from OPENAI_API_KEY",
            "openai",
            here.clone(),
            "forbidden",
            vec![("OPENAI_API_KEY", "sk-forbidden-0123456789")],
            vec!["HTTP 403".into(), "check the key in OPENAI_API_KEY".into()],
        ),
        (
            "401 with no key",
            "openai",
            format!("{here}/v1"),
            "refused-key",
            vec![],
            vec!["no API key was sent; set AGENT_API_KEY or OPENAI_API_KEY".into()],
        ),
        (
            "404 on a model, with the server's list",
            "openai",
            format!("{here}/v1"),
            "gpt-nope",
            vec![],
            vec![
                "HTTP 404".into(),
                format!("no model \"gpt-nope\" here (from AGENT_MODEL); {here}/v1 offers: qwen2.5-coder:7b, llama3.2"),
            ],
        ),
        (
            "401 from an Anthropic endpoint",
            "anthropic",
            format!("{here}/v1"),
            "refused-key",
            vec![("ANTHROPIC_API_KEY", "sk-ant-refused-0123456789")],
            vec!["HTTP 401".into(), "check the key in ANTHROPIC_API_KEY".into()],
        ),
        (
            "404 from an Anthropic endpoint",
            "anthropic",
            here.clone(),
            "claude-nope",
            vec![("ANTHROPIC_API_KEY", "sk-ant-0123456789")],
            vec![format!("no model \"claude-nope\" here (from AGENT_MODEL); {here} offers: qwen2.5-coder:7b")],
        ),
        (
            "refused at a configured endpoint",
            "openai",
            refused.clone(),
            "any",
            vec![],
            vec![
                format!("cannot reach the model provider at {refused}/v1"),
                "the endpoint (from AGENT_BASE_URL) is not answering".into(),
            ],
        ),
        (
            "timed out",
            "openai",
            format!("{here}/v1"),
            "slow",
            vec![("CLIX_AGENT_MODEL_CALL_SECS", "1")],
            vec![format!("the model at {here}/v1 did not answer within 1s (agent.model_call_secs)")],
        ),
    ];
    let h = Home::new();
    for (what, provider, url, model, vars, want) in rows {
        let mut cmd = h.clix(None, &["ask", "--provider", provider, "hello"]);
        cmd.env("AGENT_BASE_URL", &url).env("AGENT_MODEL", model).env("CLIX_AGENT_MODEL_CALL_TRIES", "1");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let o = common::agent_home::finish(cmd).await;
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{what}: {err}");
        for want in want {
            assert!(err.contains(&want), "{what}: {want:?} in\n{err}");
        }
        assert!(!err.contains("Configure a provider") && !err.contains("0123456789"), "{what}: {err}");
    }
}

/// `AGENT_BASE_URL` with or without `/v1` reaches the same path for both
/// API shapes.
#[tokio::test]
async fn the_base_url_works_with_or_without_v1_for_both_shapes() {
    let server = support::start_routes(|request| match request.path.as_str() {
        "/v1/chat/completions" => openai_text("openai here", 1, 1),
        "/v1/messages" => support::anthropic_reply("anthropic here", &[], 1, 1),
        _ => Reply::Status(404, vec![], "{}".into()),
    })
    .await;
    let h = Home::new();
    for (provider, suffix, answer) in [
        ("openai", "", "openai here"),
        ("openai", "/v1", "openai here"),
        ("openai", "/v1/", "openai here"),
        ("anthropic", "", "anthropic here"),
        ("anthropic", "/v1", "anthropic here"),
    ] {
        let mut cmd = h.clix(None, &["ask", "--provider", provider, "hello"]);
        cmd.env("AGENT_BASE_URL", format!("{}{suffix}", server.url)).env("AGENT_MODEL", "m");
        cmd.env("CLIX_AGENT_LOOK_FIRST", "false");
        let o = common::agent_home::finish(cmd).await;
        assert_eq!(o.status.code(), Some(0), "{provider} {suffix:?}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains(answer), "{provider} {suffix:?}: {}", text(&o.stdout));
    }
}

/// Waits until the chat's `turns`-th turn has finished printing (its
/// "… run saved: PATH" line) and the prompt (reedline's `clix> `) is back
/// after it: the editor reads again, so the next line typed reaches it.
async fn wait_for_prompt(screen: &common::Screen, turns: usize) {
    let started = Instant::now();
    loop {
        let shown = screen.text();
        let ended = shown.match_indices("run saved: ").nth(turns - 1).map(|(at, _)| &shown[at..]);
        if ended.is_some_and(|rest| rest.contains("> ")) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "turn {turns} did not end with a prompt:\n{shown}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `clix chat` as `inner` would start it, inside a pseudo-terminal:
/// reedline needs one, and `script` (util-linux) provides it.
fn chat_in_a_terminal(h: &Home, inner: Command) -> std::process::Child {
    in_a_terminal(h, inner, "chat")
}

/// `clix WORDS` with `inner`'s environment, inside a pseudo-terminal.
fn in_a_terminal(h: &Home, inner: Command, words: &str) -> std::process::Child {
    common::clix_in_a_terminal(&inner, words, h.ws.path(), "dumb")
}

#[tokio::test]
async fn chat_keeps_one_conversation_across_turns() {
    let server = start(vec![openai_text("first answer", 1, 1), openai_text("second answer", 1, 1)]).await;
    let h = Home::new();
    let mut chat = h.clix(Some(&server), &["chat"]);
    chat.env("CLIX_AGENT_LOOK_FIRST", "false"); // each scripted reply is the answer
    let mut child = chat_in_a_terminal(&h, chat);
    let screen = common::Screen::watch(&mut child);
    use std::io::Write;
    let mut keys = child.stdin.take().unwrap();
    keys.write_all(b"first task\r").unwrap();
    wait_for_prompt(&screen, 1).await;
    keys.write_all(b"second task\r").unwrap();
    wait_for_prompt(&screen, 2).await;
    keys.write_all(b"/exit\r").unwrap();
    drop(keys);
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let shown = screen.finish();
    assert!(shown.contains("second answer"), "{shown}");
    let second = server.requests()[1].body["messages"].clone();
    let turns: Vec<(String, String)> = second
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| (m["role"].as_str().unwrap().to_string(), m["content"].as_str().unwrap_or_default().to_string()))
        .collect();
    let expected = [("user", "first task"), ("assistant", "first answer"), ("user", "second task")];
    assert_eq!(turns, expected.map(|(r, c)| (r.to_string(), c.to_string())));
}

impl Home {
    /// `clix memory args…` in this home and workspace.
    fn memory(&self, args: &[&str]) -> String {
        let o = self.clix(None, &[&["memory"], args].concat()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    }

    /// The workspace's topic as people and models see it: the folder's name.
    fn topic(&self) -> String {
        let ws = std::fs::canonicalize(self.ws.path()).unwrap();
        ws.file_name().unwrap().to_string_lossy().into_owned()
    }

    /// The workspace's topic as stored: its canonical path.
    fn topic_key(&self) -> String {
        std::fs::canonicalize(self.ws.path()).unwrap().display().to_string()
    }
}

const NOTES: &[&str] = &[
    "the release checklist lives in docs/release.md",
    "lunch orders close at eleven",
    "coverage reports are uploaded by the nightly job",
    "the design review happens on Thursdays",
    "old branches are pruned monthly",
];

#[tokio::test]
async fn ask_puts_facts_and_recall_before_the_model_and_stores_a_summary() {
    let server = start_with_summarizer(
        vec![openai_text("Switch the VPN on, then run make deploy.", 1, 1)],
        "Explained the staging deploy: VPN on, then make deploy.",
    )
    .await;
    let h = Home::new();
    h.memory(&["store", "the signing key rotates every Friday", "--kind", "fact"]);
    h.memory(&["store", "deploys to staging need the VPN switched on first"]);
    for n in NOTES {
        h.memory(&["store", n]);
    }
    h.memory(&["store", "a fact of another topic", "--kind", "fact", "-t", "elsewhere"]);

    let mut cmd = h.clix(Some(&server), &["ask", "how do I deploy to staging?"]);
    cmd.env("CLIX_MEMORY_SUMMARIES", "true");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("(recalled from memory: #2)"), "{err}");
    assert!(err.contains("(remembered #"), "{err}");

    let first = &server.requests()[0].body["messages"];
    let system = first[0]["content"].as_str().unwrap();
    assert!(system.contains("the signing key rotates every Friday"), "{system}");
    assert!(!system.contains("a fact of another topic"), "{system}");
    assert!(system.contains(&format!("topic is {:?}", h.topic())), "{system}");
    let task = first[1]["content"].as_str().unwrap();
    assert!(task.starts_with("[memory recall: ") && task.contains("#2 "), "{task}");
    assert!(task.contains("deploys to staging need the VPN switched on first"), "{task}");
    assert!(task.ends_with("[end of memory recall]\n\nhow do I deploy to staging?"), "{task}");

    let recent: serde_json::Value = serde_json::from_str(&h.memory(&["recent", "1", "--json"])).unwrap();
    assert_eq!(recent[0]["kind"], "summary");
    assert_eq!(recent[0]["topic"], h.topic_key());
    assert_eq!(recent[0]["text"], "Explained the staging deploy: VPN on, then make deploy.");
    let runs = h.runs();
    assert_eq!(recent[0]["session"], runs[0]["id"], "the summary points at its run");
}

#[tokio::test]
async fn topic_flag_sets_the_sessions_topic() {
    let server = start_with_summarizer(vec![openai_text("ok", 1, 1)], "Did the other thing.").await;
    let h = Home::new();
    h.memory(&["store", "the default topic's fact", "--kind", "fact"]);
    h.memory(&["store", "the other topic's fact", "--kind", "fact", "-t", "other"]);
    let mut cmd = h.clix(Some(&server), &["ask", "--topic", "other", "do the other thing"]);
    cmd.env("CLIX_MEMORY_SUMMARIES", "true");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let system = server.requests()[0].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("the other topic's fact") && !system.contains("the default topic's fact"), "{system}");
    let summaries = h.memory(&["recent", "-t", "other", "--json"]);
    assert!(summaries.contains("Did the other thing."), "{summaries}");
    assert!(!h.memory(&["recent", "-t", &h.topic()]).contains("Did the other thing."));
}

#[tokio::test]
async fn no_model_means_no_summary() {
    let h = Home::new();
    h.memory(&["store", "deploys to staging need the VPN switched on first"]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cmd = h.clix(None, &["ask", "deploy to staging"]);
    cmd.env("AGENT_BASE_URL", format!("http://127.0.0.1:{closed}/v1"))
        .env("CLIX_AGENT_MODEL_CALL_TRIES", "1")
        .env("CLIX_MEMORY_SUMMARIES", "true");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(!err.contains("remembered") && !err.contains("no summary stored"), "skipped quietly: {err}");
    let recent: serde_json::Value = serde_json::from_str(&h.memory(&["recent", "--json"])).unwrap();
    assert_eq!(recent.as_array().unwrap().len(), 1, "no summary: {recent}");
}

#[tokio::test]
async fn chat_stores_one_summary_when_the_session_ends() {
    let server = start_with_summarizer(vec![openai_text("first answer", 1, 1)], "Chatted about one task.").await;
    let h = Home::new();
    let mut inner = h.clix(Some(&server), &["chat"]);
    inner.env("CLIX_AGENT_LOOK_FIRST", "false"); // each scripted reply is the answer
    inner.env("CLIX_MEMORY_SUMMARIES", "true");
    let mut child = chat_in_a_terminal(&h, inner);
    let screen = common::Screen::watch(&mut child);
    use std::io::Write;
    let mut keys = child.stdin.take().unwrap();
    keys.write_all(b"first task\r").unwrap();
    wait_for_prompt(&screen, 1).await;
    assert!(h.memory(&["recent", "--json"]).trim() == "[]", "no summary before the session ends");
    keys.write_all(b"/exit\r").unwrap();
    drop(keys);
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let shown = screen.finish();
    assert!(shown.contains("first answer"), "{shown}");
    let recent: serde_json::Value = serde_json::from_str(&h.memory(&["recent", "--json"])).unwrap();
    assert_eq!(recent.as_array().unwrap().len(), 1, "{recent}");
    assert_eq!(
        (recent[0]["kind"].as_str(), recent[0]["text"].as_str()),
        (Some("summary"), Some("Chatted about one task."))
    );
    assert_eq!(server.requests().len(), 2, "one task, one summary");
}

/// `--network` reaches the session's sandbox, as `clix run --network` does;
/// `clix replay` takes `last` and the start of an id.
#[tokio::test]
async fn ask_takes_network_and_replay_takes_last_or_an_id_prefix() {
    let server = start(vec![
        openai_calls(&[("run", &run_call("sandbox status | grep network"))], 10, 5),
        openai_text("checked", 20, 9),
    ])
    .await;
    let h = Home::new();
    // The sandbox on (these tests turn it off), so its status can say what --network did.
    let mut cmd = h.clix(Some(&server), &["ask", "--network", "is the network on?"]);
    cmd.env("CLIX_SANDBOX_MODE", "bwrap");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let second = server.requests()[1].body.to_string();
    assert!(second.contains("network: ON"), "{second}");

    let runs = h.runs();
    assert_eq!((runs[0]["model"].as_str(), runs[0]["workspace"].as_str()), (Some("scripted"), h.ws.path().to_str()));
    let id = runs[0]["id"].as_str().unwrap().to_string();
    // Bare `clix runs` is this folder's list: a header, then the id, the
    // date, the model, the run's tokens summed over its calls, no cost
    // without prices; fitted to an 80-column terminal.
    let mut cmd = h.clix(None, &["runs"]);
    cmd.env("COLUMNS", "80");
    let o = common::agent_home::finish(cmd).await;
    let table = text(&o.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ID ") && lines[0].contains("STEPS") && lines[0].contains("TASK"), "{table}");
    assert!(!lines[0].contains("FOLDER"), "{table}");
    let line = lines[1];
    assert!(line.starts_with(&id) && line.contains(" scripted ") && line.contains(" 30/14 "), "{line}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "wider than 80:\n{table}");
    // Another folder lists none of them, and says where they are; --all lists them, with the folder.
    let elsewhere = tempfile::tempdir().unwrap();
    let o = h.clix_in(elsewhere.path(), None, &["runs"]).output().unwrap();
    assert!(
        text(&o.stdout).starts_with("no runs in ") && text(&o.stdout).contains("clix runs --all"),
        "{}",
        text(&o.stdout)
    );
    let o = h.clix_in(elsewhere.path(), None, &["runs", "--all"]).output().unwrap();
    let folder = h.ws.path().file_name().unwrap().to_str().unwrap();
    let all = text(&o.stdout);
    assert!(all.lines().next().unwrap().contains("FOLDER") && all.contains(folder) && all.contains(&id), "{all}");
    // Piped with no width, nothing is left out: the date too.
    assert!(all.contains(&format!("{}-{}-{} ", &id[..4], &id[4..6], &id[6..8])), "{all}");
    assert_eq!(
        (runs[0]["usage"]["input_tokens"].as_u64(), runs[0]["usage"]["output_tokens"].as_u64()),
        (Some(30), Some(14))
    );
    for named in ["last", &id[..11]] {
        let o = h.output(None, &["replay", named, "--jsonl"]).await;
        assert_eq!(o.status.code(), Some(0), "{named}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains("is the network on?"), "{named}");
    }
    let o = h.output(None, &["replay", "1999"]).await;
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("no run 1999 in"), "{}", text(&o.stderr));
}

/// `clix chat` with piped stdin takes one task per line as its turns, in one
/// run; with nothing piped it refuses before a run is made.
#[tokio::test]
async fn chat_reads_piped_lines_as_turns_and_refuses_an_empty_stdin() {
    let h = Home::new();
    let o = h.output(None, &["chat"]).await;
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("stdin held no task"), "{}", text(&o.stderr));
    assert!(h.runs().is_empty(), "a refused chat left a run");

    let server = start(vec![openai_text("one", 10, 2), openai_text("two", 20, 2)]).await;
    let mut cmd = h.clix(Some(&server), &["chat"]);
    cmd.env("CLIX_AGENT_LOOK_FIRST", "false").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let o = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = cmd.stderr(std::process::Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(b"say one\n\nsay two\n").unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "one\ntwo\n");
    let runs = h.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let second = server.requests()[1].body.to_string();
    assert!(second.contains("say one") && second.contains("say two"), "one conversation: {second}");
}

/// `clix ask --continue`, `--resume ID` and `clix chat --resume` go on
/// with an earlier run: its conversation sent again, its file appended to.
#[tokio::test]
async fn ask_continue_and_chat_resume_go_on_with_the_run() {
    let server = start(vec![
        openai_calls(&[("run", &run_call("wc -l notes.txt"))], 10, 5),
        openai_text("3 lines", 20, 2),
        openai_text("one, two, three", 30, 4),
        openai_text("still three", 40, 4),
    ])
    .await;
    let h = Home::new();
    let o = h.output(None, &["ask", "--continue", "go on"]).await;
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("no run to continue in"), "{}", text(&o.stderr));

    let o = h.output(Some(&server), &["ask", "how many lines in notes.txt?"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = h.output(Some(&server), &["ask", "--continue", "which are they?"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "one, two, three\n");
    assert!(text(&o.stderr).contains("going on with run"), "{}", text(&o.stderr));
    let sent = server.requests();
    let before = sent[1].body["messages"].as_array().unwrap();
    let resumed = sent[2].body["messages"].as_array().unwrap();
    assert_eq!(resumed[..before.len()], before[..], "the conversation the model had");
    assert_eq!(resumed[before.len()]["content"], "3 lines");
    assert_eq!(resumed[before.len() + 1]["content"], "which are they?");

    let runs = h.runs();
    assert_eq!(runs.len(), 1, "one run, appended to: {runs:?}");
    assert_eq!(runs[0]["resumable"], true);
    let id = runs[0]["id"].as_str().unwrap().to_string();
    let listed = h.output(None, &["runs"]).await;
    assert!(text(&listed.stdout).contains("answered+"), "{}", text(&listed.stdout));

    let mut cmd = h.clix(Some(&server), &["chat", "--resume", &id[..11]]);
    cmd.env("CLIX_AGENT_LOOK_FIRST", "false").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let o = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(b"still?\n").unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let last = server.requests()[3].body["messages"].to_string();
    assert!(last.contains("which are they?") && last.contains("one, two, three") && last.contains("still?"), "{last}");

    // Another folder's run is refused; so is a damaged file, by name.
    let elsewhere = Home::with_files(&[]);
    let mut cmd = common::clix(h.home.path(), elsewhere.ws.path(), &["ask", "--resume", &id, "more"]);
    cmd.env("AGENT_BASE_URL", format!("{}/v1", server.url)).env("CLIX_SANDBOX_MODE", "off");
    let o = cmd.output().unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("not here"), "{}", text(&o.stderr));
    let o = h.output(Some(&server), &["ask", "--resume", "1999", "more"]).await;
    assert!(text(&o.stderr).contains("no run 1999 in"), "{}", text(&o.stderr));
    let path = find_file(h.home.path(), &format!("{id}.jsonl"));
    let kept = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("garbage\n{kept}")).unwrap();
    let o = h.output(Some(&server), &["ask", "--continue", "more"]).await;
    assert_ne!(o.status.code(), Some(0));
    let stderr = text(&o.stderr);
    assert!(stderr.contains(&format!("{id}.jsonl is damaged at line 1")), "{stderr}");
    assert_eq!(server.requests().len(), 4, "no model call for a refused resume");
}

/// The file named `name` under `dir`.
fn find_file(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            let found = find_file(&path, name);
            if found.is_file() {
                return found;
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return path;
        }
    }
    std::path::PathBuf::new()
}

/// Issue 31: the answer's Markdown is drawn on a terminal, and left as the
/// model wrote it when stdout is a pipe (or a file), with `--jsonl`, and
/// with `NO_COLOR`.
#[tokio::test]
async fn the_answer_is_drawn_on_a_terminal_and_raw_when_piped() {
    let answer = "**3 lines** in `notes.txt`:\n\n- one\n- two";
    let server = start(vec![openai_text(answer, 1, 1); 4]).await;
    let h = Home::new();
    let ask = |args: &[&str]| {
        let mut cmd = h.clix(Some(&server), args);
        cmd.env("CLIX_AGENT_LOOK_FIRST", "false"); // each scripted reply is the answer
        cmd
    };

    let mut cmd = ask(&["ask", "count"]);
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), format!("{answer}\n"), "piped: as written");

    let mut cmd = ask(&["ask", "--jsonl", "count"]);
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let texts: Vec<serde_json::Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "text")
        .collect();
    assert_eq!(texts.len(), 1, "{}", text(&o.stdout));
    assert_eq!(texts[0]["content"]["text"], answer, "--jsonl: as written");

    for no_color in [false, true] {
        let mut cmd = ask(&[]);
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let child = in_a_terminal(&h, cmd, "ask count");
        let o = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
        // The pseudo-terminal ends lines with \r\n.
        let shown = text(&o.stdout).replace("\r\n", "\n");
        if no_color {
            assert!(shown.contains(&format!("{answer}\n")), "NO_COLOR: as written: {shown:?}");
            assert!(!shown.contains("\x1b[1m"), "{shown:?}");
        } else {
            let drawn = "\x1b[1m3 lines\x1b[0m in \x1b[36mnotes.txt\x1b[0m:\n\n• one\n• two\n";
            assert!(shown.contains(drawn), "{shown:?}");
        }
    }
    assert_eq!(server.requests().len(), 4, "one call each");
}

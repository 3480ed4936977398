//! The model-driven mode end to end against the scripted OpenAI-compatible
//! server (real HTTP): a scripted model that solves one task and guesses
//! another, in each tool design, several attempts at once; and a model too
//! slow for its task's deadline.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clix_agent::{AgentSettings, Event, ProviderKind, ResolvedProvider, StopReason, read_run};
use clix_eval::{AttemptOptions, AttemptRecord, AttemptStop, Design, ModelRun, Task, parse_task, run_model};
use common::sandbox_ready;
use serde_json::{Value, json};
use support::{Reply, openai_calls, openai_text, with_usage};

const COUNT: &str = r#"{"id":"count","category":"text","description":"d",
    "prompt":"How many ERROR lines are in /data/app.log? Write the count to /data/count.txt and answer with it.",
    "files":{"/data/app.log":"ERROR a\nINFO b\nERROR c\nERROR d\n"},
    "expectations":[{"check":"stdout_contains:3"},{"check":"file_contains:/data/count.txt:3"},{"check":"answer_regex:\\b3\\b"},{"check":"exit_code:0"}]}"#;

const GUESS: &str = r#"{"id":"guess","category":"text","description":"d",
    "system":"Answer in one word.",
    "prompt":"How many WARN lines are in /data/app.log? Write the count to /data/count.txt.",
    "files":{"/data/app.log":"ERROR a\nINFO b\n"},
    "expectations":[{"check":"file_exists:/data/count.txt"},{"check":"answer_contains:0"}]}"#;

const UNKNOWN: &str = r#"{"id":"unknown","category":"text","description":"d",
    "prompt":"Convert /data/users.csv to JSON.","files":{"/data/users.csv":"a,b\n1,2\n"},
    "expectations":[{"check":"stdout_contains:1"}]}"#;

const SLOW: &str = r#"{"id":"slow","category":"text","description":"d","prompt":"Say hi.","timeout_secs":1,
    "files":{},"expectations":[{"check":"answer_contains:hi"}]}"#;

fn task(line: &str) -> Task {
    parse_task(Path::new("model.jsonl"), 1, &line.replace('\n', "")).unwrap()
}

/// The text of the first message with `role`.
fn first(body: &Value, role: &str) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let message = messages.into_iter().find(|m| m["role"] == role).unwrap_or(Value::Null);
    message["content"].as_str().unwrap_or_default().to_string()
}

/// For attempts run at once: each reply waits until a second request has
/// arrived (at most `support::WHEN_LIMIT`), so the attempts are seen to
/// overlap however fast the machine is, and not only when they happen to.
fn overlapping(answer: fn(&Value) -> Reply) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    let arrived = Arc::new(AtomicUsize::new(0));
    move |body| {
        arrived.fetch_add(1, Ordering::SeqCst);
        let arrived = Arc::clone(&arrived);
        support::when(move || arrived.load(Ordering::SeqCst) >= 2, answer(body))
    }
}

/// The scripted model: for `count`, one call of the design's shell tool
/// (its command built from the mapped path in the prompt), then the answer;
/// for `guess`, a guess without looking; for anything else, a slow hello.
fn model(body: &Value) -> Reply {
    let prompt = first(body, "user");
    let tools: Vec<String> =
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect();
    let shell = ["run", "bash", "shell"].into_iter().find(|t| tools.iter().any(|n| n == t)).unwrap();
    let results = body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
    if prompt.starts_with("How many ERROR") {
        if results == 0 {
            let log = prompt.split_whitespace().find(|w| w.ends_with("app.log?")).unwrap().trim_end_matches('?');
            let count = log.replace("app.log", "count.txt");
            let command = format!("grep -c ERROR {log} | tee {count}");
            return openai_calls(&[(shell, &json!({ "command": command }).to_string())], 100, 10);
        }
        // The second call reads the first's 100 tokens from the cache.
        let cached = json!({"usage": {"prompt_tokens_details": {"cached_tokens": 100}}});
        return with_usage(openai_text("There are 3 ERROR lines.", 150, 5), "/usage", &cached);
    }
    if prompt.starts_with("Convert") {
        // A command called as a tool, as small models do; then a script
        // shown, not run (run for it: the refused call ran nothing); then it gives up.
        return match results {
            0 => openai_calls(&[("csv", r#"{"file": "users.csv"}"#)], 10, 1),
            1 => openai_text("Try:\n```bash\nls\n```", 10, 1),
            _ => openai_text("I could not.", 10, 1),
        };
    }
    if prompt.starts_with("How many WARN") {
        return openai_text("7", 50, 3);
    }
    Reply::Delay(Duration::from_secs(20), Box::new(openai_text("hi", 1, 1)))
}

fn run(url: &str, designs: Vec<Design>, repeat: u32, jobs: usize, runs: &Path) -> ModelRun {
    ModelRun {
        designs,
        options: AttemptOptions::default(),
        provider: ResolvedProvider {
            kind: ProviderKind::OpenAi,
            base_url: format!("{url}/v1"),
            api_key: None,
            model: "scripted".into(),
            stream: true,
            temperature: None,
            from_env: Vec::new(),
            default_endpoint: false,
        },
        // The scripted model answers some tasks without a call: taken as the answer.
        agent: AgentSettings { model_call_tries: 1, look_first: false, ..AgentSettings::default() },
        repeat,
        jobs,
        runs_dir: runs.to_path_buf(),
    }
}

fn check<'r>(r: &'r AttemptRecord, prefix: &str) -> &'r clix_eval::CheckResult {
    r.checks.iter().find(|c| c.check.starts_with(prefix)).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scripted_model_solves_one_task_and_fails_another_in_every_design() {
    if !sandbox_ready("a_scripted_model_solves_one_task_and_fails_another_in_every_design") {
        return;
    }
    let server = support::start_fn(overlapping(model)).await;
    let out = tempfile::tempdir().unwrap();
    let tasks = [task(COUNT), task(GUESS)];
    let run = run(&server.url, Design::ALL.to_vec(), 2, 4, &out.path().join("runs"));
    assert_eq!(run.attempts(&tasks), 12);
    let mut heard = 0;
    let results = run_model(&tasks, &[], &run, &mut |_| heard += 1).await;
    assert_eq!((heard, results.attempts.len()), (12, 12));
    assert!(server.most_at_once() >= 2, "-j 4 ran attempts at once (peak {})", server.most_at_once());

    for r in &results.attempts {
        let what = format!("{} [{}] r{}", r.task, r.design, r.repeat);
        if r.task == "count" {
            assert!(r.passed, "{what}: {:?}", r.checks);
            assert_eq!(r.stop_reason, AttemptStop::Agent(StopReason::Answered), "{what}");
            assert_eq!((r.steps, r.tool_calls, r.failed_calls), (2, 1, 0), "{what}");
            assert_eq!((r.input_tokens, r.output_tokens, r.tokens_estimated), (Some(250), Some(15), false), "{what}");
            assert_eq!((r.cache_read_tokens, r.cache_write_tokens), (Some(100), Some(0)), "{what}");
            let tool = r.calls[0].tool.as_str();
            assert_eq!(tool, ["run", "bash", "shell"][Design::ALL.iter().position(|d| *d == r.design).unwrap()]);
        } else {
            assert!(!r.passed && r.tool_calls == 0, "{what}");
            assert_eq!((r.input_tokens, r.output_tokens), (Some(50), Some(3)), "{what}");
            // Every attempt has its own workspace: another attempt's count.txt is never seen.
            assert!(!check(r, "file_exists").passed, "{what} saw another attempt's file");
            assert_eq!(check(r, "answer_contains").detail, "`0` not in the answer", "{what}");
        }
        // The trajectory: the attempt's facts, then the run as `clix ask` records it.
        let path = r.trajectory.as_ref().unwrap();
        let id = path.file_stem().unwrap().to_str().unwrap();
        assert_eq!(id, format!("{}-{}-r{}", r.task, r.design, r.repeat));
        let events: Vec<Event> = read_run(path.parent().unwrap(), id).unwrap().into_iter().map(|e| e.event).collect();
        match &events[0] {
            Event::Annotation { name, value } => {
                assert_eq!(
                    (name.as_str(), &value["task"], &value["design"]),
                    ("eval", &json!(r.task), &json!(r.design))
                );
                assert!(value["path_map"]["roots"]["/data"].is_string(), "{value}");
            }
            other => panic!("{what}: the first record is {other:?}"),
        }
        assert!(matches!(events.last(), Some(Event::Done { stop_reason, .. }) if *stop_reason == StopReason::Answered));
        let context = events.iter().find_map(|e| match e {
            Event::Context { system, tools, .. } => Some((system.clone(), tools.len())),
            _ => None,
        });
        let (system, tools) = context.unwrap();
        assert_eq!(tools, r.design.tool_names().len(), "{what}");
        assert_eq!(r.task == "guess", system.ends_with("Answer in one word."), "the task's system prompt: {system}");
    }
    let run_summary = results.summary.iter().find(|s| s.design == Design::Run && s.category.is_none()).unwrap();
    assert_eq!((run_summary.passed, run_summary.attempts), (2, 4));
    assert_eq!(run_summary.pass_at_k.len(), 2, "pass@1 and pass@2 with two repeats");
    assert_eq!(results.model.as_deref(), Some("scripted"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_past_its_deadline_is_a_fail_with_its_stop_reason() {
    let server = support::start_fn(model).await;
    let out = tempfile::tempdir().unwrap();
    let run = run(&server.url, vec![Design::Run], 1, 1, out.path());
    let results = run_model(&[task(SLOW)], &[], &run, &mut |_| {}).await;
    let r = &results.attempts[0];
    assert!(!r.passed);
    assert_eq!(r.stop_reason, AttemptStop::Timeout);
    assert_eq!(r.error.as_deref(), Some("the attempt's 1s ran out"));
    let events = read_run(out.path(), "slow-run-r0").unwrap();
    assert!(
        matches!(&events.last().unwrap().event, Event::Done { stop_reason, .. } if *stop_reason == StopReason::Interrupted),
        "the trajectory ends with its done record"
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_an_error_record_not_a_crash() {
    let out = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let run = run(&format!("http://127.0.0.1:{port}"), vec![Design::Run], 1, 1, out.path());
    let results = run_model(&[task(COUNT)], &[], &run, &mut |_| {}).await;
    let r = &results.attempts[0];
    assert!(!r.passed);
    assert!(r.stop_reason.error().is_some_and(|e| e.contains("127.0.0.1")), "{}", r.stop_reason);
    assert!(r.stop_reason.to_string().starts_with("error: "), "written as the agent writes it: {}", r.stop_reason);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_to_a_tool_the_design_lacks_is_a_failed_call_that_says_what_to_do() {
    if !sandbox_ready("a_call_to_a_tool_the_design_lacks_is_a_failed_call_that_says_what_to_do") {
        return;
    }
    let server = support::start_fn(model).await;
    let out = tempfile::tempdir().unwrap();
    let run = run(&server.url, vec![Design::Run], 1, 1, &out.path().join("runs"));
    let results = run_model(&[task(UNKNOWN)], &[], &run, &mut |_| {}).await;
    let r = &results.attempts[0];
    assert_eq!((r.steps, r.tool_calls, r.failed_calls), (3, 2, 1), "{:?}", r.calls);
    let tools: Vec<&str> = r.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["csv", "run"], "the shown script ran after the refused call");
    // What the model was answered, as the trajectory keeps it.
    let trajectory = std::fs::read_to_string(r.trajectory.as_ref().unwrap()).unwrap();
    let answered = trajectory
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool_result")
        .and_then(|e| e["text"].as_str().map(str::to_string))
        .expect("a tool_result record");
    assert!(answered.starts_with("[error] unknown tool \"csv\". The tools are: run(command, stdin?)."), "{answered}");
    assert!(answered.contains(r#"{"command":"csv --help"}"#), "{answered}");
}

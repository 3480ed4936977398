//! The three designs and the attempt around them, end to end: real engine,
//! real bubblewrap, real files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::path::Path;

use clix_eval::{
    Attempt, AttemptError, AttemptOptions, AttemptStop, Design, OUTPUT_LIMIT_CHARS, SolutionRun, Task, Trace,
    parse_task, run_solutions,
};
use common::sandbox_ready;
use serde_json::json;

fn task(line: &str) -> Task {
    parse_task(Path::new("test.jsonl"), 1, line).unwrap()
}

const NOTES: &str = r#"{"id":"notes","category":"c","description":"d","prompt":"Count the lines of /data/notes.txt.",
    "files":{"/data/notes.txt":"alpha\nbeta\n","src/a.py":"TIMEOUT = 30\n"},"expectations":[{"check":"exit_code:0"}]}"#;

async fn attempt(line: &str) -> Attempt {
    Attempt::prepare(&task(&line.replace('\n', "")), &AttemptOptions::default()).await.unwrap()
}

#[tokio::test]
async fn run_sends_layer_two_and_keeps_the_raw_stdout() {
    if !sandbox_ready("run_sends_layer_two_and_keeps_the_raw_stdout") {
        return;
    }
    let a = attempt(NOTES).await;
    let data = a.map().roots["/data"].clone();
    assert_eq!(a.prompt(), format!("Count the lines of {data}/notes.txt."));
    let mut tools = a.executor(Design::Run).await.unwrap();
    let specs = tools.tools();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].name, "run");
    assert!(specs[0].description.contains("Agent commands"), "{}", specs[0].description);

    let call = tools.call("run", &json!({"command": format!("cd {data} && wc -l notes.txt")})).await;
    assert_eq!(call.stdout, "2 notes.txt\n");
    assert!(call.text.starts_with("2 notes.txt\n[exit:0 | "), "{}", call.text);
    assert_eq!((call.exit_code, call.failed()), (0, false));
    // One engine per attempt: cd persists.
    let call = tools.call("run", &json!({"command": "pwd"})).await;
    assert_eq!(call.stdout.trim_end(), data);
    let call = tools.call("run", &json!({"command": "wc -l", "stdin": "a\nb\nc\n"})).await;
    assert_eq!(call.stdout.trim(), "3");

    let call = tools.call("run", &json!({"command": "cat missing.txt"})).await;
    assert!(call.failed() && call.text.contains("[exit:1"), "{}", call.text);
    let call = tools.call("bash", &json!({"command": "ls"})).await;
    assert_eq!(
        (call.text.as_str(), call.exit_code),
        (
            "[error] unknown tool \"bash\". The tools are: run(command, stdin?). bash is not a tool; if it is a \
             command, run it through run with the whole command line, e.g. {\"command\":\"bash --help\"}.",
            2
        )
    );
    let call = tools.call("run", &json!({"cmd": "ls"})).await;
    assert!(call.text.contains("missing argument `command`") && call.failed(), "{}", call.text);
}

#[tokio::test]
async fn bash_is_real_bash_with_raw_output_cut_at_30000_characters() {
    if !sandbox_ready("bash_is_real_bash_with_raw_output_cut_at_30000_characters") {
        return;
    }
    let a = attempt(NOTES).await;
    let mut tools = a.executor(Design::Bash).await.unwrap();
    assert_eq!(tools.tools().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["bash"]);

    let call = tools.call("bash", &json!({"command": "[[ -n $BASH_VERSION ]] && echo gnu bash"})).await;
    assert_eq!((call.text.as_str(), call.exit_code), ("gnu bash\n", 0), "no footer: the output as it is");

    let call = tools.call("bash", &json!({"command": "echo out; echo err >&2; exit 3"})).await;
    assert_eq!((call.text.as_str(), call.stdout.as_str(), call.stderr.as_str()), ("out\nerr\n", "out\n", "err\n"));
    assert_eq!(call.exit_code, 3);

    let call = tools.call("bash", &json!({"command": "seq 1 20000"})).await;
    let kept: String = call.stdout.chars().take(OUTPUT_LIMIT_CHARS).collect();
    assert!(call.text.starts_with(&kept) && call.text.len() < call.stdout.len(), "cut");
    assert!(call.text.ends_with("lines truncated] ..."), "{}", &call.text[call.text.len() - 60..]);
    assert_eq!(call.stdout.lines().count(), 20000, "the raw stdout is whole, for the checks");

    // Each call starts in the workspace; cd does not carry over.
    let root = a.workspace().root().display().to_string();
    let call = tools.call("bash", &json!({"command": "mkdir -p sub && cd sub && pwd"})).await;
    assert_eq!(call.stdout.trim_end(), format!("{root}/sub"));
    let call = tools.call("bash", &json!({"command": "pwd"})).await;
    assert_eq!(call.stdout.trim_end(), root);

    // The sandbox holds: the system is read-only, the workspace writable.
    let call = tools.call("bash", &json!({"command": "touch /usr/eval-was-here"})).await;
    assert!(call.failed(), "{}", call.text);
    let call = tools.call("bash", &json!({"command": "printf 'x\\0y' > bin.dat && cat bin.dat"})).await;
    assert_eq!(call.text, "x\0y", "no binary guard");
}

#[tokio::test]
async fn typed_tools_reach_the_workspace_only() {
    if !sandbox_ready("typed_tools_reach_the_workspace_only") {
        return;
    }
    let a = attempt(NOTES).await;
    let data = a.map().roots["/data"].clone();
    let mut tools = a.executor(Design::Typed).await.unwrap();
    let names: Vec<String> = tools.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["read_file", "write_file", "edit_file", "list_dir", "search_files", "shell"]);

    let call = tools.call("read_file", &json!({"path": format!("{data}/notes.txt")})).await;
    assert_eq!((call.text.as_str(), call.exit_code), ("alpha\nbeta\n", 0));
    let call = tools.call("edit_file", &json!({"path": "src/a.py", "old_string": "30", "new_string": "60"})).await;
    assert_eq!(call.text, "edited src/a.py");
    let call = tools.call("search_files", &json!({"pattern": "TIMEOUT = \\d+"})).await;
    assert_eq!(call.text, "src/a.py:1:TIMEOUT = 60\n");
    let call = tools.call("write_file", &json!({"path": "out/r.txt", "content": "done\n"})).await;
    assert_eq!(call.text, "wrote 5 bytes to out/r.txt");
    let call = tools.call("list_dir", &json!({})).await;
    assert_eq!(call.text, "data/\nout/\nsrc/\n");
    let call = tools.call("shell", &json!({"command": "cat out/r.txt; [[ -n $BASH_VERSION ]] && echo bash"})).await;
    assert_eq!(call.text, "done\nbash\n");

    let call = tools.call("read_file", &json!({"path": "/etc/passwd"})).await;
    assert!(call.failed() && call.text.contains("outside the workspace"), "{}", call.text);
    let call = tools.call("write_file", &json!({"path": "../escape.txt", "content": "x"})).await;
    assert!(call.failed() && call.text.starts_with("error: "), "{}", call.text);
    assert!(!a.folder().join("escape.txt").exists());
    let call = tools.call("edit_file", &json!({"path": "src/a.py"})).await;
    assert_eq!((call.text.as_str(), call.exit_code), ("error: missing argument `old_string`", 1));
}

#[tokio::test]
async fn attempts_never_see_each_other() {
    if !sandbox_ready("attempts_never_see_each_other") {
        return;
    }
    let first = attempt(NOTES).await;
    let second = attempt(NOTES).await;
    assert_ne!(first.folder(), second.folder());
    assert_ne!(first.home(), second.home());
    assert!(first.home().starts_with(first.folder()) && !first.workspace().root().starts_with(first.home()));

    let mut one = first.executor(Design::Run).await.unwrap();
    let stored = one.call("run", &json!({"command": "memory store 'the canary is yellow' && echo x > mine.txt"})).await;
    assert_eq!(stored.exit_code, 0, "{}", stored.text);
    let mut two = second.executor(Design::Run).await.unwrap();
    let found = two.call("run", &json!({"command": "memory search canary; ls"})).await;
    assert!(!found.stdout.contains("yellow") && !found.stdout.contains("mine.txt"), "{}", found.text);
    let again = one.call("run", &json!({"command": "memory search canary"})).await;
    assert!(again.stdout.contains("yellow"), "{}", again.text);

    let kept = first.folder().to_path_buf();
    drop(one);
    drop(first);
    assert!(!kept.exists(), "an attempt's folder goes when the attempt does");
}

#[tokio::test]
async fn setup_runs_first_and_a_failing_line_is_named() {
    if !sandbox_ready("setup_runs_first_and_a_failing_line_is_named") {
        return;
    }
    let good = task(
        r#"{"id":"s","category":"c","description":"d","prompt":"p","expectations":[{"check":"exit_code:0"}],
        "setup":["git init -q -b main", "echo ready > /data/state.txt"]}"#
            .replace('\n', "")
            .as_str(),
    );
    let a = Attempt::prepare(&good, &AttemptOptions::default()).await.unwrap();
    assert!(a.workspace().root().join(".git").is_dir());
    assert_eq!(std::fs::read_to_string(a.workspace().root().join("data/state.txt")).unwrap(), "ready\n");

    let bad = task(
        r#"{"id":"s","category":"c","description":"d","prompt":"p","expectations":[{"check":"exit_code:0"}],
        "setup":["true", "cat no-such-file"]}"#
            .replace('\n', "")
            .as_str(),
    );
    match Attempt::prepare(&bad, &AttemptOptions::default()).await {
        Err(AttemptError::Setup { index, line, exit_code, output }) => {
            assert_eq!((index, line.as_str(), exit_code), (2, "cat no-such-file", 1));
            assert!(output.contains("no-such-file"), "{output}");
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a failing setup line must stop the attempt"),
    }
}

#[tokio::test]
async fn checks_score_the_trace_and_the_workspace_after_the_attempt() {
    if !sandbox_ready("checks_score_the_trace_and_the_workspace_after_the_attempt") {
        return;
    }
    let line = r#"{"id":"k","category":"c","description":"d","prompt":"p","files":{"/app/a.txt":"one\n"},
        "expectations":[{"check":"file_contains:/app/a.txt:two","weight":3},{"check":"command:grep -q two /app/a.txt"},
        {"check":"command:python3 -c 'import sys; print(\"wanted three\", file=sys.stderr); sys.exit(4)'"},
        {"check":"stdout_contains:two"},{"check":"exit_code:0"}]}"#;
    let a = attempt(line).await;
    let nothing = a.score(&Trace::default()).await;
    assert!(!nothing.passed);
    assert_eq!(nothing.checks.iter().filter(|c| c.passed).count(), 0);

    let mut tools = a.executor(Design::Bash).await.unwrap();
    let app = a.map().roots["/app"].clone();
    let call = tools.call("bash", &json!({"command": format!("echo two >> {app}/a.txt && cat {app}/a.txt")})).await;
    let score = a.score(&Trace { calls: vec![call], answer: None }).await;
    let verdicts: Vec<bool> = score.checks.iter().map(|c| c.passed).collect();
    assert_eq!(verdicts, [true, true, false, true, true]);
    assert_eq!(score.checks[2].detail, "exit 4: wanted three");
    assert_eq!(score.checks[0].check, format!("file_contains:{app}/a.txt:two"), "checks are mapped too");
    assert!((score.score - 6.0 / 7.0).abs() < 1e-9, "{}", score.score);
    assert!(!score.passed);
}

#[tokio::test]
async fn a_timeout_is_a_failed_attempt_with_its_reason() {
    if !sandbox_ready("a_timeout_is_a_failed_attempt_with_its_reason") {
        return;
    }
    let slow = task(
        r#"{"id":"slow","category":"c","description":"d","prompt":"p","expectations":[{"check":"file_exists:done.txt"}],
        "solution":["sleep 120; touch done.txt"],"timeout_secs":1}"#
            .replace('\n', "")
            .as_str(),
    );
    let run = SolutionRun { designs: vec![Design::Run, Design::Bash], ..SolutionRun::default() };
    let started = std::time::Instant::now();
    let results = run_solutions(&[slow], &[], &run).await;
    // Cut at the 1 s timeout, not run to its end (120 s): a generous bound.
    assert!(started.elapsed().as_secs() < 60, "the attempt was cut at its timeout");
    assert_eq!(results.attempts.len(), 2);
    for record in &results.attempts {
        assert_eq!(record.stop_reason, AttemptStop::Timeout, "{record:?}");
        assert!(!record.passed);
        assert_eq!(record.error.as_deref(), Some("timed out after 1s"));
    }
    assert!(!results.do_nothing[0].passed);
}

/// A model loop runs attempts at once (`-j N`) on a multi-threaded runtime:
/// what it holds and awaits must be `Send`.
#[test]
fn attempts_and_their_calls_can_move_between_threads() {
    fn send<T: Send>(_: &T) {}
    fn never_called(a: &Attempt, mut tools: clix_eval::Executor, task: &Task) {
        send(a);
        send(&tools);
        send(&a.executor(Design::Run));
        send(&a.score(&Trace::default()));
        send(&tools.call("run", &serde_json::Value::Null));
        send(&Attempt::prepare(task, &AttemptOptions::default()));
        send(&run_solutions(std::slice::from_ref(task), &[], &SolutionRun::default()));
    }
    let _ = never_called;
}

//! A run goes on from its trajectory: the conversation rebuilt from the
//! file is the one the model was having, and the resumed run is appended
//! to the same file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use clix_agent::{
    Agent, AgentSettings, Event, ProviderKind, RunError, StopReason, Trajectory, list_runs, read_run, resumable,
};
use serde_json::Value;
use support::{Reply, Server, engine, openai_calls, openai_text, provider, run_call, start_with_summarizer};

fn settings() -> AgentSettings {
    AgentSettings {
        model_call_tries: 1,
        model_call_secs: 10,
        look_first: false,
        retry_failed: false,
        ..Default::default()
    }
}

/// The loop's requests (not the summarizer's), as the server got them.
fn loop_messages(server: &Server) -> Vec<Vec<Value>> {
    server
        .requests()
        .into_iter()
        .map(|r| r.body["messages"].as_array().unwrap().clone())
        .filter(|m| !m[0]["content"].as_str().unwrap_or_default().starts_with("You summarize"))
        .collect()
}

struct Case {
    name: &'static str,
    /// The first run's replies; the resumed run is answered "resumed".
    first: Vec<Reply>,
    settings: AgentSettings,
    stop: StopReason,
    /// A line of the first run's conversation the resumed run must carry.
    carried: &'static str,
}

fn cases() -> Vec<Case> {
    let seq = |n: u32| openai_calls(&[("run", &run_call(&format!("seq 1 {n}")))], 10, 1);
    vec![
        Case {
            name: "a finished run",
            first: vec![
                openai_calls(&[("run", &run_call("cat notes.txt | wc -l"))], 10, 1),
                openai_text("There are 2 lines.", 10, 1),
            ],
            settings: settings(),
            stop: StopReason::Answered,
            carried: "There are 2 lines.",
        },
        Case {
            name: "a run stopped by its step budget",
            first: vec![
                openai_calls(&[("run", &run_call("cat notes.txt"))], 10, 1),
                openai_text("Read notes.txt; not done yet.", 10, 1),
            ],
            settings: AgentSettings { max_steps: 1, ..settings() },
            stop: StopReason::MaxSteps,
            carried: "alpha\nbeta\n[exit:0",
        },
        Case {
            name: "a compacted run",
            first: vec![seq(100), seq(101), seq(102), seq(103), openai_text("counted", 1, 1)],
            settings: AgentSettings {
                context_window: 400,
                compact_at: 0.5,
                keep_last_messages: 2,
                max_steps: 10,
                ..settings()
            },
            stop: StopReason::Answered,
            carried: "[summary of earlier steps]\nSUMMARY: ran seq",
        },
    ]
}

#[tokio::test]
async fn a_resumed_run_sends_the_conversation_the_model_had_and_appends_to_its_file() {
    for case in cases() {
        let mut script = case.first;
        script.push(openai_text("resumed", 1, 1));
        let server = start_with_summarizer(script, "SUMMARY: ran seq four times").await;
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
        let runs = ws.path().join(".runs");
        let mut engine = engine(ws.path()).await;
        let url = format!("{}/v1", server.url);

        let trajectory = Trajectory::create(&runs).unwrap();
        let id = trajectory.id.clone();
        let model = || provider(ProviderKind::OpenAi, url.clone(), None, "scripted", true);
        let mut agent = Agent::new(&mut engine, model(), case.settings.clone(), Some(trajectory));
        let first = agent.run("count the lines of notes.txt", &mut |_| {}).await;
        assert_eq!(first.stop_reason, case.stop, "{}", case.name);
        drop(agent);
        let before = loop_messages(&server);
        let last = before.last().unwrap();

        let run = resumable(&runs, &id).unwrap();
        assert_eq!(run.workspace, ws.path().display().to_string(), "{}", case.name);
        let trajectory = Trajectory::reopen(&runs, &id).unwrap();
        let mut agent = Agent::new(&mut engine, model(), settings(), Some(trajectory)).with_conversation(run.messages);
        let second = agent.run("and now the words", &mut |_| {}).await;
        assert_eq!((second.stop_reason, second.answer.as_str()), (StopReason::Answered, "resumed"), "{}", case.name);

        let sent = loop_messages(&server);
        let resumed = &sent[before.len()];
        // The system prompt, the last call's whole conversation, the reply
        // to it (the run's answer), then the new task.
        assert_eq!(resumed.len(), last.len() + 2, "{}: {resumed:#?}", case.name);
        assert_eq!(resumed[..last.len()], last[..], "{}: the conversation the model had", case.name);
        assert_eq!(resumed[last.len()]["role"], "assistant", "{}", case.name);
        assert_eq!(resumed[last.len() + 1]["content"], "and now the words", "{}", case.name);
        let text = serde_json::to_string(resumed).unwrap();
        let carried = serde_json::to_string(case.carried).unwrap();
        assert!(text.contains(carried.trim_matches('"')), "{}: {text}", case.name);

        // One file, two runs in it; listed once, by its first task.
        let events: Vec<Event> = read_run(&runs, &id).unwrap().into_iter().map(|r| r.event).collect();
        let starts = events.iter().filter(|e| matches!(e, Event::Start { .. })).count();
        let dones = events.iter().filter(|e| matches!(e, Event::Done { .. })).count();
        assert_eq!((starts, dones), (2, 2), "{}", case.name);
        let listed = list_runs(&runs);
        assert_eq!(listed.len(), 1, "{}", case.name);
        assert!(listed[0].resumable && listed[0].task == "count the lines of notes.txt", "{}", case.name);
        // Resumed again, the file gives the second run's conversation.
        let again = resumable(&runs, &id).unwrap();
        assert_eq!(again.messages.last().unwrap().text, "resumed", "{}", case.name);
    }
}

/// A trajectory whose lines are `records` (with `ts_ms` added).
fn write_run(runs: &std::path::Path, id: &str, records: &[Value]) -> std::path::PathBuf {
    std::fs::create_dir_all(runs).unwrap();
    let path = runs.join(format!("{id}.jsonl"));
    let lines: Vec<String> = records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r["ts_ms"] = 1.into();
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(&path, lines.concat()).unwrap();
    path
}

#[test]
fn a_killed_run_is_rebuilt_from_its_last_reply_and_results() {
    let dir = tempfile::tempdir().unwrap();
    let start = serde_json::json!({"type": "start", "run_id": "k", "task": "t", "provider": "OpenAi x", "model": "m", "workspace": "/w"});
    let context =
        serde_json::json!({"type": "context", "system": "s", "tools": [], "messages": [{"role": "user", "text": "t"}]});
    let request =
        serde_json::json!({"type": "request", "step": 1, "tool_choice": "auto", "max_output_tokens": 9, "added": []});
    let calls = [("c1", "ls"), ("c2", "pwd")]
        .map(|(id, cmd)| serde_json::json!({"id": id, "name": "run", "arguments": run_call(cmd)}));
    let response = serde_json::json!({"type": "response", "step": 1, "text": "", "tool_calls": calls, "usage": {"input_tokens": 1, "output_tokens": 1}});
    let result = serde_json::json!({"type": "tool_result", "step": 1, "id": "c1", "text": "a\n[exit:0 | 1ms]", "exit_code": 0, "duration_ms": 1, "images": []});
    write_run(dir.path(), "k", &[start, context, request, response, result]);
    // Killed while writing a line: the torn line is dropped, not an error.
    let path = dir.path().join("k.jsonl");
    let mut torn = std::fs::read(&path).unwrap();
    torn.extend_from_slice(b"{\"ts_ms\":2,\"type\":\"tool_res");
    std::fs::write(&path, torn).unwrap();

    let run = resumable(dir.path(), "k").unwrap();
    let shape: Vec<(String, Option<String>, bool)> = run
        .messages
        .iter()
        .map(|m| {
            (serde_json::to_value(m.role).unwrap().as_str().unwrap().to_string(), m.tool_call_id.clone(), m.is_error)
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("user".into(), None, false),
            ("assistant".into(), None, false),
            ("tool".into(), Some("c1".into()), false),
            ("tool".into(), Some("c2".into()), true),
        ],
        "every call answered, the unrecorded one with an error"
    );
    assert!(run.messages[3].text.contains("ended before this call's result was recorded"));

    // Reopened, the torn line is cut, so the next record starts its own line.
    let mut t = Trajectory::reopen(dir.path(), "k").unwrap();
    t.record(&Event::Error { message: "next".into() }).unwrap();
    assert!(resumable(dir.path(), "k").is_ok());
    assert_eq!(read_run(dir.path(), "k").unwrap().len(), 6);
}

#[test]
fn a_run_that_cannot_be_resumed_is_an_error_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let start = serde_json::json!({"type": "start", "run_id": "x", "task": "t", "provider": "p", "model": "m", "workspace": "/w"});
    let context = serde_json::json!({"type": "context", "system": "s", "tools": [], "messages": []});
    write_run(dir.path(), "never", std::slice::from_ref(&start));
    let damaged = write_run(dir.path(), "damaged", &[start, context.clone()]);
    let text = std::fs::read_to_string(&damaged).unwrap();
    std::fs::write(&damaged, format!("{{not json\n{text}")).unwrap();
    // A caller tells the cases apart by the error's variant; the person
    // reads its message, which names the file and what to do.
    let e = resumable(dir.path(), "missing").unwrap_err();
    assert!(matches!(&e, RunError::Unreadable { path, .. } if path.ends_with("missing.jsonl")), "{e}");
    let e = resumable(dir.path(), "never").unwrap_err();
    assert!(matches!(&e, RunError::NeverAsked { id, .. } if id == "never"), "{e}");
    assert!(e.to_string().contains("never reached the model"), "{e}");
    let e = resumable(dir.path(), "damaged").unwrap_err();
    assert!(matches!(&e, RunError::Damaged { problem, .. } if problem.starts_with("is damaged at line 1")), "{e}");
    assert!(e.to_string().contains("damaged.jsonl is damaged at line 1"), "{e}");
    let e = clix_agent::resumable_before(dir.path(), "never", 3).unwrap_err();
    assert!(matches!(e, RunError::NeverAsked { .. }), "{e}");
}

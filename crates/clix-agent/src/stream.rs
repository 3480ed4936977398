//! The event stream between agents: one JSON object per line, versioned.
//!
//! `clix ask --jsonl` prints it, `clix ask --input jsonl` and the plan
//! runner read it. Every line is `{v, type, content, metadata}`: `content`
//! is the event's own fields, `metadata` says which agent sent it and in
//! what order. The last line of a finished run is a `result`; a stream that
//! ends without one is a run that died, and readers must treat it as a
//! failure. `docs/events.md` documents it and `docs/events.schema.json`
//! is its JSON Schema, which the tests hold every emitted line to.
//!
//! The trajectory keeps [`Event`] as it is; this is the wire form of the
//! same events, with the run's end as `result` instead of `done`.

use std::path::PathBuf;

use clix_workspace::{Folder, Snapshot};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::events::Event;
use crate::provider::Usage;
use crate::stop::{RunSummary, StopReason};
use crate::trajectory::{now_ms, rfc3339};

/// The stream's version, in every line's `v`. A change that renames or
/// removes a field, or changes a meaning, is a new version.
pub const STREAM_VERSION: u32 = 1;

/// One line of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEvent {
    /// [`STREAM_VERSION`].
    pub v: u32,
    /// The event's kind: `start`, `text`, `tool_call`, … and `result` last.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's own fields.
    pub content: Value,
    /// Who sent it and when.
    pub metadata: StreamMeta,
}

/// Every line's `metadata`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamMeta {
    /// The agent: its run id, or its task id inside a plan.
    pub agent_id: String,
    /// From 1, one more on every line of this agent.
    pub seq: u64,
    /// When the line was made, RFC 3339 UTC with milliseconds.
    pub ts: String,
    /// The plan the agent runs in, when it runs in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
}

/// A file the agent created, changed or removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Relative to the workspace.
    pub path: String,
    /// `created`, `modified` or `deleted`.
    pub change: String,
    /// Its size now (0 when deleted).
    pub bytes: u64,
}

/// The most files an artifact listing walks: past it, changes go unseen
/// (a tree that large is a repository, not an agent's output).
const ARTIFACT_WALK_LIMIT: usize = 20_000;

/// Watches folders over a run to list what the run changed in them.
pub struct ArtifactWatch {
    folder: Folder,
    places: Vec<(PathBuf, Snapshot)>,
}

impl ArtifactWatch {
    /// Lists `places` (relative to `folder`; `""` for all of it) now.
    pub fn start(folder: &Folder, places: &[PathBuf]) -> ArtifactWatch {
        let places = places.iter().map(|p| (p.clone(), folder.snapshot(p, ARTIFACT_WALK_LIMIT))).collect();
        ArtifactWatch { folder: folder.clone(), places }
    }

    /// What changed since [`ArtifactWatch::start`], paths relative to the folder.
    pub fn finish(&self) -> Vec<Artifact> {
        let mut out = Vec::new();
        for (place, before) in &self.places {
            let after = self.folder.snapshot(place, ARTIFACT_WALK_LIMIT);
            out.extend(before.changes(&after).into_iter().map(|(path, change, bytes)| Artifact {
                path: path.to_string_lossy().into_owned(),
                change: change.label().into(),
                bytes,
            }));
        }
        out
    }
}

/// The `result` line's content: how the run ended and what it left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The run did not end with an answer (a budget, an interrupt, an error).
    pub is_error: bool,
    /// Why it ended (`answered`, `max_steps`, …, `error: <message>`).
    pub stop_reason: StopReason,
    /// The model's last text.
    pub answer: String,
    /// Model calls with tools offered.
    pub steps: u32,
    /// Tokens of the whole run, the input's cached part included.
    pub usage: Usage,
    /// What the run cost at the prices set for its model (`agent.prices`);
    /// absent when none are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Files created, changed or removed in the agent's namespace.
    pub artifacts: Vec<Artifact>,
    /// The run's trajectory id (`clix replay <id>`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl RunResult {
    /// Its artifacts as a model reads them, one `- path (change, N bytes)` line each.
    pub fn artifact_lines(&self) -> String {
        self.artifacts.iter().map(|a| format!("- {} ({}, {} bytes)\n", a.path, a.change, a.bytes)).collect()
    }

    /// The result of a run as its summary tells it.
    pub fn new(summary: &RunSummary, duration_ms: u64, artifacts: Vec<Artifact>) -> RunResult {
        RunResult {
            is_error: summary.stop_reason != StopReason::Answered,
            stop_reason: summary.stop_reason.clone(),
            answer: summary.answer.clone(),
            steps: summary.steps,
            usage: summary.usage,
            cost: summary.cost,
            duration_ms,
            artifacts,
            run_id: summary.run_id.clone(),
        }
    }
}

/// Turns one agent's events into stream lines, numbering them.
#[derive(Debug, Clone)]
pub struct StreamWriter {
    agent_id: String,
    parent_id: Option<String>,
    seq: u64,
}

impl StreamWriter {
    /// The stream of `agent_id`, inside plan `parent_id` if any.
    pub fn new(agent_id: impl Into<String>, parent_id: Option<String>) -> StreamWriter {
        StreamWriter { agent_id: agent_id.into(), parent_id, seq: 0 }
    }

    /// Names the agent once it is known (a run id comes with `start`).
    pub fn set_agent_id(&mut self, agent_id: impl Into<String>) {
        self.agent_id = agent_id.into();
    }

    /// The line for `event`; `None` for what stays in the trajectory only
    /// (`context`, `request`, `annotation`) and for `done`, which
    /// [`StreamWriter::result`] replaces.
    pub fn event(&mut self, event: &Event) -> Option<StreamEvent> {
        if matches!(
            event,
            Event::Context { .. }
                | Event::Request { .. }
                | Event::Tail { .. }
                | Event::Annotation { .. }
                | Event::Done { .. }
        ) {
            return None;
        }
        let Ok(Value::Object(mut fields)) = serde_json::to_value(event) else {
            return None;
        };
        let kind = match fields.remove("type") {
            Some(Value::String(kind)) => kind,
            _ => return None,
        };
        Some(self.line(kind, Value::Object(fields)))
    }

    /// The last line of a finished run.
    pub fn result(&mut self, result: &RunResult) -> StreamEvent {
        let content = serde_json::to_value(result).unwrap_or_else(|_| Value::Object(Map::new()));
        self.line("result".into(), content)
    }

    /// A line of any kind (the plan runner's own `plan_*` lines).
    pub fn line(&mut self, kind: String, content: Value) -> StreamEvent {
        self.seq += 1;
        StreamEvent {
            v: STREAM_VERSION,
            kind,
            content,
            metadata: StreamMeta {
                agent_id: self.agent_id.clone(),
                seq: self.seq,
                ts: rfc3339(now_ms()),
                parent_id: self.parent_id.clone(),
            },
        }
    }
}

/// The two lines of a run that never started because its upstream failed
/// (`why`): an `error` and a failed `result`, so the next agent of a chain
/// stops too.
pub fn not_started(why: &str, duration_ms: u64) -> [StreamEvent; 2] {
    let mut writer = StreamWriter::new(crate::trajectory::process_stamp(), None);
    let summary = RunSummary {
        run_id: None,
        stop_reason: StopReason::Error(format!("upstream: {why}")),
        answer: String::new(),
        steps: 0,
        usage: crate::Usage::default(),
        cost: None,
    };
    [
        writer.line("error".into(), serde_json::json!({ "message": format!("not started: {why}") })),
        writer.result(&RunResult::new(&summary, duration_ms, Vec::new())),
    ]
}

/// What an upstream stream delivered to the agent reading it.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// The upstream agent's `result`.
    pub result: RunResult,
    /// Its agent id.
    pub agent_id: String,
    /// Every line, in order.
    pub events: Vec<StreamEvent>,
}

/// Why an upstream stream cannot be used: the downstream agent stops
/// without calling a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// Nothing was piped.
    #[error("--input jsonl needs an upstream stream on stdin: clix ask --jsonl … | clix ask --input jsonl …")]
    Missing,
    /// The bytes piped are not text.
    #[error("the upstream stream is not UTF-8 text")]
    NotText,
    /// A line is not a stream event of this version.
    #[error("line {line} of the upstream stream is not a clix event (v{STREAM_VERSION}): {why}")]
    BadLine {
        /// From 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The stream ended without a `result`: the upstream run died.
    #[error(
        "the upstream stream ended without a `result` line ({0} lines): the upstream agent did not finish \
         (killed or crashed); run it again"
    )]
    NoResult(usize),
    /// The upstream run ended without an answer.
    #[error("the upstream agent failed ({stop_reason}); its answer: {answer}")]
    Failed {
        /// Why it stopped.
        stop_reason: StopReason,
        /// Where it stood.
        answer: String,
    },
}

/// The upstream stream piped on stdin (`--input jsonl`), read whole.
pub fn upstream_of(piped: Option<&[u8]>) -> Result<Upstream, UpstreamError> {
    let text = std::str::from_utf8(piped.ok_or(UpstreamError::Missing)?).map_err(|_| UpstreamError::NotText)?;
    read_upstream(text)
}

/// Reads an upstream stream (the whole of it: the upstream run's stdout).
pub fn read_upstream(text: &str) -> Result<Upstream, UpstreamError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let event: StreamEvent =
            serde_json::from_str(line).map_err(|e| UpstreamError::BadLine { line: i + 1, why: e.to_string() })?;
        if event.v != STREAM_VERSION {
            return Err(UpstreamError::BadLine { line: i + 1, why: format!("version {} is not supported", event.v) });
        }
        events.push(event);
    }
    let last = events.iter().rposition(|e| e.kind == "result").ok_or(UpstreamError::NoResult(events.len()))?;
    let result: RunResult = serde_json::from_value(events[last].content.clone())
        .map_err(|e| UpstreamError::BadLine { line: last + 1, why: format!("its result: {e}") })?;
    if result.is_error {
        return Err(UpstreamError::Failed { stop_reason: result.stop_reason, answer: result.answer });
    }
    Ok(Upstream { agent_id: events[last].metadata.agent_id.clone(), result, events })
}

impl Upstream {
    /// The context a downstream agent's task gets: the upstream answer and
    /// the files it left; with `all_events`, what it did too, the longest
    /// pieces shortened so the whole fits in `budget` bytes.
    pub fn context(&self, all_events: bool, budget: usize) -> String {
        let mut out =
            format!("An upstream agent ({}) finished before you. Its answer:\n{}\n", self.agent_id, self.result.answer);
        if !self.result.artifacts.is_empty() {
            out.push_str("\nFiles it created or changed:\n");
            out.push_str(&self.result.artifact_lines());
        }
        if all_events {
            out.push_str("\nWhat it did, in order:\n");
            let steps: Vec<String> = self.events.iter().filter_map(summarize).collect();
            let room = budget.saturating_sub(out.len());
            out.push_str(&fit(&steps, room));
        }
        out
    }
}

/// One line of the upstream's history for a downstream prompt: its calls
/// and their results, not the streamed text pieces.
fn summarize(event: &StreamEvent) -> Option<String> {
    let field = |name: &str| event.content.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
    match event.kind.as_str() {
        "tool_call" => Some(format!("$ {}", field("command"))),
        "tool_result" => Some(field("text")),
        "response" if !field("text").is_empty() => Some(format!("(said) {}", field("text"))),
        "error" => Some(format!("(error) {}", field("message"))),
        _ => None,
    }
}

/// `items` joined, each cut to an equal share of `room` when all do not fit.
fn fit(items: &[String], room: usize) -> String {
    let total: usize = items.iter().map(|s| s.len() + 1).sum();
    if total <= room {
        return items.iter().map(|s| format!("{s}\n")).collect();
    }
    let share = (room / items.len().max(1)).max(40);
    let mut out = String::new();
    for item in items {
        if out.len() + share > room {
            out.push_str(&format!("… ({} more lines left out)\n", items.len() - out.lines().count()));
            break;
        }
        if item.len() <= share {
            out.push_str(item);
        } else {
            let cut = item.char_indices().map(|(i, _)| i).take_while(|i| *i <= share.saturating_sub(12)).last();
            out.push_str(&item[..cut.unwrap_or(0)]);
            out.push_str(" …(cut)");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(stop: StopReason) -> RunSummary {
        RunSummary {
            run_id: Some("r1".into()),
            stop_reason: stop,
            answer: "42".into(),
            steps: 2,
            usage: Usage { input_tokens: 10, output_tokens: 3, ..Usage::default() },
            cost: None,
        }
    }

    #[test]
    fn lines_are_numbered_and_done_becomes_result() {
        let mut w = StreamWriter::new("r1", Some("plan-a".into()));
        let text = w.event(&Event::Text { text: "hi".into() }).unwrap();
        assert_eq!((text.kind.as_str(), text.content["text"].as_str(), text.metadata.seq), ("text", Some("hi"), 1));
        let done = Event::Done {
            stop_reason: StopReason::Answered,
            answer: "42".into(),
            steps: 2,
            usage: Usage { input_tokens: 1, output_tokens: 1, ..Usage::default() },
            cost: None,
        };
        assert!(w.event(&done).is_none());
        let result = w.result(&RunResult::new(&summary(StopReason::Answered), 5, vec![]));
        assert_eq!((result.kind.as_str(), result.metadata.seq), ("result", 2));
        assert_eq!(result.metadata.parent_id.as_deref(), Some("plan-a"));
        assert!(result.metadata.ts.ends_with('Z') && result.metadata.ts.contains('T'), "{}", result.metadata.ts);
    }

    #[test]
    fn an_upstream_without_a_result_or_with_an_error_is_refused() {
        let mut w = StreamWriter::new("up", None);
        let start = serde_json::to_string(&w.event(&Event::Text { text: "x".into() }).unwrap()).unwrap();
        assert_eq!(read_upstream(&start), Err(UpstreamError::NoResult(1)));
        let failed =
            serde_json::to_string(&w.result(&RunResult::new(&summary(StopReason::MaxSteps), 1, vec![]))).unwrap();
        assert!(matches!(read_upstream(&format!("{start}\n{failed}\n")), Err(UpstreamError::Failed { .. })));
        let ok = serde_json::to_string(&w.result(&RunResult::new(&summary(StopReason::Answered), 1, vec![]))).unwrap();
        let up = read_upstream(&format!("{start}\n{ok}\n")).unwrap();
        assert_eq!((up.result.answer.as_str(), up.agent_id.as_str(), up.events.len()), ("42", "up", 2));
        let bad = read_upstream("{\"type\": \"text\"}").unwrap_err();
        assert!(matches!(bad, UpstreamError::BadLine { line: 1, .. }), "{bad}");
        assert!(matches!(read_upstream("not json"), Err(UpstreamError::BadLine { line: 1, .. })));
    }

    #[test]
    fn the_history_is_cut_to_fit() {
        let items: Vec<String> = (0..50).map(|i| format!("{i} {}", "x".repeat(500))).collect();
        let out = fit(&items, 4000);
        assert!(out.len() <= 4000 && out.lines().count() == 50, "{}", out.len());
        assert!(out.lines().all(|l| l.ends_with("(cut)")), "{out}");
        // Too many for even a short piece each: the rest is counted.
        let many: Vec<String> = (0..500).map(|i| format!("{i} {}", "y".repeat(100))).collect();
        let out = fit(&many, 4000);
        assert!(out.len() <= 4000 + 40, "{}", out.len());
        assert!(out.trim_end().ends_with("more lines left out)"), "{out}");
        let small = vec!["a".to_string(), "b".to_string()];
        assert_eq!(fit(&small, 100), "a\nb\n");
    }
}

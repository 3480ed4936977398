//! Every run is a trajectory: a JSON-lines file, appended and flushed event
//! by event, so a killed process loses at most the step in flight.
//!
//! Besides the events a run shows, the file holds what the model was given
//! (`context` when a task begins and after compaction, `request` per model
//! call), so a run can be reproduced from it. No secret reaches it: every
//! string is scrubbed of the process's secret store, of the keys the
//! agent was handed ([`Trajectory::hide`]) and of the values the model set
//! in the browser (a cookie, a stored token) before the line is written.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use clix_common::Secret;
use serde::{Deserialize, Serialize};

use crate::events::Event;
use crate::message::{Message, Role};
use crate::provider::Usage;
use crate::stop::StopReason;

/// One line of a trajectory file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// When it was written, in milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// What happened; its `type` field names the kind.
    #[serde(flatten)]
    pub event: Event,
}

/// An open run file, written record by record.
pub struct Trajectory {
    /// The run's id: the file's name without `.jsonl` (`clix replay <id>`).
    pub id: String,
    /// The file itself.
    pub path: PathBuf,
    file: File,
    /// Values shown as `***` besides the secret store's.
    hidden: Vec<Secret>,
}

impl Trajectory {
    /// A new run file `<runs_dir>/<id>.jsonl`; the id sorts by start time.
    /// Runs started in the same second by one process (the eval harness's
    /// parallel attempts) get `-2`, `-3`, … after the id.
    pub fn create(runs_dir: &Path) -> std::io::Result<Self> {
        Self::create_named(runs_dir, &process_stamp())
    }

    /// A new run file named after `stem` (`<stem>.jsonl`, else
    /// `<stem>-2.jsonl`, …): never an existing file.
    pub fn create_named(runs_dir: &Path, stem: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(runs_dir)?;
        for n in 1u32.. {
            let id = if n == 1 { stem.to_string() } else { format!("{stem}-{n}") };
            let path = runs_dir.join(format!("{id}.jsonl"));
            match OpenOptions::new().create_new(true).append(true).open(&path) {
                Ok(file) => return Ok(Trajectory { id, path, file, hidden: Vec::new() }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free run file name"))
    }

    /// Run `id`'s file, opened to append a resumed run's records after its
    /// own. A torn last line (the process was killed while writing it) is
    /// cut first, so the next record starts a line of its own.
    pub fn reopen(runs_dir: &Path, id: &str) -> std::io::Result<Self> {
        let path = runs_dir.join(format!("{id}.jsonl"));
        let mut file = OpenOptions::new().read(true).append(true).open(&path)?;
        let whole = whole_lines_len(&mut file)?;
        if whole < file.metadata()?.len() {
            file.set_len(whole)?;
        }
        Ok(Trajectory { id: id.to_string(), path, file, hidden: Vec::new() })
    }

    /// Shows `value` as `***` wherever it would appear (a key from a config
    /// file or a caller, which the process's secret store does not hold).
    /// Values shorter than 8 bytes are ignored: they would match ordinary text.
    pub fn hide(&mut self, value: &str) {
        if value.len() >= HIDE_MIN_LEN && !self.hidden.iter().any(|h| h.expose() == value) {
            self.hidden.push(Secret::new(value));
        }
    }

    /// Appends `event`, secrets hidden (a kept reply's `text` is left out:
    /// the same words are in its `response`).
    pub fn record(&mut self, event: &Event) -> std::io::Result<()> {
        if matches!(event, Event::Text { .. }) {
            return Ok(());
        }
        let record = RecordRef { ts_ms: now_ms(), event };
        let mut value = serde_json::to_value(&record)?;
        self.hide_browser_values(&value);
        let mut line = if redact(&mut value, &self.hidden) {
            // Back through the type, so the fields keep their order (a
            // `Value`'s are sorted); as it is if a secret was a tag's value.
            match Record::deserialize(&value) {
                Ok(clean) => serde_json::to_vec(&clean)?,
                Err(_) => serde_json::to_vec(&value)?,
            }
        } else {
            serde_json::to_vec(&record)?
        };
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

impl Trajectory {
    /// Hides, from this record on, every value a `browser cookies set` or
    /// `browser storage … set` in `value`'s strings sets (a session or a
    /// token, as often as not; the audit log hides them too). The first
    /// record to hold one is the model's reply that calls it. Values
    /// shorter than [`HIDE_MIN_LEN`] stay, as for [`Trajectory::hide`].
    fn hide_browser_values(&mut self, value: &serde_json::Value) {
        match value {
            serde_json::Value::String(text) if text.contains("browser") => {
                for set in clix_audit::browser_values(text) {
                    self.hide(set);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| self.hide_browser_values(v)),
            serde_json::Value::Object(fields) => fields.values().for_each(|v| self.hide_browser_values(v)),
            _ => {}
        }
    }
}

/// The shortest value [`Trajectory::hide`] takes.
const HIDE_MIN_LEN: usize = 8;

/// [`Record`] to be written, without copying the event.
#[derive(Serialize)]
struct RecordRef<'a> {
    ts_ms: u64,
    #[serde(flatten)]
    event: &'a Event,
}

/// Replaces the secret store's values, `hidden`, and every secret-shaped
/// value ([`clix_common::redact_text`]: tokens, `Authorization:`
/// credentials, URL passwords) by `***` in every string of `value`;
/// whether it changed anything. Done on the parsed strings, not the JSON
/// text, so a value that JSON would escape is still found.
fn redact(value: &mut serde_json::Value, hidden: &[Secret]) -> bool {
    match value {
        serde_json::Value::String(text) => {
            let mut clean = match clix_config::secrets::scrub(text) {
                std::borrow::Cow::Borrowed(_) => None,
                std::borrow::Cow::Owned(scrubbed) => Some(scrubbed),
            };
            for secret in hidden {
                let current = clean.as_deref().unwrap_or(text);
                if current.contains(secret.expose()) {
                    clean = Some(current.replace(secret.expose(), "***"));
                }
            }
            let current = clean.as_deref().unwrap_or(text);
            let shaped = clix_common::redact_text(current);
            if shaped != current {
                clean = Some(shaped);
            }
            match clean {
                Some(clean) => {
                    *text = clean;
                    true
                }
                None => false,
            }
        }
        // Every item is visited (no short cut at the first change).
        serde_json::Value::Array(items) => items.iter_mut().map(|v| redact(v, hidden)).fold(false, |a, b| a | b),
        serde_json::Value::Object(fields) => fields.values_mut().map(|v| redact(v, hidden)).fold(false, |a, b| a | b),
        _ => false,
    }
}

/// A run as `clix runs list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// The run's id (`clix replay <id>`).
    pub id: String,
    /// The task it was given (its first, when it was resumed).
    pub task: String,
    /// Why it ended; `None` while it runs or if it was killed.
    pub stop_reason: Option<StopReason>,
    /// Steps taken by all its tasks (a resumed run's or a chat's), an
    /// unfinished task's to its last recorded one.
    pub steps: u32,
    /// The model it asked.
    pub model: String,
    /// The folder it worked in.
    pub workspace: String,
    /// Tokens of every model call it made (each task's, in a chat, and the
    /// calls that summarized it: compaction, the session's summary), the
    /// input's cached part included.
    pub usage: Usage,
    /// What those calls cost at the prices set for its model when they
    /// ran; `None` when no price was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Its conversation reached the model, so `clix ask --resume` can go on with it.
    pub resumable: bool,
    /// When its file was last written, in milliseconds since the Unix epoch.
    pub updated_ms: u64,
}

/// Every run in `runs_dir`, oldest first.
pub fn list_runs(runs_dir: &Path) -> Vec<RunInfo> {
    run_ids(runs_dir)
        .into_iter()
        .map(|id| {
            let records = read_run(runs_dir, &id).unwrap_or_default();
            let mut info = RunInfo {
                id,
                task: String::new(),
                stop_reason: None,
                steps: 0,
                model: String::new(),
                workspace: String::new(),
                usage: Usage::default(),
                cost: None,
                resumable: false,
                updated_ms: 0,
            };
            // Steps of the tasks that ended, and of the one under way.
            let (mut ended_steps, mut open_steps) = (0, 0);
            let add_cost = |info: &mut RunInfo, cost: Option<f64>| {
                if let Some(cost) = cost {
                    info.cost = Some(info.cost.unwrap_or(0.0) + cost);
                }
            };
            for r in records {
                info.updated_ms = r.ts_ms;
                match r.event {
                    Event::Start { task, model, workspace, .. } => {
                        if info.task.is_empty() {
                            info.task = task;
                        }
                        (info.model, info.workspace) = (model, workspace);
                    }
                    Event::Context { .. } => info.resumable = true,
                    // Summed call by call, so a run that was killed still counts.
                    Event::Response { step, usage, .. } => {
                        open_steps = open_steps.max(step);
                        info.usage.add(usage);
                    }
                    Event::Compacted { usage, cost, .. } | Event::Remembered { usage, cost, .. } => {
                        info.usage.add(usage);
                        add_cost(&mut info, cost);
                    }
                    Event::Done { stop_reason, steps, cost, .. } => {
                        info.stop_reason = Some(stop_reason);
                        ended_steps += steps;
                        open_steps = 0;
                        add_cost(&mut info, cost);
                    }
                    _ => {}
                }
            }
            info.steps = ended_steps + open_steps;
            info
        })
        .collect()
}

/// The records of run `id`; a torn last line (the process was killed while
/// writing it) is skipped, everything before it is kept.
pub fn read_run(runs_dir: &Path, id: &str) -> std::io::Result<Vec<Record>> {
    let path = runs_dir.join(format!("{id}.jsonl"));
    let file = File::open(&path).map_err(|e| {
        std::io::Error::new(e.kind(), format!("no run {id} in {} ({e}); see clix runs list", runs_dir.display()))
    })?;
    Ok(BufReader::new(file).lines().map_while(Result::ok).filter_map(|l| serde_json::from_str(&l).ok()).collect())
}

/// A run's conversation, rebuilt from its file to be continued.
#[derive(Debug, Clone, PartialEq)]
pub struct Resumable {
    /// The run's id.
    pub id: String,
    /// Its file.
    pub path: PathBuf,
    /// The folder it worked in.
    pub workspace: String,
    /// The conversation after the system prompt, as the model last had it
    /// (after a compaction, from its summary on) and what followed its
    /// last call.
    pub messages: Vec<Message>,
    /// When cut before a step ([`resumable_before`]): the first checkpoint
    /// step (the run's call number) of the calls cut off, from which the
    /// workspace is put back; `None` when they changed nothing.
    pub undo_from: Option<u32>,
}

/// Run `id`'s conversation: its last `context`, the `request` records
/// since and its `tail`. A run killed before writing its tail gets the
/// replies and results recorded after its last call instead, and a call
/// with no recorded result an error result, as a model API requires one
/// per call. Every line must read (a torn last one aside): a damaged file
/// is an error naming it and the line.
pub fn resumable(runs_dir: &Path, id: &str) -> Result<Resumable, RunError> {
    read_resumable(runs_dir, id, None)
}

/// Run `id`'s conversation as it was when the model was asked for step
/// `step` (`clix ask --resume RUN --from-step N`, chat's `/rewind N`): the
/// steps from `step` on are cut off, and `undo_from` says from which
/// checkpoint the workspace goes back with them.
pub fn resumable_before(runs_dir: &Path, id: &str, step: u32) -> Result<Resumable, RunError> {
    read_resumable(runs_dir, id, Some(step))
}

fn read_resumable(runs_dir: &Path, id: &str, before_step: Option<u32>) -> Result<Resumable, RunError> {
    let cut = |step: u32| before_step.is_some_and(|n| step >= n);
    let mut past = false;
    let mut undo_from: Option<u32> = None;
    let path = runs_dir.join(format!("{id}.jsonl"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(source) => return Err(RunError::Unreadable { path, source }),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut workspace = None;
    let mut messages: Option<Vec<Message>> = None;
    let mut unsettled: Vec<Event> = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let record: Record = match serde_json::from_str(line) {
            Ok(record) => record,
            Err(_) if n + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => {
                let problem = format!(
                    "is damaged at line {} ({e}); it cannot be resumed (clix replay {id} shows what it holds)",
                    n + 1
                );
                return Err(RunError::Damaged { id: id.to_string(), path, problem });
            }
        };
        let step = match &record.event {
            Event::Request { step, .. } | Event::Response { step, .. } | Event::ToolResult { step, .. } => Some(*step),
            _ => None,
        };
        past |= step.is_some_and(cut);
        if past {
            // Cut off: only which checkpoints the cut calls made.
            if let Event::ToolResult { changes: Some(set), .. } = &record.event {
                undo_from = Some(undo_from.map_or(set.step, |from| from.min(set.step)));
            }
            continue;
        }
        match record.event {
            Event::Start { workspace: w, .. } => workspace = Some(w),
            Event::Context { messages: all, .. } => {
                messages = Some(all);
                unsettled.clear();
            }
            Event::Request { added, .. } | Event::Tail { added } => {
                let Some(messages) = messages.as_mut() else {
                    let problem = "has a request before any context".to_string();
                    return Err(RunError::Damaged { id: id.to_string(), path, problem });
                };
                messages.extend(added);
                unsettled.clear();
            }
            event @ (Event::Response { .. } | Event::ToolResult { .. }) => unsettled.push(event),
            _ => {}
        }
    }
    let Some(mut messages) = messages else {
        return Err(RunError::NeverAsked { id: id.to_string(), path });
    };
    messages.extend(settle(unsettled));
    let Some(workspace) = workspace else {
        let problem = "has no start record".to_string();
        return Err(RunError::Damaged { id: id.to_string(), path, problem });
    };
    if let Some(step) = before_step
        && !past
    {
        return Err(RunError::NoStep { id: id.to_string(), step });
    }
    Ok(Resumable { id: id.to_string(), path, workspace, messages, undo_from })
}

/// The messages a run without its `tail` gained after its last call: its
/// last reply, the results recorded, an error result for each call left
/// without one.
fn settle(events: Vec<Event>) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut answered = std::collections::HashSet::new();
    let mut calls = Vec::new();
    for event in events {
        match event {
            Event::Response { text, tool_calls, .. } => {
                calls.clone_from(&tool_calls);
                messages.push(Message { tool_calls, ..Message::new(Role::Assistant, text) });
            }
            Event::ToolResult { id, text, exit_code, .. } => {
                answered.insert(id.clone());
                messages.push(Message::tool_result(&id, text, exit_code != 0));
            }
            _ => {}
        }
    }
    for call in calls.iter().filter(|c| !answered.contains(&c.id)) {
        messages.push(Message::tool_result(
            &call.id,
            "[error] the run ended before this call's result was recorded",
            true,
        ));
    }
    messages
}

/// The run of `workspace` written to last that can be resumed.
pub fn latest_resumable(runs_dir: &Path, workspace: &str) -> Result<String, RunError> {
    list_runs(runs_dir)
        .into_iter()
        .filter(|r| r.resumable && r.workspace == workspace)
        .max_by_key(|r| r.updated_ms)
        .map(|r| r.id)
        .ok_or_else(|| RunError::NoneToContinue { workspace: workspace.to_string() })
}

/// The ids of the runs in `runs_dir`, oldest first (an id starts with its time).
fn run_ids(runs_dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(runs_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".jsonl").map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// The run a person names: `last` (the newest), a whole id, or the start
/// of exactly one id (`20261204-1812`). The error says what there is.
pub fn find_run(runs_dir: &Path, named: &str) -> Result<String, RunError> {
    let ids = run_ids(runs_dir);
    if named == "last" {
        return ids.last().cloned().ok_or_else(|| RunError::NoRuns { dir: runs_dir.to_path_buf() });
    }
    if ids.iter().any(|id| id == named) {
        return Ok(named.to_string());
    }
    let matching: Vec<&String> = ids.iter().filter(|id| id.starts_with(named)).collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(RunError::NoSuchRun { named: named.to_string(), dir: runs_dir.to_path_buf() }),
        many => {
            Err(RunError::Ambiguous { named: named.to_string(), ids: many.iter().map(|id| id.to_string()).collect() })
        }
    }
}

/// Why a run could not be found or read back; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Its file could not be read.
    #[error("cannot read the run file {}: {source}", path.display())]
    Unreadable {
        /// The run file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its file does not hold a run that can be resumed.
    #[error("the run file {} {problem}", path.display())]
    Damaged {
        /// The run.
        id: String,
        /// Its file.
        path: std::path::PathBuf,
        /// What is wrong, and where (`is damaged at line 3 (…); …`).
        problem: String,
    },
    /// It ended before its first model call.
    #[error("run {id} never reached the model ({} has no context record): start a new one", path.display())]
    NeverAsked {
        /// The run.
        id: String,
        /// Its file.
        path: std::path::PathBuf,
    },
    /// It has no such step to go back to.
    #[error("run {id} has no step {step}: `clix replay {id}` shows its steps")]
    NoStep {
        /// The run.
        id: String,
        /// The step asked for.
        step: u32,
    },
    /// No run of this workspace can be continued.
    #[error("no run to continue in {workspace} (clix runs lists the runs; start one with clix ask \"…\")")]
    NoneToContinue {
        /// The workspace.
        workspace: String,
    },
    /// There are no runs at all.
    #[error("no runs yet in {}", dir.display())]
    NoRuns {
        /// Where runs are kept.
        dir: std::path::PathBuf,
    },
    /// No run has that id or starts with it.
    #[error("no run {named} in {}; see clix runs list (or name the run `last`)", dir.display())]
    NoSuchRun {
        /// As the person named it.
        named: String,
        /// Where runs are kept.
        dir: std::path::PathBuf,
    },
    /// More than one run starts with it.
    #[error(
        "{named} starts {} runs ({}{}); give more of the id",
        ids.len(),
        ids.iter().take(5).map(String::as_str).collect::<Vec<_>>().join(", "),
        if ids.len() > 5 { ", …" } else { "" }
    )]
    Ambiguous {
        /// As the person named it.
        named: String,
        /// The runs it starts.
        ids: Vec<String>,
    },
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The length of `file` up to and including its last newline: what is left
/// when a torn last line is cut. Read backwards a block at a time, since
/// a run file can be large and only its end matters.
fn whole_lines_len(file: &mut File) -> std::io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut end = file.metadata()?.len();
    let mut block = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        block.resize((end - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        if let Some(at) = block.iter().rposition(|&b| b == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// `20261130-034512-4242`: now, and this process's id; names a run (and a
/// plan, or a stream with no run) that sorts by time and never collides
/// with another clix started in the same second.
pub fn process_stamp() -> String {
    format!("{}-{}", timestamp_id(now_ms() / 1000), std::process::id())
}

/// `20261130-034512` (UTC) from Unix seconds: run ids and other names that sort by time.
pub fn timestamp_id(secs: u64) -> String {
    let (year, month, day, hour, minute, second) = civil(secs);
    format!("{year:04}{month:02}{day:02}-{hour:02}{minute:02}{second:02}")
}

/// `2026-11-30T03:45:12.345Z` from Unix milliseconds: the stream's timestamps.
pub fn rfc3339(ms: u64) -> String {
    let (year, month, day, hour, minute, second) = civil(ms / 1000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{:03}Z", ms % 1000)
}

/// The UTC calendar date and time of Unix seconds (Howard Hinnant's
/// civil-from-days).
fn civil(secs: u64) -> (i64, i64, i64, u64, u64, u64) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resumed run lists its whole run: the steps of every task, and the
    /// tokens and cost of every call, the summaries' included.
    #[test]
    fn a_run_is_listed_with_the_totals_of_all_its_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let usage = |input, output| Usage { input_tokens: input, output_tokens: output, ..Usage::default() };
        let start = |task: &str| Event::Start {
            run_id: "r".into(),
            task: task.into(),
            provider: "OpenAi".into(),
            model: "m".into(),
            workspace: "/w".into(),
        };
        let response =
            |step, input| Event::Response { step, text: String::new(), tool_calls: vec![], usage: usage(input, 1) };
        let done = |steps, cost| Event::Done {
            stop_reason: StopReason::Answered,
            answer: String::new(),
            steps,
            usage: Usage::default(),
            cost: Some(cost),
        };
        let events = [
            start("first"),
            response(1, 10),
            response(2, 20),
            done(2, 0.5),
            Event::Compacted { messages_removed: 3, summary: "s".into(), usage: usage(5, 5), cost: Some(0.25) },
            start("second"),
            response(1, 30),
            done(1, 1.0),
            start("third, killed"),
            response(1, 40),
            Event::Remembered {
                id: 1,
                kind: "summary".into(),
                text: "t".into(),
                usage: usage(7, 3),
                cost: Some(0.125),
            },
        ];
        let lines: Vec<String> =
            events.into_iter().map(|event| serde_json::to_string(&Record { ts_ms: 1, event }).unwrap()).collect();
        std::fs::write(dir.path().join("20261207-000000-1.jsonl"), lines.join("\n") + "\n").unwrap();
        let runs = list_runs(dir.path());
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        assert_eq!(run.task, "first");
        assert_eq!(run.steps, 4, "2 + 1 + the killed task's 1");
        assert_eq!((run.usage.input_tokens, run.usage.output_tokens), (112, 12));
        assert_eq!(run.cost, Some(1.875));
    }

    #[test]
    fn ids_are_utc_timestamps() {
        assert_eq!(timestamp_id(0), "19700101-000000");
        assert_eq!(timestamp_id(1_796_009_595), "20261130-033315");
        assert_eq!(timestamp_id(951_782_400), "20000229-000000");
        assert_eq!(rfc3339(1_796_009_595_007), "2026-11-30T03:33:15.007Z");
    }

    #[test]
    fn hidden_values_never_reach_the_file_even_where_json_escapes_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Trajectory::create(dir.path()).unwrap();
        let quoted = "sk-\"quoted\\key\n";
        t.hide(quoted);
        t.hide("sk-plain-12345");
        t.hide("short");
        t.record(&Event::Error { message: format!("rejected {quoted} and sk-plain-12345; short stays") }).unwrap();
        let line = std::fs::read_to_string(&t.path).unwrap();
        assert!(line.starts_with("{\"ts_ms\":"), "the fields keep their order: {line}");
        let records = read_run(dir.path(), &t.id).unwrap();
        assert_eq!(records[0].event, Event::Error { message: "rejected *** and ***; short stays".into() });
    }

    /// A cookie or stored value the model sets is hidden in the reply that
    /// sets it and in every record after (the page's echo of it included).
    #[test]
    fn values_set_in_the_browser_never_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Trajectory::create(dir.path()).unwrap();
        let command =
            "browser cookies set sid s3ssion-f00d-cafe --url http://h/ && browser storage set tok tkn-0123456789";
        t.record(&Event::ToolCall {
            step: 1,
            id: "c1".into(),
            tool: "run".into(),
            command: command.into(),
            stdin: None,
        })
        .unwrap();
        t.record(&Event::Error { message: "the page said s3ssion-f00d-cafe and tkn-0123456789".into() }).unwrap();
        let file = std::fs::read_to_string(&t.path).unwrap();
        assert!(!file.contains("s3ssion-f00d-cafe") && !file.contains("tkn-0123456789"), "{file}");
        let records = read_run(dir.path(), &t.id).unwrap();
        let Event::ToolCall { command, .. } = &records[0].event else { panic!("{:?}", records[0]) };
        assert_eq!(command, "browser cookies set sid *** --url http://h/ && browser storage set tok ***");
        assert_eq!(records[1].event, Event::Error { message: "the page said *** and ***".into() });
    }

    #[test]
    fn a_file_from_before_context_records_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("old.jsonl"),
            "{\"ts_ms\":1,\"type\":\"start\",\"run_id\":\"old\",\"task\":\"t\",\"provider\":\"OpenAi x\",\"model\":\"m\",\"workspace\":\"/w\"}\n\
             {\"ts_ms\":2,\"type\":\"done\",\"stop_reason\":\"answered\",\"answer\":\"a\",\"steps\":1,\"input_tokens\":1,\"output_tokens\":1}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("old2.jsonl"),
            "{\"ts_ms\":1,\"type\":\"done\",\"stop_reason\":\"error: HTTP 401: bad key\",\"answer\":\"\",\"steps\":0,\"input_tokens\":0,\"output_tokens\":0}\n",
        )
        .unwrap();
        let old = read_run(dir.path(), "old").unwrap();
        assert_eq!(old.len(), 2);
        let Event::Done { usage, cost, .. } = &old[1].event else { panic!("{:?}", old[1]) };
        assert_eq!((usage.input_tokens, usage.cache_read_tokens, *cost), (1, 0, None), "no cached tokens, no cost");
        let runs = list_runs(dir.path());
        assert_eq!((runs[0].task.as_str(), runs[0].stop_reason.as_ref()), ("t", Some(&StopReason::Answered)));
        assert_eq!(runs[1].stop_reason, Some(StopReason::Error("HTTP 401: bad key".into())));
    }

    /// A `done` with its cached tokens and cost reads back as written, also
    /// when a hidden value made the line go through the redaction.
    #[test]
    fn a_done_record_keeps_its_tokens_and_cost() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Trajectory::create(dir.path()).unwrap();
        t.hide("sk-hidden-123");
        let usage = Usage { input_tokens: 1200, output_tokens: 30, cache_read_tokens: 1000, cache_write_tokens: 150 };
        for answer in ["plain", "told sk-hidden-123"] {
            let done = |answer: &str| Event::Done {
                stop_reason: StopReason::Answered,
                answer: answer.into(),
                steps: 2,
                usage,
                cost: Some(0.0123),
            };
            t.record(&done(answer)).unwrap();
            let records = read_run(dir.path(), &t.id).unwrap();
            assert_eq!(records.last().unwrap().event, done(&answer.replace("sk-hidden-123", "***")));
        }
        let line = std::fs::read_to_string(&t.path).unwrap();
        assert!(line.contains("\"input_tokens\":1200,\"output_tokens\":30,\"cache_read_tokens\":1000"), "{line}");
    }

    #[test]
    fn runs_started_in_the_same_second_get_their_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<String> = (0..3).map(|_| Trajectory::create_named(dir.path(), "t").unwrap().id).collect();
        assert_eq!(ids, ["t", "t-2", "t-3"]);
        let first = Trajectory::create(dir.path()).unwrap();
        let second = Trajectory::create(dir.path()).unwrap();
        assert_ne!(first.path, second.path);
    }

    #[test]
    fn a_torn_last_line_loses_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Trajectory::create(dir.path()).unwrap();
        t.record(&Event::Error { message: "one".into() }).unwrap();
        t.record(&Event::Text { text: "not kept".into() }).unwrap();
        t.record(&Event::Error { message: "two".into() }).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&t.path)
            .unwrap()
            .write_all(b"{\"ts_ms\":1,\"type\":\"err")
            .unwrap();
        let records = read_run(dir.path(), &t.id).unwrap();
        let messages: Vec<_> = records.into_iter().map(|r| r.event).collect();
        assert_eq!(messages, vec![Event::Error { message: "one".into() }, Event::Error { message: "two".into() }]);
    }

    #[test]
    fn reopening_cuts_only_a_torn_last_line_however_long() {
        let long = "x".repeat(150 * 1024); // spans three of the blocks read backwards
        let rows: [(String, usize); 5] = [
            (String::new(), 0),
            ("{}\n".into(), 3),
            ("{}\n{\"ts".into(), 3),
            (format!("{{\"a\":\"{long}\"}}\n{long}"), long.len() + 9),
            (long.clone(), 0),
        ];
        for (text, kept) in rows {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("r.jsonl"), &text).unwrap();
            let mut t = Trajectory::reopen(dir.path(), "r").unwrap();
            assert_eq!(std::fs::metadata(&t.path).unwrap().len() as usize, kept, "{}", &text[..text.len().min(12)]);
            t.record(&Event::Error { message: "next".into() }).unwrap();
            let after = std::fs::read_to_string(&t.path).unwrap();
            assert_eq!(&after[..kept], &text[..kept]);
            assert!(after[kept..].starts_with("{\"ts_ms\"") && after.ends_with("\"next\"}\n"), "{}", &after[kept..]);
        }
    }

    #[test]
    fn a_run_is_found_by_last_its_id_or_the_start_of_one() {
        let dir = tempfile::tempdir().unwrap();
        for id in ["20261203-101010-1", "20261204-090000-7", "20261204-093000-8"] {
            std::fs::write(dir.path().join(format!("{id}.jsonl")), "").unwrap();
        }
        let rows: [(&str, Result<&str, &str>); 6] = [
            ("last", Ok("20261204-093000-8")),
            ("20261203-101010-1", Ok("20261203-101010-1")),
            ("20261203", Ok("20261203-101010-1")),
            ("20261204-09", Err("20261204-09 starts 2 runs (20261204-090000-7, 20261204-093000-8); give more")),
            ("2025", Err("no run 2025 in")),
            ("", Err("starts 3 runs")),
        ];
        for (named, want) in rows {
            match (find_run(dir.path(), named), want) {
                (Ok(found), Ok(want)) => assert_eq!(found, want, "{named:?}"),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{named:?}: {e}"),
                (got, want) => panic!("{named:?}: {got:?}, wanted {want:?}"),
            }
        }
        assert!(matches!(find_run(dir.path(), "2025"), Err(RunError::NoSuchRun { .. })));
        assert!(matches!(find_run(dir.path(), ""), Err(RunError::Ambiguous { ids, .. }) if ids.len() == 3));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(find_run(empty.path(), "last"), Err(RunError::NoRuns { .. })));
    }
}

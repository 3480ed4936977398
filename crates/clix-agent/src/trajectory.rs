//! Every run is a trajectory: a JSON-lines file, appended and flushed event
//! by event, so a killed process loses at most the step in flight.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::events::Event;

/// One line of a trajectory file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub ts_ms: u64,
    #[serde(flatten)]
    pub event: Event,
}

pub struct Trajectory {
    pub id: String,
    pub path: PathBuf,
    file: File,
}

impl Trajectory {
    /// A new run file `<runs_dir>/<id>.jsonl`; the id sorts by start time.
    pub fn create(runs_dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(runs_dir)?;
        let id = format!("{}-{}", timestamp_id(now_ms() / 1000), std::process::id());
        let path = runs_dir.join(format!("{id}.jsonl"));
        let file = OpenOptions::new().create_new(true).append(true).open(&path)?;
        Ok(Trajectory { id, path, file })
    }

    /// Appends `event` (streamed text deltas are left out: the whole reply
    /// is recorded as a `response`).
    pub fn record(&mut self, event: &Event) -> std::io::Result<()> {
        if matches!(event, Event::Text { .. }) {
            return Ok(());
        }
        let mut line = serde_json::to_vec(&Record { ts_ms: now_ms(), event: event.clone() })?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

/// A run as `clix runs list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    pub id: String,
    pub task: String,
    pub stop_reason: Option<String>,
    pub steps: u32,
}

/// Every run in `runs_dir`, oldest first.
pub fn list_runs(runs_dir: &Path) -> Vec<RunInfo> {
    let mut ids: Vec<String> = std::fs::read_dir(runs_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".jsonl").map(str::to_string))
        .collect();
    ids.sort();
    ids.into_iter()
        .map(|id| {
            let records = read_run(runs_dir, &id).unwrap_or_default();
            let mut info = RunInfo { id, task: String::new(), stop_reason: None, steps: 0 };
            for r in records {
                match r.event {
                    Event::Start { task, .. } => info.task = task,
                    Event::Response { step, .. } => info.steps = info.steps.max(step),
                    Event::Done { stop_reason, steps, .. } => {
                        info.stop_reason = Some(stop_reason);
                        info.steps = steps;
                    }
                    _ => {}
                }
            }
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

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// `20261130-034512` (UTC) from Unix seconds.
fn timestamp_id(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}-{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_utc_timestamps() {
        assert_eq!(timestamp_id(0), "19700101-000000");
        assert_eq!(timestamp_id(1_796_009_595), "20261130-033315");
        assert_eq!(timestamp_id(951_782_400), "20000229-000000");
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
}

//! A run's output folder: `results.json`, a replay page beside each
//! trajectory in `runs/`, and `report.html` linking to them; and where a
//! run's output goes when no folder is given.

use std::path::{Path, PathBuf};

use crate::{AttemptRecord, Results};

/// Where a run's output goes without `--out`: `<data>/evals/<start time>`.
pub fn default_out(data_dir: &Path) -> PathBuf {
    data_dir.join("evals").join(clix_agent::trajectory::timestamp_id(clix_agent::trajectory::now_ms() / 1000))
}

/// What writing a model run left: the files written, and the replay
/// pages that could not be (each said; the report still links to it).
#[derive(Debug)]
pub struct Written {
    /// `results.json`.
    pub results: PathBuf,
    /// `report.html`.
    pub report: PathBuf,
    /// A line for each replay page that could not be written.
    pub warnings: Vec<String>,
}

/// A model run's `results.json`, a replay page beside each trajectory in
/// `out/runs/`, and `report.html`.
pub fn write_model_run(results: &Results, out: &Path, currency: &str) -> std::io::Result<Written> {
    let json = results.write(out)?;
    let warnings = write_replays(results, &out.join("runs"), currency);
    let report = out.join("report.html");
    let html = crate::html(results, &|r| replay_page(r).map(|p| format!("runs/{p}")));
    std::fs::write(&report, html)?;
    Ok(Written { results: json, report, warnings })
}

/// The replay page of an attempt, named after its trajectory.
fn replay_page(r: &AttemptRecord) -> Option<String> {
    let stem = r.trajectory.as_deref()?.file_stem()?.to_str()?;
    Some(format!("{stem}.html"))
}

/// A replay page beside each trajectory; each that cannot be written is a warning.
fn write_replays(results: &Results, runs_dir: &Path, currency: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    for r in &results.attempts {
        let (Some(page), Some(id)) = (replay_page(r), r.trajectory.as_deref().and_then(Path::file_stem)) else {
            continue;
        };
        let id = id.to_string_lossy();
        let written = clix_agent::read_run(runs_dir, &id).and_then(|records| {
            std::fs::write(runs_dir.join(&page), clix_agent::replay::html_page(&id, &records, currency))
        });
        if let Err(e) = written {
            warnings.push(format!("cannot write the replay of {id}: {e}"));
        }
    }
    warnings
}

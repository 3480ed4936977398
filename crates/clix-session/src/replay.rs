//! What `clix replay` reads: a run's records, found by its id or by its
//! trajectory file's path; a plan's lanes, one per task, from its
//! `plan-result.json`.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clix_agent::replay::Lane;
use clix_agent::trajectory::Record;
use clix_config::Paths;

/// The run named by `id` (a run id, its start, `last`) or by a trajectory
/// file's path (an eval attempt's): its id and its records, never none.
pub fn run_records(paths: &Paths, id: &str) -> Result<(String, Vec<Record>)> {
    let file = Path::new(id);
    let (dir, id) = match (file.extension().is_some_and(|e| e == "jsonl"), file.parent(), file.file_stem()) {
        (true, Some(parent), Some(stem)) if file.is_file() => {
            (parent.to_path_buf(), stem.to_string_lossy().into_owned())
        }
        _ => {
            let dir = crate::runs_dir(paths);
            let id = clix_agent::find_run(&dir, id)?;
            (dir, id)
        }
    };
    let records = clix_agent::read_run(&dir, &id)?;
    if records.is_empty() {
        bail!("run {id} has no events");
    }
    Ok((id, records))
}

/// A plan's result (`file`, read through `workspace`'s handle when inside
/// it) and a lane per task: its status and its agent's records (none when
/// it did not run).
pub fn plan_lanes(paths: &Paths, workspace: &Path, file: &Path) -> Result<(clix_plan::PlanResult, Vec<Lane>)> {
    let text = clix_plan::read_named(workspace, file)?;
    let result: clix_plan::PlanResult =
        serde_json::from_str(&text).with_context(|| format!("{} is not a plan-result.json", file.display()))?;
    let lanes = result
        .tasks
        .iter()
        .map(|task| {
            let run_id = match &task.status {
                clix_plan::TaskStatus::Done { result, .. } => result.run_id.clone(),
                clix_plan::TaskStatus::Failed { result, .. } => result.as_ref().and_then(|r| r.run_id.clone()),
                _ => None,
            };
            let records = run_id
                .map(|id| clix_agent::read_run(&crate::runs_dir(paths), &id).unwrap_or_default())
                .unwrap_or_default();
            Lane { task: task.id.clone(), status: task.status.label().into(), records }
        })
        .collect();
    Ok((result, lanes))
}

//! `clix eval`'s results as a person reads them: the tables, the skipped
//! tasks, and the problems that fail the run.

use clix_eval::{AttemptRecord, Results};

/// A `--solution` run's tables, and its problems (each a line for stderr).
pub fn solutions(results: &Results) -> (String, Vec<String>) {
    let mut text =
        format!("{}\n{}\n{}\n", results.markdown(), results.comparison_markdown(), results.per_task_markdown());
    for (design, bytes) in &results.definition_bytes {
        text.push_str(&format!("tool definitions of {design}: {bytes} bytes\n"));
    }
    text.push_str(&skipped(results));
    let problems = clix_eval::problems(results).iter().map(|p| format!("PROBLEM {p}")).collect();
    (text, problems)
}

/// A model run's tables, and the line naming the first attempt that could
/// not run, if one could not.
pub fn model_run(results: &Results) -> (String, Option<String>) {
    let text = format!(
        "model: {}\n{}\n{}",
        results.model.as_deref().unwrap_or_default(),
        results.markdown(),
        skipped(results)
    );
    let errors: Vec<&AttemptRecord> = results.attempts.iter().filter(|r| r.stop_reason.error().is_some()).collect();
    let failed = errors.first().map(|first| {
        format!(
            "clix: {} of {} attempts could not run; the first ({} in {}): {}",
            errors.len(),
            results.attempts.len(),
            first.task,
            first.design,
            first.stop_reason.error().unwrap_or_default()
        )
    });
    (text, failed)
}

fn skipped(results: &Results) -> String {
    let mut text = String::new();
    for skip in &results.skipped {
        let design = skip.design.map_or("every design".to_string(), |d| d.to_string());
        text.push_str(&format!("skipped {} in {design}: {}\n", skip.task, skip.reason));
    }
    text
}

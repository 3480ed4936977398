//! `clix eval compare A B`: two runs side by side, per design, and the
//! tasks that flipped between them.

use std::collections::BTreeMap;

use crate::designs::Design;
use crate::report::Results;

/// Passes and attempts of one task in one design.
type Tally = (u32, u32);

/// A task whose outcome changed between two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Flip {
    /// The task's id.
    pub task: String,
    /// The design.
    pub design: Design,
    /// Passes and attempts in the first run.
    pub before: Tally,
    /// Passes and attempts in the second run.
    pub after: Tally,
}

impl Flip {
    /// It passed (in at least half of its attempts) in the second run only.
    pub fn fixed(&self) -> bool {
        passing(self.after)
    }
}

fn passing((passed, attempts): Tally) -> bool {
    attempts > 0 && 2 * passed >= attempts
}

fn tallies(results: &Results) -> BTreeMap<(String, Design), Tally> {
    let mut out: BTreeMap<(String, Design), Tally> = BTreeMap::new();
    for r in &results.attempts {
        let entry = out.entry((r.task.clone(), r.design)).or_default();
        entry.0 += u32::from(r.passed);
        entry.1 += 1;
    }
    out
}

/// The tasks (run in the same design by both) that pass in one run and
/// fail in the other, "pass" meaning at least half of a task's attempts.
pub fn flips(before: &Results, after: &Results) -> Vec<Flip> {
    let after_tallies = tallies(after);
    tallies(before)
        .into_iter()
        .filter_map(|((task, design), was)| {
            let now = *after_tallies.get(&(task.clone(), design))?;
            (passing(was) != passing(now)).then_some(Flip { task, design, before: was, after: now })
        })
        .collect()
}

/// The comparison in Markdown: per design, pass rate, tokens and
/// tool-result bytes of each run; then the flipped tasks.
pub fn comparison(before: &Results, after: &Results, names: (&str, &str)) -> String {
    let (a, b) = names;
    let mut out = format!(
        "| design | pass rate {a} | pass rate {b} | tokens/task {a} | tokens/task {b} | \
         tool-result bytes/task {a} | tool-result bytes/task {b} |\n|---|---|---|---|---|---|---|\n"
    );
    let mut designs: Vec<Design> = before.designs.iter().chain(&after.designs).copied().collect();
    designs.sort();
    designs.dedup();
    let overall = |r: &Results, d: Design| r.summary.iter().find(|s| s.design == d && s.category.is_none()).cloned();
    for design in designs {
        let (x, y) = (overall(before, design), overall(after, design));
        let rate = |s: &Option<crate::report::Summary>| {
            s.as_ref().map_or("–".into(), |s| {
                format!(
                    "{}/{} {:.0}% ({:.0}–{:.0}%)",
                    s.passed,
                    s.attempts,
                    100.0 * s.pass_rate,
                    100.0 * s.pass_rate_ci95.0,
                    100.0 * s.pass_rate_ci95.1
                )
            })
        };
        let tokens = |s: &Option<crate::report::Summary>| {
            s.as_ref().and_then(|s| s.tokens_per_task).map_or("–".into(), |t| format!("{t:.0}"))
        };
        let bytes = |s: &Option<crate::report::Summary>| {
            s.as_ref().map_or("–".into(), |s| format!("{:.0}", s.tool_result_bytes_per_task))
        };
        out.push_str(&format!(
            "| {design} | {} | {} | {} | {} | {} | {} |\n",
            rate(&x),
            rate(&y),
            tokens(&x),
            tokens(&y),
            bytes(&x),
            bytes(&y)
        ));
    }
    let flips = flips(before, after);
    if flips.is_empty() {
        out.push_str("\nNo task flipped.\n");
        return out;
    }
    out.push_str(&format!("\n| task | design | {a} | {b} | |\n|---|---|---|---|---|\n"));
    for f in &flips {
        let verdict = if f.fixed() { "now passes" } else { "now fails" };
        out.push_str(&format!(
            "| {} | {} | {}/{} | {}/{} | {verdict} |\n",
            f.task, f.design, f.before.0, f.before.1, f.after.0, f.after.1
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{record, results};

    #[test]
    fn flips_are_the_tasks_that_cross_one_half() {
        let before = results(vec![
            record("a", "text", Design::Run, 0, true, 1),
            record("b", "text", Design::Run, 0, false, 1),
            record("c", "text", Design::Run, 0, true, 1),
            record("c", "text", Design::Run, 1, false, 1),
            record("only-before", "text", Design::Run, 0, true, 1),
        ]);
        let after = results(vec![
            record("a", "text", Design::Run, 0, false, 1),
            record("b", "text", Design::Run, 0, true, 1),
            // 1 of 2 before, 1 of 2 after: no flip.
            record("c", "text", Design::Run, 0, false, 1),
            record("c", "text", Design::Run, 1, true, 1),
            record("a", "text", Design::Bash, 0, true, 1),
        ]);
        let flips = flips(&before, &after);
        let got: Vec<(&str, bool)> = flips.iter().map(|f| (f.task.as_str(), f.fixed())).collect();
        assert_eq!(got, [("a", false), ("b", true)]);
        let table = comparison(&before, &after, ("A", "B"));
        assert!(table.contains("| run | 3/5 60% "), "{table}");
        assert!(table.contains("| bash | – | 1/1 100% "), "{table}");
        assert!(table.contains("| a | run | 1/1 | 0/1 | now fails |"), "{table}");
        assert!(table.contains("| b | run | 0/1 | 1/1 | now passes |"), "{table}");
        assert!(comparison(&before, &before, ("A", "A")).contains("No task flipped."));
    }
}
